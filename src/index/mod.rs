//! The derived LanceDB index under `.memd/index/`: one table of facts,
//! entries and core lines, with their vectors; full-text scores are kept
//! by memd itself, in memory ([`terms`]).
//!
//! Everything here can be rebuilt from the markdown files. Sync is per
//! source file and by content hash: rows whose (id, hash) is new are embedded
//! first (so an embedding failure leaves the old rows in place), then the
//! stale rows are deleted in one batch, then the new rows are added. Running
//! a sync twice changes nothing the second time. A file whose fingerprint
//! has not changed since the last sync is not read at all.
//!
//! `meta.json` records the embedder and dimension that built the table; a
//! different embedder rebuilds it rather than mixing vectors.
//! `files.json` records each source file's fingerprint at its last sync.

mod known;
pub mod search;
mod seen;
mod terms;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use arrow_array::types::Float32Type;
use arrow_array::{Array, FixedSizeListArray, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use futures::TryStreamExt;
use lancedb::index::Index as LanceIndex;
use lancedb::query::{ExecutableQuery, QueryBase, Select};
use serde::{Deserialize, Serialize};

use crate::embed::{self, cache::Cached};
use crate::entries::{Document, text_hash};
use crate::error::{Context, Result};
use crate::memory_md::MemoryMd;
use crate::state::State;
use crate::text::short_hash;
use crate::tombstones::Tombstones;
use crate::{Layout, archive, config::Config};

const TABLE: &str = "memory";

/// The `source` of the entries' rows.
const ENTRIES_SOURCE: &str = "consolidated/memory.md";

/// Below this many rows a flat vector scan is fast enough and an index would
/// only add build time. Measured (`memd bench index --rows 10000`, 2 cores):
/// at 10k rows hybrid search p50 is 23.5 ms with a flat scan and 10.7 ms
/// with IVF_HNSW_SQ, which costs about 4 s to build once.
pub(crate) const VECTOR_INDEX_MIN_ROWS: usize = 5_000;

/// Small fragments (each single-fact sync writes one) that make the daemon
/// compact the table: every search visits every fragment.
pub(crate) const COMPACT_SMALL_FRAGMENTS: usize = 32;

/// Fewer small fragments are enough for a compaction once no rows have been
/// added for [`COMPACT_IDLE`]: measured (`memd bench index --rows 10000`,
/// `search_after_appends_p50_ms`), 20 single-row fragments on top of one
/// 10k-row fragment take hybrid search p50 from ~8 to ~19 ms, so a quiet
/// daemon tidies up for the next search, while a burst of writes is not
/// slowed by a rewrite every few appends.
pub(crate) const COMPACT_IDLE_SMALL_FRAGMENTS: usize = 3;
pub const COMPACT_IDLE: std::time::Duration = std::time::Duration::from_secs(5);

/// Small fragments past which a sync compacts the table itself (when no
/// daemon has done it in the background at [`COMPACT_SMALL_FRAGMENTS`]).
const INLINE_COMPACT_SMALL_FRAGMENTS: usize = 4 * COMPACT_SMALL_FRAGMENTS;

/// Fragments of fewer rows than this are the table's tail: what syncs of a
/// few new rows write. A sync merges them ([`TAIL_FRAGMENTS`]) into
/// fragments of up to this many rows, which later merges leave alone, so a
/// merge rewrites at most this many rows however large the table.
const TAIL_ROWS: usize = 1_000;

/// Tail fragments ([`TAIL_ROWS`]) at which a sync that added rows merges
/// them. Every search visits every fragment, and a daemon whose clients
/// search after every post writes one fragment per sync, dozens a second:
/// waiting for the background compaction ([`COMPACT_SMALL_FRAGMENTS`],
/// checked every 10 s) let 100+ fragments pile up. Measured (`memd bench
/// serve --clients 1,4,16`, lexical, 2 cores, with this session's other
/// savings): one client's search p50 went from 24-27 to 16 ms and 16
/// clients from 105-110 to 225-255 requests/s; a merge costs an add ~45
/// ms at 10,000 rows, once in 8 (BENCHMARKS.md, item 4).
pub const TAIL_FRAGMENTS: usize = 8;

/// How many rows may wait outside the indices before they are folded in.
const FOLD_UNINDEXED_ROWS: usize = 1_000;

/// What a row of the index stands for (the `kind` column).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RowKind {
    /// A pending archive fact.
    Fact,
    /// An entry of `consolidated/memory.md`.
    Entry,
    /// A generated line of `MEMORY.md`.
    Core,
}

impl RowKind {
    pub fn as_str(self) -> &'static str {
        match self {
            RowKind::Fact => "fact",
            RowKind::Entry => "entry",
            RowKind::Core => "core",
        }
    }

    /// The kind a `kind` column value names.
    pub fn parse(s: &str) -> Option<RowKind> {
        [RowKind::Fact, RowKind::Entry, RowKind::Core]
            .into_iter()
            .find(|k| k.as_str() == s)
    }
}

impl std::fmt::Display for RowKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

/// One row of the index.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    pub id: String,
    pub kind: RowKind,
    /// Path of the source file, relative to the memory directory.
    pub source: String,
    pub day: Option<String>,
    pub text: String,
    pub session: Option<String>,
    pub category: Option<String>,
}

impl Row {
    /// The row as a search shows it (score 0).
    fn hit(&self) -> search::Hit {
        search::Hit {
            id: self.id.clone(),
            kind: self.kind,
            text: self.text.clone(),
            score: 0.0,
            source: self.source.clone(),
            day: self.day.clone(),
        }
    }
}

