//! The oracle: `memd check` (every invariant it states), and a ledger of
//! what the user did, kept apart from memd's own rules:
//! - every acknowledged fact is still in the archive;
//! - a fact the user kept (acknowledged, never forgotten, its text never
//!   touched by a forget) is held by a live entry, or pending and found by
//!   search; no tombstone keeps it out;
//! - a fact the user forgot stays out: a tombstone keeps it out, no live
//!   entry holds it, and search never gives it;
//! - every entry in the file is found by search.
//!
//! Facts whose text a forget, a keep-out or a hand deletion touched
//! without naming them are left to `memd check` (memd's rule for them, a
//! restatement of what was forgotten stays out, is by design).

use std::collections::{BTreeMap, BTreeSet, HashSet};

use memd::entries::Document;
use memd::text::normalize;
use memd::tombstones::Tombstones;

use super::world::World;

#[derive(Debug, Default, Clone)]
pub struct Ledger {
    /// Every fact memd acknowledged (or a person wrote): id → text.
    pub acked: BTreeMap<String, String>,
    /// Facts the user forgot, by the forget (entry, fact or run id) that
    /// forgot them.
    forgotten: BTreeMap<String, (Vec<String>, Vec<String>)>,
    /// The forgets in order, for `forget --undo`.
    pub forget_order: Vec<String>,
    /// Facts left to `memd check`.
    pub uncertain: BTreeSet<String>,
    /// Texts of entries deleted by hand: the next run keeps them out.
    deleted_texts: HashSet<String>,
    /// Runs of `undo --keep-out` (their facts, in `forgotten`).
    undo_runs: BTreeSet<String>,
    /// Entries deleted by hand (their forgetting is memd's to record).
    hand_deleted: HashSet<String>,
    /// Facts erased (`memd forget --erase`): redaction lines in the archive.
    pub erased: BTreeSet<String>,
    /// Their texts, normalised.
    erased_texts: HashSet<String>,
    /// Facts a person wrote by hand that say an erased text again: on
    /// disk again, which `memd check` reports (and says how to erase).
    pub said_again: BTreeSet<String>,
    /// Forgets taken back (`forget --undo`, an undo of an undo): in the
    /// two-copy mode, the other copy's ledger may still hold them.
    lifted: BTreeSet<String>,
    /// Forgets (and entries deleted by hand) of the other copy that may
    /// have arrived while the remote withheld part of what it published.
    heard: BTreeSet<String>,
}

impl Ledger {
    pub fn known(&self) -> HashSet<&str> {
        self.acked.keys().map(String::as_str).collect()
    }

    pub fn acked(&mut self, id: &str, text: &str) {
        if id.is_empty() {
            return;
        }
        self.acked.insert(id.to_string(), text.to_string());
        let norm = normalize(text);
        if self.forgotten_texts().contains(&norm) || self.deleted_texts.contains(&norm) {
            self.uncertain.insert(id.to_string());
        }
    }

    fn forgotten_texts(&self) -> HashSet<String> {
        self.forgotten
            .values()
            .flat_map(|(_, t)| t.iter().map(|t| normalize(t)))
            .collect()
    }

    pub fn forgotten_ids(&self) -> HashSet<&str> {
        self.forgotten
            .values()
            .flat_map(|(ids, _)| ids.iter().map(String::as_str))
            .collect()
    }

    /// A forget of `ids` (and of `texts`): facts of the same text that it
    /// does not name are memd's to decide.
    fn forgot(&mut self, by: &str, ids: Vec<String>, texts: Vec<String>) {
        let norm: HashSet<String> = texts.iter().map(|t| normalize(t)).collect();
        for (id, t) in &self.acked {
            if norm.contains(&normalize(t)) && !ids.contains(id) {
                self.uncertain.insert(id.clone());
            }
        }
        self.forgotten.insert(by.to_string(), (ids, texts));
        // Forgotten again after a `forget --undo` of it: in force.
        self.lifted.remove(by);
        self.forget_order.retain(|f| f != by);
        self.forget_order.push(by.to_string());
    }

    /// An erasure of `by` (an entry or a fact), of `facts` and `texts`:
    /// forgotten for good (no `forget --undo` takes it back).
    pub fn erased(&mut self, by: &str, facts: Vec<String>, mut texts: Vec<String>) {
        texts.extend(facts.iter().filter_map(|f| self.acked.get(f).cloned()));
        self.erased.extend(facts.iter().cloned());
        self.erased_texts.extend(texts.iter().map(|t| normalize(t)));
        self.forgot(by, facts, texts);
        self.forget_order.retain(|f| f != by);
    }

