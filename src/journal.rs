//! `consolidated/journal.jsonl`: every change memd made to the entries,
//! with the text before and after, so any entry's lineage can be replayed
//! and an entry that vanished by hand can be told from one memd never wrote.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::clock::Clock;
use crate::entries::{Document, Meta};
use crate::error::{Context, Result};
use crate::ids::{EntryId, FactId, RunId};
use crate::jsonl;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
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
    /// `memd edit`: the entry went from `before`/`meta_before` to
    /// `after`/`meta_after`, by a person's or an agent's request.
    Edit,
}

/// One record of the journal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Record {
    pub ts: String,
    pub run: RunId,
    pub op: Op,
    /// The entry the op acted on (for ADD, the entry it created); for
    /// SUPPRESS, and FORGET of a pending fact, the fact.
    pub entry: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<String>,
    /// Archive facts behind the op.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<FactId>,
    /// For REMOVE: the entry it was merged into.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub into: Option<EntryId>,
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
    pub undoes: Option<RunId>,
    /// When an erasure (`memd forget --erase`) took the texts out of this
    /// record (`before` and `after` are gone; `memd undo` leaves it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub erased: Option<String>,
}

impl Record {
    /// A record of `run`, stamped with the time `clock` gives, with no
    /// optional fields set.
    pub fn new(clock: &Clock, run: &RunId, op: Op, entry: &str) -> Record {
        Record {
            ts: clock.timestamp(),
            run: run.clone(),
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
            erased: None,
        }
    }
}

/// What the records of one run are stamped with: its id, and the clock
/// that gives their time (a run's, or a forget's or an undo's).
#[derive(Debug, Clone)]
pub struct Stamp {
    pub run: RunId,
    pub clock: Clock,
    /// The run's day, read once: a run that crosses midnight dates all
    /// it writes alike.
    today: String,
}

impl Stamp {
    /// A new run, on `clock`.
    pub fn new(clock: Clock) -> Stamp {
        Stamp {
            run: RunId::new(&clock),
            today: clock.today(),
            clock,
        }
    }

    /// A record of this run.
    pub fn record(&self, op: Op, entry: &str) -> Record {
        Record::new(&self.clock, &self.run, op, entry)
    }

    /// The run's day (`YYYY-MM-DD`), by its clock when it started.
    pub fn today(&self) -> String {
        self.today.clone()
    }

    /// `ADOPT` records of this run for the blocks a save of `doc` gave
    /// ids (`adopted`, from [`crate::entries::Document::save`]), with their
    /// text: whatever saves the file journals them, so a later deletion by
    /// hand of one (or of a twin) is recognised.
    pub fn adoptions(&self, doc: &Document, adopted: &[EntryId]) -> Vec<Record> {
        adopted
            .iter()
            .map(|id| {
                let mut r = self.record(Op::Adopt, id.as_str());
                r.after = doc.get(id.as_str()).map(|e| e.text.clone());
                r
            })
            .collect()
    }
}

/// What the journal says of one entry: whether it is alive (memd wrote it
/// and nothing took it away since), the facts it holds, its last text.
#[derive(Debug, Clone, Default)]
pub struct Lineage {
    pub alive: bool,
    pub sources: Vec<FactId>,
    pub text: Option<String>,
}

/// Every entry the journal has records of, by id, as `records` (oldest
/// first) leave it. Records of a pending fact (its forgetting, that taken
/// back) and of a fact kept out as a restatement name the fact, never an
/// entry: they are left out.
pub fn lineage(records: &[Record]) -> BTreeMap<EntryId, Lineage> {
    let mut out: BTreeMap<EntryId, Lineage> = BTreeMap::new();
    for r in records {
        if r.op == Op::Suppress || FactId::looks_like(&r.entry) {
            continue;
        }
        let l = out.entry(EntryId::stored(&r.entry)).or_default();
        match r.op {
            // A forget taken back with no entry to put back (neither the
            // file nor the journal held it: its facts are pending again).
            Op::Unforget if r.after.is_none() => l.alive = false,
            Op::Add | Op::Adopt | Op::Replace | Op::Keep | Op::Unforget => {
                l.alive = true;
                l.sources.extend(r.sources.iter().cloned());
                if let Some(after) = &r.after {
                    l.text = Some(after.clone());
                }
            }
            Op::Remove | Op::Forget | Op::HandRemove => l.alive = false,
            Op::Suppress => {}
            // An undo or an edit states what the entry holds now, whole.
            // One whose text an erasure took still says by its metadata
            // whether the entry is there after it (an undo of the run that
            // added it: not), and says nothing without it.
            Op::Undo | Op::Edit
                if r.erased.is_some()
                    && r.after.is_none()
                    && r.meta_before.is_none()
                    && r.meta_after.is_none() => {}
            Op::Undo | Op::Edit => {
                l.alive = r.after.is_some() || r.meta_after.is_some();
                l.sources = r
                    .meta_after
                    .iter()
                    .flat_map(|m| m.sources.clone())
                    .collect();
                l.text = r.after.clone().or(l.text.take());
            }
        }
        if let (Op::Remove, Some(into)) = (r.op, &r.into) {
            let merged = out.entry(into.clone()).or_default();
            merged.sources.extend(r.sources.iter().cloned());
        }
    }
    out
}

pub fn append(path: &Path, records: &[Record]) -> Result<()> {
    jsonl::append(path, records).with_context(|| format!("appending to {}", path.display()))
}

/// An erasure's rewrite ([`crate::erase`]): each record through `scrub`
/// (`Some`: the record without the texts it took, marked
/// [`Record::erased`]), and `extra` appended; atomically. Returns how
/// many records lost texts.
pub(crate) fn erase(
    path: &Path,
    scrub: impl Fn(&Record) -> Option<Record>,
    extra: &[Record],
) -> Result<usize> {
    jsonl::rewrite(path, |r: &Record| scrub(r).map(Some), extra)
        .with_context(|| format!("rewriting {}", path.display()))
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
