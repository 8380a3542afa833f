//! What `memd status` counts of the archive and the entries: each day
//! file's facts, which of them are pending and how many are forgotten, and
//! the entries by kind.
//!
//! A writer that lives (a daemon's, `memd mcp`'s) keeps the counts in its
//! [`super::fingerprints::Seen`] between requests, under the key of
//! everything the pending rule ([`crate::pending`]) reads: the
//! fingerprints' shared part (the state, the tombstones, the entries file
//! and the journal's length). It keeps the rule's inputs with them. A
//! status then counts again only the day files parsed anew since it last
//! counted (an append: the facts of one day), and every day file once
//! after a run, a forget or an edit changes what the rule reads. With no
//! key (no writer: a status without a daemon) everything is counted now
//! and nothing is kept. The key holds what the index's freshness holds
//! too: the journal by its length (it only grows, or goes), and a file
//! that cannot be read as if it were absent, so a kept count outlives a
//! state or tombstones file made unreadable after it was counted (`memd
//! check` reads them and says so).
//!
//! The count runs outside the writer's lock on its fingerprints: the
//! counts kept are taken out, counted, and kept again.
//!
//! What keeping costs: the state's watermark, the tombstones and the
//! entries' sources stay in memory while the writer lives (a set of fact
//! ids each, about the size of the watermark again), and a byte per fact.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use crate::Result;
use crate::archive::{Day, ParsedDays};
use crate::entries::Document;
use crate::ids::FactId;
use crate::layout::{Layout, rel};
use crate::pending::{Journal, Pending};
use crate::state::State;
use crate::tombstones::Tombstones;

/// One day file's facts as status counts them.
#[derive(Debug, Default)]
pub struct DayTally {
    /// Whether each fact of the day, in the day's order, is pending.
    pending: Vec<bool>,
    pending_count: usize,
    /// Facts a tombstone keeps out (forgotten, or restating a forgotten
    /// text).
    pub forgotten: usize,
}

impl DayTally {
    pub fn facts(&self) -> usize {
        self.pending.len()
    }

    pub fn pending(&self) -> usize {
        self.pending_count
    }

    /// Whether the day's fact at `at` (its place in [`Day::facts`]) is
    /// pending.
    pub fn is_pending(&self, at: usize) -> bool {
        self.pending.get(at).copied().unwrap_or(false)
    }
}

/// The entries of `consolidated/memory.md` as status counts them.
#[derive(Debug, Default)]
pub struct EntryTally {
    pub entries: usize,
    pub unsaved_hand_written: usize,
    pub edited_by_hand: usize,
    pub unreviewed: usize,
    pub pinned: usize,
    /// What the parse warned of, each line naming the file.
    pub warnings: Vec<String>,
}

impl EntryTally {
    fn of(doc: &Document) -> EntryTally {
        let mut t = EntryTally {
            warnings: (doc.warnings.iter())
                .map(|w| format!("{}: {w}", rel::ENTRIES))
                .collect(),
            ..EntryTally::default()
        };
        for e in doc.entries() {
            t.entries += 1;
            t.unsaved_hand_written += usize::from(e.meta.is_none());
            t.edited_by_hand += usize::from(e.meta.is_some() && e.edited_by_hand());
            t.unreviewed += usize::from(e.meta.as_ref().is_some_and(|m| m.unreviewed));
            t.pinned += usize::from(e.pinned());
        }
        t
    }
}

/// The counts of one status.
pub struct Tally {
    /// Each parsed day's, in the order of the days counted.
    pub days: Vec<Arc<DayTally>>,
    pub entries: Arc<EntryTally>,
    pub tombstones: usize,
    /// When the last run ended, as the state says.
    pub last_run: Option<String>,
}

/// What the pending rule reads, read once per key.
struct Rule {
    state: State,
    tombstones: Tombstones,
    sources: HashSet<FactId>,
}

/// The counts a writer keeps between requests, and the rule they were
/// counted by.
pub(super) struct Counted {
    /// What the rule read, when it was read ([`tally`]'s key).
    key: String,
    rule: Rule,
    entries: Arc<EntryTally>,
    /// By day: the parse counted (the same `Arc` while the day file has
    /// not changed) and its counts.
    days: HashMap<String, (Arc<Day>, Arc<DayTally>)>,
}

impl Counted {
    /// The rule and the entries' counts read now, under `key`.
    fn read(layout: &Layout, key: &str) -> Result<Counted> {
        let doc = Document::read(&layout.entries_file())?;
        let rule = Rule {
            tombstones: Tombstones::load(&layout.tombstones_file())?,
            state: State::load(&layout.state_file())?,
            sources: doc.sources().cloned().collect(),
        };
        Ok(Counted {
            key: key.to_string(),
            rule,
            entries: Arc::new(EntryTally::of(&doc)),
            days: HashMap::new(),
        })
    }
}

/// The counts of `days` (the archive as parsed) and of the entries, with
/// those `kept` under `key` reused where their day is the same parse and
/// the key the same; with a `key`, what was counted is kept for the next
/// call.
pub(super) fn tally(
    layout: &Layout,
    days: &ParsedDays,
    key: Option<&str>,
    kept: &mut Option<Counted>,
) -> Result<Tally> {
    let mut counted = match kept.take() {
        Some(c) if Some(c.key.as_str()) == key => c,
        _ => Counted::read(layout, key.unwrap_or_default())?,
    };
    let Rule {
        state,
        tombstones,
        sources,
    } = &counted.rule;
    let rule = Pending::kept(state, tombstones, sources, Journal::of(layout));
    let mut now = HashMap::with_capacity(days.len());
    let mut out = Vec::with_capacity(days.len());
    for (day, parsed) in days {
        let tally = match counted.days.get(day) {
            Some((was, tally)) if Arc::ptr_eq(was, parsed) => tally.clone(),
            _ => Arc::new(count_day(&rule, parsed)),
        };
        now.insert(day.clone(), (parsed.clone(), tally.clone()));
        out.push(tally);
    }
    counted.days = now;
    let tally = Tally {
        days: out,
        entries: counted.entries.clone(),
        tombstones: counted.rule.tombstones.len(),
        last_run: counted.rule.state.last_run.clone(),
    };
    if key.is_some() {
        *kept = Some(counted);
    }
    Ok(tally)
}

/// One day's facts counted by `rule`.
fn count_day(rule: &Pending<'_>, day: &Day) -> DayTally {
    let pending: Vec<bool> = day.facts.iter().map(|f| rule.is_pending(f)).collect();
    DayTally {
        pending_count: pending.iter().filter(|p| **p).count(),
        pending,
        forgotten: day.facts.iter().filter(|f| rule.is_forgotten(f)).count(),
    }
}