    /// Whether `text` says what an erasure took out.
    pub fn erased_text(&self, text: &str) -> bool {
        self.erased_texts.contains(&normalize(text))
    }

    pub fn forgot_fact(&mut self, id: &str, text: &str) {
        self.forgot(id, vec![id.to_string()], vec![text.to_string()]);
    }

    pub fn forgot_entry(&mut self, id: &str, text: &str, sources: &[String]) {
        let mut texts = vec![text.to_string()];
        texts.extend(sources.iter().filter_map(|s| self.acked.get(s).cloned()));
        self.forgot(id, sources.to_vec(), texts);
    }

    /// An entry deleted by hand: the next run records its facts as
    /// forgotten (unless its text is still in the file: then nothing
    /// vanished), memd's rule to apply, `memd check`'s to verify.
    pub fn deleted_by_hand(&mut self, id: &str, text: &str, sources: &[String]) {
        self.hand_deleted.insert(id.to_string());
        self.uncertain.extend(sources.iter().cloned());
        // The text memd last wrote (what the run tombstones) is its
        // facts' (a person's edit since may have changed the entry's).
        let mut texts: HashSet<String> = sources
            .iter()
            .filter_map(|s| self.acked.get(s))
            .map(|t| normalize(t))
            .collect();
        texts.insert(normalize(text));
        for (id, t) in &self.acked {
            if texts.contains(&normalize(t)) {
                self.uncertain.insert(id.clone());
            }
        }
        self.deleted_texts.extend(texts);
    }

    /// `forget --undo ID`: its facts are the user's again, unless another
    /// forget still says their text.
    pub fn unforgot(&mut self, by: &str) {
        self.lifted.insert(by.to_string());
        let Some((ids, _)) = self.forgotten.remove(by) else {
            return;
        };
        self.forget_order.retain(|f| f != by);
        let texts = self.forgotten_texts();
        for id in ids {
            let said = self
                .acked
                .get(&id)
                .is_some_and(|t| texts.contains(&normalize(t)));
            if said {
                self.uncertain.insert(id);
            }
        }
    }

    /// An undo: with `keep_out`, its facts are forgotten. An undo of an
    /// undo that kept facts out brings them back as memd's rules for the
    /// runs in between decide: from here `memd check` verifies those facts,
    /// and facts said in their words later.
    pub fn undone(&mut self, outcome: &memd::runs::Outcome, texts: &[(String, String)]) {
        let undone = outcome.undoes.to_string();
        if self.undo_runs.remove(&undone)
            && let Some((ids, said)) = self.forgotten.remove(&undone)
        {
            self.lifted.insert(undone.clone());
            self.uncertain.extend(ids);
            self.deleted_texts.extend(said.iter().map(|t| normalize(t)));
        }
        if outcome.kept_out.is_empty() {
            return;
        }
        let Some(run) = &outcome.run else { return };
        let ids = texts.iter().map(|(i, _)| i.clone()).collect();
        let said = texts.iter().map(|(_, t)| t.clone()).collect();
        self.forgot(run.as_str(), ids, said);
        self.undo_runs.insert(run.to_string());
        // An undo's keep-out is lifted by undoing the undo, not by forget --undo.
        self.forget_order.retain(|f| f != run.as_str());
    }

    /// After an undo: facts an undo's keep-out forgot that an undo put
    /// back into an entry (`held`) are the user's again (memd lets them
    /// back in, whichever undo brings them back: undoing any run that had
    /// them in an entry asks for them).
    pub fn back_in(&mut self, held: &HashSet<String>) {
        for run in &self.undo_runs {
            if let Some((ids, _)) = self.forgotten.get_mut(run) {
                ids.retain(|id| !held.contains(id));
            }
        }
    }

