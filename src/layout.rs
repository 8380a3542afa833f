//! Where every file of a memory directory lives, and how one is created.
//!
//! A directory is a memory directory when it has an `archive/` folder: that
//! is the one thing every memory has (the config file is optional). Commands
//! refuse any other directory with an error that says how to create one,
//! instead of scattering files into the wrong place.

use std::path::{Path, PathBuf};

use crate::clock;
use crate::error::{Context, Error, Result};
use crate::index::store;

/// Every file's path relative to the memory directory, as findings,
/// index rows and reports name it. This module is the only place that
/// spells one.
pub mod rel {
    pub const CONFIG: &str = "memd.toml";
    pub const ARCHIVE: &str = "archive/";
    pub const ENTRIES: &str = "consolidated/memory.md";
    pub const JOURNAL: &str = "consolidated/journal.jsonl";
    pub const VERSIONS: &str = "consolidated/versions.jsonl";
    pub const REVIEW: &str = "consolidated/REVIEW.md";
    pub const PROPOSALS: &str = "consolidated/review.jsonl";
    pub const CORE: &str = "MEMORY.md";
    pub const TOMBSTONES: &str = ".tombstones.jsonl";
    pub const RECALL_LOG: &str = ".recall_log.jsonl";
    pub const USAGE: &str = ".llm_usage.jsonl";
    /// Under a root (not a memory): one ledger per memory,
    /// `.memd/usage/NAME.jsonl`, out of every tenant's reach.
    pub const TENANT_LEDGERS: &str = ".memd/usage";
    /// Under a root: the marks of the memories it handed over to another
    /// node, `.memd/moved/NAME` ([`crate::server::moves`]).
    pub const HANDED_OVER: &str = ".memd/moved";
    /// Under a root: a handed-over memory waiting to be copied.
    pub const OUTGOING: &str = ".memd/outgoing";
    /// Under a root: the copy an operator puts there for a takeover.
    pub const INCOMING: &str = ".memd/incoming";
    pub const STATE: &str = ".consolidation_state.json";
    pub const RUNTIME: &str = ".memd";
    pub const INDEX: &str = ".memd/index";
    pub const INDEX_WORDS: &str = ".memd/index/words.bin";
    pub const VERSIONS_TAIL: &str = ".memd/versions-tail.json";

    /// The daily log of `day` (`YYYY-MM-DD`).
    pub fn archive_file(day: &str) -> String {
        format!("{ARCHIVE}{day}.md")
    }

    /// The day of a daily log's relative path, if it has the shape of one
    /// (`archive/NNNN-NN-NN.md`: what memd writes in its own files, read
    /// back for every row of the index, so the calendar is not asked).
    pub fn day_of(path: &str) -> Option<&str> {
        let day = path.strip_prefix(ARCHIVE)?.strip_suffix(".md")?;
        let shaped = day.len() == 10
            && day.bytes().enumerate().all(|(i, b)| match i {
                4 | 7 => b == b'-',
                _ => b.is_ascii_digit(),
            });
        shaped.then_some(day)
    }
}

/// A markdown file the index takes rows from. Declared in the order of
/// their relative paths as text (`MEMORY.md`, `archive/…`,
/// `consolidated/…`; days are fixed-width), so sorting sources sorts their
/// paths.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Source {
    /// `MEMORY.md`.
    Core,
    /// The daily log of a day (`YYYY-MM-DD`).
    Day(String),
    /// `consolidated/memory.md`.
    Entries,
}

impl Source {
    /// The path relative to the memory directory.
    pub fn rel(&self) -> std::borrow::Cow<'static, str> {
        match self {
            Source::Core => rel::CORE.into(),
            Source::Day(day) => rel::archive_file(day).into(),
            Source::Entries => rel::ENTRIES.into(),
        }
    }

    /// The source a relative path names, if it names one.
    pub fn parse(path: &str) -> Option<Source> {
        match path {
            rel::CORE => Some(Source::Core),
            rel::ENTRIES => Some(Source::Entries),
            other => rel::day_of(other).map(|d| Source::Day(d.to_string())),
        }
    }

    /// The file itself.
    pub fn path(&self, layout: &Layout) -> PathBuf {
        layout.at(&self.rel())
    }
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(&self.rel())
    }
}

impl serde::Serialize for Source {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(&self.rel())
    }
}

impl<'de> serde::Deserialize<'de> for Source {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Source, D::Error> {
        let path = String::deserialize(d)?;
        Source::parse(&path)
            .ok_or_else(|| serde::de::Error::custom(format!("not a source file: {path:?}")))
    }
}

