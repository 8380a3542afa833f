//! Tier 2: `consolidated/memory.md`, the deduplicated truth.
//!
//! ```text
//! <!--m {"id":"e-3f9a2c1d","first_seen":"2026-05-27","updated":"2026-05-30","sources":["2026-05-27#a1b2c3d4"],"hash":"…"}-->
//! Currently works at Microsoft (since 2026-05). Previously worked at Google.
//! ```
//!
//! An entry is a metadata comment line followed by its text, up to the next
//! blank line or metadata line. Code owns the comment; the text is the LLM's
//! or the user's. A block of text written by hand without a comment is an
//! entry too: it gets metadata on the next save and is never dropped.
//! Headings and other comments standing alone are structure, kept verbatim.
//!
//! The parsed document keeps every block's source, so saving a document in
//! which nothing changed writes the same bytes, and a change to one entry
//! rewrites only that entry. Saves are atomic ([`crate::atomic`]).

use std::collections::HashSet;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};

use crate::error::{Context, Error, Result};
use crate::ids::{EntryId, FactId};
use crate::lock::{Guard, lock_or_explain};
use crate::text::{escape_comments, first_bad_byte, normalize, short_hash, unescape_comments};
use crate::{Layout, atomic};

/// What `memd init` writes.
pub(crate) const EMPTY_FILE: &str = "# Memory\n";

pub(crate) const META_OPEN: &str = "<!--m ";
const META_CLOSE: &str = "-->";

/// The metadata comment of an entry. Unknown fields are kept as they are.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Meta {
    pub id: EntryId,
    #[serde(default)]
    pub first_seen: String,
    #[serde(default)]
    pub updated: String,
    /// Every archive fact folded into this entry: its repetition count.
    #[serde(default)]
    pub sources: Vec<FactId>,
    /// Hash of the text as memd last wrote it: a mismatch means a hand edit.
    #[serde(default)]
    pub hash: String,
    /// Protected from REPLACE and REMOVE (set by hand or `memd pin`).
    #[serde(default, skip_serializing_if = "is_false")]
    pub pinned: bool,
    /// Added verbatim after the LLM failed to give a valid reply; revisited
    /// by the next run.
    #[serde(default, skip_serializing_if = "is_false")]
    pub unreviewed: bool,
    /// The entry's own category (`memd edit --category`), in place of the
    /// categories of its facts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    #[serde(flatten)]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// One entry of the file.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// `None` for a block written by hand that memd has not saved yet.
    pub meta: Option<Meta>,
    pub text: String,
}

impl Entry {
    pub fn id(&self) -> Option<&EntryId> {
        self.meta.as_ref().map(|m| &m.id)
    }

    /// True when the text is not what memd last wrote (or memd never wrote
    /// it): the user's edit wins over any planned change.
    pub fn edited_by_hand(&self) -> bool {
        match &self.meta {
            Some(m) => m.hash != text_hash(&self.text),
            None => true,
        }
    }

    pub fn pinned(&self) -> bool {
        self.meta.as_ref().is_some_and(|m| m.pinned)
    }

    fn render(&self) -> String {
        match &self.meta {
            Some(m) => format!(
                "{META_OPEN}{}{META_CLOSE}\n{}\n",
                serde_json::to_string(m).expect("metadata serialises"),
                escape_comments(&self.text)
            ),
            None => format!("{}\n", escape_comments(&self.text)),
        }
    }
}

/// The lock every writer of the entries file holds (consolidation,
/// forget): `.memd/consolidate.lock`. It is this module's because the file
/// is; the OS frees it if the holder dies.
pub fn lock(layout: &Layout) -> Result<Guard> {
    lock_or_explain(
        &layout.entries_lock(),
        "a consolidation (or forget) in this memory directory",
    )
}

/// The hash recorded in an entry's metadata.
pub fn text_hash(text: &str) -> String {
    short_hash(text.trim(), 16)
}

/// Make text fit to store as an entry: one block (no blank lines, which
/// would split it into two entries). That no line of it reads as metadata
/// is the renderer's job: every comment opener is escaped when written
/// ([`crate::text::escape_comments`]) and unescaped when read.
pub(crate) fn sanitize_text(text: &str) -> String {
    text.replace('\r', "")
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.trim().is_empty())
        .collect::<Vec<_>>()
        .join("\n")
        .trim()
        .to_string()
}

