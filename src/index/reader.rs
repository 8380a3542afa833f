//! Reading the index: searches and the similar entries of a new fact. A
//! [`Reader`] is cheap to clone and never writes: it reads the table at
//! the version its process's writer last left (or opened), with the words
//! ([`super::terms`]) of that version, which it asks the index's owner to
//! load when they are not ([`super::owner`]).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use lancedb::query::{QueryBase, Select};

use super::Shared;
use super::filter::{Filter, Rows};
use super::rows::RowKind;
use super::search::{self, CurrentScores, Hit, Ranked, SimilarEntry};
use super::table::collect;
use super::writer::Asking;
use crate::embed::cosine;
use crate::ids::RowId;
use crate::tombstones::Tombstones;
use crate::when::{self, Asked, Span};
use crate::{Error, Result, recall, steps, update};

/// Least cosine similarity at which an existing entry is shown as similar
/// to a new fact (`memd eval dedup`, EVALUATION.md).
pub const SIMILAR_MIN_COSINE: f32 = 0.75;

/// A query that names days ([`crate::when`]) fuses a third list: of the
/// rows nearest it, `SPAN_POOL` times as many as each list holds, those of
/// the days named, in their order. The nearest rows are scanned whole
/// either way; only the wider pool's rows are read.
const SPAN_POOL: usize = 10;

/// How many of the nearest rows to read for lists of `n` rows, for a
/// query that names `spans` ([`SPAN_POOL`]).
pub(super) fn pool(spans: &[Span], n: usize) -> usize {
    match spans.is_empty() {
        true => n,
        false => n * SPAN_POOL,
    }
}

/// `query` as search reads it ([`crate::when::read`]): today is the local
/// day, as recency weighting counts it ([`search::finish`]).
pub(crate) fn asked(query: &str) -> Asked {
    when::read(query, chrono::Local::now().date_naive())
}

/// What narrows a search besides `k`, as the rows it names.
#[derive(Debug, Default, Clone, Copy)]
struct Narrow<'a> {
    /// Rows never to give (MEMORY.md's lines are then left out too: an
    /// agent holding MEMORY.md in its prompt asks this).
    leave_out: Option<&'a HashSet<String>>,
    /// The only rows that may come back (a search by category, session or
    /// date).
    only: Option<&'a HashSet<String>>,
    /// Hits scoring less ([`Hit::score`], 0 to 1) are left out.
    pub min_score: f32,
}

/// One search ([`Reader::search`]): by default of the whole table, not
/// logged, waiting for the words of the table's version, every hit kept.
#[derive(Debug, Clone, Default)]
pub struct Query<'a> {
    /// What is asked.
    pub text: &'a str,
    /// How many hits at most.
    pub k: usize,
    /// Whether the hits are logged as recalls (a user's or an agent's
    /// search; not an evaluation's or a benchmark's).
    pub logged: bool,
    /// Whether to wait for the words of the table's version; without, a
    /// write of the owner's running, the words as they are serve (the
    /// daemon's `GET /v1/search?wait=false`, while a backlog is indexed).
    pub wait: bool,
    /// Hits scoring less ([`Hit::score`], 0 to 1) are left out.
    pub min_score: f32,
    /// The rows it is narrowed to, or leaves out ([`Filter`]).
    pub filter: Filter,
    /// The embedding of what the query asks about ([`asked`]), when the
    /// caller made it already (benchmarks time the two parts apart).
    pub vector: Option<Vec<f32>>,
    /// Rows to search instead of the table's: the memory as it was at a
    /// past time ([`super::rows_as_of`]).
    pub over: Option<Vec<super::Row>>,
}

impl<'a> Query<'a> {
    /// The `k` best rows for `text`, unlogged.
    pub fn new(text: &'a str, k: usize) -> Query<'a> {
        Query {
            text,
            k,
            wait: true,
            ..Query::default()
        }
    }

    /// Logged as recalls.
    pub fn logged(self) -> Query<'a> {
        Query {
            logged: true,
            ..self
        }
    }

