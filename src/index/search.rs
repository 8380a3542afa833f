//! Hybrid search: vector top-n (LanceDB) and full-text top-n (BM25 kept
//! by memd, [`super::terms`]) fused by reciprocal rank, optional recency
//! weighting, near-identical hits collapsed, tombstoned rows excluded,
//! every hit logged to `.recall_log.jsonl`.

use std::collections::HashMap;

use crate::Result;
use crate::error::Context;
use arrow_array::{Array, FixedSizeListArray, Float32Array, RecordBatch};
use lancedb::DistanceType;
use lancedb::query::{QueryBase, Select};
use serde::Serialize;

use super::{Index, RowKind, collect, string_col};
use crate::embed::cosine;
use crate::recall;
use crate::text::normalize;
use crate::tombstones::Tombstones;

/// The usual constant of reciprocal rank fusion: damps the head of each list
/// so that agreement between the two lists outweighs a single first place.
const RRF_K: f32 = 60.0;

#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct Hit {
    pub id: String,
    pub kind: RowKind,
    pub text: String,
    pub score: f32,
    pub source: String,
    pub day: Option<String>,
}

const COLUMNS: [&str; 7] = ["id", "kind", "text", "source", "day", "vector", "_distance"];

/// Hits whose vectors are at least this similar are one result.
const NEAR_DUPLICATE: f32 = 0.95;

/// A result list, best first: each row with its vector, and its score
/// (higher is better).
struct Ranked {
    rows: Vec<(Hit, Vec<f32>)>,
    scores: Vec<f32>,
}

impl Index {
    /// The `k` best rows for `query`; logs them to the recall log.
    pub async fn search(&self, query: &str, k: usize) -> Result<Vec<Hit>> {
        self.search_logged(query, k, true).await
    }

    /// [`Index::search`] over the table as it is, without waiting for a
    /// sync another task is doing (the daemon's `GET /v1/search?wait=false`,
    /// while a backlog is indexed): the full-text scores are then those of
    /// the rows the handle last saw, or none if it never loaded them.
    pub async fn search_as_is(&self, query: &str, k: usize) -> Result<Vec<Hit>> {
        self.search_logged(query, k, false).await
    }

    async fn search_logged(&self, query: &str, k: usize, settle: bool) -> Result<Vec<Hit>> {
        let hits = match settle {
            true => self.search_unlogged(query, k).await?,
            false => {
                let qv = self.query_vector(query).await?;
                self.ranked(query, qv, k, false).await?
            }
        };
        let ts = chrono::Local::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
        let log: Vec<recall::Hit> = hits
            .iter()
            .enumerate()
            .map(|(i, h)| recall::Hit {
                ts: ts.clone(),
                query: query.to_string(),
                id: h.id.clone(),
                kind: h.kind.as_str().to_string(),
                rank: i as u32 + 1,
            })
            .collect();
        // An fsync'd append: off the async workers, which the daemon's
        // other requests share.
        let path = self.layout.recall_log();
        tokio::task::spawn_blocking(move || recall::append(&path, &log)).await??;
        Ok(hits)
    }

    /// [`Index::search`] without the recall log (for consolidation's
    /// neighbour gathering and evaluations, which are not recalls).
    pub async fn search_unlogged(&self, query: &str, k: usize) -> Result<Vec<Hit>> {
        let qv = self.query_vector(query).await?;
        self.search_with_vector(query, qv, k).await
    }

    /// The embedding of a query.
    async fn query_vector(&self, query: &str) -> Result<Vec<f32>> {
        Ok(self.embedder.embed(&[query.to_string()]).await?.remove(0))
    }

    /// The search itself, given the query's embedding (benchmarks time the
    /// two parts apart).
    pub(crate) async fn search_with_vector(
        &self,
        query: &str,
        qv: Vec<f32>,
        k: usize,
    ) -> Result<Vec<Hit>> {
        self.ranked(query, qv, k, true).await
    }