    /// What the other copy of a memory knew, merged in after a sync (the
    /// two-copy mode): everything either side acknowledged, forgot, erased
    /// or deleted by hand; a forget either side took back is taken back,
    /// its facts left to `memd check`. A fact of one side whose text the
    /// other side forgot is memd's to decide (as [`Ledger::acked`] says).
    pub fn merge(&mut self, other: &Ledger) {
        self.acked.extend(other.acked.clone());
        self.lifted.extend(other.lifted.iter().cloned());
        self.heard.extend(other.heard.iter().cloned());
        for (by, (ids, texts)) in &other.forgotten {
            let slot = self.forgotten.entry(by.clone()).or_default();
            for id in ids {
                if !slot.0.contains(id) {
                    slot.0.push(id.clone());
                }
            }
            slot.1.extend(texts.iter().cloned());
            if !self.forget_order.contains(by) && other.forget_order.contains(by) {
                self.forget_order.push(by.clone());
            }
        }
        // A forget one side took back. (When the other side forgot it
        // again, which came last is the merged tombstones' order: memd
        // decides, `memd check` verifies, for its facts and its texts.)
        let mut let_go = HashSet::new();
        for by in &self.lifted {
            if let Some((ids, texts)) = self.forgotten.remove(by) {
                self.uncertain.extend(ids);
                let_go.extend(texts.iter().map(|t| normalize(t)));
            }
            self.forget_order.retain(|f| f != by);
        }
        for (id, t) in &self.acked {
            if let_go.contains(&normalize(t)) {
                self.uncertain.insert(id.clone());
            }
        }
        self.uncertain.extend(other.uncertain.iter().cloned());
        self.deleted_texts
            .extend(other.deleted_texts.iter().cloned());
        self.undo_runs.extend(other.undo_runs.iter().cloned());
        self.hand_deleted.extend(other.hand_deleted.iter().cloned());
        self.erased.extend(other.erased.iter().cloned());
        self.erased_texts.extend(other.erased_texts.iter().cloned());
        // An erasure takes every fact that says its text (a longer one
        // too): the other copy's as well, written before the erasure
        // reached it.
        for (id, t) in &self.acked {
            let n = normalize(t);
            let says = |e: &String| memd::erase::said_within(&n, e);
            if self.erased_texts.contains(&n) || self.erased_texts.iter().any(says) {
                self.erased.insert(id.clone());
            }
        }
        let said: HashSet<String> = self
            .forgotten_texts()
            .union(&self.deleted_texts)
            .cloned()
            .collect();
        let named = self
            .forgotten_ids()
            .into_iter()
            .map(str::to_string)
            .collect::<HashSet<_>>();
        for (id, t) in &self.acked {
            if said.contains(&normalize(t)) && !named.contains(id) {
                self.uncertain.insert(id.clone());
            }
        }
    }

    /// What the other copy published may have arrived in part (the remote
    /// withheld some of it: [`super::pair`]'s stranger): every fact whose
    /// fate the other's ledger would change is left to `memd check`, and
    /// the other's forgets may explain a tombstone.
    pub fn may_hear(&mut self, other: &Ledger) {
        let mut merged = self.clone();
        merged.merge(other);
        let said = |l: &Ledger| -> HashSet<String> {
            let mut s = l.forgotten_texts();
            s.extend(l.deleted_texts.iter().cloned());
            s.extend(l.erased_texts.iter().cloned());
            s
        };
        let (before, after) = (said(self), said(&merged));
        let (was, now) = (self.forgotten_ids(), merged.forgotten_ids());
        let changed: Vec<String> = self
            .acked
            .iter()
            .filter(|(id, t)| {
                let n = normalize(t);
                was.contains(id.as_str()) != now.contains(id.as_str())
                    || merged.uncertain.contains(*id)
                    || merged.erased.contains(*id) != self.erased.contains(*id)
                    || before.contains(&n) != after.contains(&n)
            })
            .map(|(id, _)| id.clone())
            .collect();
        self.uncertain.extend(changed);
        self.heard.extend(other.forgotten.keys().cloned());
        self.heard.extend(other.hand_deleted.iter().cloned());
        self.heard.extend(other.heard.iter().cloned());
    }

    /// Whether every tombstone that keeps out a kept fact is memd's rule
    /// for restatements (near duplicates included) of something the user
    /// forgot and has not taken back: that forget keeps it out, by design.
    ///
    /// Or the fact was held by an entry the user forgot (or deleted by
    /// hand) as the other copy had it (the two-copy mode): its forget
    /// took the fact with it, though this ledger did not know it held it.
    fn restates_forgotten(&self, stones: &Tombstones, id: &str, text: &str) -> bool {
        let covering = stones.covering(id, text);
        let facts = self.forgotten_ids();
        let forgot = |n: &str| {
            self.forgotten.contains_key(n)
                || self.hand_deleted.contains(n)
                || self.heard.contains(n)
        };
        !covering.is_empty()
            && covering.iter().all(|t| {
                let entry = t.entry.as_ref().map(|e| e.as_str());
                let named = entry.or(t.restates.as_ref().map(|f| f.as_str()));
                let restates = t.reason == memd::tombstones::Reason::RestatesForgotten
                    && named.is_some_and(|n| forgot(n) || facts.contains(n));
                let held = t.sources.iter().any(|s| s == id) && entry.is_some_and(forgot);
                restates || held
            })
    }
}

