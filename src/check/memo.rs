//! What a process whose index is open (a daemon) keeps of its checks of
//! the archive's facts: each day file's findings, by the day file's
//! fingerprint ([`crate::index::fingerprints`]). A fingerprint hashes the
//! day file and everything the findings of its facts read besides (the
//! state, the tombstones, the entries file and the journal), so while it
//! is the same the findings are; a check after an append looks again at
//! the day file that grew, not at every fact. A finding is kept only if
//! the day's fingerprint held from before the check read the files to
//! after.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use arc_swap::ArcSwapOption;

use super::finding::Finding;
use crate::layout::Source;

/// The fingerprint of each source file.
type Prints = BTreeMap<Source, String>;

/// What a check found of one day file's facts.
#[derive(Debug, Default)]
pub(super) struct Found {
    pub problems: Vec<Finding>,
    pub notes: Vec<Finding>,
}

/// Day → the fingerprint its findings were made at, and the findings.
type Days = HashMap<String, (String, Arc<Found>)>;

/// Each day file's findings, by fingerprint (taken out while a check runs:
/// two checks at once are each correct, the second finding everything).
#[derive(Default)]
pub struct ByDay(ArcSwapOption<Days>);

/// One check's use of [`ByDay`]: the fingerprints before it read the
/// files, what was kept, and what it found.
pub(super) struct Session<'a> {
    kept: Option<&'a ByDay>,
    before: Arc<Prints>,
    old: Days,
    new: Days,
}

impl ByDay {
    /// A check starts, the files' fingerprints being `before`.
    pub(super) fn begin(&self, before: Arc<Prints>) -> Session<'_> {
        let old = match self.0.swap(None) {
            Some(days) => Arc::unwrap_or_clone(days),
            None => Days::new(),
        };
        Session {
            kept: Some(self),
            before,
            old,
            new: Days::new(),
        }
    }
}

impl Session<'_> {
    /// A check that keeps nothing.
    pub(super) fn none() -> Session<'static> {
        Session {
            kept: None,
            before: Arc::default(),
            old: Days::new(),
            new: Days::new(),
        }
    }

    fn print(&self, day: &str) -> Option<&String> {
        self.before.get(&Source::Day(day.to_string()))
    }

    /// What was found of `day` at its fingerprint now, if anything.
    pub(super) fn found(&mut self, day: &str) -> Option<Arc<Found>> {
        let (print, found) = self.old.remove(day)?;
        if self.print(day) != Some(&print) {
            return None;
        }
        self.new.insert(day.to_string(), (print, found.clone()));
        Some(found)
    }

    /// What was found of `day` now.
    pub(super) fn keep(&mut self, day: &str, found: Arc<Found>) {
        if let Some(print) = self.print(day).cloned() {
            self.new.insert(day.to_string(), (print, found));
        }
    }

    /// The check ended, the fingerprints being `after`: what it found of
    /// each day whose fingerprint held is kept.
    pub(super) fn end(mut self, after: &Prints) {
        let Some(kept) = self.kept else { return };
        self.new
            .retain(|day, (print, _)| after.get(&Source::Day(day.clone())) == Some(&*print));
        kept.0.store(Some(Arc::new(std::mem::take(&mut self.new))));
    }
}
