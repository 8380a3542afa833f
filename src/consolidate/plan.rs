//! Plan: the run's inputs read once, the pending facts, the exact
//! restatements (KEEP, no judge), and the clusters the judge decides
//! (neighbours by similarity: similarity only gathers, it never decides).

use std::collections::{HashMap, HashSet};

use super::cluster;
use super::ops::{Cluster, Group, Op, Snapshot};
use super::report::Suppressed;
use crate::archive::{self, Fact};
use crate::config::Config;
use crate::duplicate::{PART_MIN_COSINE, Rule};
use crate::embed::cache::Cached;
use crate::entries::{Document, Entry};
use crate::error::{Context, Result};
use crate::ids::FactId;
use crate::pending::{Journal, Pending, Settled};
use crate::state::State;
use crate::text::normalize;
use crate::tombstones::{Reason, Tombstone, Tombstones};
use crate::{Layout, embed, update};

/// What a run reads besides the state (which the gate reads first).
pub struct Inputs {
    pub doc: Document,
    pub facts: Vec<Fact>,
    pub tombstones: Tombstones,
    /// `consolidated/journal.jsonl`, which [`Pending`] reads when a
    /// decided fact is held by no entry of `doc`.
    pub journal: std::path::PathBuf,
}

impl Inputs {
    pub fn read(layout: &Layout) -> Result<Inputs> {
        Ok(Inputs {
            doc: Document::read(&layout.entries_file())?,
            facts: archive::read_all(layout)?.0,
            tombstones: Tombstones::load(&layout.tombstones_file())?,
            journal: layout.journal_file(),
        })
    }

