//! Where every file of a memory directory lives, and how one is created.
//!
//! A directory is a memory directory when it has an `archive/` folder: that
//! is the one thing every memory has (the config file is optional). Commands
//! refuse any other directory with an error that says how to create one,
//! instead of scattering files into the wrong place.

use std::path::{Path, PathBuf};

use crate::error::{Context, Result};
use crate::{atomic, config, entries, memory_md};

/// Paths of one memory directory.
#[derive(Debug, Clone)]
pub struct Layout {
    pub root: PathBuf,
}

impl Layout {
    /// A layout for `root` without checking anything (for `init`).
    pub fn new(root: impl Into<PathBuf>) -> Layout {
        Layout { root: root.into() }
    }

    /// The memory directory at `root`, or an error if it is not one.
    pub fn open(root: impl Into<PathBuf>) -> Result<Layout> {
        let layout = Layout::new(root);
        if !layout.root.is_dir() || !layout.archive_dir().is_dir() {
            return Err(crate::Error::NotMemoryDir {
                exists: layout.root.is_dir(),
                path: layout.root,
            });
        }
        Ok(layout)
    }

    pub fn config_file(&self) -> PathBuf {
        self.root.join("memd.toml")
    }
    pub(crate) fn archive_dir(&self) -> PathBuf {
        self.root.join("archive")
    }
    /// The daily log for `day` (`YYYY-MM-DD`).
    pub fn archive_file(&self, day: &str) -> PathBuf {
        self.archive_dir().join(format!("{day}.md"))
    }
    pub fn consolidated_dir(&self) -> PathBuf {
        self.root.join("consolidated")
    }
    pub fn entries_file(&self) -> PathBuf {
        self.consolidated_dir().join("memory.md")
    }
    pub fn journal_file(&self) -> PathBuf {
        self.consolidated_dir().join("journal.jsonl")
    }
    pub fn memory_md(&self) -> PathBuf {
        self.root.join("MEMORY.md")
    }
    pub fn tombstones_file(&self) -> PathBuf {
        self.root.join(".tombstones.jsonl")
    }
    pub fn recall_log(&self) -> PathBuf {
        self.root.join(".recall_log.jsonl")
    }
    pub fn state_file(&self) -> PathBuf {
        self.root.join(".consolidation_state.json")
    }
    /// Derived and runtime data only: the one folder that may be deleted.
    pub fn runtime_dir(&self) -> PathBuf {
        self.root.join(".memd")
    }
    pub fn index_dir(&self) -> PathBuf {
        self.runtime_dir().join("index")
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
            // `is_file` follows a symbolic link, as the append that writes
            // through it does: a day file kept elsewhere is still read.
            if let Some(day) = name.strip_suffix(".md")
                && is_day(day)
                && entry.path().is_file()
            {
                days.push(day.to_string());
            }
        }
        days.sort();
        Ok(days)
    }
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
    chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d").is_ok() && s.len() == 10
}

/// Create a memory directory at `root` (or complete a partial one). Existing
/// files are never overwritten: running `init` twice is harmless.
pub fn init(root: &Path) -> Result<Layout> {
    let layout = Layout::new(root);
    for dir in [
        layout.root.clone(),
        layout.archive_dir(),
        layout.consolidated_dir(),
        layout.runtime_dir(),
    ] {
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let files: [(PathBuf, String); 4] = [
        (layout.config_file(), config::default_file_text()),
        (layout.entries_file(), entries::EMPTY_FILE.to_string()),
        (layout.memory_md(), memory_md::EMPTY_FILE.to_string()),
        (layout.root.join(".gitignore"), ".memd/\n".to_string()),
    ];
    for (path, text) in files {
        if !path.exists() {
            atomic::write(&path, text.as_bytes())
                .with_context(|| format!("writing {}", path.display()))?;
        }
    }
    Ok(layout)
}