#[derive(Debug, Clone)]
enum Block {
    /// Blank lines, headings, stray comments: kept byte for byte.
    Raw(String),
    Entry {
        entry: Box<Entry>,
        /// The source of the block; `None` once it has been changed.
        raw: Option<String>,
    },
}

/// A block being collected while parsing.
struct Collecting {
    /// Line number and text of the metadata line, if the block has one.
    meta_line: Option<(usize, String)>,
    lines: Vec<String>,
    raw: String,
}

/// A problem found while reading the file, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    /// 1-based.
    pub line: usize,
    pub message: String,
}

impl std::fmt::Display for Warning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

/// A parsed `consolidated/memory.md`.
#[derive(Debug, Clone, Default)]
pub struct Document {
    blocks: Vec<Block>,
    /// Problems found while parsing (bad metadata, invalid UTF-8).
    pub warnings: Vec<Warning>,
    /// Every id in the file, so a new id is checked in O(1): a run that
    /// ADDs thousands of entries to a file of thousands would otherwise
    /// scan the file once per new entry.
    ids: std::collections::HashSet<EntryId>,
    /// The first line of the file that is not UTF-8, when one is: such a
    /// file is read (with U+FFFD in place of its bad bytes) but never
    /// written back, which would replace the user's bytes for good.
    not_utf8: Option<usize>,
}

/// The `sources` of every entry of the file at `path` (a missing file has
/// none), without building the document: a metadata line is any line
/// [`Document::parse`] reads as one, and an unreadable one names no
/// sources there either. The index needs only this at every sync of a day
/// file, and it is several times cheaper than a full parse.
pub fn sources(path: &Path) -> Result<HashSet<FactId>> {
    #[derive(Deserialize)]
    struct Sources {
        #[serde(default)]
        sources: Vec<FactId>,
    }
    let read = atomic::read_if_exists(path);
    let Some(bytes) = read.with_context(|| format!("reading {}", path.display()))? else {
        return Ok(HashSet::new());
    };
    let mut out = HashSet::new();
    for line in String::from_utf8_lossy(&bytes).lines() {
        let Some(json) = line.trim_end().strip_prefix(META_OPEN) else {
            continue;
        };
        let json = json.strip_suffix(META_CLOSE).unwrap_or(json);
        if let Ok(s) = serde_json::from_str::<Sources>(json) {
            out.extend(s.sources);
        }
    }
    Ok(out)
}

impl Document {
    pub fn parse(src: &str) -> Document {
        let mut doc = Document::default();
        // The block being collected: (metadata line, text lines, raw source).
        let mut current: Option<Collecting> = None;
        for (i, line) in src.split_inclusive('\n').enumerate() {
            let content = line.trim_end_matches(['\n', '\r']);
            if content.starts_with(META_OPEN) {
                doc.flush(current.take());
                current = Some(Collecting {
                    meta_line: Some((i + 1, content.to_string())),
                    lines: Vec::new(),
                    raw: line.into(),
                });
            } else if content.trim().is_empty() {
                doc.flush(current.take());
                doc.push_raw(line);
            } else if let Some(c) = current.as_mut() {
                c.lines.push(content.to_string());
                c.raw.push_str(line);
            } else if content.starts_with('#') || content.trim_start().starts_with("<!--") {
                doc.push_raw(line);
            } else {
                current = Some(Collecting {
                    meta_line: None,
                    lines: vec![content.to_string()],
                    raw: line.into(),
                });
            }
        }
        doc.flush(current);
        doc
    }

    fn push_raw(&mut self, line: &str) {
        if let Some(Block::Raw(r)) = self.blocks.last_mut() {
            r.push_str(line);
        } else {
            self.blocks.push(Block::Raw(line.to_string()));
        }
    }