    /// The pending facts, and the ids of facts settled without a decision
    /// that the watermark does not cover yet (forgotten, or folded into an
    /// entry by a run that stopped before saving the state).
    pub fn pending(&self, state: &State) -> (Vec<Fact>, Vec<FactId>) {
        let rule = self.rule(state);
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

    /// Which facts are pending.
    pub(crate) fn rule<'a>(&'a self, state: &'a State) -> Pending<'a> {
        let journal = Journal::At(self.journal.clone());
        Pending::new(state, &self.tombstones, &self.doc, journal)
    }

    /// The facts among `settled` that only restate something forgotten
    /// (the forgotten facts themselves are not listed).
    pub fn suppressed(&self, settled: &[FactId]) -> Vec<Suppressed> {
        let settled: HashSet<&FactId> = settled.iter().collect();
        self.facts
            .iter()
            .filter(|f| settled.contains(&f.id))
            .filter_map(|f| {
                let t = self.tombstones.restated(&f.id, &f.text)?;
                let erased = t.reason == Reason::Erase;
                Some(Suppressed {
                    fact: f.id.clone(),
                    text: f.text.clone(),
                    forgotten: t.entry.clone(),
                    erased: erased.then(|| t.ts.clone()),
                })
            })
            .collect()
    }

    /// The entries a judge may see: with metadata, not empty, not forgotten.
    pub(crate) fn snapshots(&self) -> Vec<Snapshot> {
        self.doc
            .entries()
            .filter(|e| {
                !e.text.trim().is_empty()
                    && !e.id().is_some_and(|id| self.tombstones.names_entry(id))
            })
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
/// Not when the entry says it only as history ([`only_as_history`]).
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
        let held = by_text.get(&normalize(&g.text)).or_else(|| {
            by_source
                .get(hash)
                .filter(|s| !only_as_history(&s.text, &g.text))
        });
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

/// Whether `entry` says `fact` only in the history it keeps ("B
/// (previously: A)" of "A"): a fact stating again what an update replaced
/// says the old value is true again, which is for the judge to read as
/// an update, not a restatement to keep into the entry.
fn only_as_history(entry: &str, fact: &str) -> bool {
    let now = update::current_part(entry);
    let fact = normalize(fact);
    now.len() < entry.len()
        && normalize(&entry[now.len()..]).contains(&fact)
        && !normalize(now).contains(&fact)
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

/// What tier 2 ([`crate::duplicate`]) decided for the groups tier 1 left.
#[derive(Default)]
pub(crate) struct NearDuplicates {
    /// Groups that say what an entry says: KEEP into it.
    pub keeps: Vec<(Op, Group, Snapshot)>,
    /// Groups that say what was forgotten, with the tombstone.
    pub forgotten: Vec<(Group, Tombstone)>,
    /// The rest, for the judge; a group that says what an earlier one
    /// says is folded into it (one ADD, both facts as sources).
    pub rest: Vec<Group>,
}

/// The texts tier 2 compares by embedding: each group, entry and
/// forgotten text whose words ([`Rule::key`]) a pending group shares with
/// another of them. Usually none, so a run embeds nothing for it.
pub(crate) fn near_texts(
    groups: &[Group],
    entries: &[Snapshot],
    tombstones: &Tombstones,
    rule: Rule,
) -> Vec<String> {
    let mut by_key: HashMap<String, Vec<&str>> = HashMap::new();
    for t in every_text(groups, entries, tombstones) {
        by_key.entry(rule.key(t)).or_default().push(t);
    }
    let mut out: Vec<String> = groups
        .iter()
        .filter_map(|g| by_key.get(&rule.key(&g.text)))
        .filter(|texts| texts.len() > 1)
        .flatten()
        .map(|t| t.to_string())
        .collect();
    out.extend(part_texts(groups, entries, tombstones, rule));
    out.sort();
    out.dedup();
    out
}

/// The texts tier 2 may compare: the groups', the entries' and the
/// forgotten ones.
fn every_text<'a>(
    groups: &'a [Group],
    entries: &'a [Snapshot],
    tombstones: &'a Tombstones,
) -> impl Iterator<Item = &'a str> {
    let others = entries
        .iter()
        .map(|e| e.text.as_str())
        .chain(tombstones.all.iter().map(|t| t.text.as_str()));
    groups.iter().map(|g| g.text.as_str()).chain(others)
}

/// The texts of [`near_texts`] for leading-clause merges: each group that
/// is a leading clause of another text ([`Rule::leading_keys`]), and each
/// group one of whose leading clauses another group is, with those texts.
fn part_texts(
    groups: &[Group],
    entries: &[Snapshot],
    tombstones: &Tombstones,
    rule: Rule,
) -> Vec<String> {
    let mut wholes: HashMap<String, Vec<&str>> = HashMap::new();
    for t in every_text(groups, entries, tombstones) {
        for k in rule.leading_keys(t) {
            wholes.entry(k).or_default().push(t);
        }
    }
    let mut out = Vec::new();
    for g in groups {
        if let Some(w) = wholes.get(&rule.key(&g.text)) {
            out.push(g.text.clone());
            out.extend(w.iter().map(|t| t.to_string()));
        }
    }
    out
}

/// Tier 2 on `groups`, given the embeddings of the [`Rule::compared`]
/// forms of [`near_texts`] (keyed by the texts themselves): a group
/// that says what a forgotten text says is kept out (whatever the judge);
/// with `merge` (the built-in judge), one that says what an entry says is
/// KEPT into it (first in file order), and one that says what an earlier
/// group says is folded into that group. An LLM judge decides those
/// itself: similarity only gathers its clusters.
pub(crate) fn near_duplicates(
    groups: Vec<Group>,
    entries: &[Snapshot],
    tombstones: &Tombstones,
    vectors: &HashMap<String, Vec<f32>>,
    (rule, merge): (Rule, bool),
) -> NearDuplicates {
    let vector = |t: &str| vectors.get(t);
    let same = |a: &str, b: &str| match (vector(a), vector(b)) {
        (Some(x), Some(y)) => rule.same(a, b, embed::cosine(x, y)),
        _ => false,
    };
    // Says `part`, a leading clause of `whole`, and nothing `whole` lacks.
    let says = |whole: &str, part: &str| match (vector(whole), vector(part)) {
        (Some(x), Some(y)) => {
            let cosine = embed::cosine(x, y);
            rule.same(part, whole, cosine) || rule.part_of(part, whole, cosine, PART_MIN_COSINE)
        }
        _ => false,
    };
    let mut out = NearDuplicates::default();
    for g in groups {
        // Not among the texts that share words: nothing it could match.
        if vector(&g.text).is_none() {
            out.rest.push(g);
            continue;
        }
        if let Some(t) = tombstones.all.iter().find(|t| says(&t.text, &g.text)) {
            out.forgotten.push((g, t.clone()));
            continue;
        }
        if !merge || rule.key(&g.text).is_empty() {
            out.rest.push(g);
            continue;
        }
        if let Some(e) = entries.iter().find(|e| says(&e.text, &g.text)) {
            let keep = Op::Keep {
                target: e.id.clone(),
                from: g.ids.clone(),
            };
            out.keeps.push((keep, g, e.clone()));
            continue;
        }
        // One group per thing said: the first earlier group that says the
        // same, else one that is a leading clause of it or the other way
        // round, in the words of the one that says more.
        let found = out.rest.iter().position(|r| same(&g.text, &r.text));
        let found = found.or_else(|| {
            let (i, more) = out.rest.iter().enumerate().find_map(|(i, r)| {
                vector(&r.text)?;
                if says(&r.text, &g.text) {
                    Some((i, false))
                } else {
                    says(&g.text, &r.text).then_some((i, true))
                }
            })?;
            if more {
                out.rest[i].text = g.text.clone();
            }
            Some(i)
        });
        match found {
            Some(i) => {
                out.rest[i].ids.extend(g.ids);
                out.rest[i].days.extend(g.days);
            }
            None => out.rest.push(g),
        }
    }
    out
}

/// Most forgotten texts shown to the judge with one cluster.
const FORGOTTEN_SHOWN: usize = 3;

/// Least cosine between a fact and a forgotten text for the judge to see
/// the text. Lower than what `memd add` shows (0.75): `memd eval dedup`
/// puts all SICK and 96% of MRPC pairs that say the same thing at 0.6 or
/// more (EVALUATION.md), and "User's home is at 14 Elm Street" is under
/// 0.75 of "lives at 14 elm street". A text shown needlessly costs a few
/// tokens; a FORGET must still say what the text says.
const FORGOTTEN_MIN_COSINE: f32 = 0.6;

/// Each cluster with the forgotten texts near its facts: cosine at least
/// [`FORGOTTEN_MIN_COSINE`] with one of them, closest first, at most
/// [`FORGOTTEN_SHOWN`]. The judge is told not to keep a fact that says the
/// same (a paraphrase the tier-2 rule cannot see).
pub(crate) async fn with_forgotten(
    embedder: &Cached,
    mut clusters: Vec<Cluster>,
    tombstones: &Tombstones,
) -> Result<Vec<Cluster>> {
    let mut stones: Vec<&Tombstone> = Vec::new();
    let mut seen = HashSet::new();
    for t in &tombstones.all {
        if !t.text.trim().is_empty() && seen.insert(t.text.as_str()) {
            stones.push(t);
        }
    }
    if stones.is_empty() || clusters.is_empty() {
        return Ok(clusters);
    }
    let texts: Vec<String> = stones.iter().map(|t| t.text.clone()).collect();
    let forgotten = embedder.embed(&texts).await?;
    // Every cluster's facts in one call (the embedder's cache has them from
    // the clustering).
    let facts: Vec<String> = clusters
        .iter()
        .flat_map(|c| c.groups.iter().map(|g| g.text.clone()))
        .collect();
    let mut vectors = embedder.embed(&facts).await?.into_iter();
    for c in &mut clusters {
        let vectors: Vec<Vec<f32>> = vectors.by_ref().take(c.groups.len()).collect();
        let mut near: Vec<(f32, usize)> = forgotten
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let best = vectors
                    .iter()
                    .map(|v| embed::cosine(v, f))
                    .fold(f32::MIN, f32::max);
                (best, i)
            })
            .filter(|(cos, _)| *cos >= FORGOTTEN_MIN_COSINE)
            .collect();
        near.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        c.forgotten = near
            .into_iter()
            .take(FORGOTTEN_SHOWN)
            .map(|(_, i)| {
                let (entry, fact) = stones[i].forgotten_by();
                super::ops::Forgotten {
                    text: stones[i].text.clone(),
                    entry,
                    fact,
                }
            })
            .collect();
    }
    Ok(clusters)
}
