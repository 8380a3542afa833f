//! Apply: every decision against a fresh read of the entries file, which
//! is replaced atomically, and only if it is still byte for byte what was
//! read (otherwise the apply starts again from a new read). An op whose
//! target changed since planning (a hand edit) is skipped and its facts
//! stay pending.

use std::collections::{HashMap, HashSet};

use super::ops::{Cluster, Op};
use super::pause_point;
use super::planned::{Decision, Planned};
use super::reply::repair;
use super::report::Counts;
use crate::entries::{Document, sanitize_text, text_hash};
use crate::error::bail;
use crate::ids::{EntryId, FactId};
use crate::journal::{self, Record, Stamp};
use crate::{Layout, Result, pause};

/// What applying a run's decisions did.
#[derive(Default)]
pub struct Applied {
    pub records: Vec<Record>,
    /// Facts now folded into entries.
    pub done: Vec<FactId>,
    pub counts: Counts,
    pub skipped: usize,
}

/// How many times the apply starts again when the file keeps changing.
const ATTEMPTS: usize = 10;

/// Apply every decision to a fresh read of the entries file and replace it
/// atomically; start over from a new read if the file changes meanwhile.
/// Returns what was applied and the entries as written (for promotion).
pub(crate) fn apply(
    layout: &Layout,
    planned: &[Planned],
    stamp: &Stamp,
) -> Result<(Applied, Document)> {
    let path = layout.entries_file();
    let today = stamp.today();
    for _ in 0..ATTEMPTS {
        let (mut doc, original) = Document::read_for_update(&path)?;
        let mut out = Applied::default();
        for p in planned {
            apply_decision(&mut doc, p, stamp, &mut out);
        }
        let Some(adopted) = doc.save_if_unchanged(&path, &today, original.as_deref(), || {
            pause_point(layout, pause::Step::BeforeRename);
            Ok(())
        })?
        else {
            tracing::info!(
                "consolidated/memory.md changed while applying; applying again to the new text"
            );
            continue;
        };
        for id in adopted {
            let mut r = stamp.record(journal::Op::Adopt, &id);
            r.after = doc.get(&id).map(|e| e.text.clone());
            out.records.push(r);
        }
        return Ok((out, doc));
    }
    bail!(
        "consolidated/memory.md kept changing while the run applied its changes; nothing was written, run again"
    )
}

/// The day range of some facts: (earliest, latest).
fn days_of(cluster: &Cluster, ids: &[FactId]) -> Option<(String, String)> {
    let mut days: Vec<&str> = cluster
        .groups
        .iter()
        .flat_map(|g| g.ids.iter().zip(&g.days))
        .filter(|(id, _)| ids.contains(id))
        .map(|(_, d)| d.as_str())
        .collect();
    days.sort();
    Some((days.first()?.to_string(), days.last()?.to_string()))
}

fn add_sources(sources: &mut Vec<FactId>, more: &[FactId]) {
    for s in more {
        if !sources.contains(s) {
            sources.push(s.clone());
        }
    }
}

/// One decision's ops, applied to `doc`.
struct Step<'a> {
    planned: &'a Planned,
    today: String,
    stamp: &'a Stamp,
    unreviewed: bool,
    /// What each entry's text must still be for an op on it to apply: the
    /// text the judge saw, or the text this run gave it.
    expected: HashMap<EntryId, String>,
}

