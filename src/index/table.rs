//! The LanceDB table under `.memd/index/`: its schema, how it is opened (or
//! rebuilt for another embedder), and what keeps it fast as it grows:
//! merges of small fragments, compaction, the vector index.
//!
//! `meta.json` records the embedder and dimension that built the table; a
//! different embedder rebuilds it rather than mixing vectors. Nothing here
//! knows what a row means ([`super::rows`]) or when to write
//! ([`super::writer`]).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use arrow_array::types::Float32Type;
use arrow_array::{Array, FixedSizeListArray, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use futures::TryStreamExt;
use lancedb::index::Index as LanceIndex;
use lancedb::query::{ExecutableQuery, QueryBase, Select};
use serde::{Deserialize, Serialize};

use super::rows::Row;
use crate::error::{Context, Error, Result};
use crate::lock::{self, Guard};
use crate::server::info;
use crate::{Layout, atomic, pause};

const TABLE: &str = "memory";

/// Below this many rows a flat vector scan is fast enough and an index would
/// only add build time. At 10k rows IVF_HNSW_SQ more than halves hybrid
/// search p50 against a flat scan, for a build of a few seconds once
/// (`memd bench index --rows 10000`: BENCHMARKS.md, "Index and search").
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
pub(super) const INLINE_COMPACT_SMALL_FRAGMENTS: usize = 4 * COMPACT_SMALL_FRAGMENTS;

/// Fragments of fewer rows than this are the table's tail: what syncs of a
/// few new rows write. A sync merges them ([`TAIL_FRAGMENTS`]) into
/// fragments of up to this many rows, which later merges leave alone, so a
/// merge rewrites at most this many rows however large the table.
pub(super) const TAIL_ROWS: usize = 1_000;

/// Tail fragments ([`TAIL_ROWS`]) at which a sync that added rows merges
/// them. Every search visits every fragment, and a daemon whose clients
/// search after every post writes one fragment per sync, dozens a second:
/// waiting for the background compaction ([`COMPACT_SMALL_FRAGMENTS`],
/// checked every 10 s) let 100+ fragments pile up. With this merge and
/// the savings measured beside it, one client's search p50 fell by a
/// third or more and 16 clients were served twice the requests a second,
/// while one add in 8 pays for a merge (`memd bench serve --clients
/// 1,4,16`: BENCHMARKS.md, "Daemon under load: fragments were the cost").
pub const TAIL_FRAGMENTS: usize = 8;

/// How long a table version is kept after it is made. Every version
/// stays in `_versions` until pruned, and a writer that is not the
/// table's sole one (`memd mcp`, a command without a daemon) reads that
/// directory whole at every sync, a search's too, so that check grows
/// with the versions kept (BENCHMARKS.md, "`memd mcp`'s searches grew
/// with the table versions kept; now pruned"). LanceDB's default kept a
/// week. A reader reads the version it checked out within milliseconds
/// (another process's search, `memd check`; consolidation reads no
/// table), so five minutes leave a wide margin.
const VERSIONS_KEPT_FOR: std::time::Duration = std::time::Duration::from_secs(300);

/// [`VERSIONS_KEPT_FOR`], which a test build may shorten with
/// `MEMD_VERSIONS_KEPT_SECONDS` (a test cannot wait five minutes).
pub(super) fn versions_kept_for() -> std::time::Duration {
    pause::tuned("MEMD_VERSIONS_KEPT_SECONDS")
        .map_or(VERSIONS_KEPT_FOR, std::time::Duration::from_secs)
}

/// Versions a writer makes between its prunes ([`Table::prune`]) when no
/// compaction prunes for it: a burst of appends leaves at most this many
/// more than [`VERSIONS_KEPT_FOR`] keeps.
pub(super) const PRUNE_EVERY_VERSIONS: u64 = 128;

/// How many rows may wait outside the indices before they are folded in.
pub(super) const FOLD_UNINDEXED_ROWS: usize = 1_000;

/// Rows from which a fragment is left alone by compaction (LanceDB's own
/// line between small and not small). LanceDB's default target is a million
/// rows, which would rewrite the whole table, up to a million rows, every
/// time a few new rows are folded in; with this target a compaction rewrites
/// at most 100,000 rows, and once the table has grown past that, only the
/// small fragments new rows wrote.
pub(super) const COMPACT_TARGET_ROWS: usize = 100_000;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Meta {
    embedder: String,
    dim: usize,
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

/// The table, with the dimension of its vectors.
pub(crate) struct Table {
    pub(super) inner: lancedb::Table,
    pub(super) dim: usize,
}

impl Table {
    /// Open the table for `layout`, creating it, or building the index
    /// anew when it was built with another embedder than `embedder` (`dim`
    /// wide) or its table is gone (deleted by hand, or `[index] uri`
    /// changed): the index's own files then describe rows that are not
    /// there, and trusting them would hide every fact they name.
    pub(super) async fn open(layout: &Layout, embedder: String, dim: usize) -> Result<Table> {
        std::fs::create_dir_all(layout.index_dir())?;
        let want = Meta { embedder, dim };
        let meta_path = layout.index_meta();
        let read_meta =
            || -> Option<Meta> { serde_json::from_slice(&std::fs::read(&meta_path).ok()?).ok() };
        let mut have = read_meta();
        let mut opened = open_named(layout).await?;
        // Creating or rebuilding the index writes it: that takes the index
        // lock, and looks again under it (another process may have just
        // built it). Opening an index as it is takes nothing.
        let rebuild = |have: &Option<Meta>, opened: &Option<lancedb::Table>| {
            have.as_ref() != Some(&want) || opened.is_none()
        };
        let _all = match rebuild(&have, &opened) {
            false => None,
            true => {
                let guard = write_lock(layout).await?;
                (have, opened) = (read_meta(), open_named(layout).await?);
                Some(guard)
            }
        };
        if rebuild(&have, &opened) {
            match &have {
                Some(h) if h != &want => {
                    refuse_if_owned(layout, h, &want)?;
                    tracing::info!(
                        from = %h.embedder, from_dim = h.dim, to = %want.embedder, to_dim = want.dim,
                        "embedder changed: rebuilding the index"
                    );
                }
                Some(_) => tracing::info!("the index's table is gone: rebuilding the index"),
                None => {}
            }
            drop(opened.take());
            remove(layout).await?;
            std::fs::create_dir_all(layout.index_dir())?;
            have = None;
        }
        let inner = match opened {
            Some(t) => t,
            None => {
                let creating = connect(layout)
                    .await?
                    .create_empty_table(TABLE, schema(dim));
                creating
                    .execute()
                    .await
                    .map_err(|e| super::store::failed(layout, e))?
            }
        };
        if have.as_ref() != Some(&want) {
            atomic::write(&meta_path, &serde_json::to_vec_pretty(&want)?)?;
        }
        Ok(Table { inner, dim })
    }

    pub(super) async fn version(&self) -> Result<u64> {
        Ok(self.inner.version().await?)
    }

    /// The handle's version and when it was made ([`stamp_of`]).
    pub(super) async fn stamp(&self) -> Result<(u64, u64)> {
        stamp_of(&self.inner).await
    }

    /// Rows (each with its [`Row::hash`]) and their vectors as one batch.
    pub(super) fn batch(
        &self,
        rows: &[super::rows::Hashed],
        vectors: Vec<Vec<f32>>,
    ) -> Result<RecordBatch> {
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
                col(&|(r, _)| Some(r.id.to_string())),
                col(&|(r, _)| Some(r.kind.as_str().to_string())),
                col(&|(r, _)| Some(r.source.rel().into_owned())),
                col(&|(r, _)| r.day.clone()),
                col(&|(r, _)| Some(r.text.clone())),
                col(&|(_, h)| Some(h.clone())),
                col(&|(r, _)| r.session.clone()),
                col(&|(r, _)| r.category.clone()),
                Arc::new(vectors),
            ],
        )?)
    }

    /// The given text columns of every row matching `filter`.
    pub(super) async fn strings<const N: usize>(
        &self,
        columns: [&str; N],
        filter: Option<&str>,
    ) -> Result<Vec<[String; N]>> {
        let mut query = self.inner.query().select(Select::columns(&columns));
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

    /// Fragments of fewer than `rows` rows (from the manifest: no file is
    /// read). Under [`COMPACT_TARGET_ROWS`]: the small fragments a
    /// compaction merges; each sync that added rows writes one, and every
    /// search visits every fragment.
    pub(super) async fn fragments_under(&self, rows: usize) -> Result<usize> {
        Ok(match self.inner.as_native() {
            Some(t) => t.num_small_files(rows).await?,
            None => 0,
        })
    }

    /// Fragments in the table.
    pub(super) async fn fragments(&self) -> Result<usize> {
        Ok(match self.inner.as_native() {
            Some(t) => t.count_fragments().await?,
            None => 0,
        })
    }

    /// Merge small fragments, drop old versions ([`Table::prune`]), fold
    /// new rows into the indices (LanceDB's `OptimizeAction::All` with a
    /// bounded compaction target).
    pub(super) async fn compact(&self) -> Result<()> {
        self.merge_fragments(COMPACT_TARGET_ROWS).await?;
        self.prune(versions_kept_for()).await?;
        // A full-text index an older memd built is never folded: the next
        // sync that adds rows drops it (`Writer::drop_text_index`).
        let indices = self.inner.list_indices().await?;
        let others: Vec<String> = indices
            .iter()
            .filter(|i| !i.columns.iter().any(|c| c == "text"))
            .map(|i| i.name.clone())
            .collect();
        self.fold(others).await
    }

    /// Drop the versions made more than `kept_for` ago, but the latest,
    /// and the files only they name (files no version names are kept
    /// until LanceDB can tell them from another writer's uncommitted ones).
    pub(super) async fn prune(&self, kept_for: std::time::Duration) -> Result<()> {
        let older_than =
            lancedb::table::Duration::from_std(kept_for).map_err(|e| Error::Index(e.into()))?;
        self.inner
            .optimize(lancedb::table::OptimizeAction::Prune {
                older_than: Some(older_than),
                delete_unverified: None,
                error_if_tagged_old_versions: None,
            })
            .await?;
        Ok(())
    }

    /// Take deleted rows out for good, now (an erasure's): every fragment
    /// with a deleted row is rewritten, even the only one, and every
    /// version but this one goes, with every file no version names however
    /// recent. Under the index lock only: with `delete_unverified` another
    /// writer's files not yet committed would go too.
    pub(super) async fn purge(&self) -> Result<()> {
        use lancedb::table::{CompactionOptions, Duration, OptimizeAction};
        self.inner
            .optimize(OptimizeAction::Compact {
                options: CompactionOptions {
                    target_rows_per_fragment: COMPACT_TARGET_ROWS,
                    materialize_deletions: true,
                    materialize_deletions_threshold: 0.0,
                    ..Default::default()
                },
                remap_options: None,
            })
            .await?;
        self.inner
            .optimize(OptimizeAction::Prune {
                older_than: Some(Duration::zero()),
                delete_unverified: Some(true),
                error_if_tagged_old_versions: Some(false),
            })
            .await?;
        Ok(())
    }

    /// Rewrite the fragments under `target` rows into fragments of up to
    /// `target` rows (and those with many deleted rows without them). With
    /// [`TAIL_ROWS`], a sync's merge of its tail: no pruning, no folding,
    /// which [`Table::compact`] does.
    pub(super) async fn merge_fragments(&self, target: usize) -> Result<()> {
        use lancedb::table::{CompactionOptions, OptimizeAction};
        self.inner
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
    pub(super) async fn fold(&self, names: Vec<String>) -> Result<()> {
        if names.is_empty() {
            return Ok(());
        }
        let mut options = lancedb::table::OptimizeOptions::default();
        options.index_names = Some(names);
        self.inner
            .optimize(lancedb::table::OptimizeAction::Index(options))
            .await?;
        Ok(())
    }

    /// The vector index (IVF_HNSW_SQ, cosine) over every row.
    pub(super) async fn create_vector_index(&self) -> Result<()> {
        let index = lancedb::index::vector::IvfHnswSqIndexBuilder::default()
            .distance_type(lancedb::DistanceType::Cosine);
        self.inner
            .create_index(&["vector"], LanceIndex::IvfHnswSq(index))
            .execute()
            .await?;
        Ok(())
    }
}

/// The table's latest version and its stamp ([`Table::stamp`]), read
/// through a handle of its own (the caller's stays at its version).
pub(super) async fn latest_stamp(layout: &Layout) -> Result<(u64, u64)> {
    let db = connect(layout).await?;
    stamp_of(&db.open_table(TABLE).execute().await?).await
}

/// A table handle's version, and when it was made (nanoseconds since the
/// epoch): the two name the rows of a version, also across a table made
/// anew (whose versions count from 1 again).
pub(super) async fn stamp_of(inner: &lancedb::Table) -> Result<(u64, u64)> {
    match inner.as_native() {
        Some(native) => {
            let m = native.manifest().await?;
            Ok((m.version, m.timestamp_nanos as u64))
        }
        None => Ok((inner.version().await?, 0)),
    }
}

async fn connect(layout: &Layout) -> Result<lancedb::Connection> {
    super::store::connect(layout).await
}

/// The table, `None` when there is none (any other failure to open it,
/// such as an object store that does not answer, is an error).
async fn open_named(layout: &Layout) -> Result<Option<lancedb::Table>> {
    if layout.index_uri().is_none() && !layout.lance_dir().exists() {
        return Ok(None);
    }
    match connect(layout).await?.open_table(TABLE).execute().await {
        Ok(t) => Ok(Some(t)),
        Err(lancedb::Error::TableNotFound { .. }) => Ok(None),
        Err(e) => Err(super::store::failed(layout, e)),
    }
}

/// Remove the index: `.memd/index` and, on object storage, the table. The
/// caller holds the index lock.
pub(super) async fn remove(layout: &Layout) -> Result<()> {
    if layout.index_uri().is_some() {
        match connect(layout).await?.drop_table(TABLE, &[]).await {
            Ok(()) | Err(lancedb::Error::TableNotFound { .. }) => {}
            Err(e) => return Err(super::store::failed(layout, e)),
        }
    }
    match std::fs::remove_dir_all(layout.index_dir()) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e.into()),
        _ => Ok(()),
    }
}

