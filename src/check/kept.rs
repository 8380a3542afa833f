//! What the user kept and what they forgot, checked from the files: every
//! acknowledged fact is exactly one of pending, held by a live entry, or
//! kept out by a tombstone that names the user's action; every entry in
//! the file is visible unless its forget is unfinished (a problem); the
//! journal's forgets agree with the files.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use super::memo::{Found, Session};
use super::{ENTRIES, Finding, Kind, Report, first_words};
use crate::archive::{Fact, ParsedDays};
use crate::consolidate::deleted_by_hand;
use crate::entries::Document;
use crate::ids::{EntryId, FactId};
use crate::journal::{self, Op, Record};
use crate::layout::rel;
use crate::pending::{Journal, Pending, Settled};
use crate::remedy::Remedy;
use crate::state::State;
use crate::text::normalize;
use crate::tombstones::{Reason, Tombstone, Tombstones};

/// An entry whose metadata was taken off by hand: id, normalised text,
/// sources.
type Unlabelled = (EntryId, String, Vec<FactId>);

/// Entries gone from the file by id that the next run settles: deleted by
/// hand (recorded as forgotten), or whose metadata a person took off (a
/// block still holds their text; given back their id and sources).
pub(super) struct NextRun {
    pub deleted_by_hand: HashSet<EntryId>,
    pub unlabelled: HashSet<EntryId>,
    /// Every entry the journal has records of.
    pub journaled: HashSet<EntryId>,
}

/// Live entries by the facts they hold.
type Holders<'a> = HashMap<&'a FactId, Vec<&'a EntryId>>;

/// What the findings of a day file's facts read besides the day file
/// (each part of its fingerprint's shared part).
struct Shared<'s> {
    holders: Holders<'s>,
    rule: Pending<'s>,
    by_hand: HashSet<&'s FactId>,
    by_hidden: HashSet<&'s FactId>,
}

/// The files the check reads, read once.
pub(super) struct Files<'a> {
    pub days: &'a ParsedDays,
    pub doc: &'a Document,
    pub state: &'a State,
    pub tombstones: &'a Tombstones,
    pub journal: &'a [Record],
}