/// Each row with its [`Row::hash`], computed once.
fn with_hashes(rows: Vec<Row>) -> Vec<(Row, String)> {
    rows.into_iter()
        .map(|r| {
            let h = r.hash();
            (r, h)
        })
        .collect()
}

impl Row {
    /// What decides whether a row must be re-embedded and rewritten.
    fn hash(&self) -> String {
        short_hash(
            &format!(
                "{}\u{0}{}\u{0}{}\u{0}{:?}\u{0}{:?}\u{0}{:?}",
                self.id, self.kind, self.text, self.day, self.session, self.category
            ),
            16,
        )
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Meta {
    embedder: String,
    dim: usize,
}

/// What a sync writes: batches to add, ids to delete per source, and the
/// (source, id, hash) of the rows added.
struct Changes<'a> {
    batches: Vec<RecordBatch>,
    stale: BTreeMap<&'a str, Vec<&'a str>>,
    added: Vec<(Row, String)>,
}

/// What one sync did.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
pub struct SyncReport {
    pub files_checked: usize,
    pub files_synced: usize,
    pub rows_added: usize,
    pub rows_deleted: usize,
}

pub struct Index {
    layout: Layout,
    table: lancedb::Table,
    embedder: Cached,
    dim: usize,
    config: Config,
    /// One sync at a time per handle: the watcher, the API and the
    /// consolidation loop of the daemon share one index.
    sync_lock: tokio::sync::Mutex<()>,
    /// When the last sync started: a sync asked for before then has
    /// nothing left to do once that one finishes (every file change that
    /// preceded the request preceded its start too). Under load, the
    /// searches waiting behind one sync share it instead of queueing a
    /// sync each.
    last_sync_start: std::sync::Mutex<Option<std::time::Instant>>,
    /// When a sync last added rows (for [`Index::compact_if_needed`]).
    last_added: std::sync::Mutex<Option<std::time::Instant>>,
    /// The entries' sources as last read, with the entries file's
    /// fingerprint: every sync of a day file needs them (a fact in one is
    /// not pending, [`crate::pending`]); a daemon reads them once per
    /// change of the file.
    sources: std::sync::Mutex<Option<(String, Arc<HashSet<String>>)>>,
    /// The rows' (id, hash) per source, as this handle last read or wrote
    /// them ([`known`]).
    known: std::sync::Mutex<known::Known>,
    /// The rows' words, for full-text scores ([`terms`]).
    terms: std::sync::Mutex<terms::Terms>,
    /// The files' fingerprints, hashed again only when a file changed.
    seen: std::sync::Mutex<seen::Seen>,
    /// The fingerprints this handle's last sync brought the table to.
    synced: std::sync::Mutex<Option<BTreeMap<String, String>>>,
    /// Set by the daemon, which holds `.memd/daemon.lock`: no other
    /// process writes the table, so a sync that finds the files as this
    /// handle last synced them returns at once, without the index lock.
    sole_writer: std::sync::atomic::AtomicBool,
}

fn schema(dim: usize) -> SchemaRef {
    let s = |n: &str, null: bool| Field::new(n, DataType::Utf8, null);
    Arc::new(Schema::new(vec![
        s("id", false),
        s("kind", false),
        s("source", false),
        s("day", true),
        s("text", false),
        s("hash", false),
        s("session", true),
        s("category", true),
        Field::new(
            "vector",
            DataType::FixedSizeList(
                Arc::new(Field::new("item", DataType::Float32, true)),
                dim as i32,
            ),
            false,
        ),
    ]))
}

impl Index {
    /// Open (or create) the index for `layout` with the configured embedder.
    pub async fn open(layout: &Layout, config: &Config) -> Result<Index> {
        let embedder = embed::from_config(&config.embedder)?;
        Index::open_with(layout, config, embedder).await
    }