    fn flush(&mut self, block: Option<Collecting>) {
        let Some(Collecting {
            meta_line,
            lines,
            raw,
        }) = block
        else {
            return;
        };
        let mut text = unescape_comments(&lines.join("\n"));
        let meta = match meta_line {
            None => None,
            Some((line_no, line)) => {
                let json = line[META_OPEN.len()..]
                    .trim_end()
                    .strip_suffix(META_CLOSE)
                    .unwrap_or(&line[META_OPEN.len()..]);
                match serde_json::from_str::<Meta>(json) {
                    Ok(m) => Some(m),
                    Err(e) => {
                        // Keep the unreadable comment inside the text: it
                        // may hold provenance a person wants to recover.
                        self.warnings.push(Warning {
                            line: line_no,
                            message: format!(
                                "unreadable entry metadata ({e}); the block is treated as written by hand"
                            ),
                        });
                        text = if text.is_empty() {
                            line
                        } else {
                            format!("{line}\n{text}")
                        };
                        None
                    }
                }
            }
        };
        if let Some(m) = &meta {
            self.ids.insert(m.id.clone());
        }
        self.blocks.push(Block::Entry {
            entry: Box::new(Entry { meta, text }),
            raw: Some(raw),
        });
    }

    /// Read the file at `path`; a missing file is an empty document.
    pub fn read(path: &Path) -> Result<Document> {
        Ok(Document::read_for_update(path)?.0)
    }

    /// [`Document::read`], with the bytes it was parsed from (`None` for a
    /// missing file), for [`Document::save_if_unchanged`].
    pub(crate) fn read_for_update(path: &Path) -> Result<(Document, Option<Vec<u8>>)> {
        let read = atomic::read_if_exists(path);
        let Some(bytes) = read.with_context(|| format!("reading {}", path.display()))? else {
            return Ok((Document::default(), None));
        };
        let text = String::from_utf8_lossy(&bytes);
        let mut doc = Document::parse(&text);
        if let Some((_, line)) = first_bad_byte(&bytes) {
            doc.not_utf8 = Some(line);
            let message =
                "not UTF-8; memd reads it but will not rewrite the file until it is fixed by hand";
            doc.warnings.insert(
                0,
                Warning {
                    line,
                    message: message.into(),
                },
            );
        }
        for w in &doc.warnings {
            tracing::warn!(file = %path.display(), "{w}");
        }
        Ok((doc, Some(bytes)))
    }

