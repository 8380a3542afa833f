//! The index's owner: one task per index handle that does every write of
//! the table and holds everything a write needs as plain fields. Handles
//! ([`super::Writer`], [`super::Reader`]) send it [`Job`]s over a channel
//! and read what it publishes ([`View`]); nothing here is
//! behind a lock of its own. After tantivy's one `IndexWriter`: jobs run
//! one at a time, in the order asked, and each runs to its end whether or
//! not its caller still waits for it.
//!
//! Its loop has three branches: a job from a handle ([`Owner::apply`]),
//! the commit of rows held back from the table once due ([`super::held`]),
//! and the end, once the [`super::Writer`] is dropped (rows still held are
//! then left to the next sync, from the files, as after a crash).
//!
//! | file        | job                                                  |
//! |-------------|------------------------------------------------------|
//! | `sync`      | bring the table in step with the files               |
//! | `upkeep`    | after a write: indices, compaction, old versions; reset and purge |
//! | `load`      | a handle's words for the table's version, and the words file |
//!
//! Locks, in the order taken: the index lock across processes
//! (`.memd/index.lock`, every table write) and then, briefly and never
//! across an await, the words ([`super::terms`], which searches read) or
//! the file fingerprints' cache, never both at once.
//!
//! Crash semantics are the sync's (`sync`): what is in memory here is
//! never the only copy of anything.

mod load;
mod sync;
mod upkeep;