    /// Open with a given embedder (tests and benchmarks choose their own).
    pub async fn open_with(
        layout: &Layout,
        config: &Config,
        embedder: Arc<dyn embed::Embedder>,
    ) -> Result<Index> {
        let dir = layout.index_dir();
        std::fs::create_dir_all(&dir)?;
        let dim = embedder
            .dim()
            .await
            .context("asking the embedder for its dimension")?;
        let want = Meta {
            embedder: embedder.id(),
            dim,
        };
        let meta_path = dir.join("meta.json");
        let read_meta =
            || -> Option<Meta> { serde_json::from_slice(&std::fs::read(&meta_path).ok()?).ok() };
        let mut have = read_meta();
        // Creating or rebuilding the index writes it: that takes the index
        // lock, and reads the metadata again under it (another process may
        // have just built it). Opening an index as it is takes nothing.
        let _all = match have.as_ref() == Some(&want) {
            true => None,
            false => {
                let guard = write_lock(layout).await?;
                have = read_meta();
                Some(guard)
            }
        };
        if have.as_ref() != Some(&want) {
            if let Some(h) = &have {
                refuse_if_owned(layout, h, &want)?;
                tracing::info!(
                    from = %h.embedder, from_dim = h.dim, to = %want.embedder, to_dim = want.dim,
                    "embedder changed: rebuilding the index"
                );
            }
            std::fs::remove_dir_all(&dir)?;
            std::fs::create_dir_all(&dir)?;
        }
        let db = lancedb::connect(
            dir.join("lance")
                .to_str()
                .context("index path is not UTF-8")?,
        )
        .execute()
        .await?;
        let table = match db.open_table(TABLE).execute().await {
            Ok(t) => t,
            Err(_) => db.create_empty_table(TABLE, schema(dim)).execute().await?,
        };
        if have.as_ref() != Some(&want) {
            crate::atomic::write(&meta_path, &serde_json::to_vec_pretty(&want)?)?;
        }
        let embedder = Cached::open(embedder, &embed::cache_dir(layout))?;
        Ok(Index {
            layout: layout.clone(),
            table,
            embedder,
            dim,
            config: config.clone(),
            sync_lock: tokio::sync::Mutex::new(()),
            last_sync_start: std::sync::Mutex::new(None),
            last_added: std::sync::Mutex::new(None),
            sources: std::sync::Mutex::new(None),
            known: std::sync::Mutex::new(known::Known::default()),
            terms: std::sync::Mutex::new(terms::Terms::new()?),
            seen: std::sync::Mutex::new(seen::Seen::default()),
            synced: std::sync::Mutex::new(None),
            sole_writer: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// Delete `.memd/index` entirely (the embedding cache is kept).
    pub async fn clear(layout: &Layout) -> Result<()> {
        let _all = write_lock(layout).await?;
        match std::fs::remove_dir_all(layout.index_dir()) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e.into()),
            _ => Ok(()),
        }
    }

    pub fn embedder(&self) -> &Cached {
        &self.embedder
    }

    /// Called by the daemon, whose process is the only one that writes
    /// this table while it runs ([`Index::sync`]'s fast path).
    pub fn claim_sole_writer(&self) {
        self.sole_writer
            .store(true, std::sync::atomic::Ordering::SeqCst);
    }

    /// For the table's only writer, a sync with nothing to do when the
    /// files are as its last sync left them (no lock taken).
    fn nothing_to_sync(&self) -> Result<Option<SyncReport>> {
        if !self.sole_writer.load(std::sync::atomic::Ordering::SeqCst) {
            return Ok(None);
        }
        let current = self.fingerprints()?;
        let same = self.synced.lock().unwrap().as_ref() == Some(&current);
        Ok(same.then(|| SyncReport {
            files_checked: current.len(),
            ..SyncReport::default()
        }))
    }

    /// The source files whose rows the table does not hold as they are now
    /// (changed since their last sync, or never synced).
    pub fn files_behind(&self) -> Result<Vec<String>> {
        let synced = synced_fingerprints(&self.layout);
        Ok(self
            .fingerprints()?
            .into_iter()
            .filter(|(source, print)| synced.get(source) != Some(print))
            .map(|(source, _)| source)
            .collect())
    }

    /// The source files' fingerprints now.
    fn fingerprints(&self) -> Result<BTreeMap<String, String>> {
        self.seen.lock().unwrap().fingerprints(&self.layout)
    }

    /// Bring the index in step with every file that changed since the last
    /// sync.
    pub async fn sync(&self) -> Result<SyncReport> {
        if let Some(nothing) = self.nothing_to_sync()? {
            return Ok(nothing);
        }
        let asked = std::time::Instant::now();
        let _one = self.sync_lock.lock().await;
        let _all = self.writing().await?;
        {
            let mut last = self.last_sync_start.lock().unwrap();
            if last.is_some_and(|t| t >= asked) {
                return Ok(SyncReport::default());
            }
            *last = Some(std::time::Instant::now());
        }
        let mut report = SyncReport::default();
        let mut fingerprints = synced_fingerprints(&self.layout);
        let current = self.fingerprints()?;
        report.files_checked = current.len();
        let changed: Vec<&String> = current
            .iter()
            .filter(|(s, f)| fingerprints.get(*s) != Some(f))
            .map(|(s, _)| s)
            .collect();
        let gone: Vec<String> = fingerprints
            .keys()
            .filter(|s| !current.contains_key(*s))
            .cloned()
            .collect();
        if changed.is_empty() && gone.is_empty() {
            *self.synced.lock().unwrap() = Some(current);
            return Ok(report);
        }
        let wanted: HashSet<&str> = changed.iter().map(|s| s.as_str()).collect();
        let sources = self.sources(&wanted, current.get(ENTRIES_SOURCE))?;
        let desired = desired_rows_for(&self.layout, Some(&wanted), &sources)?;
        let sources: Vec<String> = changed
            .iter()
            .map(|s| s.to_string())
            .chain(gone.iter().cloned())
            .collect();
        let existing = self.rows_of(&sources).await?;
        let Changes {
            batches,
            stale,
            added,
        } = self
            .embed_changes(&sources, desired, &existing, &mut report)
            .await?;
        report.files_synced = changed.len();
        report.rows_deleted = stale.values().map(Vec::len).sum();
        let before = self.table.version().await?;
        if !stale.is_empty() {
            self.table.delete(&rows_filter(&stale)).await?;
        }
        if !batches.is_empty() {
            self.table.add(batches).execute().await?;
            *self.last_added.lock().unwrap() = Some(std::time::Instant::now());
        }
        if !stale.is_empty() || !added.is_empty() {
            self.wrote(before, &stale, added).await?;
        }
        for source in changed {
            fingerprints.insert(source.clone(), current[source].clone());
        }
        for source in &gone {
            fingerprints.remove(source);
        }
        if report.rows_added > 0 {
            self.maintain_indices().await?;
        }
        crate::atomic::write(
            &files_path(&self.layout),
            &serde_json::to_vec_pretty(&fingerprints)?,
        )?;
        *self.synced.lock().unwrap() = Some(fingerprints);
        Ok(report)
    }

    /// The rows to add (embedded, as batches) and the ids to delete, per
    /// source. Embedding comes first, with progress shown (the cache keeps
    /// each chunk's vectors, so a failure part-way loses no finished work),
    /// and nothing has been deleted yet if it fails; the caller then does one
    /// delete and one add for the whole sync: every commit writes a
    /// fragment, and every search visits every fragment (a 10k-row table
    /// built one commit per day file searched ~25% slower than the same
    /// rows in one fragment).
    async fn embed_changes<'a>(
        &self,
        sources: &'a [String],
        mut desired: HashMap<String, Vec<Row>>,
        existing: &'a HashMap<String, HashMap<String, String>>,
        report: &mut SyncReport,
    ) -> Result<Changes<'a>> {
        let mut stale: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        let mut new: Vec<(Row, String)> = Vec::new();
        for source in sources {
            let rows = with_hashes(desired.remove(source).unwrap_or_default());
            let have = existing.get(source);
            let want: HashMap<&str, &str> = rows
                .iter()
                .map(|(r, h)| (r.id.as_str(), h.as_str()))
                .collect();
            for (id, h) in have.into_iter().flatten() {
                if want.get(id.as_str()) != Some(&h.as_str()) {
                    stale.entry(source).or_default().push(id);
                }
            }
            new.extend(
                rows.into_iter()
                    .filter(|(r, h)| have.and_then(|m| m.get(&r.id)) != Some(h)),
            );
        }
        let mut batches: Vec<RecordBatch> = Vec::new();
        if !new.is_empty() {
            let texts: Vec<String> = new.iter().map(|(r, _)| r.text.clone()).collect();
            let vectors = self.embedder.embed(&texts).await?;
            report.rows_added += new.len();
            batches.push(self.batch(&new.iter().collect::<Vec<_>>(), vectors)?);
        }
        Ok(Changes {
            batches,
            stale,
            added: new,
        })
    }

