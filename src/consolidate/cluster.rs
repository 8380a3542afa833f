//! Neighbours and clusters: which facts and entries one judge call sees.
//!
//! Similarity only gathers candidates here; it never decides that two
//! texts say the same thing. For every seed (a pending fact group, or an
//! entry still marked unreviewed) the neighbours are the `neighbor_k` best
//! of two lists fused by reciprocal rank: cosine similarity of embeddings
//! (meaning) and IDF-weighted shared words (names, numbers, rare terms that
//! embeddings blur). Both are computed in memory over all items at once,
//! not by one index query per fact: that is what keeps a run over 10,000
//! facts in seconds.
//!
//! Clusters are the connected components of the neighbour graph, built
//! strongest link first and capped at `cluster_max` items: a link that
//! would make a component too big is skipped, so a popular topic splits
//! into several clusters instead of one huge prompt, and each entry ends in
//! at most one cluster (a union-find partition).

use std::collections::{HashMap, HashSet};

use crate::text::content_words;
use crate::{Result, embed};

/// Neighbour-gathering knobs.
#[derive(Debug, Clone, Copy)]
pub struct Params {
    pub neighbor_k: usize,
    pub cluster_max: usize,
    /// Weakest similarity (cosine, or share of the seed's word weight) that
    /// still links two items.
    pub min_similarity: f32,
}

/// For each seed, candidates sharing its words, scored by the share of the
/// seed's IDF weight they cover, best first.
fn keyword_neighbours(texts: &[&str], seeds: &[usize], k: usize) -> Vec<Vec<(usize, f32)>> {
    let docs: Vec<HashSet<String>> = texts.iter().map(|t| content_words(t)).collect();
    let mut postings: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, d) in docs.iter().enumerate() {
        for w in d {
            postings.entry(w.as_str()).or_default().push(i);
        }
    }
    let n = texts.len() as f32;
    let idf = |df: usize| (1.0 + n / df as f32).ln();
    // A word in more than this many items links too much to mean anything.
    let max_df = (texts.len() / 10).max(50);
    // One dense score row, reset through the list of touched items: far
    // cheaper than a map when common words touch thousands of items.
    let mut scores = vec![0f32; texts.len()];
    let mut touched: Vec<usize> = Vec::new();
    seeds
        .iter()
        .map(|&s| {
            let mut total = 0.0;
            for w in &docs[s] {
                let list = &postings[w.as_str()];
                let weight = idf(list.len());
                total += weight;
                if list.len() > max_df {
                    continue;
                }
                for &j in list {
                    if scores[j] == 0.0 {
                        touched.push(j);
                    }
                    scores[j] += weight;
                }
            }
            scores[s] = 0.0;
            let mut ranked: Vec<(usize, f32)> = touched
                .iter()
                .filter(|&&j| j != s)
                .map(|&j| (j, if total > 0.0 { scores[j] / total } else { 0.0 }))
                .collect();
            for &j in &touched {
                scores[j] = 0.0;
            }
            touched.clear();
            ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            ranked.truncate(k);
            ranked
        })
        .collect()
}

struct Components {
    parent: Vec<usize>,
    size: Vec<usize>,
}

impl Components {
    fn new(n: usize) -> Components {
        Components {
            parent: (0..n).collect(),
            size: vec![1; n],
        }
    }
    fn find(&mut self, mut x: usize) -> usize {
        while self.parent[x] != x {
            self.parent[x] = self.parent[self.parent[x]];
            x = self.parent[x];
        }
        x
    }
    /// Join the components of `a` and `b` unless that makes one bigger than
    /// `max`.
    fn join(&mut self, a: usize, b: usize, max: usize) {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra == rb || self.size[ra] + self.size[rb] > max {
            return;
        }
        let (big, small) = if self.size[ra] >= self.size[rb] {
            (ra, rb)
        } else {
            (rb, ra)
        };
        self.parent[small] = big;
        self.size[big] += self.size[small];
    }
}

/// Group items (given by text and unit vector) into clusters around the
/// `seeds`. Returns the item indices of each cluster that holds at least
/// one seed, seeds and neighbours in index order; clusters in the order of
/// their first item.
pub fn clusters(
    texts: &[&str],
    vectors: &[Vec<f32>],
    seeds: &[usize],
    p: Params,
) -> Result<Vec<Vec<usize>>> {
    let k = p.neighbor_k;
    let by_vector = embed::nearest(vectors, seeds, vectors.len(), k)?;
    tracing::debug!("vector neighbours");
    let by_words = keyword_neighbours(texts, seeds, k);
    tracing::debug!("word neighbours");
    let mut edges: Vec<(f32, usize, usize)> = Vec::new();
    for (i, &s) in seeds.iter().enumerate() {
        // Reciprocal-rank fusion of the two lists, then the best k.
        let mut fused: HashMap<usize, (f32, f32)> = HashMap::new();
        for list in [&by_vector[i], &by_words[i]] {
            for (rank, &(j, sim)) in list
                .iter()
                .filter(|(_, sim)| *sim >= p.min_similarity)
                .enumerate()
            {
                let e = fused.entry(j).or_insert((0.0, 0.0));
                e.0 += 1.0 / (60.0 + rank as f32);
                e.1 = e.1.max(sim);
            }
        }
        let mut fused: Vec<(usize, (f32, f32))> = fused.into_iter().collect();
        fused.sort_by(|a, b| b.1.0.total_cmp(&a.1.0).then(a.0.cmp(&b.0)));
        for (j, (_, sim)) in fused.into_iter().take(k) {
            edges.push((sim, s.min(j), s.max(j)));
        }
    }
    edges.sort_by(|a, b| b.0.total_cmp(&a.0).then((a.1, a.2).cmp(&(b.1, b.2))));
    edges.dedup_by(|a, b| a.1 == b.1 && a.2 == b.2);
    let mut comps = Components::new(texts.len());
    for (_, a, b) in edges {
        comps.join(a, b, p.cluster_max.max(1));
    }
    let seed_set: HashSet<usize> = seeds.iter().copied().collect();
    let mut groups: HashMap<usize, Vec<usize>> = HashMap::new();
    for i in 0..texts.len() {
        let r = comps.find(i);
        groups.entry(r).or_default().push(i);
    }
    let mut out: Vec<Vec<usize>> = groups
        .into_values()
        .filter(|g| g.iter().any(|i| seed_set.contains(i)))
        .collect();
    out.sort_by_key(|g| g[0]);
    Ok(out)
}
