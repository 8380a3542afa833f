//! Which archive facts still wait for consolidation: the one definition,
//! used by consolidation, `memd status`, `memd forget` and the index.
//!
//! A fact is settled when it is behind the watermark (the state says a
//! run folded it), forgotten (a tombstone covers it), or already in some
//! entry's `sources` (a run that wrote the entries but died before the
//! state). Every other fact is pending.
//!
//! A fact behind the watermark is settled only while something still
//! accounts for it: an entry of the file holds it, a tombstone covers it,
//! or the journal says an entry holds it (one deleted by hand, which the
//! next run records as forgotten). A decided fact that nothing accounts
//! for (a person deleted `consolidated/`, or the entries file and its
//! journal) is pending again, and the next run decides it anew: a
//! duplicate can be forgotten, a fact hidden for good cannot be found.
//! The journal is read only when such a fact is met, so the rule costs
//! nothing while every decided fact is held.

use std::cell::OnceCell;
use std::collections::HashSet;
use std::path::PathBuf;

use crate::archive::{self, Fact};
use crate::entries::Document;
use crate::ids::FactId;
use crate::state::State;
use crate::tombstones::{Tombstone, Tombstones, append};
use crate::{Layout, Result, journal};

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

/// The journal the rule reads when it needs to (see the module doc).
pub enum Journal<'a> {
    /// `consolidated/journal.jsonl`, read when first needed.
    At(PathBuf),
    /// Its records, read already.
    Read(&'a [journal::Record]),
}

impl Journal<'_> {
    /// The journal of the memory `layout` lays out.
    pub fn of(layout: &Layout) -> Journal<'static> {
        Journal::At(layout.journal_file())
    }
}

/// The facts the entries hold: collected for one use, or kept by the
/// caller ([`Pending::kept`]).
enum Sources<'a> {
    Collected(HashSet<&'a str>),
    Kept(&'a HashSet<FactId>),
}

impl Sources<'_> {
    fn contains(&self, id: &str) -> bool {
        match self {
            Sources::Collected(s) => s.contains(id),
            Sources::Kept(s) => s.contains(id),
        }
    }
}

/// What decides whether a fact is pending.
pub struct Pending<'a> {
    state: &'a State,
    tombstones: &'a Tombstones,
    sources: Sources<'a>,
    journal: Journal<'a>,
    /// The facts of the entries the journal says are alive (`None`: the
    /// journal could not be read), read when first needed.
    journaled: OnceCell<Option<HashSet<FactId>>>,
}

impl<'a> Pending<'a> {
    /// The rule for the memory whose journal is `journal`.
    pub fn new(
        state: &'a State,
        tombstones: &'a Tombstones,
        doc: &'a Document,
        journal: Journal<'a>,
    ) -> Pending<'a> {
        let sources = doc.sources().map(FactId::as_str);
        Pending::with_sources(state, tombstones, sources, journal)
    }

    /// The same rule, given the entries' sources (see
    /// [`crate::entries::sources`]) instead of the document.
    pub fn with_sources(
        state: &'a State,
        tombstones: &'a Tombstones,
        sources: impl IntoIterator<Item = &'a str>,
        journal: Journal<'a>,
    ) -> Pending<'a> {
        let sources = Sources::Collected(sources.into_iter().collect());
        Pending::of(state, tombstones, sources, journal)
    }

    /// The same rule, given the entries' sources as a set the caller keeps
    /// (from [`Document::sources`]): nothing is collected for this use.
    pub fn kept(
        state: &'a State,
        tombstones: &'a Tombstones,
        sources: &'a HashSet<FactId>,
        journal: Journal<'a>,
    ) -> Pending<'a> {
        Pending::of(state, tombstones, Sources::Kept(sources), journal)
    }

    fn of(
        state: &'a State,
        tombstones: &'a Tombstones,
        sources: Sources<'a>,
        journal: Journal<'a>,
    ) -> Pending<'a> {
        Pending {
            state,
            tombstones,
            sources,
            journal,
            journaled: OnceCell::new(),
        }
    }

    /// `None` when `fact` is pending; otherwise why it is settled.
    pub(crate) fn settled(&self, fact: &Fact) -> Option<Settled> {
        if self.state.is_done(fact) {
            self.accounted(fact).then_some(Settled::Done)
        } else if self.tombstones.covers(&fact.id, &fact.text) {
            Some(Settled::Forgotten)
        } else if self.sources.contains(fact.id.as_str()) {
            Some(Settled::InEntry)
        } else {
            None
        }
    }

    /// Whether a tombstone covers `fact` (its id, or its text forgotten),
    /// whether or not it is behind the watermark: a fact forgotten and
    /// then passed by a run is still forgotten.
    pub(crate) fn is_forgotten(&self, fact: &Fact) -> bool {
        self.tombstones.covers(&fact.id, &fact.text)
    }

    pub(crate) fn is_pending(&self, fact: &Fact) -> bool {
        self.settled(fact).is_none()
    }

    /// Whether a decided fact is still accounted for (see the module
    /// doc): held by an entry of the file, covered by a tombstone, or
    /// held by an entry the journal says is alive. A journal memd cannot
    /// read accounts for every fact (as before this rule: `memd check`
    /// reports the journal).
    fn accounted(&self, fact: &Fact) -> bool {
        if self.sources.contains(fact.id.as_str()) || self.tombstones.covers(&fact.id, &fact.text) {
            return true;
        }
        let journaled = self.journaled.get_or_init(|| {
            let read;
            let records = match &self.journal {
                Journal::At(path) => {
                    read = journal::read(path)
                        .inspect_err(|e| tracing::warn!("{e:#}"))
                        .ok()?;
                    &read
                }
                Journal::Read(records) => *records,
            };
            let alive = journal::lineage(records).into_values().filter(|l| l.alive);
            Some(alive.flat_map(|l| l.sources).collect())
        });
        journaled
            .as_ref()
            .is_none_or(|held| held.contains(&fact.id))
    }
}

/// Append `lifts` (records that take tombstones back) to the tombstones
/// `stones` loaded under the entries lock. First, the facts they let back
/// in that a run decided while they were kept out, and that no entry
/// holds, come off the watermark: pending again, so the next run decides
/// them. Saved before the lifts: a crash between the two leaves them
/// pending and still kept out, never decided and held by nothing (hidden).
pub(crate) fn lift(layout: &Layout, stones: &Tombstones, lifts: Vec<Tombstone>) -> Result<()> {
    if lifts.is_empty() {
        return Ok(());
    }
    let mut all = stones.all.clone();
    all.extend(lifts.iter().cloned());
    let after = Tombstones::from_vec(all);
    let mut state = State::load(&layout.state_file())?;
    let doc = Document::read(&layout.entries_file())?;
    let held: HashSet<&str> = doc.sources().map(FactId::as_str).collect();
    let (facts, _) = archive::read_all(layout)?;
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
    append(&layout.tombstones_file(), &lifts)
}
