//! `.tombstones.jsonl`: what was forgotten, so it never comes back.
//!
//! A tombstone holds the normalised text of a forgotten entry and the ids of
//! its source facts, and the user's action that made it ([`Reason`]).
//! Indexing and consolidation skip any fact whose id is listed or whose
//! normalised text matches, so neither `reindex --clear` nor an archive
//! line that restates the fact later resurrects it.
//!
//! A tombstone keeps facts out; it never hides an entry that is in the
//! entries file by its text. Only a tombstone that names an entry (one
//! whose forgetting did not finish: the entry is still in the file) keeps
//! that entry out of search and MEMORY.md, and `memd check` reports it.

use std::collections::HashSet;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::clock::Clock;
use crate::error::{Context, Result};
use crate::ids::{EntryId, FactId, RunId};
use crate::text::{erased_hash, normalize, short_hash};
use crate::{atomic, jsonl};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tombstone {
    /// RFC 3339 time of forgetting.
    pub ts: String,
    /// The forgotten entry, when an entry was forgotten.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entry: Option<EntryId>,
    /// Normalised text ([`crate::text::normalize`]).
    pub text: String,
    #[serde(default)]
    pub sources: Vec<FactId>,
    /// The user's action that made it.
    #[serde(default)]
    pub reason: Reason,
    /// A lift (`memd forget --undo`): the entry or fact id whose earlier
    /// tombstones no longer count. The file stays append-only, so what was
    /// forgotten and when it was brought back both stay on record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lifts: Option<String>,
    /// For a fact kept out as a restatement of a pending fact forgotten on
    /// its own (reason [`Reason::RestatesForgotten`]): that fact, so that
    /// taking its forget back takes this one back too. (A restatement of a
    /// forgotten entry names the entry in `entry`.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restates: Option<FactId>,
    /// For an undo's keep-out (reason [`Reason::Undo`]): the run that undo
    /// took back. Undoing that undo lifts these and no other keep-out of
    /// the same fact; a lift that names a run lifts only its keep-outs.
    /// (Written since the fourth soak; a keep-out without it is lifted by
    /// any undo of an undo that puts its fact back, as before.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub undoes: Option<RunId>,
    /// Texts kept out by their [`crate::text::erased_hash`] alone: those of
    /// an erasure (`memd forget --erase`, reason [`Reason::Erase`], whose
    /// record is the receipt), and of an earlier tombstone of an erased
    /// text, whose `text` the erasure emptied.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hashes: Vec<String>,
}

/// Why something was forgotten: each is a user's action.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Reason {
    /// `memd forget`.
    #[default]
    Forget,
    /// A person deleted an entry memd wrote from the file.
    DeletedByHand,
    /// A new fact said what a forgotten text says: kept out by that forget.
    RestatesForgotten,
    /// `memd undo --keep-out` (also written on the records that lift
    /// tombstones, `memd forget --undo`).
    Undo,
    /// `memd forget --erase`: the receipt of an erasure, which holds no
    /// text and is never lifted.
    Erase,
    /// A reason this memd does not know (a newer one wrote it).
    Other(String),
}

impl Reason {
    pub fn as_str(&self) -> &str {
        match self {
            Reason::Forget => "forget",
            Reason::DeletedByHand => "deleted by hand",
            Reason::RestatesForgotten => "says what was forgotten",
            Reason::Undo => "undo",
            Reason::Erase => "erase",
            Reason::Other(s) => s,
        }
    }

    fn parse(s: &str) -> Reason {
        match s {
            "forget" | "" => Reason::Forget,
            "deleted by hand" => Reason::DeletedByHand,
            "says what was forgotten" => Reason::RestatesForgotten,
            "undo" => Reason::Undo,
            "erase" => Reason::Erase,
            other => Reason::Other(other.to_string()),
        }
    }
}

impl From<&str> for Reason {
    fn from(s: &str) -> Reason {
        Reason::parse(s)
    }
}

