//! The derived index under `.memd/index/`: one LanceDB table of facts,
//! entries and core lines, with their vectors; full-text scores are kept
//! by memd itself, in memory ([`terms`]). Everything here can be rebuilt
//! from the markdown files.
//!
//! Split by job, after tantivy's `IndexWriter`/`IndexReader`:
//!
//! | module            | job                                                   |
//! |-------------------|-------------------------------------------------------|
//! | [`rows`]          | files → rows, a pure function (and what `check` needs) |
//! | [`fingerprints`]  | whether the table holds each file as it is now        |
//! | `changes`         | which day files the kernel says changed (inotify)     |
//! | [`table`]         | the LanceDB table: schema, open, merges, compaction   |
//! | [`writer`]        | the one writer of a process: sync, reset, compaction  |
//! | [`held`]          | rows shown to searches, committed later in groups     |
//! | [`reader`]        | cheap readers: search, similar entries                |
//! | [`search`]        | the ranking a search applies                          |
//! | [`terms`], `vectors`, `row_hashes` | what the writer keeps in memory between writes |
//! | [`words`]         | the words of one table version, on disk, for a new process |
//!
//! An [`Index`] is one process's handle: its [`Writer`] and a [`Reader`]
//! (clone it freely). Who may write is decided when the handle is made:
//! the daemon's writer holds the daemon's lock on the directory
//! ([`Index::open_sole`]); every other process's writer takes the index
//! lock for each write ([`Index::open`]).

mod changes;
pub mod fingerprints;
mod held;
mod past;
pub mod reader;
mod row_hashes;
pub mod rows;
pub mod search;
pub mod store;
pub mod table;
mod terms;
mod vectors;
pub mod words;
pub mod writer;

use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use crate::config::Config;
use crate::embed::cache::Cached;
use crate::error::{Context, Result};
use crate::{Layout, Memory, lock};

pub(crate) use past::rows_as_of;
pub use reader::Reader;
pub use rows::{Row, RowKind};
pub use table::{COMPACT_IDLE, TAIL_FRAGMENTS};
pub use writer::Writer;

/// What one sync did.
#[derive(Debug, Default, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SyncReport {
    pub files_checked: usize,
    pub files_synced: usize,
    pub rows_added: usize,
    pub rows_deleted: usize,
}

/// What a process's writer and readers of one index share.
struct Shared {
    layout: Layout,
    /// The search settings.
    config: Config,
    table: table::Table,
    embedder: Cached,
    /// The rows' words, for full-text scores ([`terms`]).
    terms: Mutex<terms::Terms>,
    /// The recall log searches append to.
    recalls: crate::recall::Log,
    /// Held while the table's version moves in this process (a write, a
    /// compaction), and while the words are loaded for a version: one
    /// write at a time, and words that are those of one version.
    moving: tokio::sync::Mutex<()>,
    /// Whether a search has read LanceDB's vector index ahead
    /// ([`Reader::warm_vector_index`]).
    warmed: std::sync::atomic::AtomicBool,
}

/// One process's handle on the index: its one writer and its readers.
pub struct Index {
    pub writer: Writer,
    pub reader: Reader,
}

impl Index {
    /// Open (or create) the index of `memory`, with its embedder, for a
    /// process that writes it beside others (each write takes the index
    /// lock).
    pub async fn open(memory: &Memory) -> Result<Index> {
        let shared = Arc::new(Shared::open(memory).await?);
        Ok(Index {
            writer: Writer::new(shared.clone()),
            reader: Reader::new(shared),
        })
    }

    /// The index of the daemon serving `memory`, which holds `served`, the
    /// daemon's lock on the directory: its writer is the table's only one.
    /// Once open, it takes the table's latest version under the index
    /// lock: a writer among others that holds rows back ([`held`]) commits
    /// them under that lock only while no daemon serves the directory
    /// (`served` is taken first), so none lands after the version this
    /// writer starts from.
    pub(crate) async fn open_sole(memory: &Memory, served: lock::Guard) -> Result<Index> {
        let shared = Arc::new(Shared::open(memory).await?);
        {
            let _all = table::write_lock(&memory.layout).await?;
            shared.table.inner.checkout_latest().await?;
        }
        Ok(Index {
            writer: Writer::sole(shared.clone(), served),
            reader: Reader::new(shared),
        })
    }

    /// A sync on a task of its own, waited for only until searches see
    /// the files as they are now ([`Writer::shown_by`]): its table write
    /// goes on after the caller is answered, or its rows are held and
    /// committed with the next ones ([`held`]). A failure there is a
    /// warning: the rows shown are taken back, and the next sync does the
    /// work.
    pub async fn sync_shown(self: &Arc<Index>) -> Result<SyncReport> {
        let index = self.clone();
        let running = tokio::spawn(async move {
            let synced = index.writer.sync_held().await;
            if let Err(e) = &synced {
                tracing::warn!("index not updated yet: {e:#}");
            }
            tokio::spawn(Index::commit_when_due(Arc::downgrade(&index)));
            synced
        });
        self.writer.shown_by(running).await
    }

    /// Commit the group of rows held now once it is due ([`held`]), unless
    /// another task waits for it. The index is held only to commit: if it
    /// is dropped first (a daemon let the memory go), its rows are synced
    /// from the files by the next handle, as after a crash.
    async fn commit_when_due(index: std::sync::Weak<Index>) {
        let Some(group) = index.upgrade().and_then(|i| i.writer.watch_held()) else {
            return;
        };
        loop {
            let Some(at) = index.upgrade().and_then(|i| i.writer.held_due(group)) else {
                return;
            };
            tokio::time::sleep_until(at.into()).await;
            let Some(i) = index.upgrade() else { return };
            if i.writer.commit_if_due(group).await {
                return;
            }
        }
    }

    /// Delete `.memd/index` entirely (the embedding cache is kept).
    pub async fn clear(layout: &Layout) -> Result<()> {
        writer::clear(layout).await
    }

    /// The embedder behind the index (with its cache).
    pub fn embedder(&self) -> &Cached {
        &self.reader.shared().embedder
    }
}

impl Shared {
    async fn open(memory: &Memory) -> Result<Shared> {
        let (layout, config) = (&memory.layout, &memory.config);
        let embedder = memory.embedder()?;
        let dim = embedder
            .dim()
            .await
            .context("asking the embedder for its dimension")?;
        let table = table::Table::open(layout, embedder.id(), dim).await?;
        let embedder = Cached::open(embedder, &layout.cache_dir())?;
        Ok(Shared {
            layout: layout.clone(),
            config: config.clone(),
            table,
            embedder,
            terms: Mutex::new(terms::Terms::new()?),
            recalls: crate::recall::Log::open(layout.recall_log()),
            moving: tokio::sync::Mutex::new(()),
            warmed: Default::default(),
        })
    }
}