impl schemars::JsonSchema for Source {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Source".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "description": "The file a row comes from, relative to the memory directory: `archive/YYYY-MM-DD.md`, `consolidated/memory.md` or `MEMORY.md`",
        })
    }
}

/// Paths of one memory directory.
#[derive(Debug, Clone)]
pub struct Layout {
    pub root: PathBuf,
    /// Where its LLM calls are counted, when not in the memory itself: a
    /// memory under `serve --root` is counted in the root's
    /// [`rel::TENANT_LEDGERS`], which the tenant cannot write
    /// ([`crate::server::tenant`]).
    ledger: Option<PathBuf>,
    /// Where its index's table lives when not in the memory
    /// ([`crate::index::store`]): set from `[index] uri` by
    /// [`crate::Memory::new`].
    index_uri: Option<String>,
}

impl Layout {
    /// A layout for `root` without checking anything (for `init`).
    pub fn new(root: impl Into<PathBuf>) -> Layout {
        Layout {
            root: root.into(),
            ledger: None,
            index_uri: None,
        }
    }

    /// The memory directory at `root`, or an error if it is not one.
    pub fn open(root: impl Into<PathBuf>) -> Result<Layout> {
        let layout = Layout::new(root);
        if !layout.root.is_dir() || !layout.archive_dir().is_dir() {
            return Err(Error::NotMemoryDir {
                exists: layout.root.is_dir(),
                path: layout.root,
            });
        }
        Ok(layout)
    }

    /// Whether `dir` is a memory directory (it has an `archive/`).
    pub fn is_memory(dir: &Path) -> bool {
        dir.join(rel::ARCHIVE).is_dir()
    }