/// A process that is not the daemon serving this directory never rebuilds
/// the index the daemon owns (a CLI run with another embedder once deleted
/// a running daemon's index, and its searches failed for 35 s).
fn refuse_if_owned(layout: &Layout, have: &Meta, want: &Meta) -> Result<()> {
    match info::running(layout) {
        Some(d) if d.pid != std::process::id() => Err(Error::Invalid(format!(
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
pub(super) async fn write_lock(layout: &Layout) -> Result<Guard> {
    lock::wait_for(&layout.index_lock()).await
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
    stored_rows_where(layout, None).await
}

/// [`stored_rows`] of the sources `only` (relative paths) alone.
pub(crate) async fn stored_rows_of(
    layout: &Layout,
    only: &BTreeSet<String>,
) -> Result<Vec<StoredRow>> {
    if only.is_empty() {
        return Ok(Vec::new());
    }
    let names: Vec<String> = only.iter().map(|s| sql_str(s)).collect();
    let filter = format!("source IN ({})", names.join(", "));
    Ok(stored_rows_where(layout, Some(&filter))
        .await?
        .unwrap_or_default())
}

async fn stored_rows_where(
    layout: &Layout,
    filter: Option<&str>,
) -> Result<Option<Vec<StoredRow>>> {
    let Some(inner) = existing(layout).await? else {
        return Ok(None);
    };
    let columns = ["id", "source", "hash"];
    let mut query = inner.query().select(Select::columns(&columns));
    if let Some(f) = filter {
        query = query.only_if(f);
    }
    let mut out = Vec::new();
    for b in collect(query).await? {
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

/// The table as it is, opened read only (nothing created or migrated);
/// `None` when there is none.
pub(super) async fn existing(layout: &Layout) -> Result<Option<lancedb::Table>> {
    open_named(layout).await
}

/// The dimension of the table's vectors (0 if it has none).
pub(super) async fn vector_dim(inner: &lancedb::Table) -> Result<usize> {
    let schema = inner.schema().await?;
    Ok(
        match schema.field_with_name("vector").map(|f| f.data_type()) {
            Ok(arrow_schema::DataType::FixedSizeList(_, n)) => *n as usize,
            _ => 0,
        },
    )
}

/// The index on `column`, if there is one.
pub(super) fn on_column<'a>(
    indices: &'a [lancedb::index::IndexConfig],
    column: &str,
) -> Option<&'a lancedb::index::IndexConfig> {
    indices
        .iter()
        .find(|i| i.columns.iter().any(|c| c == column))
}

/// A filter for the rows of these ids, per source.
pub(super) fn rows_filter(ids: &BTreeMap<&str, Vec<String>>) -> String {
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

pub(crate) fn string_col<'a>(b: &'a RecordBatch, name: &str) -> Result<&'a StringArray> {
    b.column_by_name(name)
        .and_then(|c| c.as_any().downcast_ref::<StringArray>())
        .with_context(|| format!("index column {name} missing"))
}

/// A SQL string literal.
pub(super) fn sql_str(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}
