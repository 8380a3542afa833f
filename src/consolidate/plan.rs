//! Plan: the run's inputs read once, the pending facts, the exact
//! restatements (KEEP, no judge), and the clusters the judge decides
//! (neighbours by similarity: similarity only gathers, it never decides).

use std::collections::{HashMap, HashSet};

use super::cluster;
use super::ops::{Cluster, Group, Op, Snapshot};
use super::report::Suppressed;
use crate::Layout;
use crate::archive::{self, Fact};
use crate::config::Config;
use crate::embed::cache::Cached;
use crate::entries::{Document, Entry};
use crate::error::{Context, Result};
use crate::pending::{Pending, Settled};
use crate::state::State;
use crate::text::normalize;
use crate::tombstones::Tombstones;

/// What a run reads besides the state (which the gate reads first).
pub struct Inputs {
    pub doc: Document,
    pub facts: Vec<Fact>,
    pub tombstones: Tombstones,
}

impl Inputs {
    pub fn read(layout: &Layout) -> Result<Inputs> {
        Ok(Inputs {
            doc: Document::read(&layout.entries_file())?,
            facts: archive::read_all(layout)?.0,
            tombstones: Tombstones::load(&layout.tombstones_file())?,
        })
    }

    /// The pending facts, and the ids of facts settled without a decision
    /// that the watermark does not cover yet (forgotten, or folded into an
    /// entry by a run that stopped before saving the state).
    pub fn pending(&self, state: &State) -> (Vec<Fact>, Vec<String>) {
        let rule = Pending::new(state, &self.tombstones, &self.doc);
        let mut pending = Vec::new();
        let mut settled = Vec::new();
        for f in &self.facts {
            match rule.settled(f) {
                None => pending.push(f.clone()),
                Some(Settled::Done) => {}
                Some(Settled::Forgotten | Settled::InEntry) => settled.push(f.id.clone()),
            }
        }
        (pending, settled)
    }

    /// The facts among `settled` that only restate something forgotten
    /// (the forgotten facts themselves are not listed).
    pub fn suppressed(&self, settled: &[String]) -> Vec<Suppressed> {
        let settled: HashSet<&str> = settled.iter().map(String::as_str).collect();
        self.facts
            .iter()
            .filter(|f| settled.contains(f.id.as_str()))
            .filter_map(|f| {
                let t = self.tombstones.restated(&f.id, &f.text)?;
                Some(Suppressed {
                    fact: f.id.clone(),
                    text: f.text.clone(),
                    forgotten: t.entry.clone(),
                })
            })
            .collect()
    }

    /// The entries a judge may see: with metadata, not empty, not forgotten.
    pub(crate) fn snapshots(&self) -> Vec<Snapshot> {
        self.doc
            .entries()
            .filter(|e| !e.text.trim().is_empty() && !self.tombstones.covers("", &e.text))
            .filter_map(snapshot)
            .collect()
    }
}

/// Pending facts grouped by normalised text, in archive order.
pub(crate) fn group(pending: &[Fact]) -> Vec<Group> {
    let mut at: HashMap<String, usize> = HashMap::new();
    let mut groups: Vec<Group> = Vec::new();
    for f in pending {
        match at.get(&normalize(&f.text)) {
            Some(&i) => {
                groups[i].ids.push(f.id.clone());
                groups[i].days.push(f.day.clone());
            }
            None => {
                at.insert(normalize(&f.text), groups.len());
                groups.push(Group {
                    ids: vec![f.id.clone()],
                    text: f.text.clone(),
                    days: vec![f.day.clone()],
                });
            }
        }
    }
    groups
}

pub fn snapshot(e: &Entry) -> Option<Snapshot> {
    let m = e.meta.as_ref()?;
    Some(Snapshot {
        id: m.id.clone(),
        text: e.text.clone(),
        pinned: m.pinned,
        unreviewed: m.unreviewed,
        first_seen: m.first_seen.clone(),
        updated: m.updated.clone(),
    })
}

/// Groups that restate an entry, each with its KEEP, decided without a
/// judge; and the rest, for the judge. A group restates an entry when its
/// normalised text is the entry's text, or is the text of a fact already
/// in the entry's `sources` (the hash is in the fact id), whatever the
/// entry says now: a reworded or hand-edited entry still holds the fact
/// (first entry in file order, if a past duplicate means several do).
pub(crate) fn restatements(
    groups: Vec<Group>,
    doc: &Document,
) -> (Vec<(Op, Group, Snapshot)>, Vec<Group>) {
    let by_text: HashMap<String, Snapshot> = doc
        .entries()
        .filter_map(snapshot)
        .map(|s| (normalize(&s.text), s))
        .collect();
    let mut by_source: HashMap<&str, Snapshot> = HashMap::new();
    for e in doc.entries() {
        let (Some(m), Some(s)) = (e.meta.as_ref(), snapshot(e)) else {
            continue;
        };
        for id in &m.sources {
            by_source
                .entry(archive::id_hash(id))
                .or_insert_with(|| s.clone());
        }
    }
    let mut keeps = Vec::new();
    let mut rest = Vec::new();
    for g in groups {
        let hash = g.ids.first().map_or("", |id| archive::id_hash(id));
        let held = by_text
            .get(&normalize(&g.text))
            .or_else(|| by_source.get(hash));
        match held {
            Some(s) => {
                let keep = Op::Keep {
                    target: s.id.clone(),
                    from: g.ids.clone(),
                };
                keeps.push((keep, g, s.clone()));
            }
            None => rest.push(g),
        }
    }
    (keeps, rest)
}

/// Embed the pending groups and the entries, then cluster them.
pub async fn clusters(
    embedder: &Cached,
    config: &Config,
    groups: Vec<Group>,
    entries: Vec<Snapshot>,
) -> Result<Vec<Cluster>> {
    let texts: Vec<String> = groups
        .iter()
        .map(|g| g.text.clone())
        .chain(entries.iter().map(|e| e.text.clone()))
        .collect();
    let vectors = embedder
        .embed(&texts)
        .await
        .context("embedding facts and entries to find their neighbours")?;
    tracing::debug!(texts = texts.len(), "embedded");
    let n_groups = groups.len();
    // Unreviewed entries are seeds too: the judge looks at them again.
    let seeds: Vec<usize> = (0..n_groups)
        .chain(
            entries
                .iter()
                .enumerate()
                .filter(|(_, e)| e.unreviewed)
                .map(|(i, _)| n_groups + i),
        )
        .collect();
    let c = &config.consolidation;
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let params = cluster::Params {
        neighbor_k: c.neighbor_k as usize,
        cluster_max: c.cluster_max as usize,
        min_similarity: c.min_similarity as f32,
    };
    let found = cluster::clusters(&refs, &vectors, &seeds, params)?;
    let mut groups: Vec<Option<Group>> = groups.into_iter().map(Some).collect();
    Ok(found
        .into_iter()
        .map(|items| {
            let mut cl = Cluster::default();
            for i in items {
                match i.checked_sub(n_groups) {
                    None => cl.groups.extend(groups[i].take()),
                    Some(e) => cl.entries.push(entries[e].clone()),
                }
            }
            cl
        })
        .collect())
}