    /// Tell [`known`] and [`terms`] what a sync changed: the table went
    /// from `before` to its version now, `stale` rows deleted and `added`
    /// ones there.
    async fn wrote(
        &self,
        before: u64,
        stale: &BTreeMap<&str, Vec<&str>>,
        added: Vec<(Row, String)>,
    ) -> Result<()> {
        let after = self.table.version().await?;
        let deleted = || {
            stale
                .iter()
                .flat_map(|(source, ids)| ids.iter().map(move |id| (*source, *id)))
        };
        let hits = added.iter().map(|(r, _)| r.hit());
        self.terms
            .lock()
            .unwrap()
            .wrote(before, after, deleted(), hits);
        let added = added.into_iter().map(|(r, h)| (r.source, r.id, h));
        self.known.lock().unwrap().wrote(after, deleted(), added);
        Ok(())
    }

    /// What every write of the index starts with: the lock across
    /// processes, then the table's latest version. A handle keeps the
    /// version it was opened at, so without the second step a process that
    /// opened the table before another one's sync read rows that were no
    /// longer all the rows, and added the missing ones again.
    async fn writing(&self) -> Result<crate::lock::Guard> {
        let guard = write_lock(&self.layout).await?;
        self.table.checkout_latest().await?;
        Ok(guard)
    }

    /// The entries' sources, which decide which facts are rows: read only
    /// when a day file is among the `wanted` sources, and from the cache
    /// when the entries file's fingerprint is the one cached.
    fn sources(
        &self,
        wanted: &HashSet<&str>,
        fingerprint: Option<&String>,
    ) -> Result<Arc<HashSet<String>>> {
        if !wanted.iter().any(|s| s.starts_with("archive/")) {
            return Ok(Arc::default());
        }
        let mut cache = self.sources.lock().unwrap();
        if let (Some(want), Some((have, sources))) = (fingerprint, cache.as_ref())
            && want == have
        {
            return Ok(sources.clone());
        }
        let sources = Arc::new(crate::entries::sources(&self.layout.entries_file())?);
        if let Some(f) = fingerprint {
            *cache = Some((f.clone(), sources.clone()));
        }
        Ok(sources)
    }

    /// source → (id → hash) of the rows of `sources`: from [`known`] when it
    /// holds them at the table's version, else read from the table.
    async fn rows_of(
        &self,
        sources: &[String],
    ) -> Result<HashMap<String, HashMap<String, String>>> {
        let version = self.table.version().await?;
        let missing: Vec<String> = {
            let mut known = self.known.lock().unwrap();
            known.at(version);
            known.missing(sources).into_iter().cloned().collect()
        };
        if !missing.is_empty() {
            let list = missing
                .iter()
                .map(|s| sql_str(s))
                .collect::<Vec<_>>()
                .join(", ");
            let filter = format!("source IN ({list})");
            let mut read: HashMap<String, HashMap<String, String>> =
                missing.into_iter().map(|s| (s, HashMap::new())).collect();
            for [source, id, hash] in self
                .strings(["source", "id", "hash"], Some(&filter))
                .await?
            {
                read.entry(source).or_default().insert(id, hash);
            }
            let mut known = self.known.lock().unwrap();
            for (source, rows) in read {
                known.insert(source, rows);
            }
        }
        Ok(self.known.lock().unwrap().rows_of(sources))
    }

    /// Load every row's words from the table at the handle's version (a
    /// new handle's first search, or one after another process wrote).
    /// Called under the sync lock, so the version cannot move meanwhile.
    pub(crate) async fn load_terms(&self) -> Result<()> {
        let version = self.table.version().await?;
        let columns = ["id", "source", "kind", "text", "day"];
        let query = self.table.query().select(Select::columns(&columns));
        let mut rows = Vec::new();
        for b in collect(query).await? {
            rows.extend(search::hits(&b)?);
        }
        self.terms.lock().unwrap().load(version, rows);
        Ok(())
    }