    /// Only the hits scoring `min_score` or more ([`Hit::score`], 0 to 1).
    pub fn above(self, min_score: f32) -> Query<'a> {
        Query { min_score, ..self }
    }

    /// Narrowed by `filter`.
    pub fn filtered(self, filter: Filter) -> Query<'a> {
        Query { filter, ..self }
    }

    /// Waiting for the words of the table's version (`wait`) or not.
    pub fn waiting(self, wait: bool) -> Query<'a> {
        Query { wait, ..self }
    }

    /// With the embedding of what it asks about made already.
    pub fn with_vector(self, vector: Vec<f32>) -> Query<'a> {
        Query {
            vector: Some(vector),
            ..self
        }
    }

    /// Over `rows` instead of the table's.
    pub fn over(self, rows: Vec<super::Row>) -> Query<'a> {
        Query {
            over: Some(rows),
            ..self
        }
    }
}

impl Narrow<'_> {
    fn lets(&self, h: &Hit) -> bool {
        let id = h.id.as_str();
        let out = self
            .leave_out
            .is_some_and(|out| h.kind == RowKind::Core || out.contains(id));
        !out && self.only.is_none_or(|only| only.contains(id))
    }
}

#[derive(Clone)]
pub struct Reader {
    shared: Arc<Shared>,
    /// How it asks the owner for the words ([`super::owner::Job::Words`]).
    asking: Asking,
}

impl Reader {
    pub(super) fn new(shared: Arc<Shared>, asking: Asking) -> Reader {
        Reader { shared, asking }
    }

    pub(super) fn shared(&self) -> &Shared {
        &self.shared
    }

    /// The `query.k` best rows for `query` ([`Query`]): from the table
    /// (or the rows the query names, [`Query::over`]), narrowed, and
    /// logged as recalls when the query says so. The one search of the
    /// index: every caller's goes through here.
    pub async fn search(&self, query: &Query<'_>) -> Result<Vec<Hit>> {
        let hits = match &query.over {
            Some(rows) => self.search_rows(query, rows).await?,
            None => self.search_table(query).await?,
        };
        if query.logged {
            self.log(query.text, &hits).await?;
        }
        Ok(hits)
    }

    async fn search_table(&self, query: &Query<'_>) -> Result<Vec<Hit>> {
        let rows = match query.filter == Filter::default() {
            true => Rows::default(),
            false => query.filter.rows(&self.shared.layout)?,
        };
        let narrow = &Narrow {
            leave_out: rows.leave_out.as_ref(),
            only: rows.only.as_ref(),
            min_score: query.min_score,
        };
        let k = query.k;
        // Room for the rows left out, so that `k` others still come back:
        // every row, when only some may come back.
        let asked = match narrow.only {
            Some(_) => k + self.shared.table.inner.count_rows(None).await?,
            None => k + narrow.leave_out.map_or(0, HashSet::len),
        };
        let read = self::asked(query.text);
        let qv = match &query.vector {
            Some(qv) => qv.clone(),
            // From the cache when the search embedded it beside its sync.
            None => steps::timed("query vector", self.query_vector(&read.about)).await?,
        };
        let mut hits = self.ranked(&read, qv, asked, query.wait, narrow).await?;
        hits.truncate(k);
        Ok(hits)
    }

    /// Log `hits`, found for `query`, to the recall log.
    async fn log(&self, query: &str, hits: &[Hit]) -> Result<()> {
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
        // Off the async workers, which the daemon's other requests share
        // (it takes the log's lock).
        let shared = self.shared.clone();
        let logged = tokio::task::spawn_blocking(move || shared.recalls.append(&log));
        steps::timed("recall log", logged).await??;
        Ok(())
    }

    /// LanceDB's vector index read into this process's cache, when the
    /// vector half of a search will ask it (more rows than the vectors
    /// kept in memory, [`super::vectors::MAX_ROWS`]): a new process's
    /// search then reads it beside its sync and its query's embedding
    /// rather than after them, and a daemon reads it at start. Once a
    /// handle (a table that grows past that size later is read by its
    /// next search, as before); a failure only leaves the search to read
    /// the index itself.
    pub(crate) async fn warm_vector_index(&self) {
        if self
            .shared
            .warmed
            .swap(true, std::sync::atomic::Ordering::Relaxed)
        {
            return;
        }
        let inner = &self.shared.table.inner;
        let warm = async {
            if vectors_kept(inner).await? {
                return Ok(());
            }
            let indices = inner.list_indices().await?;
            if let Some(vector) = super::table::on_column(&indices, "vector") {
                inner.prewarm_index(&vector.name).await?;
            }
            Ok::<_, Error>(())
        };
        if let Err(e) = warm.await {
            tracing::debug!("vector index not read ahead: {e:#}");
        }
    }

