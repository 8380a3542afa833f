//! Evaluations on the public development data in `../shared/evaldata/`
//! (read in place, never copied: it is non-commercial data).
//!
//! `neighbours` measures candidate recall, the only job similarity has in
//! memd: for labelled pairs, is the partner among the top-k neighbours of a
//! sentence in a pool of all sentences? Three sources:
//! - SICK pairs that entail each other both ways (the same fact), both
//!   directions, pool = every SICK sentence;
//! - Letta: a `new_fact` → the fact it supersedes, pool = every fact;
//! - MRPC paraphrase pairs (Quality 1), both directions, pool = every
//!   MRPC sentence (train and validation).

use std::collections::HashMap;
use std::path::Path;

use anyhow::{Context, Result};
use serde::Serialize;

use crate::embed::{self, Embedder, cache::Cached};

pub mod dedup;
pub mod forget;
pub mod letta;
pub mod locomo;
pub mod pairs;

pub(crate) const KS: [usize; 4] = [1, 5, 8, 20];

#[derive(Debug, Serialize)]
pub struct NeighbourReport {
    pub source: String,
    pub pool: usize,
    pub queries: usize,
    /// recall@k for k in [`KS`].
    pub recall: Vec<(usize, f64)>,
}

/// A labelled task: a pool of sentences and (query, partner) index pairs.
struct Task {
    name: &'static str,
    /// Sentences to embed: the first `searchable` are the pool, any after
    /// that are queries only.
    pool: Vec<String>,
    searchable: usize,
    pairs: Vec<(usize, usize)>,
}

#[derive(Default)]
struct Pool {
    sentences: Vec<String>,
    index: HashMap<String, usize>,
}

impl Pool {
    fn id(&mut self, s: &str) -> usize {
        let s = s.trim();
        if let Some(&i) = self.index.get(s) {
            return i;
        }
        self.sentences.push(s.to_string());
        self.index.insert(s.to_string(), self.sentences.len() - 1);
        self.sentences.len() - 1
    }
}

fn read(path: &Path) -> Result<String> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    Ok(text.trim_start_matches('\u{feff}').to_string())
}

/// The rows of a TSV file, header skipped, that have at least `fields`
/// fields.
pub(crate) fn tsv(text: &str, fields: usize) -> impl Iterator<Item = Vec<&str>> {
    text.lines()
        .skip(1)
        .map(|l| l.split('\t').collect::<Vec<_>>())
        .filter(move |f| f.len() >= fields)
}

/// Add the labelled pairs of a TSV file (header skipped) to `pool` and
/// `pairs`, both directions: lines with fewer than `fields` fields are
/// skipped, columns `a` and `b` hold the sentences, and `same` says from the
/// fields whether they are a pair.
fn tsv_pairs(
    text: &str,
    fields: usize,
    (a, b): (usize, usize),
    same: impl Fn(&[&str]) -> bool,
    pool: &mut Pool,
    pairs: &mut Vec<(usize, usize)>,
) {
    for f in tsv(text, fields) {
        let (x, y) = (pool.id(f[a]), pool.id(f[b]));
        if same(&f) && x != y {
            pairs.push((x, y));
            pairs.push((y, x));
        }
    }
}

fn sick(dir: &Path) -> Result<Task> {
    let mut pool = Pool::default();
    let mut pairs = Vec::new();
    let mutual = |f: &[&str]| f[4] == "A_entails_B" && f[5] == "B_entails_A";
    tsv_pairs(
        &read(&dir.join("sick_dev.tsv"))?,
        6,
        (1, 2),
        mutual,
        &mut pool,
        &mut pairs,
    );
    Ok(Task {
        name: "sick-mutual-entailment",
        searchable: pool.sentences.len(),
        pool: pool.sentences,
        pairs,
    })
}

fn letta(dir: &Path) -> Result<Task> {
    let mut pool = Pool::default();
    let mut queries = Vec::new();
    for row in letta::rows(dir)? {
        let ids: Vec<usize> = row.facts.iter().map(|f| pool.id(f)).collect();
        for s in row.supersedes {
            if let Some(&target) = ids.get(s) {
                queries.push((row.new_fact.clone(), target));
            }
        }
    }
    // New facts are queries only: the pool is the facts they are looked up in.
    let searchable = pool.sentences.len();
    let mut all = pool.sentences;
    let mut pairs = Vec::new();
    for (q, target) in queries {
        all.push(q);
        pairs.push((all.len() - 1, target));
    }
    Ok(Task {
        name: "letta-new-fact-to-superseded",
        pool: all,
        searchable,
        pairs,
    })
}

fn mrpc(dir: &Path) -> Result<Task> {
    let mut pool = Pool::default();
    let mut pairs = Vec::new();
    for file in ["msr-para-train.tsv", "msr-para-val.tsv"] {
        let paraphrase = |f: &[&str]| f[0] == "1";
        tsv_pairs(
            &read(&dir.join(file))?,
            5,
            (3, 4),
            paraphrase,
            &mut pool,
            &mut pairs,
        );
    }
    Ok(Task {
        name: "mrpc-paraphrase",
        searchable: pool.sentences.len(),
        pool: pool.sentences,
        pairs,
    })
}

/// Run the neighbour-recall evaluation with `embedder` on the data in `dir`;
/// embeddings are cached in `cache_dir`.
pub async fn neighbours(
    dir: &Path,
    embedder: std::sync::Arc<dyn Embedder>,
    cache_dir: &Path,
) -> Result<Vec<NeighbourReport>> {
    let cached = Cached::open(embedder, cache_dir)?;
    let mut reports = Vec::new();
    for task in [sick(dir)?, letta(dir)?, mrpc(dir)?] {
        let vectors = cached.embed(&task.pool).await?;
        let queries: std::collections::BTreeSet<usize> = task.pairs.iter().map(|p| p.0).collect();
        let max_k = *KS.last().unwrap();
        let queries: Vec<usize> = queries.into_iter().collect();
        let nearest = embed::nearest(&vectors, &queries, task.searchable, max_k)?;
        let ranked: HashMap<usize, Vec<usize>> = queries
            .iter()
            .zip(nearest)
            .map(|(&q, n)| (q, n.into_iter().map(|(j, _)| j).collect()))
            .collect();
        let recall = KS
            .iter()
            .map(|&k| {
                let hits = task
                    .pairs
                    .iter()
                    .filter(|(q, t)| ranked[q].iter().take(k).any(|j| j == t))
                    .count();
                (k, hits as f64 / task.pairs.len().max(1) as f64)
            })
            .collect();
        reports.push(NeighbourReport {
            source: task.name.to_string(),
            pool: task.searchable,
            queries: task.pairs.len(),
            recall,
        });
    }
    Ok(reports)
}