    /// The given text columns of every row matching `filter`.
    async fn strings<const N: usize>(
        &self,
        columns: [&str; N],
        filter: Option<&str>,
    ) -> Result<Vec<[String; N]>> {
        let mut query = self.table.query().select(Select::columns(&columns));
        if let Some(f) = filter {
            query = query.only_if(f);
        }
        let mut out = Vec::new();
        for b in collect(query).await? {
            let cols = columns
                .iter()
                .map(|c| string_col(&b, c))
                .collect::<Result<Vec<_>>>()?;
            for i in 0..b.num_rows() {
                out.push(std::array::from_fn(|c| cols[c].value(i).to_string()));
            }
        }
        Ok(out)
    }

    /// Rows (each with its [`Row::hash`]) and their vectors as one batch.
    fn batch(&self, rows: &[&(Row, String)], vectors: Vec<Vec<f32>>) -> Result<RecordBatch> {
        let col = |f: &dyn Fn(&(Row, String)) -> Option<String>| -> Arc<dyn Array> {
            Arc::new(StringArray::from(
                rows.iter().map(|r| f(r)).collect::<Vec<_>>(),
            ))
        };
        let vectors = FixedSizeListArray::from_iter_primitive::<Float32Type, _, _>(
            vectors.into_iter().map(|v| Some(v.into_iter().map(Some))),
            self.dim as i32,
        );
        Ok(RecordBatch::try_new(
            schema(self.dim),
            vec![
                col(&|(r, _)| Some(r.id.clone())),
                col(&|(r, _)| Some(r.kind.as_str().to_string())),
                col(&|(r, _)| Some(r.source.clone())),
                col(&|(r, _)| r.day.clone()),
                col(&|(r, _)| Some(r.text.clone())),
                col(&|(_, h)| Some(h.clone())),
                col(&|(r, _)| r.session.clone()),
                col(&|(r, _)| r.category.clone()),
                Arc::new(vectors),
            ],
        )?)
    }

    /// Run `op`, which rewrites the table without changing its rows, and
    /// tell [`known`] so.
    async fn keeping_rows(&self, op: impl std::future::Future<Output = Result<()>>) -> Result<()> {
        let before = self.table.version().await?;
        op.await?;
        let after = self.table.version().await?;
        self.known.lock().unwrap().same_rows(before, after);
        self.terms.lock().unwrap().same_rows(before, after);
        Ok(())
    }

    /// Keep the table fast as it grows: a vector index (IVF_HNSW_SQ,
    /// cosine) once a flat scan gets slow, with new rows folded into it in
    /// bulk.
    async fn maintain_indices(&self) -> Result<()> {
        let indices = self.table.list_indices().await?;
        if let Some(text) = on_column(&indices, "text") {
            self.drop_text_index(&text.name).await?;
        }
        let vector = on_column(&indices, "vector");
        if vector.is_none() && self.table.count_rows(None).await? >= VECTOR_INDEX_MIN_ROWS {
            tracing::info!("creating the vector index (IVF_HNSW_SQ)");
            return self.keeping_rows(create_vector_index(&self.table)).await;
        }
        // Without a daemon compacting in the background (CLI use: each
        // `memd search` after an add writes one small fragment), a sync
        // compacts itself once fragments have piled up well past the
        // daemon's threshold, so searches never slow down for good.
        if self.fragments_under(COMPACT_TARGET_ROWS).await? >= INLINE_COMPACT_SMALL_FRAGMENTS {
            return self.keeping_rows(compact(&self.table)).await;
        }
        if self.fragments_under(TAIL_ROWS).await? >= TAIL_FRAGMENTS {
            self.keeping_rows(merge_fragments(&self.table, TAIL_ROWS))
                .await?;
        }
        // Unindexed rows are still found by the vector search (an exact
        // scan), so new rows are folded into the vector index only once
        // enough have piled up: doing it after every small write would cost
        // more than the write itself.
        let Some(vector) = vector else {
            return Ok(());
        };
        let unindexed = match self.table.index_stats(&vector.name).await? {
            Some(stats) => stats.num_unindexed_rows,
            None => 0,
        };
        if unindexed >= FOLD_UNINDEXED_ROWS {
            self.keeping_rows(fold(&self.table, vec![vector.name.clone()]))
                .await?;
        }
        Ok(())
    }

    /// Drop the full-text index an older memd built (and its
    /// `text-index-behind` mark): memd scores the words itself now
    /// ([`terms`]), and each compaction would only remap it.
    async fn drop_text_index(&self, name: &str) -> Result<()> {
        tracing::info!("dropping LanceDB's full-text index (memd scores text itself)");
        let drop = async { Ok(self.table.drop_index(name).await?) };
        self.keeping_rows(drop).await?;
        Ok(crate::atomic::remove(
            &self.layout.index_dir().join("text-index-behind"),
        )?)
    }

    /// The baseline memd is benchmarked against: re-embed every row of a
    /// source file without the cache, delete all its rows, add them all
    /// back. Returns how many texts were embedded. Not used by memd itself.
    #[cfg(feature = "lab")]
    pub(crate) async fn rewrite_source_uncached(
        &self,
        layout: &Layout,
        source: &str,
    ) -> Result<usize> {
        let rows = desired_rows(layout)?.remove(source).unwrap_or_default();
        let texts: Vec<String> = rows.iter().map(|r| r.text.clone()).collect();
        let vectors = self.embedder.inner().embed(&texts).await?;
        let rows = with_hashes(rows);
        let batch = self.batch(&rows.iter().collect::<Vec<_>>(), vectors)?;
        self.table
            .delete(format!("source = {}", sql_str(source)).as_str())
            .await?;
        self.table.add(batch).execute().await?;
        Ok(texts.len())
    }