    /// The embedding of what search `query` asks about ([`asked`]), which
    /// its search then takes from the embedding cache.
    pub(crate) async fn asked_vector(&self, query: &str) -> Result<Vec<f32>> {
        self.query_vector(&asked(query).about).await
    }

    /// The embedding of a query.
    pub(crate) async fn query_vector(&self, query: &str) -> Result<Vec<f32>> {
        let mut v = self.shared.embedder.embed(&[query.to_string()]).await?;
        Ok(v.remove(0))
    }

    /// Vector and full-text results fused and finished, from the table as
    /// it is (`wait`: see [`Reader::full_text`]), with only the hits
    /// `narrow` lets through: narrowed before near-identical hits collapse,
    /// so a hit left out never hides one let through. `qv` embeds what the
    /// query asks about: without the days it names ([`asked`]).
    async fn ranked(
        &self,
        asked: &Asked,
        qv: Vec<f32>,
        k: usize,
        wait: bool,
        narrow: &Narrow<'_>,
    ) -> Result<Vec<Hit>> {
        let n = (k * 4).max(20);
        // The words first: they bring the rows kept in memory (and their
        // vectors, which the vector half then scans) to the table's version.
        let query = asked.about.as_str();
        let text = steps::timed("full text (BM25)", self.full_text(query, n, wait)).await?;
        let wide = pool(&asked.spans, n);
        let near = steps::timed("vector search", self.vector_list(&qv, wide)).await?;
        let (vector, dated) = near.split_dated(&asked.spans, n);
        let with_vectors = self.with_vectors(text, &vector);
        let text = steps::timed("full-text hits' vectors", with_vectors).await?;
        let idf_sum = self.shared.words.load().idf_sum(query);
        let now = steps::timed("current parts", self.current_scores([&vector, &text], &qv)).await?;
        let lets = |h: &Hit| h.score >= narrow.min_score && narrow.lets(h);
        let lists = search::Lists {
            vector,
            text,
            dated,
        };
        self.finished(lists, (&qv, idf_sum, query), (&lets, &now), k)
    }

    /// For each candidate row that keeps history ("X (previously: Y)") or
    /// says "now", how well what it states matches the query (cosine of
    /// [`crate::update::statement`] with `qv`): its score is never less
    /// than that, so that a question about the current value scores an
    /// update at least as the new value stated plainly would, and the
    /// history it keeps costs it nothing ([`search::finish`]). The
    /// statements are embedded once (the embedder caches them).
    pub(super) async fn current_scores(
        &self,
        lists: [&Ranked; 2],
        qv: &[f32],
    ) -> Result<CurrentScores> {
        let mut rows: Vec<(RowId, String)> = Vec::new();
        for (h, _) in lists.iter().flat_map(|l| &l.rows) {
            let now = update::statement(&h.text);
            if now != h.text && !rows.iter().any(|(id, _)| *id == h.id) {
                rows.push((h.id.clone(), now));
            }
        }
        if rows.is_empty() {
            return Ok(CurrentScores::new());
        }
        let texts: Vec<String> = rows.iter().map(|(_, t)| t.clone()).collect();
        let vectors = self.shared.embedder.embed(&texts).await?;
        Ok(rows
            .into_iter()
            .zip(vectors)
            .map(|((id, _), v)| (id, cosine(qv, &v).clamp(0.0, 1.0)))
            .collect())
    }

    /// The vector and full-text lists (the words' scores raw BM25, put
    /// over `idf_sum` here; `query` as the full-text half read it) fused,
    /// tombstones and recency applied, each
    /// row's score at least its entry in `now` ([`Reader::current_scores`]), the
    /// hits `lets` refuses left out, near duplicates collapsed: at most
    /// `k` ([`search::fuse`], [`search::finish`]).
    pub(super) fn finished(
        &self,
        mut lists: search::Lists,
        (qv, idf_sum, query): (&[f32], f32, &str),
        (lets, now): (&dyn Fn(&Hit) -> bool, &CurrentScores),
        k: usize,
    ) -> Result<Vec<Hit>> {
        for (h, _) in &mut lists.text.rows {
            h.score = search::words_score(h.score, idf_sum);
        }
        let tombstones = steps::timed_now("tombstones read", || {
            Tombstones::load(&self.shared.layout.tombstones_file())
        })?;
        // Days no near row was said on tell nothing about the rows.
        let dated = lists.dated.as_ref().is_some_and(|d| !d.rows.is_empty());
        let fused = steps::timed_now("fusion", || search::fuse(lists, qv));
        let half_life = self.shared.config.search.recency_half_life_days;
        let asked = super::terms::query_tokens(query);
        Ok(steps::timed_now("collapse and finish", || {
            search::finish(
                fused,
                &tombstones,
                (half_life, lets, now),
                (dated, &asked),
                k,
            )
        }))
    }