impl Step<'_> {
    fn unchanged(&self, doc: &Document, id: &str) -> bool {
        match (doc.get(id), self.expected.get(id)) {
            (Some(e), Some(want)) => e.text.trim() == want.trim(),
            _ => false,
        }
    }

    fn record(&self, kind: journal::Op, entry: &str, op: &Op) -> Record {
        let mut r = self.stamp.record(kind, entry);
        r.model = Some(self.planned.model.clone());
        r.prompt_hash = self.planned.prompt_hash.clone();
        r.sources = op.from().to_vec();
        r
    }

    /// Apply `op`; its journal record, or `None` when its target was
    /// edited by hand (or is pinned) and it was skipped.
    fn apply(&mut self, doc: &mut Document, op: &Op, counts: &mut Counts) -> Option<Record> {
        let range = days_of(&self.planned.cluster, op.from());
        match op {
            Op::Add { text, from } => Some(self.add(doc, op, text, from, range, counts)),
            Op::Replace { target, text, from } => {
                self.replace(doc, op, target, text, from, range, counts)
            }
            Op::Keep { target, from } => {
                if !self.unchanged(doc, target) {
                    return None;
                }
                let m = doc.get_mut(target)?.meta.as_mut()?;
                let was = m.clone();
                add_sources(&mut m.sources, from);
                if let Some((_, last)) = range {
                    m.updated = last.max(m.updated.clone());
                }
                counts.keep += 1;
                let mut r = self.record(journal::Op::Keep, target, op);
                r.meta_before = Some(was);
                Some(r)
            }
            Op::Remove { target, into } => self.remove(doc, op, target, into, counts),
        }
    }

    fn add(
        &self,
        doc: &mut Document,
        op: &Op,
        text: &str,
        from: &[FactId],
        range: Option<(String, String)>,
        counts: &mut Counts,
    ) -> Record {
        let mut meta = doc.new_meta(text, &self.today, from.to_vec());
        if let Some((first, last)) = range {
            meta.first_seen = first;
            meta.updated = last;
        }
        meta.unreviewed = self.unreviewed;
        let entry = doc.push(text, meta);
        let id = entry.id().map(EntryId::as_str).unwrap_or_default();
        let mut r = self.record(journal::Op::Add, id, op);
        r.after = Some(entry.text.clone());
        counts.add += 1;
        r
    }

    #[allow(clippy::too_many_arguments)]
    fn replace(
        &mut self,
        doc: &mut Document,
        op: &Op,
        target: &EntryId,
        text: &str,
        from: &[FactId],
        range: Option<(String, String)>,
        counts: &mut Counts,
    ) -> Option<Record> {
        if !self.unchanged(doc, target) || doc.get(target).is_some_and(|e| e.pinned()) {
            return None;
        }
        let e = doc.get_mut(target)?;
        let was = e.meta.clone();
        let before = std::mem::replace(&mut e.text, sanitize_text(text));
        let m = e.meta.as_mut().expect("a planned target has metadata");
        m.hash = text_hash(&e.text);
        add_sources(&mut m.sources, from);
        m.updated = range
            .map(|r| r.1)
            .unwrap_or_else(|| self.today.clone())
            .max(m.updated.clone());
        m.unreviewed = false;
        self.expected.insert(target.clone(), e.text.clone());
        let mut r = self.record(journal::Op::Replace, target, op);
        r.before = Some(before);
        r.after = Some(e.text.clone());
        r.meta_before = was;
        counts.replace += 1;
        Some(r)
    }

    fn remove(
        &self,
        doc: &mut Document,
        op: &Op,
        target: &EntryId,
        into: &EntryId,
        counts: &mut Counts,
    ) -> Option<Record> {
        let ok = self.unchanged(doc, target)
            && self.unchanged(doc, into)
            && !doc.get(target).is_some_and(|e| e.pinned());
        let gone = ok.then(|| doc.remove(target)).flatten()?;
        let sources = gone.meta.as_ref().map(|m| m.sources.clone());
        let sources = sources.unwrap_or_default();
        if let Some(m) = doc.get_mut(into).and_then(|e| e.meta.as_mut()) {
            add_sources(&mut m.sources, &sources);
        }
        let mut r = self.record(journal::Op::Remove, target, op);
        r.before = Some(gone.text);
        r.into = Some(into.clone());
        r.sources = sources;
        r.meta_before = gone.meta;
        counts.remove += 1;
        Some(r)
    }

    /// A valid reply of an LLM reviewed every entry it was shown.
    fn mark_reviewed(&self, doc: &mut Document) {
        if !matches!(self.planned.decision, Decision::Ops(_)) || self.planned.model == "built-in" {
            return;
        }
        for s in &self.planned.cluster.entries {
            if s.unreviewed
                && self.unchanged(doc, &s.id)
                && let Some(m) = doc.get_mut(&s.id).and_then(|e| e.meta.as_mut())
            {
                m.unreviewed = false;
            }
        }
    }
}

fn apply_decision(doc: &mut Document, p: &Planned, stamp: &Stamp, out: &mut Applied) {
    let ops = match &p.decision {
        Decision::Ops(ops) => ops.clone(),
        Decision::Fallback(_) => repair::fallback(&p.cluster),
        Decision::Failed { .. } => return,
    };
    let mut step = Step {
        planned: p,
        today: stamp.today(),
        stamp,
        unreviewed: matches!(p.decision, Decision::Fallback(_)),
        expected: p
            .cluster
            .entries
            .iter()
            .map(|e| (e.id.clone(), e.text.clone()))
            .collect(),
    };
    let mut held: HashSet<FactId> = HashSet::new();
    let mut done: Vec<FactId> = Vec::new();
    // Merges last, so that a REPLACE of the surviving entry lands first.
    let ordered = ops
        .iter()
        .filter(|o| !matches!(o, Op::Remove { .. }))
        .chain(ops.iter().filter(|o| matches!(o, Op::Remove { .. })));
    for op in ordered {
        match step.apply(doc, op, &mut out.counts) {
            Some(r) => {
                done.extend(op.from().iter().cloned());
                out.records.push(r);
            }
            None => {
                tracing::info!(
                    op = op.name(),
                    target = op.target().map(EntryId::as_str).unwrap_or(""),
                    "entry edited by hand during the run: op skipped, its facts stay pending"
                );
                out.skipped += 1;
                held.extend(op.from().iter().cloned());
            }
        }
    }
    step.mark_reviewed(doc);
    out.done
        .extend(done.into_iter().filter(|id| !held.contains(id)));
}