impl World {
    /// Check the oracle; `all`: search for every item (at the end of a
    /// sequence), else for a few.
    pub fn check(&self, all: bool) {
        // The layout as memd opens it: with its `[index] uri`, so that
        // the check compares the table on object storage with the files.
        let layout = memd::Memory::open(&self.layout.root).unwrap().layout;
        assert_eq!(layout.index_uri().is_some(), self.on_object_storage());
        let report = self.rt.block_on(memd::check::run(&layout)).unwrap();
        self.check_finds_no_problem_and_names_no_command(&report);
        self.every_acknowledged_fact_is_in_the_archive();
        let doc = Document::read(&self.layout.entries_file()).unwrap();
        let stones = Tombstones::load(&self.layout.tombstones_file()).unwrap();
        let live: Vec<_> = doc
            .entries()
            .filter(|e| !e.text.trim().is_empty())
            .filter(|e| !e.id().is_some_and(|i| stones.names_entry(i.as_str())))
            .collect();
        let holders: HashSet<&str> = live
            .iter()
            .filter_map(|e| e.meta.as_ref())
            .flat_map(|m| m.sources.iter().map(|s| s.as_str()))
            .collect();
        self.every_kept_fact_is_held_or_found_and_every_forgotten_one_out(&stones, &holders, all);
        for e in live.iter().take(if all { usize::MAX } else { 2 }) {
            let id = e.id().map(|i| i.to_string()).unwrap_or_default();
            self.assert(
                self.search_finds(&e.text, &id),
                &format!("entry {id} ({:?}) is not found by search", e.text),
            );
        }
        if all && !self.paired {
            self.every_past();
        }
    }

    /// `memd check`'s `report` finds no problem but an erased text the
    /// user said again, and no finding names a command line.
    fn check_finds_no_problem_and_names_no_command(&self, report: &memd::check::Report) {
        let written_again = |p: &memd::check::Finding| {
            p.kind == memd::check::Kind::ErasedSaidAgain
                && self
                    .ledger
                    .said_again
                    .iter()
                    .any(|id| p.what.contains(id.as_str()))
        };
        let problems: Vec<String> = report
            .problems
            .iter()
            .filter(|p| !written_again(p))
            .map(|p| format!("{:?}: {}", p.kind, p.what))
            .collect();
        self.assert(problems.is_empty(), &format!("memd check: {problems:#?}"));
        // A finding's words name no surface; its remedy, if any, is data.
        for f in report.problems.iter().chain(&report.notes) {
            let said = format!("{} {:?}", f.what, f.remedy);
            self.assert(
                !said.contains("`memd "),
                &format!("a finding names a command line: {f:?}"),
            );
        }
    }

    /// Every fact memd acknowledged is in the archive, or erased as the
    /// user asked.
    fn every_acknowledged_fact_is_in_the_archive(&self) {
        let (facts, _) = memd::archive::read_all(&self.layout).unwrap();
        let mut in_archive: HashSet<&str> = facts.iter().map(|f| f.id.as_str()).collect();
        let erased = memd::archive::erased_all(&self.layout).unwrap();
        in_archive.extend(
            erased
                .iter()
                .map(|f| f.as_str())
                .filter(|f| self.ledger.erased.contains(*f)),
        );
        for id in self.ledger.acked.keys() {
            self.assert(
                in_archive.contains(id.as_str()),
                &format!("acknowledged fact {id} is gone from the archive"),
            );
        }
    }