impl Serialize for Reason {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Reason {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Reason, D::Error> {
        Ok(Reason::parse(&String::deserialize(d)?))
    }
}

impl Tombstone {
    /// A tombstone for `text` (normalised here) and its sources, stamped
    /// with the time `clock` gives.
    pub fn new(
        clock: &Clock,
        entry: Option<EntryId>,
        text: &str,
        sources: Vec<FactId>,
        reason: impl Into<Reason>,
    ) -> Tombstone {
        Tombstone {
            ts: clock.timestamp(),
            entry,
            text: normalize(text),
            sources,
            reason: reason.into(),
            lifts: None,
            restates: None,
            undoes: None,
            hashes: Vec::new(),
        }
    }

    /// The user's forget a restatement of this tombstone's text is kept
    /// out by: the entry, or the one pending fact, that was forgotten.
    pub fn forgotten_by(&self) -> (Option<EntryId>, Option<FactId>) {
        match (&self.entry, &self.restates) {
            (Some(e), _) => (Some(e.clone()), None),
            (None, Some(f)) => (None, Some(f.clone())),
            (None, None) if self.sources.len() == 1 => (None, Some(self.sources[0].clone())),
            (None, None) => (None, None),
        }
    }

    /// The record that lifts the tombstones of `id` (see [`Tombstone::of`]).
    pub fn lift(clock: &Clock, id: &str) -> Tombstone {
        let mut t = Tombstone::new(clock, None, "", Vec::new(), Reason::Undo);
        t.lifts = Some(id.to_string());
        t
    }

    /// Lift the keep-outs of fact `id` that an undo of run `undoes` wrote
    /// (and those that name no run), none other.
    pub fn lift_kept_out(clock: &Clock, id: &str, undoes: &RunId) -> Tombstone {
        let mut t = Tombstone::lift(clock, id);
        t.undoes = Some(undoes.clone());
        t
    }

    /// Whether lift record `lift` takes this tombstone back.
    fn lifted_by(&self, lift: &Tombstone) -> bool {
        let Some(id) = &lift.lifts else { return false };
        if self.reason == Reason::Erase {
            return false;
        }
        self.of(id)
            && match &lift.undoes {
                None => true,
                Some(run) => self.undoes.as_ref().is_none_or(|mine| mine == run),
            }
    }

    /// Whether this tombstone was written by forgetting `id`: the entry
    /// or a pending fact forgotten on its own, each with the facts later
    /// kept out for saying the same.
    pub fn of(&self, id: &str) -> bool {
        self.lifts.is_none()
            && match (&self.entry, &self.restates) {
                (Some(e), _) => e == id,
                (None, Some(f)) => f == id,
                (None, None) => self.sources.len() == 1 && self.sources[0] == id,
            }
    }
}

/// All tombstones, indexed for the two questions asked of them.
#[derive(Debug, Default, Clone)]
pub struct Tombstones {
    pub all: Vec<Tombstone>,
    texts: HashSet<String>,
    /// [`Tombstone::hashes`], of every tombstone.
    hashes: HashSet<String>,
    facts: HashSet<FactId>,
    entries: HashSet<EntryId>,
}

impl Tombstones {
    pub fn load(path: &Path) -> Result<Tombstones> {
        let (all, _) = jsonl::read::<Tombstone>(path)
            .with_context(|| format!("reading {}", path.display()))?;
        Ok(Tombstones::from_vec(all))
    }

    pub(crate) fn from_vec(records: Vec<Tombstone>) -> Tombstones {
        let mut all: Vec<Tombstone> = Vec::with_capacity(records.len());
        for t in records {
            match &t.lifts {
                Some(_) => all.retain(|old| !old.lifted_by(&t)),
                None => all.push(t),
            }
        }
        let texts = all.iter().map(|t| t.text.clone()).collect();
        let hashes = all.iter().flat_map(|t| t.hashes.iter().cloned()).collect();
        let facts = all.iter().flat_map(|t| t.sources.iter().cloned()).collect();
        let entries = all.iter().filter_map(|t| t.entry.clone()).collect();
        Tombstones {
            all,
            texts,
            hashes,
            facts,
            entries,
        }
    }