impl Files<'_> {
    /// Check; the entries the next run settles (for MEMORY.md's check),
    /// read once.
    /// What `kept` holds of a day file at its fingerprint is taken as
    /// found, and what is found anew given to it.
    pub(super) fn check(&self, kept: &mut Session<'_>, report: &mut Report) -> NextRun {
        let by_hand = self.deleted_by_hand();
        let lineage = journal::lineage(self.journal);
        let unlabelled = deleted_by_hand::unlabelled(self.doc, &lineage, self.tombstones);
        self.facts_accounted((&by_hand, &unlabelled), kept, report);
        self.declared_fact_updates(report);
        self.entries_visible(report);
        self.journal_agrees(report);
        self.edits_landed(report);
        NextRun {
            deleted_by_hand: by_hand.into_keys().collect(),
            unlabelled: unlabelled.into_iter().map(|(id, ..)| id).collect(),
            journaled: lineage.into_keys().collect(),
        }
    }

    /// The ids and the normalised texts of the entries in the file.
    fn in_file(&self) -> (HashSet<&str>, HashSet<String>) {
        let entries = self.doc.entries();
        let ids = entries.filter_map(|e| e.id()).map(|i| i.as_str()).collect();
        let texts = self.doc.entries().map(|e| normalize(&e.text)).collect();
        (ids, texts)
    }

    /// Entries memd wrote that a person deleted from the file since (the
    /// next run records them as forgotten), with the facts they held.
    fn deleted_by_hand(&self) -> HashMap<EntryId, Vec<FactId>> {
        let (in_file, texts) = self.in_file();
        journal::lineage(self.journal)
            .into_iter()
            .filter(|(id, l)| {
                let text = l.text.as_deref().map(normalize).unwrap_or_default();
                l.alive && !in_file.contains(id.as_str()) && !texts.contains(&text)
            })
            .filter(|(id, _)| !self.tombstones.names_entry(id.as_str()))
            .map(|(id, l)| (id, l.sources))
            .collect()
    }

    /// Live entries (in the file, named by no tombstone) by the facts they
    /// hold.
    fn holders(&self) -> Holders<'_> {
        let mut out: HashMap<&FactId, Vec<&EntryId>> = HashMap::new();
        for m in self.doc.entries().filter_map(|e| e.meta.as_ref()) {
            if self.tombstones.names_entry(m.id.as_str()) {
                continue;
            }
            for s in &m.sources {
                out.entry(s).or_default().push(&m.id);
            }
        }
        out
    }

    /// Each day file's facts: pending, in one live entry, or kept out for
    /// a reason; and the entries they declared they supersede. What
    /// `kept` holds of a day is taken as found.
    fn facts_accounted(
        &self,
        (by_hand, unlabelled): (&HashMap<EntryId, Vec<FactId>>, &[Unlabelled]),
        kept: &mut Session<'_>,
        report: &mut Report,
    ) {
        let mut shared = None;
        for (day, parsed) in self.days.iter() {
            let found = match kept.found(day) {
                Some(found) => found,
                None => {
                    let shared = shared.get_or_insert_with(|| self.shared(by_hand, unlabelled));
                    let found = Arc::new(self.day_found(&parsed.facts, shared));
                    kept.keep(day, found.clone());
                    found
                }
            };
            report.problems.extend(found.problems.iter().cloned());
            report.notes.extend(found.notes.iter().cloned());
        }
    }

    /// What the findings of every day's facts read besides the day file.
    fn shared<'s>(
        &'s self,
        by_hand: &'s HashMap<EntryId, Vec<FactId>>,
        unlabelled: &'s [Unlabelled],
    ) -> Shared<'s> {
        Shared {
            holders: self.holders(),
            rule: Pending::new(
                self.state,
                self.tombstones,
                self.doc,
                Journal::Read(self.journal),
            ),
            by_hand: by_hand
                .values()
                .flatten()
                .chain(unlabelled.iter().flat_map(|(.., sources)| sources))
                .collect(),
            by_hidden: self.held_by_hidden(),
        }
    }

    /// What [`Files::facts_accounted`] finds of one day file's `facts`.
    fn day_found(&self, facts: &[Fact], shared: &Shared<'_>) -> Found {
        let mut report = Report::default();
        for f in facts {
            self.fact_accounted(f, shared, &mut report);
        }
        self.declared_updates(facts, &shared.holders, &mut report);
        Found {
            problems: report.problems,
            notes: report.notes,
        }
    }

    /// Fact `f`: pending, in one live entry, or kept out for a reason.
    fn fact_accounted(&self, f: &Fact, shared: &Shared<'_>, report: &mut Report) {
        let file = rel::archive_file(&f.day);
        let by = (shared.holders.get(&f.id).map(Vec::as_slice)).unwrap_or_default();
        let stones = self.tombstones.covering(f.id.as_str(), &f.text);
        held_wrongly(f, &file, by, &stones, report);
        self.kept_out_by_no_deletion(f, &file, &stones, report);
        let settled = shared.rule.settled(f);
        if settled.is_none() && self.state.is_done(f) {
            let what = format!(
                "fact {} was decided, but no entry of the file or of its journal holds it and no tombstone covers it: it is pending again, and the next consolidation decides it ({:?})",
                f.id,
                first_words(&f.text)
            );
            report.note(Kind::DecidedAgain, &file, Some(f.line), what);
        }
        let done = settled == Some(Settled::Done);
        let waiting = shared.by_hand.contains(&f.id); // the entry's note says it
        let hidden = shared.by_hidden.contains(&f.id);
        if done && by.is_empty() && stones.is_empty() && !hidden && !waiting {
            report.problem(
                Kind::FactHidden,
                &file,
                Some(f.line),
                format!("fact {} was decided, and the journal says an entry holds it, but no entry of the file does and no tombstone covers it: it is hidden ({:?}); was it taken out of an entry's sources by hand?", f.id, first_words(&f.text)),
            );
        }
    }

    /// Fact `f`'s stones all name a hand deletion that never happened: a
    /// problem, which undoing that deletion fixes.
    fn kept_out_by_no_deletion(
        &self,
        f: &Fact,
        file: &str,
        stones: &[&Tombstone],
        report: &mut Report,
    ) {
        if stones.is_empty() || !stones.iter().all(|t| self.no_such_hand_deletion(t)) {
            return;
        }
        let deleted = stones[0].entry.as_ref().map_or("?", |e| e.as_str());
        let what = format!(
            "fact {} is kept out by a hand deletion of {deleted} that never happened ({:?})",
            f.id,
            first_words(&f.text),
        );
        let undo = stones[0]
            .entry
            .as_ref()
            .map_or(f.id.as_str(), |e| e.as_str());
        let fix = Remedy::Unforget {
            id: undo.to_string(),
        };
        report
            .problems
            .push(Finding::new(Kind::NoSuchHandDeletion, file, Some(f.line), what).fixed_by(fix));
    }

    /// Each decided fact that declared what it supersedes, held by an
    /// entry beside a live, unpinned entry it named: a note (the run
    /// replaces every target that is live and unpinned when it decides,
    /// which the random test asserts; a target pinned or forgotten then
    /// and back since is the person's).
    fn declared_updates(&self, facts: &[Fact], holders: &Holders<'_>, report: &mut Report) {
        for f in facts.iter().filter(|f| !f.supersedes.is_empty()) {
            let Some(held) = holders.get(&f.id).and_then(|h| h.first()) else {
                continue;
            };
            for t in &f.supersedes {
                let live = self
                    .doc
                    .get(t.as_str())
                    .is_some_and(|e| e.meta.is_some() && !e.pinned())
                    && !self.tombstones.names_entry(t.as_str());
                if live && t != *held {
                    let what = format!(
                        "fact {} declared it supersedes {t} and is held by {held}, while {t} is live (it was pinned or forgotten when the run decided); if it is no longer true, forget it",
                        f.id
                    );
                    let file = rel::archive_file(&f.day);
                    let fix = Remedy::Forget { id: t.to_string() };
                    report.notes.push(
                        Finding::new(Kind::SupersededLive, &file, Some(f.line), what).fixed_by(fix),
                    );
                }
            }
        }
    }

    /// Each decided fact that declared it supersedes pending facts: the
    /// run folds each such fact that is pending then into the declaring
    /// fact's entry as history. One pending now beside the decided fact,
    /// or held by another live entry, is a note, as for entries: it was
    /// forgotten or under review when the run decided, and is back since
    /// (the random test found both); the next run judges it as any fact.
    fn declared_fact_updates(&self, report: &mut Report) {
        let holders = self.holders();
        let rule = Pending::new(
            self.state,
            self.tombstones,
            self.doc,
            Journal::Read(self.journal),
        );
        let facts = self.days.iter().flat_map(|(_, parsed)| parsed.facts.iter());
        let mut by_id = None;
        for f in facts.filter(|f| !f.supersedes_facts.is_empty()) {
            let Some(held) = holders.get(&f.id).and_then(|h| h.first()) else {
                continue;
            };
            let file = rel::archive_file(&f.day);
            for t in (f.supersedes_facts.iter()).filter_map(|t| self.fact(t, &mut by_id)) {
                if !self.tombstones.covering(t.id.as_str(), &t.text).is_empty() {
                    continue;
                }
                let other = holders.get(&t.id).and_then(|h| h.first());
                if other.is_none() && rule.settled(t).is_none() {
                    let what = format!(
                        "fact {} declared it supersedes fact {} and is held by {held}, while {} is pending (it was forgotten or under review when the run decided): the next run judges it as any fact; if it is no longer true, forget it",
                        f.id, t.id, t.id
                    );
                    let fix = Remedy::Forget {
                        id: t.id.to_string(),
                    };
                    report.notes.push(
                        Finding::new(Kind::SupersededPending, &file, Some(f.line), what)
                            .fixed_by(fix),
                    );
                } else if let Some(other) = other.filter(|o| *o != held) {
                    let what = format!(
                        "fact {} declared it supersedes fact {}, which entry {other} holds beside {held}; if {other} is no longer true, forget it",
                        f.id, t.id
                    );
                    let fix = Remedy::Forget {
                        id: other.to_string(),
                    };
                    report.notes.push(
                        Finding::new(Kind::SupersededLive, &file, Some(f.line), what).fixed_by(fix),
                    );
                }
            }
        }
    }

    /// The fact `id`: looked for in the day file its id names (where memd
    /// wrote it), else (a line moved by hand) among every fact, by `by_id`,
    /// made once.
    fn fact<'f>(
        &'f self,
        id: &FactId,
        by_id: &mut Option<HashMap<&'f FactId, &'f Fact>>,
    ) -> Option<&'f Fact> {
        let day = id.as_str().split('#').next().unwrap_or_default();
        let at = self.days.binary_search_by(|(d, _)| d.as_str().cmp(day));
        let named = at.ok().map(|i| &self.days[i].1.facts);
        if let Some(f) = named.and_then(|facts| facts.iter().find(|f| f.id == *id)) {
            return Some(f);
        }
        let by_id = by_id.get_or_insert_with(|| {
            let facts = self.days.iter().flat_map(|(_, parsed)| parsed.facts.iter());
            facts.map(|f| (&f.id, f)).collect()
        });
        by_id.get(id).copied()
    }

    /// The facts entries a tombstone hides hold (reported once, as those
    /// entries).
    fn held_by_hidden(&self) -> HashSet<&FactId> {
        self.doc
            .entries()
            .filter_map(|e| e.meta.as_ref())
            .filter(|m| self.tombstones.names_entry(m.id.as_str()))
            .flat_map(|m| m.sources.iter())
            .collect()
    }

    /// A tombstone for a hand deletion that did not happen: it names a
    /// fact (a fact is never an entry), or an entry whose text is still
    /// in the file under its id.
    fn no_such_hand_deletion(&self, t: &Tombstone) -> bool {
        if t.reason != Reason::DeletedByHand {
            return false;
        }
        let Some(id) = &t.entry else { return false };
        if FactId::looks_like(id.as_str()) {
            return true;
        }
        self.doc
            .get(id.as_str())
            .is_some_and(|e| normalize(&e.text) == t.text)
    }

    /// Entries in the file that a tombstone hides, or whose text says what
    /// was forgotten (visible: a note).
    fn entries_visible(&self, report: &mut Report) {
        for e in self.doc.entries() {
            let text = normalize(&e.text);
            match e.id() {
                Some(id) if self.tombstones.names_entry(id.as_str()) => {
                    let what = format!(
                        "entry {id} is in the file but forgotten, so search and MEMORY.md leave it out ({:?}): its forget did not finish; forgetting it again finishes it (bringing it back takes the forget back)",
                        first_words(&e.text)
                    );
                    let fix = Remedy::Forget { id: id.to_string() };
                    report
                        .problems
                        .push(Finding::new(Kind::EntryHidden, ENTRIES, None, what).fixed_by(fix));
                }
                _ if !text.is_empty() && self.tombstones.all.iter().any(|t| t.text == text) => {
                    let what = format!(
                        "{} says what was forgotten, and stays visible (a tombstone keeps facts out, never a live entry): {:?}",
                        e.id().map_or("a block", |id| id.as_str()),
                        first_words(&e.text)
                    );
                    report.note(Kind::EntrySaysForgotten, ENTRIES, None, what);
                }
                _ => {}
            }
        }
    }

    /// The journal's last word on each entry against the file: a forget
    /// it records is not undone by the file; an entry it says memd wrote
    /// and nothing removed is in the file, or was deleted by hand (a note:
    /// the next run records it).
    fn journal_agrees(&self, report: &mut Report) {
        let (in_file, texts) = self.in_file();
        let last = last_ops(self.journal);
        for (id, l) in journal::lineage(self.journal) {
            let here = in_file.contains(id.as_str());
            let forgot = last.get(&id) == Some(&Op::Forget);
            if forgot && here && !self.tombstones.names_entry(id.as_str()) {
                let what = format!(
                    "the journal says {id} was forgotten, but it is in the file and no tombstone keeps it out: the forget did not finish; forgetting it again finishes it"
                );
                let fix = Remedy::Forget { id: id.to_string() };
                report.problems.push(
                    Finding::new(Kind::JournalDisagrees, rel::JOURNAL, None, what).fixed_by(fix),
                );
            }
            let text = l.text.as_deref().map(normalize).unwrap_or_default();
            if l.alive && !here && self.tombstones.names_entry(id.as_str()) {
                let what = format!(
                    "{id} is forgotten, but the journal does not say so (its journal write failed); bringing it back restores it as the journal last had it"
                );
                let fix = Remedy::Unforget { id: id.to_string() };
                report.problems.push(
                    Finding::new(Kind::JournalDisagrees, rel::JOURNAL, None, what).fixed_by(fix),
                );
            } else if l.alive && !here && !texts.contains(&text) {
                let what = format!(
                    "{id} was deleted by hand; the next consolidation records its facts as forgotten ({:?})",
                    first_words(l.text.as_deref().unwrap_or_default())
                );
                report.note(Kind::DeletedByHand, ENTRIES, None, what);
            }
        }
    }
}