    /// Vector and full-text results fused and finished, from the table as
    /// it is (`wait`: see [`Index::full_text`]).
    async fn ranked(&self, query: &str, qv: Vec<f32>, k: usize, wait: bool) -> Result<Vec<Hit>> {
        let n = (k * 4).max(20);
        // The vector query runs on its own task while the words are scored
        // here, so a multi-threaded runtime uses two cores.
        let table = self.table.clone();
        let vector = tokio::spawn(async move { nearest(&table, qv, n).await });
        let text = self.full_text(query, n, wait).await;
        let vector = vector.await??;
        let vector = Ranked {
            rows: rows(&vector)?,
            scores: distances(&vector)?.into_iter().map(|d| -d).collect(),
        };
        let text = self.with_vectors(text?, &vector).await?;
        let tombstones = Tombstones::load(&self.layout.tombstones_file())?;
        let fused = fuse([vector, text]);
        let half_life = self.config.search.recency_half_life_days;
        Ok(finish(fused, &tombstones, half_life, k))
    }
}

impl Index {
    /// The full-text half of a search alone: at most `n` rows whose words
    /// best match `query`, best first, each `score` its BM25 score
    /// (benchmarks and tests look at it apart; see [`super::terms`] for the
    /// rows tied at the cut).
    pub async fn full_text_hits(&self, query: &str, n: usize) -> Result<Vec<Hit>> {
        self.full_text(query, n, true).await
    }

    /// The `n` rows whose words best match `query` ([`super::terms`]), as
    /// the table is at the handle's version: the words are loaded from the
    /// table first when the handle holds them for another version. With
    /// `wait` false and a sync running, the words as they are serve.
    async fn full_text(&self, query: &str, n: usize, wait: bool) -> Result<Vec<Hit>> {
        if !self.terms_current().await? {
            let one = match wait {
                true => Some(self.sync_lock.lock().await),
                false => self.sync_lock.try_lock().ok(),
            };
            if one.is_some() && !self.terms_current().await? {
                self.load_terms().await?;
            }
        }
        Ok(self.terms.lock().unwrap().top(query, n))
    }

    /// Whether the handle's words are those of the table at its version.
    async fn terms_current(&self) -> Result<bool> {
        let version = self.table.version().await?;
        Ok(self.terms.lock().unwrap().version() == Some(version))
    }

    /// Full-text hits with their vectors, for collapsing near duplicates:
    /// the vector list's where it has the row, else the embedding cache's
    /// (the vector the row was written with).
    async fn with_vectors(&self, hits: Vec<Hit>, vector: &Ranked) -> Result<Ranked> {
        let have: HashMap<&str, &Vec<f32>> = vector
            .rows
            .iter()
            .map(|(h, v)| (h.id.as_str(), v))
            .collect();
        let missing: Vec<String> = hits
            .iter()
            .filter(|h| !have.contains_key(h.id.as_str()))
            .map(|h| h.text.clone())
            .collect();
        let mut embedded = match missing.is_empty() {
            true => Vec::new().into_iter(),
            false => self.embedder.embed(&missing).await?.into_iter(),
        };
        let scores = hits.iter().map(|h| h.score).collect();
        let rows = hits
            .into_iter()
            .map(|h| {
                let v = match have.get(h.id.as_str()) {
                    Some(v) => (*v).clone(),
                    None => embedded.next().unwrap_or_default(),
                };
                (h, v)
            })
            .collect();
        Ok(Ranked { rows, scores })
    }
}