use std::collections::{HashSet, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio::sync::{mpsc, oneshot, watch};

use super::fingerprints::{Prints, Seen};
use super::held::Held;
use super::row_hashes::RowHashes;
use super::snapshot::Model;
use super::{Shared, SyncReport, rows};
use crate::error::Result;
use crate::ids::FactId;
use crate::{lock, steps};

/// What a handle asks of the owner, with where to send the answer.
pub(super) enum Job {
    /// Bring the table in step with the files, as of `asked`; with
    /// `hold`, rows only added may be held back ([`super::held`]).
    Sync {
        hold: bool,
        asked: Instant,
        done: oneshot::Sender<Result<SyncReport>>,
    },
    /// Answer once every job asked before has ended, the rows held
    /// committed.
    Idle(oneshot::Sender<()>),
    Reset(oneshot::Sender<Result<()>>),
    /// The table part of [`super::Writer::purge`].
    Purge(oneshot::Sender<Result<()>>),
    Compact(oneshot::Sender<Result<()>>),
    CompactIfNeeded(oneshot::Sender<Result<bool>>),
    /// Bring the words to the table's version (`force`: load them anew
    /// whatever their version); `unmap`: take those read from the words
    /// file into memory.
    Words {
        force: bool,
        unmap: bool,
        done: oneshot::Sender<Result<()>>,
    },
}

/// What the owner publishes after each change, for handles to read
/// without asking it.
#[derive(Clone, Default)]
pub(super) struct View {
    /// The fingerprints the owner's last sync brought the table to.
    pub(super) synced: Option<Arc<Prints>>,
    /// The fingerprints of the files whose rows searches are shown ahead
    /// of the table ([`super::snapshot::Model::ahead`]): a running sync's,
    /// or the rows held ([`super::held`]).
    pub(super) shown: Option<Arc<Prints>>,
    /// Whether rows are held back from the table.
    pub(super) holding: bool,
}

pub(super) struct Owner {
    shared: Arc<Shared>,
    /// The rows' words and vectors, published as snapshots to searches
    /// ([`super::snapshot`]).
    words: Model,
    /// Whether it is the table's sole writer (the daemon's: no other
    /// process writes past its lock on the directory).
    sole: bool,
    /// The files' fingerprints, hashed again only when a file changed
    /// (a cache the handles read too).
    seen: Arc<Mutex<Seen>>,
    /// Where [`View`] goes.
    publish: watch::Sender<View>,
    /// When the last sync started: a sync asked for before then has
    /// nothing left to do once that one finishes (every file change that
    /// preceded the request preceded its start too). Under load, the
    /// searches waiting behind one sync share it instead of a sync each.
    last_sync_start: Option<Instant>,
    /// When a sync last added rows (for [`Job::CompactIfNeeded`]).
    last_added: Option<Instant>,
    /// The table version of the last prune, or of the first write
    /// ([`Owner::prune_if_due`]).
    pruned_at: Option<u64>,
    /// The entries' sources as last read, with the entries file's
    /// fingerprint: every sync of a day file needs them (a fact in one is
    /// not pending, [`crate::pending`]); read once per change of the file.
    sources: Option<(String, Arc<HashSet<FactId>>)>,
    /// The rows' (id, hash) per source, as last read or written
    /// ([`super::row_hashes`]).
    known: RowHashes,
    /// The day files as last read, parsed again only where they grew.
    days: rows::DayRows,
    /// The fingerprints the last sync brought the table to.
    synced: Option<Arc<Prints>>,
    /// The fingerprints of the files whose rows are shown to searches
    /// ahead of the table ([`super::snapshot::Model::ahead`]).
    shown: Option<Arc<Prints>>,
    /// Rows shown to searches and held back from the table ([`super::held`]).
    held: Option<Held>,
}

impl Owner {
    pub(super) fn new(
        shared: Arc<Shared>,
        words: Model,
        sole: bool,
        (seen, publish): (Arc<Mutex<Seen>>, watch::Sender<View>),
    ) -> Owner {
        Owner {
            shared,
            words,
            sole,
            seen,
            publish,
            last_sync_start: None,
            last_added: None,
            pruned_at: None,
            sources: None,
            known: RowHashes::default(),
            days: rows::DayRows::default(),
            synced: None,
            shown: None,
            held: None,
        }
    }

    /// The owner's loop: jobs from `queue` one at a time (`pending` counts
    /// those sent and not ended), and the rows held committed once due.
    /// Syncs queued one after another are one sync ([`Owner::sync_many`]).
    pub(super) async fn run(
        mut self,
        mut queue: mpsc::UnboundedReceiver<Job>,
        pending: Arc<AtomicUsize>,
    ) {
        let mut backlog: VecDeque<Job> = VecDeque::new();
        loop {
            let job = match backlog.pop_front() {
                Some(job) => job,
                None => {
                    let due = self.held.as_ref().map(Held::due);
                    tokio::select! {
                        job = queue.recv() => match job {
                            Some(job) => job,
                            None => return,
                        },
                        _ = until(due) => {
                            self.commit_logged().await;
                            continue;
                        }
                    }
                }
            };
            let ended = match job {
                Job::Sync { hold, asked, done } => {
                    while let Ok(more) = queue.try_recv() {
                        backlog.push_back(more);
                    }
                    let mut syncs = vec![(hold, asked, done)];
                    while let Some(Job::Sync { .. }) = backlog.front() {
                        if let Some(Job::Sync { hold, asked, done }) = backlog.pop_front() {
                            syncs.push((hold, asked, done));
                        }
                    }
                    let n = syncs.len();
                    Box::pin(self.sync_many(syncs)).await;
                    n
                }
                job => {
                    Box::pin(self.apply(job)).await;
                    1
                }
            };
            pending.fetch_sub(ended, Ordering::SeqCst);
        }
    }

    /// The syncs queued one after another, as one: asked for as late as
    /// the last was, holding its rows only if every one may
    /// ([`super::held`]); each gets its report (or its error).
    async fn sync_many(
        &mut self,
        syncs: Vec<(bool, Instant, oneshot::Sender<Result<SyncReport>>)>,
    ) {
        let hold = syncs.iter().all(|(hold, _, _)| *hold);
        let asked = syncs.iter().map(|(_, asked, _)| *asked).max();
        let synced = self.sync(hold, asked.unwrap_or_else(Instant::now)).await;
        let mut each = syncs.into_iter().map(|(_, _, done)| done);
        let first = each.next();
        for done in each {
            let again = match &synced {
                Ok(report) => Ok(report.clone()),
                Err(e) => Err(e.again()),
            };
            answer(done, again);
        }
        if let Some(done) = first {
            answer(done, synced);
        }
    }

    /// Do `job` and send its answer; a failure nobody waits for any more
    /// is a warning.
    async fn apply(&mut self, job: Job) {
        match job {
            Job::Sync { hold, asked, done } => answer(done, self.sync(hold, asked).await),
            Job::Idle(done) => {
                if self.held.is_some() {
                    self.commit_logged().await;
                }
                let _ = done.send(());
            }
            Job::Reset(done) => answer(done, self.reset().await),
            Job::Purge(done) => answer(done, self.purge().await),
            Job::Compact(done) => answer(done, self.compact().await),
            Job::CompactIfNeeded(done) => answer(done, self.compact_if_needed().await),
            Job::Words { force, unmap, done } => answer(done, self.words(force, unmap).await),
        }
    }

    /// Tell the handles what changed.
    fn publish(&self) {
        self.publish.send_modify(|v| {
            v.synced = self.synced.clone();
            v.shown = self.shown.clone();
            v.holding = self.held.is_some();
        });
    }

    /// Take back every row shown and not committed (held ones included),
    /// to be loaded from the table.
    fn take_back(&mut self) {
        self.words.behind();
        self.shown = None;
        self.held = None;
        self.publish();
    }

    /// The source files' fingerprints now.
    fn fingerprints(&self) -> Result<Arc<Prints>> {
        self.seen.lock().unwrap().fingerprints(&self.shared.layout)
    }

    /// Commit the rows held, under the index lock; a failure is a warning
    /// (the files are what counts, and the next sync redoes the write).
    async fn commit_logged(&mut self) {
        let committed = async {
            let _all = self.writing().await?;
            self.commit_held_at_latest().await
        };
        if let Err(e) = committed.await {
            tracing::warn!("index not updated yet: {e:#}");
        }
    }

    /// With the index lock, at the table's latest version: commit the rows
    /// held ([`Owner::keep_held_if_latest`]). Returns whether it
    /// committed any.
    async fn commit_held_at_latest(&mut self) -> Result<bool> {
        self.keep_held_if_latest().await?;
        self.commit_held().await
    }

    /// With the index lock, at the table's latest version: take back the
    /// rows held if the table is no longer theirs to write
    /// ([`super::held`]), to be synced from the files and the table:
    /// - another process wrote the table since they were held (their files
    ///   stay marked as syncing, and a process that syncs them adds them);
    ///   the daemon's writer, which skips that check in its other writes,
    ///   looks too, for a handle that writes past it (the tests' do);
    /// - a daemon serves the directory now, for a writer among others: it
    ///   is the table's sole writer from the version it opened, which it
    ///   opens under the index lock ([`super::Index::open_sole`]).
    async fn keep_held_if_latest(&mut self) -> Result<()> {
        let Some(before) = self.held.as_ref().map(|h| h.before) else {
            return Ok(());
        };
        let served = match self.sole {
            true => {
                self.shared.table.inner.checkout_latest().await?;
                false
            }
            false => lock::is_held(&self.shared.layout.daemon_lock()),
        };
        if served || self.shared.table.version().await? != before {
            self.take_back();
        }
        Ok(())
    }

    /// Commit the rows held in one add (with the index lock, the table at
    /// the version they build on), then record their fingerprints. Taken
    /// back afterwards, committed or not.
    async fn commit_held(&mut self) -> Result<bool> {
        let Some(held) = self.held.take() else {
            return Ok(false);
        };
        let committed = self.commit(held).await;
        self.take_back();
        committed.map(|()| true)
    }

    async fn commit(&mut self, held: Held) -> Result<()> {
        let table = &self.shared.table.inner;
        let added = table.add(held.batches).execute();
        steps::timed("sync: table add", added).await?;
        self.last_added = Some(Instant::now());
        let after = table.version().await?;
        let before = held.before;
        let no_rows: [(&str, &str); 0] = [];
        self.words.wrote(before, after, no_rows, []);
        self.known.same_rows(before, after);
        self.days.same_rows(before, after);
        self.written(held.prints, (held.rows, 0)).await
    }
}

/// Send `result` to whoever asked; if nobody waits any more, a failure is
/// a warning (the next sync redoes the work).
fn answer<T>(done: oneshot::Sender<Result<T>>, result: Result<T>) {
    if let Err(Err(e)) = done.send(result) {
        tracing::warn!("index not updated yet: {e:#}");
    }
}

/// Once `at` is reached; never without one.
async fn until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at.into()).await,
        None => std::future::pending().await,
    }
}