impl Files<'_> {
    /// An entry whose last record is an `EDIT` ([`crate::edit`]) holds
    /// the text the edit gave it, unless a person changed the text since
    /// (its hash then says so): else the edit was journaled and died
    /// before its text landed.
    fn edits_landed(&self, report: &mut Report) {
        let mut last: HashMap<&str, &Record> = HashMap::new();
        for r in self.journal.iter().filter(|r| r.op != Op::Suppress) {
            last.insert(r.entry.as_str(), r);
        }
        // An erasure took the texts out of its records.
        last.retain(|_, r| r.erased.is_none());
        for e in self.doc.entries().filter(|e| !e.edited_by_hand()) {
            let Some(id) = e.id() else { continue };
            let Some(r) = last.get(id.as_str()).filter(|r| r.op == Op::Edit) else {
                continue;
            };
            if r.after.as_deref().map(str::trim) != Some(e.text.trim()) {
                let what = format!(
                    "the journal records an edit of {id} (run {}) that the file does not have: the edit did not finish; make it again",
                    r.run
                );
                report.problem(Kind::JournalDisagrees, rel::JOURNAL, None, what);
            }
        }
    }
}

/// Each entry's last op in the journal (of those that name entries).
fn last_ops(records: &[Record]) -> HashMap<EntryId, Op> {
    records
        .iter()
        .filter(|r| r.op != Op::Suppress && !FactId::looks_like(&r.entry))
        .map(|r| (EntryId::stored(&r.entry), r.op))
        .collect()
}

/// Fact `f`, held by entries `by`, covered by `stones`: a problem when two
/// entries hold it, or when an entry holds it though it was forgotten
/// (it is back in search; forgetting the entry fixes it).
fn held_wrongly(f: &Fact, file: &str, by: &[&EntryId], stones: &[&Tombstone], report: &mut Report) {
    if by.len() > 1 {
        let names = join(by);
        let what = format!(
            "fact {} is in the sources of {} entries ({names})",
            f.id,
            by.len()
        );
        report.problem(Kind::HeldTwice, file, Some(f.line), what);
    }
    let named = stones.iter().find(|t| t.sources.contains(&f.id));
    if let (Some(e), Some(t)) = (by.first(), named) {
        let what = format!(
            "fact {} was forgotten ({}) but entry {e} still holds it: it is back in search ({:?})",
            f.id,
            t.reason.as_str(),
            first_words(&f.text)
        );
        let fix = Remedy::Forget { id: e.to_string() };
        report
            .problems
            .push(Finding::new(Kind::ForgottenButHeld, file, Some(f.line), what).fixed_by(fix));
    }
}

fn join(ids: &[&EntryId]) -> String {
    ids.iter()
        .map(|i| i.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}
