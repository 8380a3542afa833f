//! `.tombstones.jsonl`: what was forgotten, so it never comes back.
//!
//! A tombstone holds the normalised text of a forgotten entry and the ids of
//! its source facts. Indexing and consolidation skip any fact whose id is
//! listed or whose normalised text matches, so neither `reindex --clear` nor
//! an archive line that restates the fact later resurrects it.

use std::collections::HashSet;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::clock::Clock;
use crate::error::{Context, Result};
use crate::ids::{EntryId, FactId};
use crate::jsonl;
use crate::text::normalize;

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
    /// `forget`, `hand-removed`, …
    #[serde(default)]
    pub reason: String,
    /// A lift (`memd forget --undo`): the entry or fact id whose earlier
    /// tombstones no longer count. The file stays append-only, so what was
    /// forgotten and when it was brought back both stay on record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lifts: Option<String>,
}

impl Tombstone {
    /// A tombstone for `text` (normalised here) and its sources, stamped
    /// with the time `clock` gives.
    pub fn new(
        clock: &Clock,
        entry: Option<EntryId>,
        text: &str,
        sources: Vec<FactId>,
        reason: &str,
    ) -> Tombstone {
        Tombstone {
            ts: clock.timestamp(),
            entry,
            text: normalize(text),
            sources,
            reason: reason.to_string(),
            lifts: None,
        }
    }

    /// The record that lifts the tombstones of `id` (see [`Tombstone::of`]).
    pub fn lift(clock: &Clock, id: &str) -> Tombstone {
        let mut t = Tombstone::new(clock, None, "", Vec::new(), "undo");
        t.lifts = Some(id.to_string());
        t
    }

    /// Whether this tombstone was written by forgetting `id`: the entry
    /// (with its facts, and facts later kept out for saying the same), or
    /// a pending fact forgotten on its own.
    pub fn of(&self, id: &str) -> bool {
        self.lifts.is_none()
            && match &self.entry {
                Some(e) => e == id,
                None => self.sources.len() == 1 && self.sources[0] == id,
            }
    }
}

/// All tombstones, indexed for the two questions asked of them.
#[derive(Debug, Default, Clone)]
pub struct Tombstones {
    pub all: Vec<Tombstone>,
    texts: HashSet<String>,
    facts: HashSet<FactId>,
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
                Some(id) => all.retain(|old| !old.of(id)),
                None => all.push(t),
            }
        }
        let texts = all.iter().map(|t| t.text.clone()).collect();
        let facts = all.iter().flat_map(|t| t.sources.iter().cloned()).collect();
        Tombstones { all, texts, facts }
    }

    /// Whether a fact (by id and text) has been forgotten.
    pub fn covers(&self, fact_id: &str, text: &str) -> bool {
        self.facts.contains(fact_id)
            || (!self.texts.is_empty() && self.texts.contains(&normalize(text)))
    }

    /// The tombstone that forgets a fact by its text alone (the fact is a
    /// restatement of something forgotten, not one of the forgotten facts).
    pub fn restated(&self, fact_id: &str, text: &str) -> Option<&Tombstone> {
        if self.facts.contains(fact_id) {
            return None;
        }
        let text = normalize(text);
        self.all.iter().find(|t| t.text == text)
    }

    pub fn len(&self) -> usize {
        self.all.len()
    }

    pub fn is_empty(&self) -> bool {
        self.all.is_empty()
    }
}

/// Append tombstones durably.
pub fn append(path: &Path, tombstones: &[Tombstone]) -> Result<()> {
    jsonl::append(path, tombstones).with_context(|| format!("appending to {}", path.display()))
}