    /// The vector half of a search: from the vectors kept in memory with
    /// the words ([`super::vectors`]), which [`Reader::full_text`] has
    /// just brought to the table's version, or else from LanceDB, which
    /// then reads only the rows' keys and vectors when the words are of
    /// its version and hold every row it lists (their text, kind and day
    /// are taken from the words: [`search::keyed`]).
    async fn vector_list(&self, qv: &[f32], n: usize) -> Result<Ranked> {
        // One snapshot for both: one that keeps no vectors has no rows
        // shown ahead of the table ([`super::snapshot::Model::ahead`]).
        let words = self.shared.words.load_full();
        if let Some(near) = words.nearest(qv, n) {
            return Ok(near);
        }
        let table = &self.shared.table.inner;
        let before = self.shared.table.version().await?;
        let found = search::nearest_keys(table, qv.to_vec(), n).await?;
        let version = self.shared.table.version().await?;
        if words.version() == Some(version)
            && before == version
            && let Some(near) = search::keyed(&found, |s, id| words.hit_of(s, id))?
        {
            return Ok(near);
        }
        search::vector_list(table, qv.to_vec(), n).await
    }

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
    /// `wait` false and a write running, the words as they are serve.
    async fn full_text(&self, query: &str, n: usize, wait: bool) -> Result<Vec<Hit>> {
        self.words_current(wait).await?;
        Ok(self.shared.words.load().top(query, n))
    }

    /// Load the handle's words now, and take any read from the words
    /// file into memory: a long-lived process that writes (the daemon)
    /// then pays neither at its first search nor at its first append. A
    /// file that does not read back whole leaves the words unloaded, and
    /// the next search loads them from the table.
    pub(crate) async fn words_ready(&self) -> Result<()> {
        self.ask_words(false, true).await
    }

    /// Bring the handle's words to the table's version at the handle's
    /// (see [`Reader::full_text`] for `wait`): the owner loads them
    /// ([`super::owner`]); with `wait` false and a job of the owner's
    /// queued or running, the words as they are serve.
    pub(crate) async fn words_current(&self, wait: bool) -> Result<()> {
        if self.terms_current().await? || (!wait && self.asking.busy()) {
            return Ok(());
        }
        self.ask_words(false, false).await
    }

    /// Whether the handle's words are those of the table at its version.
    async fn terms_current(&self) -> Result<bool> {
        let version = self.shared.table.version().await?;
        Ok(self.shared.words.load().version() == Some(version))
    }

    /// Load every row's words anew at the handle's version (benchmarks
    /// time it).
    #[cfg(feature = "lab")]
    pub(crate) async fn load_terms(&self) -> Result<()> {
        self.ask_words(true, false).await
    }

    async fn ask_words(&self, force: bool, unmap: bool) -> Result<()> {
        let job = |done| super::owner::Job::Words { force, unmap, done };
        self.asking.ask(job).await?
    }