    /// Whether a tombstone names entry `id` as forgotten (its forgetting
    /// did not finish if the entry is still in the file).
    pub fn names_entry(&self, id: &str) -> bool {
        self.entries.contains(id)
    }

    /// Whether a tombstone lists fact `id` itself (not only its text).
    pub fn names_fact(&self, id: &str) -> bool {
        self.facts.contains(id)
    }

    /// Every tombstone that keeps out a fact with this id and text.
    pub fn covering<'a>(&'a self, fact_id: &'a str, text: &str) -> Vec<&'a Tombstone> {
        let text = normalize(text);
        self.all
            .iter()
            .filter(|t| {
                t.sources.iter().any(|s| s == fact_id)
                    || (!t.text.is_empty() && t.text == text)
                    || (!t.hashes.is_empty() && t.hashes.contains(&short_hash(&text, 32)))
            })
            .collect()
    }

    /// Whether a fact (by id and text) has been forgotten.
    pub fn covers(&self, fact_id: &str, text: &str) -> bool {
        self.facts.contains(fact_id)
            || (!self.texts.is_empty() && self.texts.contains(&normalize(text)))
            || self.erased(text)
    }

    /// Whether an erasure keeps `text` out (by its hash).
    pub fn erased(&self, text: &str) -> bool {
        !self.hashes.is_empty() && self.hashes.contains(&erased_hash(text))
    }

    /// The receipts of erasures (reason [`Reason::Erase`]).
    pub fn receipts(&self) -> impl Iterator<Item = &Tombstone> {
        self.all.iter().filter(|t| t.reason == Reason::Erase)
    }

    /// The tombstone that forgets a fact by its text alone (the fact is a
    /// restatement of something forgotten, not one of the forgotten facts).
    pub fn restated(&self, fact_id: &str, text: &str) -> Option<&Tombstone> {
        if self.facts.contains(fact_id) {
            return None;
        }
        let hash = erased_hash(text);
        let text = normalize(text);
        self.all
            .iter()
            .find(|t| (!t.text.is_empty() && t.text == text) || t.hashes.contains(&hash))
    }

    pub fn len(&self) -> usize {
        self.all.len()
    }

    pub fn is_empty(&self) -> bool {
        self.all.is_empty()
    }
}

/// An erasure's rewrite ([`crate::erase`]): each tombstone through
/// `change` (see [`jsonl::rewrite`]), and `extra` appended; atomically.
pub(crate) fn erase(
    path: &Path,
    change: impl FnMut(&Tombstone) -> Option<Option<Tombstone>>,
    extra: &[Tombstone],
) -> Result<()> {
    jsonl::rewrite(path, change, extra)
        .map(drop)
        .with_context(|| format!("rewriting {}", path.display()))
}

/// Which of `texts` (the facts of an append) an erasure keeps out (by
/// hash): what an append asks under its day file's lock. A memory that
/// never erased anything holds no hash, and its tombstones are not parsed
/// at all.
pub(crate) fn erased_among(path: &Path, texts: &[&str]) -> Result<Vec<bool>> {
    let bytes = atomic::read_if_exists(path)
        .with_context(|| format!("reading {}", path.display()))?
        .unwrap_or_default();
    if !bytes.windows(HASHES.len()).any(|w| w == HASHES) {
        return Ok(vec![false; texts.len()]);
    }
    let stones = Tombstones::from_vec(jsonl::parse(path, &bytes).0);
    Ok(texts.iter().map(|t| stones.erased(t.trim())).collect())
}

/// How a tombstone with [`Tombstone::hashes`] is written.
const HASHES: &[u8] = b"\"hashes\"";

/// Append tombstones durably.
pub fn append(path: &Path, tombstones: &[Tombstone]) -> Result<()> {
    jsonl::append(path, tombstones).with_context(|| format!("appending to {}", path.display()))
}
