//! A run with each judge, and what it must leave: no update applied in
//! review mode, declared updates carried out, current first in MEMORY.md.

use std::sync::atomic::Ordering;

use super::World;
use crate::random::actions::Judge;

impl World {
    pub(super) fn consolidate(&mut self, judge: Judge, force: bool) -> anyhow::Result<()> {
        let mut config = self.config();
        if judge != Judge::BuiltIn {
            let url = &self.llm_url;
            config.push_str(&format!("[llm]\nbase_url = \"{url}\"\nmodel = \"scripted\"\nmax_attempts = 1\ntimeout_seconds = 10\n"));
            if let Some(b) = self.budget {
                config.push_str(&format!("max_tokens_per_day = {b}\n"));
            }
        }
        std::fs::write(self.layout.config_file(), config)?;
        self.judge.store(judge as u8, Ordering::Relaxed);
        let opts = memd::consolidate::Options {
            force,
            ..Default::default()
        };
        let declared = self.declared_targets();
        let report = self.run(opts);
        std::fs::write(self.layout.config_file(), self.config())?;
        let report = report?;
        if let Some(c) = &report.review {
            self.carried(c);
        }
        // A declared update the person rejected in review is kept as a
        // fact of its own, beside the entry it named: their call.
        let rejected: Vec<&memd::ids::FactId> = report
            .review
            .iter()
            .flat_map(|c| c.kept_verbatim.iter())
            .collect();
        // In review mode a run applies no op: it proposes them.
        let a = &report.applied;
        let applied = (a.add, a.replace, a.remove, a.keep) != (0, 0, 0, 0);
        assert!(
            !(self.review && applied),
            "run {} in review mode applied {a:?}; after:\n{}",
            report.run_id,
            self.log.join("\n")
        );
        self.log.push(format!(
            "  -> run {} applied {:?}",
            report.run_id, report.applied
        ));
        // The facts a run names as left pending by a failed judge are
        // pending: in no entry (check accounts them as pending).
        let doc = self.doc();
        let held = |f: &memd::ids::FactId| {
            doc.entries()
                .filter_map(|e| e.meta.as_ref())
                .any(|m| m.sources.contains(f))
        };
        self.assert_declared_updates_carried_out(&doc, &declared, &rejected);
        let promoted = report.skipped.is_none() && !report.dry_run;
        if promoted
            && judge == Judge::BuiltIn
            && !report.warnings.iter().any(|w| w.contains("MEMORY.md"))
        {
            self.assert_current_first(&doc);
        }
        let wrong = report.failed_facts.iter().find(|f| held(f));
        assert!(
            wrong.is_none(),
            "run {} names {wrong:?} as left pending, and an entry holds it; after:\n{}",
            report.run_id,
            self.log.join("\n")
        );
        Ok(())
    }

    /// A declared update a run decided (not one of `rejected`, kept as a
    /// fact of its own) replaced every target in `declared` that was live
    /// and unpinned when it ran: none is live in `doc` beside its holder.
    fn assert_declared_updates_carried_out(
        &self,
        doc: &memd::entries::Document,
        declared: &[(memd::ids::FactId, Vec<memd::ids::EntryId>)],
        rejected: &[&memd::ids::FactId],
    ) {
        for (fact, targets) in declared.iter().filter(|(f, _)| !rejected.contains(&f)) {
            let holder = doc
                .entries()
                .filter_map(|e| e.meta.as_ref())
                .find(|m| m.sources.contains(fact))
                .map(|m| m.id.clone());
            let Some(holder) = holder else { continue };
            for t in targets.iter().filter(|t| **t != holder) {
                let what = format!(
                    "fact {fact} declared it supersedes {t}, is held by {holder}, and {t} is still there"
                );
                self.assert(doc.get(t.as_str()).is_none(), &what);
            }
        }
    }

    /// Current first: of two lines of MEMORY.md whose entries (unpinned)
    /// speak of the same thing, the one that states it anew is above
    /// ([`memd::current::states_anew`]: by its words, or on a later day at
    /// cosine 0.6 or more); and a line whose entry another (unpinned)
    /// entry states anew is shown only with that entry's line above it:
    /// MEMORY.md never shows what was true without what is.
    fn assert_current_first(&self, doc: &memd::entries::Document) {
        use memd::embed::Embedder;
        // A run that could not write MEMORY.md says so (skipped above).
        let core = memd::core_md::CoreMd::read(&self.layout.memory_md()).unwrap();
        let shown: Vec<String> = core
            .lines()
            .iter()
            .map(|l| l.entry_id.to_string())
            .collect();
        // Each live unpinned entry: its text, its day, and its line's
        // place in MEMORY.md if it has one.
        let live: Vec<(String, String, Option<usize>)> = doc
            .entries()
            .filter(|e| !e.text.trim().is_empty())
            .filter_map(|e| e.meta.as_ref().map(|m| (e, m)))
            .filter(|(_, m)| !m.pinned)
            .map(|(e, m)| {
                let at = shown.iter().position(|s| s.as_str() == m.id.as_str());
                (e.text.clone(), m.updated.clone(), at)
            })
            .collect();
        let texts: Vec<String> = live.iter().map(|s| s.0.clone()).collect();
        let lexical = memd::embed::lexical::Lexical;
        let vectors = self.rt.block_on(lexical.embed(&texts)).unwrap();
        for (i, (old, old_day, old_at)) in live.iter().enumerate() {
            let Some(old_at) = old_at else { continue };
            for (j, (new, new_day, new_at)) in live.iter().enumerate() {
                if i == j {
                    continue;
                }
                let cos = memd::embed::cosine(&vectors[i], &vectors[j]);
                let anew = memd::current::states_anew(
                    (old, Some(old_day)),
                    (new, Some(new_day)),
                    Some(cos),
                );
                if anew == memd::current::Anew::No {
                    continue;
                }
                assert!(
                    new_at.is_some_and(|n| n < *old_at),
                    "MEMORY.md shows {old:?} ({old_day}) {} {new:?} ({new_day}), which states it anew; after:\n{}",
                    if new_at.is_some() { "above" } else { "without" },
                    self.log.join("\n")
                );
            }
        }
    }

    /// Each pending fact that declares what it supersedes, with those of
    /// its targets that are live and unpinned now.
    fn declared_targets(&self) -> Vec<(memd::ids::FactId, Vec<memd::ids::EntryId>)> {
        let doc = self.doc();
        let stones =
            memd::tombstones::Tombstones::load(&self.layout.tombstones_file()).unwrap_or_default();
        let held: std::collections::HashSet<_> = doc
            .entries()
            .filter_map(|e| e.meta.as_ref())
            .flat_map(|m| m.sources.iter().cloned())
            .collect();
        let (facts, _) = memd::archive::read_all(&self.layout).unwrap_or_default();
        facts
            .into_iter()
            .filter(|f| !f.supersedes.is_empty() && !held.contains(&f.id))
            .map(|f| {
                let live = f
                    .supersedes
                    .iter()
                    .filter(|t| {
                        doc.get(t.as_str())
                            .is_some_and(|e| e.meta.is_some() && !e.pinned())
                            && !stones.names_entry(t.as_str())
                    })
                    .cloned()
                    .collect();
                (f.id, live)
            })
            .collect()
    }
}
