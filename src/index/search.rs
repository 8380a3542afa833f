//! Hybrid search, the ranking: vector top-n (LanceDB) and full-text
//! top-n (BM25 kept by memd, [`super::terms`]) fused by the sum of the
//! two scores ([`WORDS_WEIGHT`]), optional recency weighting, the
//! later-stated of two hits on one thing first, near-identical hits
//! collapsed, tombstoned rows excluded. [`super::reader`] runs it; every hit a search returns is
//! logged to `.recall_log.jsonl` there.

use std::collections::HashMap;

use arrow_array::{Array, FixedSizeListArray, Float32Array, RecordBatch};
use lancedb::DistanceType;
use lancedb::query::{QueryBase, Select};
use serde::Serialize;

pub use super::rows::Hit;
use super::rows::RowKind;
use super::table::{collect, string_col};
use crate::embed::cosine;
use crate::error::Context;
use crate::ids::{RowId, given};
use crate::layout::Source;
use crate::text::normalize;
use crate::tombstones::Tombstones;
use crate::update::current_part;
use crate::when::Span;
use crate::{Result, current};

/// How much a row's words' score counts beside its meaning's (its
/// cosine with the query) in the fused rank: the sum of the two, so that
/// a row both signals favour comes first, by how much each favours it,
/// not only in which place. Fusing the ranks instead (reciprocal rank,
/// k = 60, as before) put a row a hair ahead by words and far behind by
/// meaning above the fact that answers. `memd eval consolidation --data
/// ../shared/evaldata --sets 100 --updates 10 [--declared]` and `memd
/// eval locomo --data ../shared/evaldata --conversations 5 --sessions 40`
/// (EVALUATION.md, "Fusion by score"): the update's question with the
/// new fact on top (of 536) / questions on facts left alone with their
/// fact on top (of 1,534), beside and declared, and LoCoMo evidence
/// recall@10 (of 623), a named day's rows counting their meaning twice:
/// - reciprocal rank: 469 / 1,447, 504 / 1,453, 522;
/// - weight 0.6: 477 / 1,466, 521 / 1,470, 524;
/// - **weight 1: 478 / 1,467, 521 / 1,471, 520**;
/// - weight 1.5: 478 / 1,467, 521 / 1,471, 520;
/// - and with [`ON_A_NAMED_DAY`] instead (kept): LoCoMo 529.
const WORDS_WEIGHT: f32 = 1.0;

/// What a row said on a day the query names ([`crate::when`]) gains in
/// the fused rank: as much as a third signal that found it a perfect
/// match, as the third list of reciprocal rank fusion gave it (about a
/// whole list's share): the rows of that day rise above rows of other
/// days that match about as well, while a row of that day the query
/// hardly matches stays below one of another day that both signals
/// favour.
const ON_A_NAMED_DAY: f32 = 1.0;

pub(super) const COLUMNS: [&str; 7] =
    ["id", "kind", "text", "source", "day", "vector", "_distance"];

/// Hits whose vectors are at least this similar are one result.
const NEAR_DUPLICATE: f32 = 0.95;

/// A result list, best first: each row with its vector, and its score
/// (higher is better).
pub(super) struct Ranked {
    pub rows: Vec<(Hit, Vec<f32>)>,
    pub scores: Vec<f32>,
}

/// The lists a search fuses: the rows nearest the query, the rows whose
/// words best match it, and, when it names days ([`crate::when`]), the
/// nearest rows of those days.
pub(super) struct Lists {
    pub vector: Ranked,
    pub text: Ranked,
    pub dated: Option<Ranked>,
}

impl Ranked {
    /// The first `n` rows, and, when `spans` are given, the rows of the
    /// whole list whose day one of them holds, in its order (the list is
    /// read [`super::reader::pool`] rows deep for them).
    pub(super) fn split_dated(mut self, spans: &[Span], n: usize) -> (Ranked, Option<Ranked>) {
        let of = |h: &Hit| {
            h.day
                .as_deref()
                .is_some_and(|d| spans.iter().any(|s| s.holds(d)))
        };
        let dated = (!spans.is_empty()).then(|| {
            let (rows, scores) = self
                .rows
                .iter()
                .zip(&self.scores)
                .filter(|((h, _), _)| of(h))
                .map(|(row, score)| (row.clone(), *score))
                .unzip();
            Ranked { rows, scores }
        });
        self.rows.truncate(n);
        self.scores.truncate(n);
        (self, dated)
    }
}