    /// Empty the table and forget every file's fingerprint, so the next sync
    /// rebuilds everything (`reindex --clear` while the daemon holds the
    /// table open; the embedding cache keeps it cheap).
    pub(crate) async fn reset(&self) -> Result<()> {
        let _one = self.sync_lock.lock().await;
        let _all = self.writing().await?;
        *self.last_sync_start.lock().unwrap() = None;
        *self.synced.lock().unwrap() = None;
        self.table.delete("true").await?;
        self.known.lock().unwrap().clear();
        self.terms.lock().unwrap().clear();
        Ok(crate::atomic::remove(&files_path(&self.layout))?)
    }

    /// Fragments of fewer than `rows` rows (from the manifest: no file is
    /// read). Under [`COMPACT_TARGET_ROWS`]: the small fragments a
    /// compaction merges; each sync that added rows writes one, and every
    /// search visits every fragment.
    async fn fragments_under(&self, rows: usize) -> Result<usize> {
        Ok(match self.table.as_native() {
            Some(t) => t.num_small_files(rows).await?,
            None => 0,
        })
    }

    /// Fragments in the table (each sync that added rows writes one; every
    /// search visits every fragment).
    pub async fn fragments(&self) -> Result<usize> {
        Ok(match self.table.as_native() {
            Some(t) => t.count_fragments().await?,
            None => 0,
        })
    }

    /// Compact once [`COMPACT_SMALL_FRAGMENTS`] have piled up, or
    /// [`COMPACT_IDLE_SMALL_FRAGMENTS`] with no rows added for
    /// [`COMPACT_IDLE`] (the daemon checks this in the background); returns
    /// whether it compacted.
    pub async fn compact_if_needed(&self) -> Result<bool> {
        let idle = self
            .last_added
            .lock()
            .unwrap()
            .is_none_or(|t| t.elapsed() >= COMPACT_IDLE);
        let small = self.fragments_under(COMPACT_TARGET_ROWS).await?;
        if small < COMPACT_SMALL_FRAGMENTS && !(idle && small >= COMPACT_IDLE_SMALL_FRAGMENTS) {
            return Ok(false);
        }
        let _one = self.sync_lock.lock().await;
        let _all = self.writing().await?;
        self.keeping_rows(compact(&self.table)).await?;
        Ok(true)
    }

    /// Compact now, whatever the fragments (tests and benchmarks).
    pub async fn compact(&self) -> Result<()> {
        let _one = self.sync_lock.lock().await;
        let _all = self.writing().await?;
        self.keeping_rows(compact(&self.table)).await
    }

    /// Every (id, kind) in the table, sorted (for tests and `reindex`).
    pub async fn ids(&self) -> Result<Vec<(String, String)>> {
        let mut out: Vec<(String, String)> = self
            .strings(["id", "kind"], None)
            .await?
            .into_iter()
            .map(|[id, kind]| (id, kind))
            .collect();
        out.sort();
        Ok(out)
    }
}

/// A process that is not the daemon serving this directory never rebuilds
/// the index the daemon owns (a CLI run with another embedder once deleted
/// a running daemon's index, and its searches failed for 35 s).
fn refuse_if_owned(layout: &Layout, have: &Meta, want: &Meta) -> Result<()> {
    match crate::daemon_info::running(layout) {
        Some(d) if d.pid != std::process::id() => Err(crate::Error::Invalid(format!(
            "the index was built with the embedder {} and the daemon (pid {}) owns it; this command asks for {}: use the daemon's configuration, or stop the daemon first",
            have.embedder, d.pid, want.embedder
        ))),
        _ => Ok(()),
    }
}

/// The lock every process holds while it writes the index (sync,
/// compaction, reset, rebuild): `.memd/index.lock`, outside the index so
/// that removing the index keeps it. Without it two processes syncing the
/// same new file both added its rows (8 parallel `memd add` left 293 rows
/// for 80 facts).
async fn write_lock(layout: &Layout) -> Result<crate::lock::Guard> {
    crate::lock::wait_for(&layout.runtime_dir().join("index.lock")).await
}

/// One row as the table holds it: what `memd check` compares with the
/// rows the files call for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StoredRow {
    pub id: String,
    pub source: String,
    pub hash: String,
}

/// Every row of the index on disk, read without an embedder and without
/// creating, migrating or syncing anything; `None` when there is no index
/// yet. Safe beside a daemon that owns the table (LanceDB readers see a
/// consistent version).
pub(crate) async fn stored_rows(layout: &Layout) -> Result<Option<Vec<StoredRow>>> {
    let lance = layout.index_dir().join("lance");
    if !lance.exists() {
        return Ok(None);
    }
    let db = lancedb::connect(lance.to_str().context("index path is not UTF-8")?)
        .execute()
        .await?;
    let Ok(table) = db.open_table(TABLE).execute().await else {
        return Ok(None);
    };
    let columns = ["id", "source", "hash"];
    let mut out = Vec::new();
    for b in collect(table.query().select(Select::columns(&columns))).await? {
        let (ids, sources, hashes) = (
            string_col(&b, "id")?,
            string_col(&b, "source")?,
            string_col(&b, "hash")?,
        );
        for i in 0..b.num_rows() {
            out.push(StoredRow {
                id: ids.value(i).to_string(),
                source: sources.value(i).to_string(),
                hash: hashes.value(i).to_string(),
            });
        }
    }
    Ok(Some(out))
}

