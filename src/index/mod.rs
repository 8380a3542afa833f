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
//! | [`writer`]        | a process's handle on its writer: asks the owner      |
//! | `owner`           | the one task that writes: sync, upkeep, words loaded  |
//! | [`held`]          | rows shown to searches, committed later in groups     |
//! | [`reader`]        | cheap readers: search, similar entries                |
//! | [`search`]        | the ranking a search applies                          |
//! | `snapshot`        | what searches read, without a lock: the rows' words and vectors as the owner last published them |
//! | [`terms`], `vectors`, `row_hashes` | the rows' words and BM25, their vectors, their hashes |
//! | [`words`]         | the words of one table version, on disk, for a new process |
//! | [`words_check`], [`rows_check`] | what a check keeps of the words file and of the rows |
//!
//! An [`Index`] is one process's handle: its [`Writer`] and a [`Reader`]
//! (clone it freely). Behind them one task, the owner, holds the index's
//! state and does every write, one job at a time (`owner`); the handles
//! hold no lock of their own. Who may write is decided when the handle is made:
//! the daemon's writer holds the daemon's lock on the directory
//! ([`Index::open_sole`]); every other process's writer takes the index
//! lock for each write ([`Index::open`]).

mod changes;
pub mod counts;
pub mod filter;
pub mod fingerprints;
mod held;
mod owner;
mod past;
pub mod reader;
mod row_hashes;
pub mod rows;
pub mod rows_check;
pub mod search;
mod snapshot;
pub mod store;
pub mod table;
mod terms;
mod vectors;
pub mod words;
pub mod words_check;
pub mod writer;

use std::sync::Arc;

use arc_swap::ArcSwap;

use serde::{Deserialize, Serialize};

use crate::archive::{self, ParsedDays};
use crate::check::memo::ByDay;
use crate::config::Config;
use crate::embed::cache::Cached;
use crate::error::{Context, Result};
use crate::{Layout, Memory, lock, recall, steps};

pub use filter::Filter;
pub(crate) use past::rows_as_of;
pub use reader::{Query, Reader};
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

/// What [`Index::search`] found, and the source files the index did not
/// cover yet (only for a query that did not wait).
#[derive(Debug)]
pub struct Searched {
    pub hits: Vec<search::Hit>,
    pub behind: Vec<String>,
}

/// What a process's writer and readers of one index share.
struct Shared {
    layout: Layout,
    /// The search settings.
    config: Config,
    table: table::Table,
    embedder: Cached,
    /// The rows' words and vectors as the owner last published them, for
    /// full-text scores and the vector half of a search ([`snapshot`]):
    /// read without a lock.
    words: Arc<ArcSwap<snapshot::Snapshot>>,
    /// The recall log searches append to.
    recalls: recall::Log,
    /// Whether a search has read LanceDB's vector index ahead
    /// ([`Reader::warm_vector_index`]).
    warmed: std::sync::atomic::AtomicBool,
}

/// One process's handle on the index: its one writer and its readers.
pub struct Index {
    pub writer: Writer,
    pub reader: Reader,
    /// What `memd check` last found of the words file.
    pub words_checked: words_check::Checked,
    /// What `memd check` kept of the table's rows and the files' rows.
    pub rows_checked: rows_check::Kept,
    /// What `memd check` found of each day file's facts.
    pub facts_checked: ByDay,
}

/// The archive's day files, parsed: as `index`'s writer keeps them when
/// the index is open in this process (a daemon's, which reads again only
/// the day files that changed since it last looked), else read now.
pub fn parsed_days(layout: &Layout, index: Option<&Index>) -> Result<Arc<ParsedDays>> {
    match index {
        Some(index) => index.writer.archive(),
        None => archive::read_parsed(layout),
    }
}

/// The archive's day files, parsed, and what status counts of them and of
/// the entries ([`counts`]): as `index`'s writer keeps them when the index
/// is open in this process, else read and counted now.
pub fn tally(layout: &Layout, index: Option<&Index>) -> Result<(Arc<ParsedDays>, counts::Tally)> {
    match index {
        Some(index) => index.writer.tally(),
        None => {
            let days = archive::read_parsed(layout)?;
            let tally = counts::tally(layout, &days, None, &mut None)?;
            Ok((days, tally))
        }
    }
}

impl Index {
    /// Open (or create) the index of `memory`, with its embedder, for a
    /// process that writes it beside others (each write takes the index
    /// lock).
    pub async fn open(memory: &Memory) -> Result<Index> {
        let shared = Arc::new(Shared::open(memory).await?);
        Index::start(shared, None)
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
        Index::start(shared, Some(served))
    }

    /// The handle, its owner's task started ([`owner`]).
    fn start(shared: Arc<Shared>, sole: Option<lock::Guard>) -> Result<Index> {
        let model = snapshot::Model::new(shared.words.clone())?;
        let (writer, asking) = Writer::start(shared.clone(), model, sole);
        Ok(Index {
            writer,
            reader: Reader::new(shared, asking),
            words_checked: words_check::Checked::default(),
            rows_checked: rows_check::Kept::default(),
            facts_checked: ByDay::default(),
        })
    }

    /// A sync waited for only until searches see the files as they are
    /// now ([`Writer::sync_shown`]): its table write goes on after the
    /// caller is answered, or its rows are held and committed with the
    /// next ones ([`held`]).
    pub async fn sync_shown(&self) -> Result<SyncReport> {
        self.writer.sync_shown().await
    }

    /// A search of the files as they are now: the index brought in step
    /// with them first ([`Writer::sync_to_read`]), or, when the query does
    /// not wait, of the index as it is, with the files it does not cover
    /// yet ([`Writer::files_behind`]); a search of a past time's rows
    /// ([`Query::over`]) needs neither.
    ///
    /// The query's embedding does not wait for the sync: made beside it
    /// (and cached for the search), it takes the embedder while the sync
    /// writes the table; a query that is the text of a fact being embedded
    /// waits for that embedding instead of making it again. A new handle's
    /// words (after the sync, so of the version it leaves) and LanceDB's
    /// vector index are read beside it too, not in turn.
    pub async fn search(&self, query: &Query<'_>) -> Result<Searched> {
        let behind = match (&query.over, query.wait) {
            // Rows of a past time, read from the files: nothing to sync.
            (Some(_), _) => Vec::new(),
            (None, true) => {
                let synced = async {
                    steps::timed("sync", self.writer.sync_to_read()).await?;
                    self.reader.words_current(true).await
                };
                let asked = self.reader.asked_vector(query.text);
                let embedded = steps::timed("query embedding", asked);
                let warmed = self.reader.warm_vector_index();
                let warmed = steps::timed("vector index read ahead", warmed);
                let (synced, _, ()) = tokio::join!(synced, embedded, warmed);
                synced?;
                Vec::new()
            }
            (None, false) => self.writer.files_behind()?,
        };
        let hits = self.reader.search(query).await?;
        Ok(Searched { hits, behind })
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
            words: Arc::default(),
            recalls: recall::Log::open(layout.recall_log()),
            warmed: Default::default(),
        })
    }
}