    /// The file at a relative path of [`rel`].
    pub fn at(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    pub fn config_file(&self) -> PathBuf {
        self.at(rel::CONFIG)
    }
    pub(crate) fn archive_dir(&self) -> PathBuf {
        self.at(rel::ARCHIVE)
    }
    /// The daily log for `day` (`YYYY-MM-DD`).
    pub fn archive_file(&self, day: &str) -> PathBuf {
        self.at(&rel::archive_file(day))
    }
    pub fn consolidated_dir(&self) -> PathBuf {
        self.root.join("consolidated")
    }
    pub fn entries_file(&self) -> PathBuf {
        self.at(rel::ENTRIES)
    }
    pub fn journal_file(&self) -> PathBuf {
        self.at(rel::JOURNAL)
    }
    /// Every version of the entries file and of MEMORY.md's generated
    /// lines ([`crate::versions`]).
    pub fn versions_file(&self) -> PathBuf {
        self.at(rel::VERSIONS)
    }
    /// The ops a run in review mode proposed, for a person to decide
    /// ([`crate::review`]).
    pub fn review_md(&self) -> PathBuf {
        self.at(rel::REVIEW)
    }
    /// Every proposal and decision of review mode ([`crate::review`]).
    pub fn proposals_file(&self) -> PathBuf {
        self.at(rel::PROPOSALS)
    }
    /// `MEMORY.md`, the core memory an agent keeps in every prompt.
    pub fn memory_md(&self) -> PathBuf {
        self.at(rel::CORE)
    }
    pub fn tombstones_file(&self) -> PathBuf {
        self.at(rel::TOMBSTONES)
    }
    pub fn recall_log(&self) -> PathBuf {
        self.at(rel::RECALL_LOG)
    }
    /// Where its LLM calls are counted ([`crate::usage`]).
    pub fn usage_file(&self) -> PathBuf {
        self.ledger.clone().unwrap_or_else(|| self.at(rel::USAGE))
    }

    /// This layout with its LLM calls counted at `ledger` instead.
    pub fn with_ledger(mut self, ledger: PathBuf) -> Layout {
        self.ledger = Some(ledger);
        self
    }
    /// This layout with its table under `[index] uri` `prefix` (empty: in
    /// the memory).
    pub fn with_index_uri(mut self, prefix: &str) -> Layout {
        self.index_uri = match prefix.is_empty() {
            true => None,
            false => store::table_uri(prefix, &self.root),
        };
        self
    }
    /// The table's URI on object storage, if it is there.
    pub fn index_uri(&self) -> Option<&str> {
        self.index_uri.as_deref()
    }
    pub fn state_file(&self) -> PathBuf {
        self.at(rel::STATE)
    }
    /// What git leaves out of a memory directory.
    pub(crate) fn gitignore(&self) -> PathBuf {
        self.root.join(".gitignore")
    }
    /// The user's own prompt templates, when there are any.
    pub(crate) fn prompt_file(&self, name: &str) -> PathBuf {
        self.root.join("prompts").join(name)
    }
    /// Derived and runtime data only: the one folder that may be deleted.
    pub fn runtime_dir(&self) -> PathBuf {
        self.at(rel::RUNTIME)
    }
    /// The last versions, for the next writer ([`crate::versions`]).
    pub fn versions_tail(&self) -> PathBuf {
        self.at(rel::VERSIONS_TAIL)
    }
    /// The erasures whose index purge is due ([`crate::erase`]).
    pub fn erase_pending(&self) -> PathBuf {
        self.runtime_dir().join("erase-pending.jsonl")
    }
    pub fn index_dir(&self) -> PathBuf {
        self.at(rel::INDEX)
    }
    /// The LanceDB database inside the index.
    pub(crate) fn lance_dir(&self) -> PathBuf {
        self.index_dir().join("lance")
    }
    /// The embedder and dimension the index was built with.
    pub(crate) fn index_meta(&self) -> PathBuf {
        self.index_dir().join("meta.json")
    }
    /// Each source file's fingerprint at its last sync.
    pub(crate) fn index_files(&self) -> PathBuf {
        self.index_dir().join("files.json")
    }
    /// The sources a sync is writing (or was, when it stopped).
    pub(crate) fn index_syncing(&self) -> PathBuf {
        self.index_dir().join("syncing.json")
    }
    /// The rows' words as of one version of the table, for a process that
    /// opens the index to read it without tokenising every row.
    pub fn index_words(&self) -> PathBuf {
        self.at(rel::INDEX_WORDS)
    }
    /// The mark an older memd left when its full-text index fell behind.
    pub(crate) fn old_text_index_mark(&self) -> PathBuf {
        self.index_dir().join("text-index-behind")
    }
    /// Held by every process while it writes the index (outside the index,
    /// so that removing the index keeps it).
    pub(crate) fn index_lock(&self) -> PathBuf {
        self.runtime_dir().join("index.lock")
    }
    /// Held by every writer of the entries file.
    pub(crate) fn entries_lock(&self) -> PathBuf {
        self.runtime_dir().join("consolidate.lock")
    }
    /// Held by the daemon serving this directory, for its life.
    pub(crate) fn daemon_lock(&self) -> PathBuf {
        self.runtime_dir().join("daemon.lock")
    }
    /// Where the daemon serving this directory listens.
    pub(crate) fn daemon_info(&self) -> PathBuf {
        self.runtime_dir().join("daemon.json")
    }
    /// The watcher's health, for `memd status`.
    pub(crate) fn watch_health(&self) -> PathBuf {
        self.runtime_dir().join("watch.json")
    }
    /// The embedding cache.
    pub(crate) fn cache_dir(&self) -> PathBuf {
        self.runtime_dir().join("cache")
    }
    /// The mark a test failpoint leaves where it stopped.
    #[cfg_attr(not(feature = "failpoints"), allow(dead_code))]
    pub(crate) fn paused_at(&self, step: &str) -> PathBuf {
        self.runtime_dir().join(format!("paused-at-{step}"))
    }

    /// Days that have an archive file, oldest first.
    pub(crate) fn archive_days(&self) -> Result<Vec<String>> {
        let mut days = Vec::new();
        let dir = self.archive_dir();
        for entry in
            std::fs::read_dir(&dir).with_context(|| format!("reading {}", dir.display()))?
        {
            let entry = entry?;
            let name = entry.file_name();
            let name = name.to_string_lossy();
            // A symbolic link is followed, as the append that writes
            // through it does: a day file kept elsewhere is still read.
            if let Some(day) = name.strip_suffix(".md")
                && is_day(day)
                && is_file(&entry)?
            {
                days.push(day.to_string());
            }
        }
        days.sort();
        Ok(days)
    }
}

/// Whether a directory's entry is a file, a symbolic link followed: from
/// the directory listing's own file type, without a `stat` per file (a
/// daemon lists the archive before every search; at 3,000 day files the
/// `stat`s were most of a search, BENCHMARKS.md).
pub(crate) fn is_file(entry: &std::fs::DirEntry) -> std::io::Result<bool> {
    let kind = entry.file_type()?;
    Ok(kind.is_file() || (kind.is_symlink() && entry.path().is_file()))
}

/// Copy a directory tree (a memory directory, for evaluations and tests
/// that branch one state into several).
pub fn copy_dir(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for e in std::fs::read_dir(from)? {
        let e = e?;
        let target = to.join(e.file_name());
        if e.file_type()?.is_dir() {
            copy_dir(&e.path(), &target)?;
        } else {
            std::fs::copy(e.path(), target)?;
        }
    }
    Ok(())
}

/// Whether `s` is a `YYYY-MM-DD` date.
pub(crate) fn is_day(s: &str) -> bool {
    clock::is_day(s)
}