/// The vector list of a search: the rows nearest the query's vector.
pub(super) async fn vector_list(table: &lancedb::Table, qv: Vec<f32>, n: usize) -> Result<Ranked> {
    let found = nearest(table, qv, n, None).await?;
    Ok(Ranked {
        rows: rows(&found)?,
        scores: distances(&found)?.into_iter().map(|d| -d).collect(),
    })
}

/// What a vector query reads of each row when the row's other fields are
/// known beside ([`keyed`]): its text, kind and day, which the words hold
/// too, are not decoded from the table (BENCHMARKS.md, "A search past the
/// vectors kept reads its rows' keys").
const KEYS: [&str; 4] = ["id", "source", "vector", "_distance"];

/// The rows nearest `qv` by the table's vector index, read as their keys,
/// vectors and distances only ([`KEYS`]; [`keyed`] makes them a list).
pub(super) async fn nearest_keys(
    table: &lancedb::Table,
    qv: Vec<f32>,
    n: usize,
) -> Result<Vec<RecordBatch>> {
    nearest_read(table, (qv, n, None), &KEYS).await
}

/// The vector list of the rows [`nearest_keys`] read, each row's other
/// fields as `hit_of` gives them; `None` when it lacks one of the rows.
pub(super) fn keyed(
    found: &[RecordBatch],
    hit_of: impl Fn(&Source, &RowId) -> Option<Hit>,
) -> Result<Option<Ranked>> {
    let mut rows = Vec::new();
    for b in found {
        let (ids, sources, vectors) = (string_col(b, "id")?, string_col(b, "source")?, vectors(b)?);
        for i in 0..b.num_rows() {
            // Written by this module only; an unknown value reads as the
            // entries file, as `hits` reads it.
            let source = Source::parse(sources.value(i)).unwrap_or(Source::Entries);
            let Some(hit) = hit_of(&source, &RowId::stored(ids.value(i))) else {
                return Ok(None);
            };
            rows.push((hit, vector(vectors, i)));
        }
    }
    let scores = distances(found)?.into_iter().map(|d| -d).collect();
    Ok(Some(Ranked { rows, scores }))
}

/// A row fused from the lists: its hit, its vector (for collapsing near
/// duplicates, empty when it has none), and what the two signals say of
/// it apart.
pub(super) struct Fused {
    pub hit: Hit,
    pub vector: Vec<f32>,
    /// Its words' score (over the query's idf sum, [`words_score`]; 0 when
    /// the full-text list does not have it) and its cosine with the query
    /// (below 0 read as 0).
    words: f32,
    meaning: f32,
}

/// The rows of the vector and full-text result lists (and of the days a
/// query names), fused: each row's rank score ([`Hit::rank`]) is its
/// meaning's score plus [`WORDS_WEIGHT`] times its words' score (over the
/// query's idf sum, [`words_score`]; 0 when the full-text list does not
/// have it), whichever list found it; a row of the days the query names
/// (the third list, of those days' nearest rows) gains
/// [`ON_A_NAMED_DAY`]. Each row keeps its vector and
/// gets its 0-to-1 [`Hit::score`]: the better of the two signals.
pub(super) fn fuse(lists: Lists, query: &[f32]) -> HashMap<RowId, Fused> {
    let mut fused: HashMap<RowId, Fused> = HashMap::new();
    let on_days: Vec<RowId> = (lists.dated.iter())
        .flat_map(|l| l.rows.iter().map(|(h, _)| h.id.clone()))
        .collect();
    for list in [lists.vector, lists.text].into_iter().chain(lists.dated) {
        for (hit, vector) in list.rows {
            let words = hit.score.clamp(0.0, 1.0);
            fused
                .entry(hit.id.clone())
                .and_modify(|f| f.words = f.words.max(words))
                .or_insert_with(|| {
                    let meaning = match vector.is_empty() {
                        true => 0.0,
                        false => cosine(query, &vector).clamp(0.0, 1.0),
                    };
                    Fused {
                        hit,
                        vector,
                        words,
                        meaning,
                    }
                });
        }
    }
    for f in fused.values_mut() {
        f.hit.score = f.words.max(f.meaning);
        f.hit.rank = f.meaning + WORDS_WEIGHT * f.words;
    }
    for id in on_days {
        if let Some(f) = fused.get_mut(&id) {
            f.hit.rank += ON_A_NAMED_DAY;
        }
    }
    fused
}