    /// No fact the user kept is kept out by a tombstone in `stones`, and
    /// each is held by one of `holders` or found by search (every one if
    /// `all`, else a few); no fact the user forgot is held, found, or let
    /// in.
    fn every_kept_fact_is_held_or_found_and_every_forgotten_one_out(
        &self,
        stones: &Tombstones,
        holders: &HashSet<&str>,
        all: bool,
    ) {
        let forgotten = self.ledger.forgotten_ids();
        let budget = if all { usize::MAX } else { 3 };
        let mut searched = 0;
        for (id, text) in &self.ledger.acked {
            if self.ledger.uncertain.contains(id) {
                continue;
            }
            if forgotten.contains(id.as_str()) {
                self.assert(
                    stones.covers(id, text),
                    &format!("forgotten fact {id} is not kept out"),
                );
                self.assert(
                    !holders.contains(id.as_str()),
                    &format!("forgotten fact {id} is held by a live entry"),
                );
                self.assert(
                    !self.search_gives(text, id),
                    &format!("forgotten fact {id} is found by search"),
                );
                continue;
            }
            if self.ledger.restates_forgotten(stones, id, text) {
                continue;
            }
            self.assert(
                !stones.covers(id, text),
                &format!("kept fact {id} ({text:?}) is kept out by a tombstone"),
            );
            if !holders.contains(id.as_str()) && searched < budget {
                searched += 1;
                self.assert(
                    self.search_finds(text, id),
                    &format!("kept fact {id} ({text:?}) is neither held nor found"),
                );
            }
        }
    }

    /// Whether searching `text` gives row `id` (or its MEMORY.md line), or
    /// a row saying the same (search collapses identical rows into one, so
    /// the user reads the same words either way).
    /// A fact is also searched for as said on its day ("… on
    /// 2026-11-30"): the rows of a day a query names are a list of their
    /// own (`memd::when`), which must neither lose a fact nor bring back
    /// a forgotten one.
    fn search_finds(&self, text: &str, id: &str) -> bool {
        self.queries(text, id).iter().all(|q| {
            self.hits(q).iter().any(|h| {
                h.id.as_str() == id
                    || h.id.as_str() == format!("core:{id}")
                    || normalize(&h.text) == normalize(text)
            })
        })
    }

    /// Whether searching `text` (or, for a fact, `text` on its day) gives
    /// row `id` itself.
    fn search_gives(&self, text: &str, id: &str) -> bool {
        let queries = self.queries(text, id);
        queries
            .iter()
            .any(|q| self.hits(q).iter().any(|h| h.id.as_str() == id))
    }

    /// `text`, and for fact `id` `text` said on the fact's day.
    fn queries(&self, text: &str, id: &str) -> Vec<String> {
        let day = id
            .split_once('#')
            .map(|(d, _)| d)
            .filter(|d| chrono::NaiveDate::parse_from_str(d, "%Y-%m-%d").is_ok());
        let mut out = vec![text.to_string()];
        out.extend(day.map(|d| format!("{text} on {d}")));
        out
    }

    fn hits(&self, text: &str) -> Vec<memd::index::rows::Hit> {
        let req = memd::request::Search {
            query: Some(text.to_string()),
            k: Some(100),
            // Every row, however little it matches: a forgotten fact must
            // not come back even at the bottom.
            min_score: Some(0.0),
            ..Default::default()
        };
        match self.run(req) {
            Ok(found) => found.hits(),
            Err(e) => panic!("search failed: {e:#}\n{}", self.log.join("\n")),
        }
    }

    pub(super) fn assert(&self, ok: bool, what: &str) {
        if !ok {
            panic!("{what}\nafter:\n{}{}", self.log.join("\n"), self.dump());
        }
    }

    /// With `MEMD_RANDOM_DUMP` set, the memory's files, for a failure's
    /// message.
    pub(super) fn dump(&self) -> String {
        if std::env::var_os("MEMD_RANDOM_DUMP").is_none() {
            return String::new();
        }
        let l = &self.layout;
        let files = [
            l.entries_file(),
            l.memory_md(),
            l.tombstones_file(),
            l.journal_file(),
            l.state_file(),
            l.versions_file(),
        ];
        let mut out = String::new();
        for f in files {
            let text = std::fs::read_to_string(&f).unwrap_or_default();
            out.push_str(&format!("\n--- {}\n{text}", f.display()));
        }
        for f in std::fs::read_dir(l.root.join("archive"))
            .into_iter()
            .flatten()
            .flatten()
        {
            let text =
                String::from_utf8_lossy(&std::fs::read(f.path()).unwrap_or_default()).into_owned();
            out.push_str(&format!("\n--- {}\n{text}", f.path().display()));
        }
        out
    }
}