    /// The file's text: unchanged blocks byte for byte.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for block in &self.blocks {
            match block {
                Block::Raw(r) => out.push_str(r),
                // Only the last block can lack a final newline; a block pushed
                // after it adds one itself.
                Block::Entry { raw: Some(r), .. } => out.push_str(r),
                Block::Entry { entry, raw: None } => {
                    // A changed entry must stay its own block.
                    if !out.is_empty() {
                        if !out.ends_with('\n') {
                            out.push('\n');
                        }
                        if !out.ends_with("\n\n") {
                            out.push('\n');
                        }
                    }
                    out.push_str(&entry.render());
                }
            }
        }
        out
    }

    /// Give every hand-written entry metadata (a new id, `today` as first
    /// seen, no sources) and write the file atomically. Returns the ids given
    /// to hand-written entries, so the caller can journal them.
    /// Refuse to write a document read from a file that is not UTF-8.
    fn writable(&self, path: &Path) -> Result<()> {
        match self.not_utf8 {
            None => Ok(()),
            Some(line) => Err(Error::Corrupt {
                path: path.to_path_buf(),
                line: Some(line),
                message: "not UTF-8; memd will not rewrite it (that would replace the bytes for good): fix the line by hand".into(),
            }),
        }
    }

    pub fn save(&mut self, path: &Path, today: &str) -> Result<Vec<EntryId>> {
        self.writable(path)?;
        let adopted = self.adopt_hand_written(today);
        atomic::write(path, self.render().as_bytes())
            .with_context(|| format!("writing {}", path.display()))?;
        Ok(adopted)
    }

    /// [`Document::save`] for a document read from `original` (the file's
    /// bytes then, `None` if it was missing): if the file changed since, by
    /// hand or otherwise, nothing is written and `Ok(None)` comes back, so
    /// the caller can read it again and redo its change. The check runs
    /// after the new text is on disk and just before the rename, which
    /// leaves the smallest window a concurrent edit can fall into.
    /// `before_rename` runs right after the check (a test failpoint, or a
    /// write that must land before the new text does); its error stops the
    /// save.
    pub(crate) fn save_if_unchanged(
        &mut self,
        path: &Path,
        today: &str,
        original: Option<&[u8]>,
        before_rename: impl FnOnce() -> std::io::Result<()>,
    ) -> Result<Option<Vec<EntryId>>> {
        self.writable(path)?;
        let adopted = self.adopt_hand_written(today);
        let conflict = std::cell::Cell::new(false);
        let result = atomic::write_with_hook(path, self.render().as_bytes(), || {
            if std::fs::read(path).ok().as_deref() != original {
                conflict.set(true);
                return Err(std::io::Error::other("changed during the run"));
            }
            before_rename()
        });
        match result {
            Ok(()) => Ok(Some(adopted)),
            Err(_) if conflict.get() => Ok(None),
            Err(e) => Err(e).with_context(|| format!("writing {}", path.display())),
        }
    }

    /// Give each block without metadata whose normalised text is that of
    /// an entry memd wrote and the file no longer has by id (`missing`:
    /// id, normalised text, sources) that entry's id and sources back: a
    /// person took its metadata line off, or deleted it while a copy of
    /// its text stayed. One block per id, first in the file first. Returns
    /// the ids given back; the rest are adopted as new on save.
    pub fn reclaim(
        &mut self,
        missing: &[(EntryId, String, Vec<FactId>)],
        today: &str,
    ) -> Vec<EntryId> {
        let mut given = Vec::new();
        for block in &mut self.blocks {
            let Block::Entry { entry, raw } = block else {
                continue;
            };
            if entry.meta.is_some() {
                continue;
            }
            let text = normalize(&entry.text);
            let Some((id, _, sources)) = missing
                .iter()
                .find(|(id, t, _)| *t == text && !given.contains(id))
            else {
                continue;
            };
            self.ids.insert(id.clone());
            entry.meta = Some(Meta {
                id: id.clone(),
                first_seen: today.to_string(),
                updated: today.to_string(),
                sources: sources.clone(),
                hash: text_hash(&entry.text),
                pinned: false,
                unreviewed: false,
                category: None,
                extra: Default::default(),
            });
            *raw = None;
            given.push(id.clone());
        }
        given
    }

    fn adopt_hand_written(&mut self, today: &str) -> Vec<EntryId> {
        let mut adopted = Vec::new();
        let ids = &mut self.ids;
        for block in &mut self.blocks {
            if let Block::Entry { entry, raw } = block
                && entry.meta.is_none()
            {
                let id = new_id(&entry.text, |id| ids.contains(id));
                ids.insert(id.clone());
                entry.meta = Some(Meta {
                    id: id.clone(),
                    first_seen: today.to_string(),
                    updated: today.to_string(),
                    sources: Vec::new(),
                    hash: text_hash(&entry.text),
                    pinned: false,
                    unreviewed: false,
                    category: None,
                    extra: Default::default(),
                });
                *raw = None;
                adopted.push(id);
            }
        }
        adopted
    }

    pub fn entries(&self) -> impl Iterator<Item = &Entry> {
        self.blocks.iter().filter_map(|b| match b {
            Block::Entry { entry, .. } => Some(&**entry),
            Block::Raw(_) => None,
        })
    }

    pub fn get(&self, id: &str) -> Option<&Entry> {
        self.entries().find(|e| e.id().is_some_and(|e| e == id))
    }

    /// Every fact the entries' `sources` hold, in file order (a fact two
    /// entries claim, twice).
    pub fn sources(&self) -> impl Iterator<Item = &FactId> {
        let metas = self.entries().filter_map(|e| e.meta.as_ref());
        metas.flat_map(|m| m.sources.iter())
    }

    /// The entry whose `sources` hold fact `id` (the first in file
    /// order), if one does.
    pub fn holder(&self, id: &FactId) -> Option<&EntryId> {
        self.entries()
            .filter_map(|e| e.meta.as_ref())
            .find(|m| m.sources.contains(id))
            .map(|m| &m.id)
    }

    /// Mutable access to an entry; the entry is re-rendered on save.
    pub fn get_mut(&mut self, id: &str) -> Option<&mut Entry> {
        self.blocks.iter_mut().find_map(|b| match b {
            Block::Entry { entry, raw } if entry.id().is_some_and(|e| e == id) => {
                *raw = None;
                Some(&mut **entry)
            }
            _ => None,
        })
    }

    /// Append a new entry at the end of the file. `meta.hash` is set here.
    pub fn push(&mut self, text: &str, mut meta: Meta) -> &Entry {
        let text = sanitize_text(text);
        meta.hash = text_hash(&text);
        self.ids.insert(meta.id.clone());
        self.blocks.push(Block::Entry {
            entry: Box::new(Entry {
                meta: Some(meta),
                text,
            }),
            raw: None,
        });
        match self.blocks.last() {
            Some(Block::Entry { entry, .. }) => entry,
            _ => unreachable!(),
        }
    }

    /// Append `entry` as it is (its metadata untouched: a hand edit stays
    /// one), at the end of the file.
    pub(crate) fn push_entry(&mut self, entry: Entry) {
        if let Some(m) = &entry.meta {
            self.ids.insert(m.id.clone());
        }
        self.blocks.push(Block::Entry {
            entry: Box::new(entry),
            raw: None,
        });
    }

    /// A fresh metadata record. Its id comes from its text and its facts
    /// ([`id_of`]), so the same facts consolidated again to the same text
    /// (after an undo and a re-run) get the id they had; when that id is
    /// taken, or the entry holds no facts, it gets a new unique one.
    pub fn new_meta(&self, text: &str, today: &str, sources: Vec<FactId>) -> Meta {
        let taken = |id: &str| self.ids.contains(id);
        let id = id_of(text, &sources)
            .filter(|id| !taken(id.as_str()))
            .unwrap_or_else(|| new_id(text, taken));
        Meta {
            id,
            first_seen: today.to_string(),
            updated: today.to_string(),
            sources,
            hash: String::new(),
            pinned: false,
            unreviewed: false,
            category: None,
            extra: Default::default(),
        }
    }

    /// Remove the entry `id` with the blank lines that separated it.
    pub fn remove(&mut self, id: &str) -> Option<Entry> {
        let at = self.blocks.iter().position(
            |b| matches!(b, Block::Entry { entry, .. } if entry.id().is_some_and(|e| e == id)),
        )?;
        let Block::Entry { entry, .. } = self.blocks.remove(at) else {
            unreachable!()
        };
        self.ids.remove(id);
        // Drop one separator so removals do not pile up blank lines: the
        // one after the entry, or, for the last entry, the one before it
        // (so removing the entry just appended gives back the bytes of
        // before the append).
        let blank = |b: Option<&Block>| matches!(b, Some(Block::Raw(r)) if r.trim().is_empty());
        if at > 0 && blank(self.blocks.get(at)) {
            self.blocks.remove(at);
        } else if at > 0 && at == self.blocks.len() {
            if blank(self.blocks.get(at - 1)) {
                self.blocks.remove(at - 1);
            } else if let Some(Block::Raw(r)) = self.blocks.get_mut(at - 1)
                && r.ends_with("\n\n")
            {
                r.pop();
            }
        }
        Some(*entry)
    }
}

/// The id an entry of `text` made of `sources` is given first: a hash of
/// both (sources in any order), so it is the same each time those facts
/// become that text. `None` for an entry of no facts.
fn id_of(text: &str, sources: &[FactId]) -> Option<EntryId> {
    if sources.is_empty() {
        return None;
    }
    let mut facts: Vec<&str> = sources.iter().map(FactId::as_str).collect();
    facts.sort_unstable();
    facts.dedup();
    let data = format!("{text}\u{0}{}", facts.join("\u{0}"));
    Some(EntryId::hashed(&short_hash(&data, 8)))
}

/// A new entry id, not `taken` and, in practice, unique across time: the
/// text, the clock and a process-wide counter all feed the hash.
fn new_id(text: &str, taken: impl Fn(&str) -> bool) -> EntryId {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    loop {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        let id = EntryId::hashed(&short_hash(
            &format!("{text}\u{0}{nanos}\u{0}{n}\u{0}{}", std::process::id()),
            8,
        ));
        if !taken(&id) {
            return id;
        }
    }
}