/// A full-text hit's BM25 score as a share of `idf_sum`, the sum of the
/// idf of the query's words ([`super::terms::idf_sum`]): what a row
/// holding each word once at the mean length scores.
pub(super) fn words_score(bm25: f32, idf_sum: f32) -> f32 {
    match idf_sum > 0.0 {
        true => (bm25 / idf_sum).min(1.0),
        false => 0.0,
    }
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

/// The rows of a result list, in order, each with its vector (score 0).
pub(super) fn rows(batches: &[RecordBatch]) -> Result<Vec<(Hit, Vec<f32>)>> {
    let mut out = Vec::new();
    for b in batches {
        let vectors = vectors(b)?;
        for (i, hit) in hits(b)?.into_iter().enumerate() {
            out.push((hit, vector(vectors, i)));
        }
    }
    Ok(out)
}

/// A batch's vector column.
fn vectors(b: &RecordBatch) -> Result<&FixedSizeListArray> {
    b.column_by_name("vector")
        .and_then(|c| c.as_any().downcast_ref::<FixedSizeListArray>())
        .context("index column vector missing")
}

/// Row `i`'s vector (empty when it is not of floats).
fn vector(vectors: &FixedSizeListArray, i: usize) -> Vec<f32> {
    let v = vectors.value(i);
    let v = v.as_any().downcast_ref::<Float32Array>();
    v.map(|a| a.values().to_vec()).unwrap_or_default()
}

/// [`rows`] of batches read without their vectors (each empty).
pub(super) fn rows_without_vectors(batches: &[RecordBatch]) -> Result<Vec<(Hit, Vec<f32>)>> {
    let mut out = Vec::new();
    for b in batches {
        out.extend(hits(b)?.into_iter().map(|h| (h, Vec::new())));
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
            id: RowId::stored(ids.value(i)),
            // Written by this module only; an unknown value reads as a fact.
            kind: RowKind::parse(kinds.value(i)).unwrap_or(RowKind::Fact),
            text: texts.value(i).to_string(),
            score: 0.0,
            rank: 0.0,
            // Written by this module only; an unknown value reads as the
            // entries file.
            source: Source::parse(sources.value(i)).unwrap_or(Source::Entries),
            day: (!days.is_null(i)).then(|| days.value(i).to_string()),
        })
        .collect())
}

/// Which hits a search lets through (the cutoff, a narrowed search).
pub(super) type Lets<'a> = &'a dyn Fn(&Hit) -> bool;

/// What each row that keeps history or says "now" scores by what it
/// states alone ([`super::reader::Reader::current_scores`]).
pub(super) type CurrentScores = HashMap<RowId, f32>;