    /// Full-text hits with their vectors, for collapsing near duplicates:
    /// the vector list's where it has the row, else those kept in memory
    /// ([`super::vectors`]), else the embedding cache's (the vector the row
    /// was written with).
    async fn with_vectors(&self, hits: Vec<Hit>, vector: &Ranked) -> Result<Ranked> {
        let have: HashMap<&RowId, &Vec<f32>> =
            vector.rows.iter().map(|(h, v)| (&h.id, v)).collect();
        let kept: Vec<Option<Vec<f32>>> = {
            let words = self.shared.words.load();
            hits.iter()
                .map(|h| match have.get(&h.id) {
                    Some(v) => Some((*v).clone()),
                    None => words.vector_of(&h.source, &h.id),
                })
                .collect()
        };
        let missing: Vec<String> = hits
            .iter()
            .zip(&kept)
            .filter(|(_, v)| v.is_none())
            .map(|(h, _)| h.text.clone())
            .collect();
        let mut embedded = match missing.is_empty() {
            true => Vec::new().into_iter(),
            false => self.shared.embedder.embed(&missing).await?.into_iter(),
        };
        let scores = hits.iter().map(|h| h.score).collect();
        let rows = hits
            .into_iter()
            .zip(kept)
            .map(|(h, v)| (h, v.unwrap_or_else(|| embedded.next().unwrap_or_default())))
            .collect();
        Ok(Ranked { rows, scores })
    }

    /// At most `k` existing entries that may say the same as `text`
    /// (cosine at least [`SIMILAR_MIN_COSINE`]), most similar first (for
    /// `memd add`, which shows them as information: it never blocks the
    /// write).
    pub(crate) async fn similar_entries(&self, text: &str, k: usize) -> Result<Vec<SimilarEntry>> {
        let qv = self.query_vector(text).await?;
        let found = self.entries_near(&qv, k * 4).await?;
        let tombstones = Tombstones::load(&self.shared.layout.tombstones_file())?;
        let mut out = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for (mut hit, v) in found {
            hit.score = cosine(&qv, &v);
            if hit.score < SIMILAR_MIN_COSINE
                || super::rows::hidden(&tombstones, hit.kind, &hit.id, &hit.text)
                || !seen.insert(hit.id.clone())
            {
                continue;
            }
            let same = self.same(text, &hit.text).await?;
            out.push(SimilarEntry { hit, same });
        }
        out.sort_by(|a, b| {
            (b.hit.score.total_cmp(&a.hit.score)).then_with(|| a.hit.id.cmp(&b.hit.id))
        });
        out.truncate(k);
        Ok(out)
    }

    /// The `n` entry rows nearest `qv`, with their vectors: from the
    /// vectors kept in memory when they are the table's as it is now (a
    /// LanceDB query with a filter was 6–9 ms of a `remember` through
    /// `memd mcp` at 1k facts), else from LanceDB.
    async fn entries_near(&self, qv: &[f32], n: usize) -> Result<Vec<(Hit, Vec<f32>)>> {
        if self.terms_current().await?
            && let Some(near) = self.shared.words.load().nearest_of(qv, n, RowKind::Entry)
        {
            return Ok(near.rows);
        }
        let filter = format!("kind = '{}'", RowKind::Entry.as_str());
        let table = &self.shared.table.inner;
        search::rows(&search::nearest(table, qv.to_vec(), n, Some(filter)).await?)
    }

    /// Whether the built-in judge would fold `fact` into `entry`: the
    /// tier-2 rule says they are the same, or `fact` says a leading clause
    /// of `entry` ([`crate::duplicate::Rule::part_of`]). Embeds only when their
    /// words allow either.
    async fn same(&self, fact: &str, entry: &str) -> Result<bool> {
        use crate::duplicate::{PART_MIN_COSINE, Rule};
        let rule = Rule::SHIPPED;
        let part = rule.part_of(fact, entry, 1.0, 0.0);
        if !part && !rule.words_agree(fact, entry) {
            return Ok(false);
        }
        let v = self
            .shared
            .embedder
            .embed(&[Rule::compared(fact), Rule::compared(entry)])
            .await?;
        let c = cosine(&v[0], &v[1]);
        Ok(rule.same(fact, entry, c) || rule.part_of(fact, entry, c, PART_MIN_COSINE))
    }

    /// Every (id, kind) in the table, sorted (for tests and `reindex`).
    pub async fn ids(&self) -> Result<Vec<(String, String)>> {
        let columns = ["id", "kind"];
        let mut out: Vec<(String, String)> = self
            .shared
            .table
            .strings(columns, None)
            .await?
            .into_iter()
            .map(|[id, kind]| (id, kind))
            .collect();
        out.sort();
        Ok(out)
    }

    /// Fragments in the table (each sync that added rows writes one; every
    /// search visits every fragment).
    pub async fn fragments(&self) -> Result<usize> {
        self.shared.table.fragments().await
    }
}