/// Per source file: its rows, each with its [`Row::hash`].
pub(crate) type RowsBySource = HashMap<String, Vec<(Row, String)>>;

/// The rows every source file calls for, and which sources the index has
/// synced in their current state.
pub(crate) fn expected_rows(
    layout: &Layout,
) -> Result<(RowsBySource, BTreeMap<String, &'static str>)> {
    let sources = crate::entries::sources(&layout.entries_file())?;
    let rows = desired_rows_for(layout, None, &sources)?
        .into_iter()
        .map(|(s, r)| (s, with_hashes(r)))
        .collect();
    Ok((rows, freshness(layout)?))
}

/// Rows from which a fragment is left alone by compaction (LanceDB's own
/// line between small and not small). LanceDB's default target is a million
/// rows, which would rewrite the whole table, up to a million rows, every
/// time a few new rows are folded in; with this target a compaction rewrites
/// at most 100,000 rows, and once the table has grown past that, only the
/// small fragments new rows wrote.
const COMPACT_TARGET_ROWS: usize = 100_000;

/// Merge small fragments, drop versions older than a week, fold new rows
/// into the indices (LanceDB's `OptimizeAction::All` with a bounded
/// compaction target).
async fn compact(table: &lancedb::Table) -> Result<()> {
    merge_fragments(table, COMPACT_TARGET_ROWS).await?;
    table
        .optimize(lancedb::table::OptimizeAction::Prune {
            older_than: None,
            delete_unverified: None,
            error_if_tagged_old_versions: None,
        })
        .await?;
    // A full-text index an older memd built is never folded: the next
    // sync that adds rows drops it (`Index::drop_text_index`).
    let indices = table.list_indices().await?;
    let others: Vec<String> = indices
        .iter()
        .filter(|i| !i.columns.iter().any(|c| c == "text"))
        .map(|i| i.name.clone())
        .collect();
    fold(table, others).await
}

/// Rewrite the fragments under `target` rows into fragments of up to
/// `target` rows (and those with many deleted rows without them). With
/// [`TAIL_ROWS`], a sync's merge of its tail: no pruning, no folding, which
/// [`compact`] does.
async fn merge_fragments(table: &lancedb::Table, target: usize) -> Result<()> {
    use lancedb::table::{CompactionOptions, OptimizeAction};
    table
        .optimize(OptimizeAction::Compact {
            options: CompactionOptions {
                target_rows_per_fragment: target,
                ..Default::default()
            },
            remap_options: None,
        })
        .await?;
    Ok(())
}

/// Fold the rows added since into the indices named (none: nothing).
async fn fold(table: &lancedb::Table, names: Vec<String>) -> Result<()> {
    if names.is_empty() {
        return Ok(());
    }
    let mut options = lancedb::table::OptimizeOptions::default();
    options.index_names = Some(names);
    table
        .optimize(lancedb::table::OptimizeAction::Index(options))
        .await?;
    Ok(())
}

/// The index on `column`, if there is one.
fn on_column<'a>(
    indices: &'a [lancedb::index::IndexConfig],
    column: &str,
) -> Option<&'a lancedb::index::IndexConfig> {
    indices
        .iter()
        .find(|i| i.columns.iter().any(|c| c == column))
}

/// The vector index (IVF_HNSW_SQ, cosine) over every row.
async fn create_vector_index(table: &lancedb::Table) -> Result<()> {
    let index = lancedb::index::vector::IvfHnswSqIndexBuilder::default()
        .distance_type(lancedb::DistanceType::Cosine);
    table
        .create_index(&["vector"], LanceIndex::IvfHnswSq(index))
        .execute()
        .await?;
    Ok(())
}

/// A filter for the rows of these ids, per source.
fn rows_filter(ids: &BTreeMap<&str, Vec<&str>>) -> String {
    ids.iter()
        .map(|(source, ids)| {
            let list = ids
                .iter()
                .map(|id| sql_str(id))
                .collect::<Vec<_>>()
                .join(", ");
            format!("(source = {} AND id IN ({list}))", sql_str(source))
        })
        .collect::<Vec<_>>()
        .join(" OR ")
}

/// Run a query and gather its batches.
pub(crate) async fn collect(query: impl ExecutableQuery) -> Result<Vec<RecordBatch>> {
    Ok(query.execute().await?.try_collect().await?)
}

fn files_path(layout: &Layout) -> std::path::PathBuf {
    layout.index_dir().join("files.json")
}

/// Each source file's fingerprint at its last sync (empty if never synced
/// or unreadable: then everything is synced again, which is only slower).
fn synced_fingerprints(layout: &Layout) -> BTreeMap<String, String> {
    std::fs::read(files_path(layout))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}

/// Whether each source file is indexed as it is now: `fresh`, `stale` or
/// `not indexed` (for `memd status`; reads no table).
pub(crate) fn freshness(layout: &Layout) -> Result<BTreeMap<String, &'static str>> {
    let synced = synced_fingerprints(layout);
    Ok(source_fingerprints(layout)?
        .into_iter()
        .map(|(source, fp)| {
            let state = match synced.get(&source) {
                Some(s) if *s == fp => "fresh",
                Some(_) => "stale",
                None => "not indexed",
            };
            (source, state)
        })
        .collect())
}