/// Recency weighting, tombstones and the hits `lets` refuses left out
/// (those scoring under the cutoff, or outside a narrowed search), best
/// first with the later-stated of two hits on the same thing first
/// ([`crate::current`], which reads the query's words, `asked`, as the
/// full-text half did) unless the query names days (`dated`: it asks
/// what was said then), near-identical hits collapsed; at most `k`. A
/// hit's score, as `lets` reads it and as shown, is at least what it
/// states scores alone (`now`), while the order compares how well the
/// texts themselves match; the scores shown never rise down the list:
/// each hit shows at most the score of the one above it.
///
/// Equal ranks go by score, then by id, so the order never depends on
/// how the lists came back.
pub(super) fn finish(
    fused: HashMap<RowId, Fused>,
    tombstones: &Tombstones,
    (half_life, lets, now): (f64, Lets<'_>, &CurrentScores),
    (dated, asked): (bool, &[String]),
    k: usize,
) -> Vec<Hit> {
    let shown = |h: &Hit| now.get(&h.id).map_or(h.score, |s| h.score.max(*s));
    let mut hits = admitted(fused, tombstones, (lets, now), half_life);
    let by_score = |a: &Fused, b: &Fused| {
        (b.hit.rank.total_cmp(&a.hit.rank))
            .then_with(|| b.hit.score.total_cmp(&a.hit.score))
            .then_with(|| a.hit.id.cmp(&b.hit.id))
    };
    hits.sort_by(by_score);
    // Of two hits on the same thing, the later-stated first; not for a
    // question that names days, which asks what was said then.
    if !dated {
        let (mut ranked, mut vectors, mut signals) = (Vec::new(), Vec::new(), Vec::new());
        for f in hits {
            ranked.push(f.hit);
            vectors.push(f.vector);
            signals.push((f.words, f.meaning));
        }
        let compared = current::Compared {
            older: k,
            newer: k,
            match_ratio: current::SEARCH_MATCH_RATIO,
            asked: Some(current::AskedWords {
                words: asked,
                read: super::terms::query_tokens,
            }),
        };
        let _ = current::raise_newer(&mut ranked, &vectors, compared);
        hits = (ranked.into_iter().zip(vectors).zip(signals))
            .map(|((hit, vector), (words, meaning))| Fused {
                hit,
                vector,
                words,
                meaning,
            })
            .collect();
        hits.sort_by(by_score);
    }
    // A reader reads the scores as the order: a hit ranked below another
    // shows at most that one's score.
    let mut ceiling = f32::INFINITY;
    collapsed(hits, k)
        .into_iter()
        .map(|mut h| {
            h.score = shown(&h).min(ceiling);
            ceiling = h.score;
            h
        })
        .collect()
}

/// The fused rows `lets` lets through (a row whose statement scores more,
/// [`CurrentScores`], read lifted) and no tombstone hides, each ranked
/// down for its age by `half_life` days.
fn admitted(
    fused: HashMap<RowId, Fused>,
    tombstones: &Tombstones,
    (lets, now): (Lets<'_>, &CurrentScores),
    half_life: f64,
) -> Vec<Fused> {
    let today = chrono::Local::now().date_naive();
    fused
        .into_values()
        .filter(|Fused { hit: h, .. }| match now.get(&h.id) {
            // Only a row whose statement scores more is read lifted.
            Some(s) if *s > h.score => {
                let mut lifted = h.clone();
                lifted.score = *s;
                lets(&lifted)
            }
            _ => lets(h),
        })
        .filter(|Fused { hit: h, .. }| !super::rows::hidden(tombstones, h.kind, &h.id, &h.text))
        .map(|mut f| {
            let h = &mut f.hit;
            if half_life > 0.0
                && let Some(d) = h
                    .day
                    .as_deref()
                    .and_then(|d| chrono::NaiveDate::parse_from_str(d, "%Y-%m-%d").ok())
            {
                let age = (today - d).num_days().max(0) as f64;
                h.rank *= (0.5 + 0.5 * 0.5f64.powf(age / half_life)) as f32;
            }
            f
        })
        .collect()
}

/// The first `k` of `hits` (best first) with near-identical ones collapsed
/// (a fact and the entry or core line that restates it), the best-ranked
/// kept; each kept hit's normalised text is computed once.
fn collapsed(hits: Vec<Fused>, k: usize) -> Vec<Hit> {
    let mut kept: Vec<(Hit, Vec<f32>, String)> = Vec::new();
    for Fused {
        hit: h, vector: v, ..
    } in hits
    {
        let text = normalize(&h.text);
        let dup = kept.iter().any(|(kh, kv, kt)| {
            *kt == text
                || (!v.is_empty() && cosine(kv, &v) >= NEAR_DUPLICATE && !two_statements(kh, &h))
        });
        if !dup {
            kept.push((h, v, text));
        }
        if kept.len() == k {
            break;
        }
    }
    kept.into_iter().map(|(h, _, _)| h).collect()
}

/// Whether near-identical hits `a` and `b` are two things all the same:
/// two entries (or their `MEMORY.md` lines) that carry history and say
/// different values now. Their words are alike because each one's value
/// is the other's history ("light (previously: dark)", "dark (previously:
/// light)": two copies that decided one update in opposite orders), and
/// collapsing them would hide one entry from every search.
fn two_statements(a: &Hit, b: &Hit) -> bool {
    if a.kind == RowKind::Fact || b.kind == RowKind::Fact {
        return false;
    }
    let (na, nb) = (current_part(&a.text), current_part(&b.text));
    let history = na.len() < a.text.trim_end().len() || nb.len() < b.text.trim_end().len();
    given(a.id.as_str()) != given(b.id.as_str()) && history && normalize(na) != normalize(nb)
}

/// The `n` rows nearest `qv` by LanceDB's exact scan, of the rows
/// `filter` (SQL) keeps when given.
pub(super) async fn nearest(
    table: &lancedb::Table,
    qv: Vec<f32>,
    n: usize,
    filter: Option<String>,
) -> Result<Vec<RecordBatch>> {
    nearest_read(table, (qv, n, filter), &COLUMNS).await
}

/// The `n` rows nearest `qv` (of those `filter` keeps), as `columns`.
async fn nearest_read(
    table: &lancedb::Table,
    (qv, n, filter): (Vec<f32>, usize, Option<String>),
    columns: &[&str],
) -> Result<Vec<RecordBatch>> {
    let mut query = table
        .query()
        .nearest_to(qv)?
        .distance_type(DistanceType::Cosine);
    if let Some(f) = filter {
        query = query.only_if(f);
    }
    collect(query.select(Select::columns(columns)).limit(n)).await
}

/// An existing entry like a new fact.
#[derive(Debug, Clone, Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct SimilarEntry {
    /// `score` is the cosine similarity of the entry and the fact.
    #[serde(flatten)]
    pub hit: Hit,
    /// The built-in judge will merge the fact into this entry: the tier-2
    /// rule ([`crate::duplicate::Rule::SHIPPED`]) says they are the same, or the
    /// entry says the fact and more ([`crate::duplicate::Rule::part_of`]).
    pub same: bool,
}

impl current::Ranked for Hit {
    fn day(&self) -> Option<&str> {
        self.day.as_deref()
    }
    fn text(&self) -> &str {
        &self.text
    }
    fn score(&self) -> f64 {
        f64::from(self.rank)
    }
    /// Its 0-to-1 `score`: how well it matches the query.
    fn matched(&self) -> Option<f32> {
        Some(self.score)
    }
    /// A hit's rank score is an `f32`, so the scores compared came from one.
    fn set_above(&mut self, score: f64) {
        self.rank = (score as f32).next_up();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::rows::Row;

    /// A fact row of `text` and its vector at cosine `meaning` with the
    /// query's vector `[1, 0]`.
    fn row(id: &str, text: &str, meaning: f32) -> (Hit, Vec<f32>) {
        let hit = Row::fact(id, text).hit();
        (hit, vec![meaning, (1.0 - meaning * meaning).sqrt()])
    }

    /// `(id, words' score)` in the full-text list's order.
    fn with_words(mut rows: Vec<(Hit, Vec<f32>)>, words: &[f32]) -> Ranked {
        for ((h, _), w) in rows.iter_mut().zip(words) {
            h.score = *w;
        }
        Ranked {
            rows,
            scores: words.to_vec(),
        }
    }

    /// The hits' ids for a search whose vector list finds `rows` in their
    /// order and whose full-text list finds them with `words` in `order`.
    fn fused_ids(rows: &[(Hit, Vec<f32>)], (words, order): (&[f32], &[usize])) -> Vec<String> {
        let meaning: Vec<f32> = rows.iter().map(|(_, v)| v[0]).collect();
        let lists = Lists {
            vector: Ranked {
                rows: rows.to_vec(),
                scores: meaning,
            },
            text: with_words(order.iter().map(|&i| rows[i].clone()).collect(), words),
            dated: None,
        };
        let lets = |_: &Hit| true;
        let now = CurrentScores::default();
        let hits = finish(
            fuse(lists, &[1.0, 0.0]),
            &Tombstones::default(),
            (0.0, &lets, &now),
            (false, &[]),
            rows.len(),
        );
        hits.iter().map(|h| h.id.as_str().to_string()).collect()
    }

    #[test]
    fn a_row_far_ahead_by_meaning_and_a_hair_behind_by_words_comes_first() {
        let rows = [
            row(
                "f-served",
                "Marta has served as the conductor of the Riverside Chorale",
                0.8,
            ),
            row("f-cellist", "Marta is a cellist and conductor", 0.5),
            row("f-chorale", "Marta sang in a chorale as a child", 0.1),
        ];
        // First by meaning and third by words, a hair behind the other
        // two: ranked by places (first and third against second and
        // first) the short text came first; both signals together
        // favour the fact that answers (1.4 against 1.15 and 0.72).
        let ids = fused_ids(&rows, (&[0.65, 0.62, 0.6], &[1, 2, 0]));
        assert_eq!(ids, ["f-served", "f-cellist", "f-chorale"]);
    }

    #[test]
    fn a_row_both_signals_favour_less_stays_below_though_one_puts_it_first() {
        let rows = [
            row("f-served", "Marta has served as the conductor", 0.75),
            row("f-short", "Marta is a cellist and conductor", 0.5),
        ];
        // The short text's words score more than anything scores the
        // other (0.9 against 0.75), but together 1.4 against 1.45.
        let ids = fused_ids(&rows, (&[0.9, 0.7], &[1, 0]));
        assert_eq!(ids, ["f-served", "f-short"]);
    }
}
