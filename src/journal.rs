//! `consolidated/journal.jsonl`: every change memd made to the entries,
//! with the text before and after, so any entry's lineage can be replayed
//! and an entry that vanished by hand can be told from one memd never wrote.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::entries::Meta;
use crate::error::{Context, Result};
use crate::jsonl;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Op {
    Add,
    Replace,
    Remove,
    Keep,
    /// `memd forget`.
    Forget,
    /// `memd forget --undo`: what a forget or a deletion by hand took away
    /// is back.
    Unforget,
    /// An entry memd wrote that a person deleted from the file.
    HandRemove,
    /// A hand-written block that memd gave metadata.
    Adopt,
    /// A new fact that restates something forgotten: not kept (`entry` is
    /// the fact, `into` the forgotten entry, when there was one).
    Suppress,
    /// `memd undo RUN`: the entry went from `before`/`meta_before` (`None`:
    /// absent) to `after`/`meta_after` (`None`: removed), putting back what
    /// run `undoes` changed. Undoing an undo replays these backwards.
    Undo,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    pub ts: String,
    pub run: String,
    pub op: Op,
    /// The entry the op acted on (for ADD, the entry it created).
    pub entry: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<String>,
    /// Archive facts behind the op.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<String>,
    /// For REMOVE: the entry it was merged into.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub into: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_hash: Option<String>,
    /// The entry's metadata before the op (REPLACE, KEEP, REMOVE, UNDO), so
    /// that `memd undo` puts it back as it was. Older records lack it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta_before: Option<Meta>,
    /// UNDO: the metadata the undo left (`None`: the entry is gone).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta_after: Option<Meta>,
    /// UNDO: the run it undid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub undoes: Option<String>,
}

impl Record {
    /// A record stamped now, with no optional fields set.
    pub fn new(run: &str, op: Op, entry: &str) -> Record {
        Record {
            ts: chrono::Local::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            run: run.to_string(),
            op,
            entry: entry.to_string(),
            before: None,
            after: None,
            sources: Vec::new(),
            into: None,
            model: None,
            prompt_hash: None,
            meta_before: None,
            meta_after: None,
            undoes: None,
        }
    }
}

pub fn append(path: &Path, records: &[Record]) -> Result<()> {
    jsonl::append(path, records).with_context(|| format!("appending to {}", path.display()))
}

pub fn read(path: &Path) -> Result<Vec<Record>> {
    let (records, _) = jsonl::read(path).with_context(|| format!("reading {}", path.display()))?;
    Ok(records)
}

/// The records that touched `entry`, directly or as a merge target, oldest
/// first.
pub fn history(path: &Path, entry: &str) -> Result<Vec<Record>> {
    Ok(read(path)?
        .into_iter()
        .filter(|r| r.entry == entry || r.into.as_deref() == Some(entry))
        .collect())
}