pub(crate) fn string_col<'a>(b: &'a RecordBatch, name: &str) -> Result<&'a StringArray> {
    b.column_by_name(name)
        .and_then(|c| c.as_any().downcast_ref::<StringArray>())
        .with_context(|| format!("index column {name} missing"))
}

/// A SQL string literal.
fn sql_str(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// Fingerprint of every source file. Archive rows also depend on the
/// watermark and the tombstones, so those are part of each archive file's
/// fingerprint (and of the entries', which tombstones filter too).
fn source_fingerprints(layout: &Layout) -> Result<BTreeMap<String, String>> {
    let read = |p: &std::path::Path| std::fs::read(p).unwrap_or_default();
    let hash = |p: &std::path::Path| {
        p.exists()
            .then(|| short_hash(&String::from_utf8_lossy(&read(p)), 16))
    };
    let entries = hash(&layout.entries_file());
    // What decides which facts are pending (crate::pending): the state,
    // the tombstones and the entries' sources.
    let shared = short_hash(
        &format!(
            "{}\u{0}{}\u{0}{}",
            String::from_utf8_lossy(&read(&layout.state_file())),
            String::from_utf8_lossy(&read(&layout.tombstones_file())),
            entries.as_deref().unwrap_or("")
        ),
        16,
    );
    let mut out = BTreeMap::new();
    let mut add = |source: String, own: Option<String>| {
        if let Some(own) = own {
            out.insert(source, format!("{own}-{shared}"));
        }
    };
    for day in layout.archive_days()? {
        add(
            format!("archive/{day}.md"),
            hash(&layout.archive_file(&day)),
        );
    }
    add(ENTRIES_SOURCE.into(), entries);
    add("MEMORY.md".into(), hash(&layout.memory_md()));
    Ok(out)
}

/// The rows every source file should have: pending facts (behind the
/// watermark they are represented by their entries), entries, core lines;
/// never anything tombstoned. (Benchmarks build tables from it.)
#[cfg(feature = "lab")]
pub(crate) fn desired_rows(layout: &Layout) -> Result<HashMap<String, Vec<Row>>> {
    desired_rows_for(
        layout,
        None,
        &crate::entries::sources(&layout.entries_file())?,
    )
}

/// [`desired_rows`] for only the sources in `only` (all when `None`): a
/// sync after one append reads one day file, not the whole archive.
fn desired_rows_for(
    layout: &Layout,
    only: Option<&HashSet<&str>>,
    sources: &HashSet<String>,
) -> Result<HashMap<String, Vec<Row>>> {
    let wanted = |source: &str| only.is_none_or(|o| o.contains(source));
    let state = State::load(&layout.state_file())?;
    let tombstones = Tombstones::load(&layout.tombstones_file())?;
    let mut out: HashMap<String, Vec<Row>> = HashMap::new();
    let mut facts = Vec::new();
    for day in layout.archive_days()? {
        if wanted(&format!("archive/{day}.md")) {
            facts.extend(archive::read_day(layout, &day)?.facts);
        }
    }
    // Consolidated facts are represented by their entries, so the entries'
    // sources count even when only a day file changed.
    let sources = sources.iter().map(String::as_str);
    let pending = crate::pending::Pending::with_sources(&state, &tombstones, sources);
    for f in facts {
        if !pending.is_pending(&f) {
            continue;
        }
        let source = format!("archive/{}.md", f.day);
        out.entry(source.clone()).or_default().push(Row {
            id: f.id,
            kind: RowKind::Fact,
            source,
            day: Some(f.day),
            text: f.text,
            session: f.session,
            category: f.category,
        });
    }
    let rows = match wanted(ENTRIES_SOURCE) {
        true => entry_rows(&Document::read(&layout.entries_file())?, &tombstones),
        false => Vec::new(),
    };
    if !rows.is_empty() {
        out.insert(ENTRIES_SOURCE.into(), rows);
    }
    if wanted("MEMORY.md")
        && let Ok(md) = MemoryMd::read(&layout.memory_md())
    {
        let rows: Vec<Row> = md
            .lines()
            .into_iter()
            .filter(|l| !tombstones.covers("", &l.text))
            .map(|l| Row {
                id: format!("core:{}", l.entry_id),
                kind: RowKind::Core,
                source: "MEMORY.md".into(),
                day: None,
                text: l.text,
                session: None,
                category: None,
            })
            .collect();
        if !rows.is_empty() {
            out.insert("MEMORY.md".into(), rows);
        }
    }
    Ok(out)
}

/// The rows of the entries: each non-empty, unforgotten entry once.
fn entry_rows(doc: &Document, tombstones: &Tombstones) -> Vec<Row> {
    let mut seen = HashSet::new();
    let mut rows = Vec::new();
    for e in doc.entries() {
        if e.text.trim().is_empty() || tombstones.covers("", &e.text) {
            continue;
        }
        // A hand-written block has no id until memd saves the file; it is
        // searchable meanwhile under a provisional id.
        let id = e
            .id()
            .map(String::from)
            .unwrap_or_else(|| format!("hand-{}", text_hash(&e.text)));
        if !seen.insert(id.clone()) {
            continue;
        }
        rows.push(Row {
            id,
            kind: RowKind::Entry,
            source: ENTRIES_SOURCE.into(),
            day: e
                .meta
                .as_ref()
                .map(|m| m.updated.clone())
                .filter(|d| !d.is_empty()),
            text: e.text.clone(),
            session: None,
            category: None,
        });
    }
    rows
}