/// Whether the table has few enough rows for their vectors to be kept in
/// memory ([`super::vectors::MAX_ROWS`]); past that, the vector half of a
/// search asks LanceDB's index.
async fn vectors_kept(inner: &lancedb::Table) -> Result<bool> {
    Ok(inner.count_rows(None).await? <= super::vectors::MAX_ROWS)
}

/// Every row of the table as the words need it, and the dimension of the
/// vectors when there are few enough rows to keep them
/// ([`super::vectors`]; otherwise the rows come without their vectors).
pub(super) async fn table_rows(
    inner: &lancedb::Table,
    dim: usize,
) -> Result<(Vec<(Hit, Vec<f32>)>, Option<usize>)> {
    let few = vectors_kept(inner).await?;
    let columns = ["id", "source", "kind", "text", "day", "vector"];
    let columns = &columns[..if few { 6 } else { 5 }];
    let batches = collect(inner.query().select(Select::columns(columns))).await?;
    let rows = match few {
        true => search::rows(&batches)?,
        false => search::rows_without_vectors(&batches)?,
    };
    Ok((rows, few.then_some(dim)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Config, EmbedderKind};
    use crate::index::Index;
    use crate::{Layout, Memory, memory};

    /// A new memory in a temporary directory, with the model-free embedder.
    fn lexical_memory() -> (tempfile::TempDir, Layout, Memory) {
        let t = tempfile::tempdir().unwrap();
        let layout = memory::init(t.path()).unwrap();
        let mut config = Config::default();
        config.embedder.kind = EmbedderKind::Lexical;
        let memory = Memory::new(layout.clone(), config);
        (t, layout, memory)
    }

    /// The vector half of a search from the vectors kept in memory is
    /// LanceDB's exact scan: the same rows, in the same order, with the
    /// same scores, after the rows changed (a row deleted, rows added).
    #[tokio::test(flavor = "multi_thread")]
    async fn the_vectors_in_memory_list_what_lancedb_lists() {
        let (_t, layout, memory) = lexical_memory();
        let words = ["tea", "bike", "garden", "piano", "boat", "river", "cat"];
        let day = |n: usize, from: usize| {
            let mut text = "# 2026-01-01\n\n## 09:00:00\n".to_string();
            for i in from..from + n {
                let (a, b) = (words[i % 7], words[(i / 7) % 7]);
                text.push_str(&format!("- The user likes {a} and {b}, note {i}\n"));
            }
            text
        };
        std::fs::write(layout.archive_file("2026-01-01"), day(120, 0)).unwrap();
        let index = Index::open(&memory).await.unwrap();
        let same = |index: &Index| {
            let reader = index.reader.clone();
            async move {
                for q in ["tea and a bike", "river cat", "piano", "nothing alike"] {
                    let qv = reader.query_vector(q).await.unwrap();
                    reader.full_text(q, 20, true).await.unwrap();
                    let kept = reader.shared.words.load().nearest(&qv, 20);
                    let kept = kept.expect("vectors kept");
                    let table = &reader.shared.table.inner;
                    let lance = search::vector_list(table, qv, 20).await.unwrap();
                    let ids = |r: &Ranked| -> Vec<(String, i64)> {
                        r.rows
                            .iter()
                            .zip(&r.scores)
                            .map(|((h, _), s)| (h.id.to_string(), (s * 1e5).round() as i64))
                            .collect()
                    };
                    let (mut a, mut b) = (ids(&kept), ids(&lance));
                    assert_eq!(a.len(), b.len(), "{q}");
                    // Equal scores may come in any order from LanceDB, and
                    // which of those tied at the cut it lists is its choice
                    // (memd's is by id).
                    let cut = a.last().map(|(_, s)| *s);
                    for list in [&mut a, &mut b] {
                        list.retain(|(_, s)| Some(*s) != cut);
                        list.sort_by_key(|(id, s)| (-s, id.clone()));
                    }
                    assert_eq!(a, b, "{q}");
                }
            }
        };
        index.writer.sync().await.unwrap();
        same(&index).await;
        std::fs::write(layout.archive_file("2026-01-01"), day(100, 30)).unwrap();
        std::fs::write(layout.archive_file("2026-01-02"), day(40, 500)).unwrap();
        index.writer.sync().await.unwrap();
        same(&index).await;
    }

    /// A handle's first search over more rows than the vectors kept in
    /// memory reads LanceDB's vector index ahead (beside its sync and its
    /// query's embedding), and finds what a handle that read nothing ahead
    /// finds.
    #[tokio::test(flavor = "multi_thread")]
    async fn a_new_handle_reads_the_vector_index_ahead_when_its_search_will_ask_it() {
        let (_t, layout, memory) = lexical_memory();
        let words = [
            "tea", "bike", "garden", "piano", "boat", "river", "cat", "lamp",
        ];
        let mut text = "# 2026-01-01\n\n## 09:00:00\n".to_string();
        for i in 0..super::super::vectors::MAX_ROWS + 500 {
            let (a, b, c) = (words[i % 8], words[(i / 8) % 8], words[(i / 64) % 8]);
            text.push_str(&format!("- The user likes {a}, {b} and {c}, note {i}\n"));
        }
        std::fs::write(layout.archive_file("2026-01-01"), text).unwrap();
        let built = Index::open(&memory).await.unwrap();
        built.writer.sync().await.unwrap();
        let indices = built
            .reader
            .shared
            .table
            .inner
            .list_indices()
            .await
            .unwrap();
        assert!(super::super::table::on_column(&indices, "vector").is_some());
        let cached = |index: &Index| {
            let table = index.reader.shared.table.inner.clone();
            async move {
                let dataset = table.dataset().unwrap().get().await.unwrap();
                dataset.session().index_cache_stats().await.size_bytes
            }
        };
        let (ahead, plain) = (
            Index::open(&memory).await.unwrap(),
            Index::open(&memory).await.unwrap(),
        );
        let before = cached(&ahead).await;
        ahead.reader.warm_vector_index().await;
        let read = cached(&ahead).await - before;
        assert!(
            read > 1 << 20,
            "the vector index was read ahead: {read} bytes"
        );
        for q in ["tea and a bike", "river cat lamp", "piano note 7"] {
            let ids = |hits: Vec<Hit>| -> Vec<(String, i64)> {
                let score = |h: &Hit| (h.score * 1e5).round() as i64;
                hits.iter().map(|h| (h.id.to_string(), score(h))).collect()
            };
            let a = ids(ahead.reader.search(&Query::new(q, 10)).await.unwrap());
            let b = ids(plain.reader.search(&Query::new(q, 10)).await.unwrap());
            assert_eq!(a.len(), 10, "{q}");
            assert_eq!(a, b, "{q}");
        }
    }

    /// Past the rows whose vectors are kept in memory, LanceDB's vector
    /// list read as the rows' keys and vectors, each row's text, kind and
    /// day taken from the words, is the list read whole: the same rows
    /// with the same fields, vectors and scores, after rows changed and
    /// from a handle that read the words file. A row the words lack makes
    /// it read whole.
    #[tokio::test(flavor = "multi_thread")]
    async fn past_the_vectors_kept_the_vector_list_read_by_its_keys_is_the_one_read_whole() {
        let (_t, layout, memory) = lexical_memory();
        let words = [
            "tea", "bike", "garden", "piano", "boat", "river", "cat", "lamp",
        ];
        let day = |day: &str, n: usize, from: usize| {
            let mut text = format!("# {day}\n\n## 09:00:00\n");
            for i in from..from + n {
                let (a, b, c) = (words[i % 8], words[(i / 8) % 8], words[(i / 64) % 8]);
                text.push_str(&format!("- The user likes {a}, {b} and {c}, note {i}\n"));
            }
            std::fs::write(layout.archive_file(day), text).unwrap();
        };
        day("2026-01-01", super::super::vectors::MAX_ROWS + 300, 0);
        day("2026-01-02", 60, 100_000);
        let shown = |hits: &[(Hit, Vec<f32>)], scores: &[f32]| -> Vec<String> {
            let rows = hits.iter().zip(scores);
            rows.map(|((h, v), s)| format!("{h:?} {v:?} {s}")).collect()
        };
        let same = |reader: Reader| async move {
            for q in [
                "tea and a bike",
                "river cat lamp",
                "piano note 7",
                "nothing alike",
            ] {
                let qv = reader.query_vector(q).await.unwrap();
                reader.full_text(q, 20, true).await.unwrap();
                let words = reader.shared.words.load();
                assert!(words.nearest(&qv, 20).is_none(), "no vectors kept");
                let table = &reader.shared.table.inner;
                let whole = search::vector_list(table, qv.clone(), 20).await.unwrap();
                let found = search::nearest_keys(table, qv.clone(), 20).await.unwrap();
                let keyed = search::keyed(&found, |s, id| words.hit_of(s, id)).unwrap();
                let keyed = keyed.expect("the words hold every row listed");
                assert_eq!(keyed.rows.len(), 20, "{q}");
                let whole = shown(&whole.rows, &whole.scores);
                assert_eq!(shown(&keyed.rows, &keyed.scores), whole, "{q}");
                let searched = reader.vector_list(&qv, 20).await.unwrap();
                assert_eq!(shown(&searched.rows, &searched.scores), whole, "{q}");
                let first = (found.iter()).find_map(|b| {
                    let ids = super::super::table::string_col(b, "id").ok()?;
                    (b.num_rows() > 0).then(|| ids.value(0).to_string())
                });
                let lacking = search::keyed(&found, |s, id| {
                    (Some(id.as_str()) != first.as_deref()).then(|| words.hit_of(s, id))?
                });
                assert!(lacking.unwrap().is_none(), "{q}");
            }
        };
        let index = Index::open(&memory).await.unwrap();
        index.writer.sync().await.unwrap();
        same(index.reader.clone()).await;
        day("2026-01-02", 40, 200_000);
        index.writer.sync().await.unwrap();
        same(index.reader.clone()).await;
        drop(index);
        let fresh = Index::open(&memory).await.unwrap();
        same(fresh.reader.clone()).await;
    }

    /// A handle that read the words file takes its rows into memory at its
    /// first write (rather than dropping them and loading every row from
    /// the table), and then finds what a handle that loaded them from the
    /// table finds: the same rows, the same scores.
    #[tokio::test(flavor = "multi_thread")]
    async fn a_handle_that_read_the_words_file_keeps_its_words_in_step_with_its_writes() {
        let (_t, layout, memory) = lexical_memory();
        let words = ["tea", "bike", "garden", "piano", "boat", "river", "cat"];
        let mut text = "# 2026-01-01\n\n## 09:00:00\n".to_string();
        for i in 0..150 {
            let (a, b) = (words[i % 7], words[(i / 7) % 7]);
            text.push_str(&format!("- The user likes {a} and {b}, note {i}\n"));
        }
        std::fs::write(layout.archive_file("2026-01-01"), &text).unwrap();
        let found = |index: &Index| {
            let reader = index.reader.clone();
            async move {
                let mut out = Vec::new();
                for q in ["tea and a bike", "river cat", "piano note 7", "garden"] {
                    let fused = reader.search(&Query::new(q, 10)).await.unwrap();
                    let words = reader.full_text_hits(q, 200).await.unwrap();
                    for hits in [fused, words] {
                        let score = |h: &Hit| format!("{:.6}", h.score);
                        out.push(hits.iter().map(|h| (h.id.to_string(), score(h))).collect());
                    }
                }
                out as Vec<Vec<(String, String)>>
            }
        };
        let first = Index::open(&memory).await.unwrap();
        first.writer.sync().await.unwrap();
        drop(first);
        // Loads the words from the table and writes the file; the next
        // handle reads it.
        let loaded = Index::open(&memory).await.unwrap();
        found(&loaded).await;
        let read = Index::open(&memory).await.unwrap();
        found(&read).await;
        assert!(read.reader.shared.words.load().is_mapped());
        for round in 0..2 {
            let kept: String = text
                .lines()
                .filter(|l| !l.contains(&format!("note {}", 3 + round)))
                .map(|l| format!("{l}\n"))
                .collect();
            text = format!("{kept}- The user rode a boat on the river, round {round}\n");
            std::fs::write(layout.archive_file("2026-01-01"), &text).unwrap();
            read.writer.sync().await.unwrap();
            let version = read.reader.shared.table.version().await.unwrap();
            let (mapped, at) = {
                let terms = read.reader.shared.words.load();
                (terms.is_mapped(), terms.version())
            };
            assert!(!mapped, "round {round}");
            assert_eq!(at, Some(version), "kept in step, round {round}");
            let fresh = Index::open(&memory).await.unwrap();
            assert_eq!(found(&read).await, found(&fresh).await, "round {round}");
        }
    }
}
