//! Which archive facts still wait for consolidation: the one definition,
//! used by consolidation, `memd status`, `memd forget` and the index.
//!
//! A fact is settled when it is behind the watermark (the state says a
//! run folded it), forgotten (a tombstone covers it), or already in some
//! entry's `sources` (a run that wrote the entries but died before the
//! state). Every other fact is pending.

use std::collections::HashSet;

use crate::archive::Fact;
use crate::entries::Document;
use crate::state::State;
use crate::tombstones::Tombstones;

/// Why a fact needs no decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Settled {
    /// Behind the watermark.
    Done,
    /// A tombstone covers it.
    Forgotten,
    /// Some entry's `sources` names it.
    InEntry,
}

/// What decides whether a fact is pending.
pub struct Pending<'a> {
    state: &'a State,
    tombstones: &'a Tombstones,
    sources: HashSet<&'a str>,
}

impl<'a> Pending<'a> {
    pub fn new(state: &'a State, tombstones: &'a Tombstones, doc: &'a Document) -> Pending<'a> {
        let sources = doc
            .entries()
            .filter_map(|e| e.meta.as_ref())
            .flat_map(|m| m.sources.iter().map(|s| s.as_str()));
        Pending::with_sources(state, tombstones, sources)
    }

    /// The same rule, given the entries' sources (see
    /// [`crate::entries::sources`]) instead of the document.
    pub fn with_sources(
        state: &'a State,
        tombstones: &'a Tombstones,
        sources: impl IntoIterator<Item = &'a str>,
    ) -> Pending<'a> {
        Pending {
            state,
            tombstones,
            sources: sources.into_iter().collect(),
        }
    }

    /// `None` when `fact` is pending; otherwise why it is settled.
    pub(crate) fn settled(&self, fact: &Fact) -> Option<Settled> {
        if self.state.is_done(fact) {
            Some(Settled::Done)
        } else if self.tombstones.covers(&fact.id, &fact.text) {
            Some(Settled::Forgotten)
        } else if self.sources.contains(fact.id.as_str()) {
            Some(Settled::InEntry)
        } else {
            None
        }
    }

    pub(crate) fn is_pending(&self, fact: &Fact) -> bool {
        self.settled(fact).is_none()
    }
}

/// Append `lifts` (records that take tombstones back) to the tombstones
/// `stones` loaded under the entries lock. First, the facts they let back
/// in that a run decided while they were kept out, and that no entry
/// holds, come off the watermark: pending again, so the next run decides
/// them. Saved before the lifts: a crash between the two leaves them
/// pending and still kept out, never decided and held by nothing (hidden).
pub(crate) fn lift(
    layout: &crate::Layout,
    stones: &Tombstones,
    lifts: Vec<crate::tombstones::Tombstone>,
) -> crate::error::Result<()> {
    if lifts.is_empty() {
        return Ok(());
    }
    let mut all = stones.all.clone();
    all.extend(lifts.iter().cloned());
    let after = Tombstones::from_vec(all);
    let mut state = State::load(&layout.state_file())?;
    let doc = Document::read(&layout.entries_file())?;
    let held: HashSet<&str> = doc
        .entries()
        .filter_map(|e| e.meta.as_ref())
        .flat_map(|m| m.sources.iter().map(|s| s.as_str()))
        .collect();
    let (facts, _) = crate::archive::read_all(layout)?;
    let back: Vec<&Fact> = facts
        .iter()
        .filter(|f| stones.covers(&f.id, &f.text) && !after.covers(&f.id, &f.text))
        .filter(|f| state.is_done(f) && !held.contains(f.id.as_str()))
        .collect();
    if !back.is_empty() {
        for f in back {
            state.watermark.done.remove(&f.id);
        }
        state.save(&layout.state_file())?;
    }
    crate::tombstones::append(&layout.tombstones_file(), &lifts)
}