/// Reciprocal rank fusion of the vector and full-text result lists: each
/// row's score is the sum of `1 / (RRF_K + rank)` over the lists it is in.
/// Rows with equal scores in a list share its rank (1 + the rows scored
/// strictly better), so that ties never depend on the order a list came
/// back in. Each row keeps its vector, for collapsing near duplicates.
fn fuse(lists: [Ranked; 2]) -> HashMap<String, (Hit, Vec<f32>)> {
    let mut fused: HashMap<String, (Hit, Vec<f32>)> = HashMap::new();
    for list in lists {
        let ranks = shared_ranks(&list.scores);
        for (rank, (mut hit, v)) in ranks.into_iter().zip(list.rows) {
            let add = 1.0 / (RRF_K + rank as f32);
            fused
                .entry(hit.id.clone())
                .and_modify(|(h, _)| h.score += add)
                .or_insert_with(|| {
                    hit.score = add;
                    (hit, v)
                });
        }
    }
    fused
}

/// The `_distance` column of a vector search's batches (lower is better).
fn distances(batches: &[RecordBatch]) -> Result<Vec<f32>> {
    let mut out = Vec::new();
    for b in batches {
        let col = b
            .column_by_name("_distance")
            .and_then(|c| c.as_any().downcast_ref::<Float32Array>())
            .context("index column _distance missing")?;
        out.extend(col.values().iter().copied());
    }
    Ok(out)
}

/// Competition ranks ("1224"): 1 + how many scores are strictly higher.
fn shared_ranks(scores: &[f32]) -> Vec<usize> {
    scores
        .iter()
        .map(|s| 1 + scores.iter().filter(|o| o.total_cmp(s).is_gt()).count())
        .collect()
}

/// The rows of a result list, in order, each with its vector (score 0).
fn rows(batches: &[RecordBatch]) -> Result<Vec<(Hit, Vec<f32>)>> {
    let mut out = Vec::new();
    for b in batches {
        let vectors = b
            .column_by_name("vector")
            .and_then(|c| c.as_any().downcast_ref::<FixedSizeListArray>())
            .context("index column vector missing")?;
        for (i, hit) in hits(b)?.into_iter().enumerate() {
            let v = vectors.value(i);
            let v = v
                .as_any()
                .downcast_ref::<Float32Array>()
                .map(|a| a.values().to_vec());
            out.push((hit, v.unwrap_or_default()));
        }
    }
    Ok(out)
}

/// The rows of a batch as hits (score 0), from its columns `id`, `kind`,
/// `text`, `source` and `day`.
pub(super) fn hits(b: &RecordBatch) -> Result<Vec<Hit>> {
    let (ids, kinds, texts, sources) = (
        string_col(b, "id")?,
        string_col(b, "kind")?,
        string_col(b, "text")?,
        string_col(b, "source")?,
    );
    let days = string_col(b, "day")?;
    Ok((0..b.num_rows())
        .map(|i| Hit {
            id: ids.value(i).to_string(),
            // Written by this module only; an unknown value reads as a fact.
            kind: RowKind::parse(kinds.value(i)).unwrap_or(RowKind::Fact),
            text: texts.value(i).to_string(),
            score: 0.0,
            source: sources.value(i).to_string(),
            day: (!days.is_null(i)).then(|| days.value(i).to_string()),
        })
        .collect())
}

/// Recency weighting, tombstones left out, best first (ties by id, so the
/// order never depends on how the lists came back), near-identical hits
/// collapsed; at most `k`.
fn finish(
    fused: HashMap<String, (Hit, Vec<f32>)>,
    tombstones: &Tombstones,
    half_life: f64,
    k: usize,
) -> Vec<Hit> {
    let today = chrono::Local::now().date_naive();
    let mut hits: Vec<(Hit, Vec<f32>)> = fused
        .into_values()
        .filter(|(h, _)| !tombstones.covers(&h.id, &h.text))
        .map(|(mut h, v)| {
            if half_life > 0.0
                && let Some(d) = h
                    .day
                    .as_deref()
                    .and_then(|d| chrono::NaiveDate::parse_from_str(d, "%Y-%m-%d").ok())
            {
                let age = (today - d).num_days().max(0) as f64;
                h.score *= (0.5 + 0.5 * 0.5f64.powf(age / half_life)) as f32;
            }
            (h, v)
        })
        .collect();
    hits.sort_by(|(a, _), (b, _)| b.score.total_cmp(&a.score).then_with(|| a.id.cmp(&b.id)));
    // Collapse near-identical hits (a fact and the entry or core line that
    // restates it), keeping the best-ranked one; each kept hit carries its
    // normalised text, computed once.
    let mut kept: Vec<(Hit, Vec<f32>, String)> = Vec::new();
    for (h, v) in hits {
        let text = normalize(&h.text);
        let dup = kept
            .iter()
            .any(|(_, kv, kt)| *kt == text || (!v.is_empty() && cosine(kv, &v) >= NEAR_DUPLICATE));
        if !dup {
            kept.push((h, v, text));
        }
        if kept.len() == k {
            break;
        }
    }
    kept.into_iter().map(|(h, _, _)| h).collect()
}

async fn nearest(table: &lancedb::Table, qv: Vec<f32>, n: usize) -> Result<Vec<RecordBatch>> {
    let query = table
        .query()
        .nearest_to(qv)?
        .distance_type(DistanceType::Cosine);
    collect(query.select(Select::columns(&COLUMNS)).limit(n)).await
}

/// An existing entry like a new fact.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct Similar {
    /// `score` is the cosine similarity of the entry and the fact.
    #[serde(flatten)]
    pub hit: Hit,
    /// The built-in judge will merge the fact into this entry: the tier-2
    /// rule ([`crate::same::Rule::SHIPPED`]) says they are the same, or the
    /// entry says the fact and more ([`crate::same::Rule::part_of`]).
    pub same: bool,
}

impl Index {
    /// At most `k` existing entries that may say the same as `text`
    /// (cosine at least [`crate::service::SIMILAR_MIN_COSINE`]), most
    /// similar first (for `memd add`, which shows them as information: it
    /// never blocks the write).
    pub(crate) async fn similar_entries(&self, text: &str, k: usize) -> Result<Vec<Similar>> {
        let qv = self.embedder.embed(&[text.to_string()]).await?.remove(0);
        let filter = format!("kind = '{}'", RowKind::Entry.as_str());
        let query = self
            .table
            .query()
            .nearest_to(qv.clone())?
            .distance_type(DistanceType::Cosine)
            .only_if(filter);
        let found = collect(query.select(Select::columns(&COLUMNS)).limit(k * 4)).await?;
        let tombstones = Tombstones::load(&self.layout.tombstones_file())?;
        let mut out = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for (mut hit, v) in rows(&found)? {
            hit.score = cosine(&qv, &v);
            if hit.score < crate::service::SIMILAR_MIN_COSINE
                || tombstones.covers(&hit.id, &hit.text)
                || !seen.insert(hit.id.clone())
            {
                continue;
            }
            let same = self.same(text, &hit.text).await?;
            out.push(Similar { hit, same });
        }
        out.sort_by(|a, b| {
            (b.hit.score.total_cmp(&a.hit.score)).then_with(|| a.hit.id.cmp(&b.hit.id))
        });
        out.truncate(k);
        Ok(out)
    }

    /// Whether the built-in judge would fold `fact` into `entry`: the
    /// tier-2 rule says they are the same, or `fact` says a leading clause
    /// of `entry` ([`crate::same::Rule::part_of`]). Embeds only when their
    /// words allow either.
    async fn same(&self, fact: &str, entry: &str) -> Result<bool> {
        use crate::same::{PART_MIN_COSINE, Rule};
        let rule = Rule::SHIPPED;
        let part = rule.part_of(fact, entry, 1.0, 0.0);
        if !part && !rule.words_agree(fact, entry) {
            return Ok(false);
        }
        let v = self
            .embedder
            .embed(&[Rule::compared(fact), Rule::compared(entry)])
            .await?;
        let c = cosine(&v[0], &v[1]);
        Ok(rule.same(fact, entry, c) || rule.part_of(fact, entry, c, PART_MIN_COSINE))
    }
}
