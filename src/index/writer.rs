//! The handle on a process's index writer. The writing itself is done by
//! one task, the index's owner ([`super::owner`]), which holds all the
//! writer's state; a [`Writer`] only asks it for work, over a channel,
//! and reads what it publishes ([`super::owner::View`]).
//!
//! What a caller may count on:
//! - a sync asked for is done before its answer comes, or shown to this
//!   process's searches before it ([`Writer::sync_to_read`]);
//! - a job, once asked for, runs to its end even if the caller stops
//!   waiting (a dropped request never leaves the index half written);
//! - the daemon's writer (made with its lock on the directory) answers a sync with nothing
//!   to do without asking the owner at all, so a search is never queued
//!   behind a compaction when the files have not changed.

use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio::sync::{mpsc, oneshot, watch};

use super::fingerprints::{self, Freshness, Prints, Seen};
use super::owner::{Job, Owner, View};
use super::{Shared, SyncReport};
use crate::archive::ParsedDays;
use crate::error::{Error, Result};
use crate::layout::Source;
use crate::lock::Guard;
use crate::{Layout, steps};

/// How handles reach the owner: its jobs, and how many are queued or
/// running ([`Asking::busy`]).
#[derive(Clone)]
pub(super) struct Asking {
    jobs: mpsc::WeakUnboundedSender<Job>,
    pending: Arc<AtomicUsize>,
}

impl Asking {
    /// Send the job `make` builds around its answer, and wait for that
    /// answer.
    pub(super) async fn ask<T>(&self, make: impl FnOnce(oneshot::Sender<T>) -> Job) -> Result<T> {
        let (done, answer) = oneshot::channel();
        self.send(make(done))?;
        answer.await.map_err(|_| stopped())
    }

    /// Send `job`; its answer is the caller's to wait for.
    pub(super) fn send(&self, job: Job) -> Result<()> {
        let jobs = self.jobs.upgrade().ok_or_else(stopped)?;
        self.pending.fetch_add(1, Ordering::SeqCst);
        jobs.send(job).map_err(|_| {
            self.pending.fetch_sub(1, Ordering::SeqCst);
            stopped()
        })
    }

    /// Whether the owner has a job queued or running.
    pub(super) fn busy(&self) -> bool {
        self.pending.load(Ordering::SeqCst) > 0
    }
}

/// The owner is gone: its handle was dropped, or it panicked.
fn stopped() -> Error {
    Error::Index("the index's writer has stopped (its handle was dropped)".into())
}

pub struct Writer {
    shared: Arc<Shared>,
    /// The one strong sender: the owner ends once the writer is dropped
    /// (readers hold weak ones).
    _jobs: mpsc::UnboundedSender<Job>,
    asking: Asking,
    view: watch::Receiver<View>,
    /// The files' fingerprints, hashed again only when a file changed
    /// (shared with the owner).
    seen: Arc<Mutex<Seen>>,
    /// For the daemon's writer, the daemon's lock on the directory: while
    /// it is held no other process writes this table.
    sole: Option<Guard>,
}

impl Writer {
    /// The writer of `shared`'s table, and how readers reach its owner:
    /// the owner's task starts here. With `sole`, the daemon's lock on
    /// the directory, it is the table's only writer.
    pub(super) fn start(
        shared: Arc<Shared>,
        model: super::snapshot::Model,
        sole: Option<Guard>,
    ) -> (Writer, Asking) {
        let (jobs, queue) = mpsc::unbounded_channel();
        let (publish, view) = watch::channel(View::default());
        let seen = Arc::new(Mutex::new(Seen::watching()));
        let pending = Arc::new(AtomicUsize::new(0));
        let owner = Owner::new(
            shared.clone(),
            model,
            sole.is_some(),
            (seen.clone(), publish),
        );
        tokio::spawn(owner.run(queue, pending.clone()));
        let asking = Asking {
            jobs: jobs.downgrade(),
            pending,
        };
        let writer = Writer {
            shared,
            _jobs: jobs,
            asking: asking.clone(),
            view,
            seen,
            sole,
        };
        (writer, asking)
    }

    /// For the sole writer, a sync with nothing to do when the files are
    /// as its last sync left them and no rows are held: `Break` with its
    /// report, or `Continue` with the fingerprints it took (none when not
    /// the sole writer, whose owner takes them under the index lock).
    fn nothing_to_sync(&self) -> Result<ControlFlow<SyncReport, Option<Arc<Prints>>>> {
        if self.sole.is_none() || self.view.borrow().holding {
            return Ok(ControlFlow::Continue(None));
        }
        let current = steps::timed_now("sync: fingerprints", || self.fingerprints())?;
        let view = self.view.borrow();
        let same = !view.holding && view.synced.as_ref().is_some_and(|s| **s == *current);
        Ok(match same {
            true => ControlFlow::Break(checked(&current)),
            false => ControlFlow::Continue(Some(current)),
        })
    }

    /// The source files whose rows searches do not see as they are now
    /// (changed since their last sync, or never synced, and not shown
    /// ahead of the running sync's table write).
    pub fn files_behind(&self) -> Result<Vec<String>> {
        let synced = self.seen.lock().unwrap().synced(&self.shared.layout);
        let shown = self.view.borrow().shown.clone();
        let seen = |source: &Source, print: &String| {
            synced.get(source) == Some(print)
                || shown.as_ref().is_some_and(|s| s.get(source) == Some(print))
        };
        Ok(self
            .fingerprints()?
            .iter()
            .filter(|(source, print)| !seen(source, print))
            .map(|(source, _)| source.to_string())
            .collect())
    }

    /// Whether each source file is indexed as it is now, from the
    /// fingerprints this writer keeps (for a daemon's `status`: a day file
    /// is hashed again only when it changed).
    pub fn freshness(&self) -> Result<BTreeMap<Source, Freshness>> {
        let mut seen = self.seen.lock().unwrap();
        let prints = seen.fingerprints(&self.shared.layout)?;
        let synced = seen.synced(&self.shared.layout);
        Ok(fingerprints::freshness_of(&prints, &synced))
    }

    /// The archive's days, parsed, in day order, as this writer keeps them:
    /// only a day file that changed since it was last asked for is read
    /// again (what a daemon's `status` counts, instead of reading every
    /// day file).
    pub fn archive(&self) -> Result<Arc<ParsedDays>> {
        self.seen.lock().unwrap().archive(&self.shared.layout)
    }

    /// The archive's days, parsed, and what status counts of them and of
    /// the entries, as this writer keeps them ([`super::counts`]).
    pub fn tally(&self) -> Result<(Arc<ParsedDays>, super::counts::Tally)> {
        let layout = &self.shared.layout;
        let (days, key, mut kept) = self.seen.lock().unwrap().counting(layout)?;
        // Counted outside the lock: the owner's syncs and the searches'
        // no-change checks never wait for a count.
        let tally = super::counts::tally(layout, &days, key.as_deref(), &mut kept)?;
        if let Some(kept) = kept {
            self.seen.lock().unwrap().keep_counted(kept);
        }
        Ok((days, tally))
    }

    /// The source files' fingerprints now.
    pub(crate) fn fingerprints(&self) -> Result<Arc<Prints>> {
        self.seen.lock().unwrap().fingerprints(&self.shared.layout)
    }

    /// Bring the index in step with every file that changed since the last
    /// sync.
    pub async fn sync(&self) -> Result<SyncReport> {
        if let ControlFlow::Break(nothing) = self.nothing_to_sync()? {
            return Ok(nothing);
        }
        self.asked_sync(false).await?.await.map_err(|_| stopped())?
    }

    /// Ask the owner for a sync asked for now (`hold`: its rows may be
    /// held back from the table, [`super::held`]).
    async fn asked_sync(&self, hold: bool) -> Result<oneshot::Receiver<Result<SyncReport>>> {
        let (done, answer) = oneshot::channel();
        let asked = Instant::now();
        self.asking.send(Job::Sync { hold, asked, done })?;
        Ok(answer)
    }

    /// [`Writer::sync`] for a search: done as soon as a search finds the
    /// rows of the files as they are now, which a running sync of these
    /// files shows ahead of its commit to the table (LanceDB's add is most
    /// of an append's way to searchable: `memd bench search-path`). The
    /// table itself may not hold them yet; a caller that reads the table
    /// waits for [`Writer::sync`].
    ///
    /// Answering then is as if the search came just after that sync: the
    /// sync holds the index's lock, so no write of another process comes
    /// in between, and the rows shown are those its commit makes.
    pub async fn sync_to_read(&self) -> Result<SyncReport> {
        self.sync_until_shown(false).await
    }

    /// [`Writer::sync_to_read`] whose rows may be held back from the table
    /// ([`super::held`]; `remember`): its table write goes on after the
    /// caller is answered, with the rows of later syncs. A failure there
    /// is a warning the owner logs: the rows shown are taken back, and the
    /// next sync does the work.
    pub async fn sync_shown(&self) -> Result<SyncReport> {
        self.sync_until_shown(true).await
    }

    async fn sync_until_shown(&self, hold: bool) -> Result<SyncReport> {
        let current = match self.nothing_to_sync()? {
            ControlFlow::Break(nothing) => return Ok(nothing),
            ControlFlow::Continue(Some(current)) => current,
            ControlFlow::Continue(None) => self.fingerprints()?,
        };
        if !hold && self.shows(&current) {
            return Ok(checked(&current));
        }
        let answer = self.asked_sync(hold).await?;
        tokio::select! {
            ended = answer => ended.map_err(|_| stopped())?,
            shown = self.shown_as(&current) => Ok(shown),
        }
    }

    /// Whether searches are shown the rows of the files at `current`.
    fn shows(&self, current: &Prints) -> bool {
        (self.view.borrow().shown.as_ref()).is_some_and(|s| **s == *current)
    }

    /// Once searches are shown the rows of the files at `current`: a
    /// sync's report with nothing left to do.
    async fn shown_as(&self, current: &Arc<Prints>) -> SyncReport {
        let mut view = self.view.clone();
        let now = |v: &View| v.shown.as_ref().is_some_and(|p| **p == **current);
        if view.wait_for(now).await.is_err() {
            // The owner is gone: the sync's own answer says so.
            std::future::pending::<()>().await;
        }
        checked(current)
    }

    /// Wait for the jobs asked for so far to end, and commit the rows
    /// held (a process about to exit lets the table write that
    /// [`Writer::sync_shown`] left running land, so that the next process
    /// need not redo it). A failure is a warning: the files are what
    /// counts, and the next sync redoes the write.
    pub async fn idle(&self) {
        if self.asking.ask(Job::Idle).await.is_err() {
            tracing::warn!("index not updated yet: its writer has stopped");
        }
    }

    /// Empty the table and forget every file's fingerprint, so the next sync
    /// rebuilds everything (`reindex --clear` while the daemon holds the
    /// table open; the embedding cache keeps it cheap).
    pub(crate) async fn reset(&self) -> Result<()> {
        self.asking.ask(Job::Reset).await?
    }

    /// Take what the files no longer hold out of the index for good (an
    /// erasure's last step, [`crate::erase`]): a sync, then the deleted
    /// rows' bytes and every old version of the table (and the words file,
    /// [`super::words`]), then the embedding cache down to the texts of
    /// the rows left.
    pub async fn purge(&self) -> Result<()> {
        self.sync().await?;
        self.asking.ask(Job::Purge).await??;
        let texts = self.shared.table.strings(["text"], None).await?;
        let texts: Vec<String> = texts.into_iter().map(|[t]| t).collect();
        self.shared.embedder.retain(&texts).await
    }

    /// Compact now, whatever the fragments (tests and benchmarks).
    pub async fn compact(&self) -> Result<()> {
        self.asking.ask(Job::Compact).await?
    }

    /// Compact once [`super::table::COMPACT_SMALL_FRAGMENTS`] have piled
    /// up, or [`super::table::COMPACT_IDLE_SMALL_FRAGMENTS`] with no rows
    /// added for [`super::table::COMPACT_IDLE`] (the daemon checks this in
    /// the background); returns whether it compacted.
    pub async fn compact_if_needed(&self) -> Result<bool> {
        self.asking.ask(Job::CompactIfNeeded).await?
    }

    /// The baseline memd is benchmarked against: re-embed every row of a
    /// source file without the cache, delete all its rows, add them all
    /// back. Returns how many texts were embedded. Not used by memd itself.
    #[cfg(feature = "lab")]
    pub(crate) async fn rewrite_source_uncached(&self, source: &Source) -> Result<usize> {
        use super::{rows, table};
        let layout = &self.shared.layout;
        let rows = rows::desired(layout)?.remove(source).unwrap_or_default();
        let texts: Vec<String> = rows.iter().map(|r| r.text.clone()).collect();
        let vectors = self.shared.embedder.inner().embed(&texts).await?;
        let rows = rows::with_hashes(rows);
        let batch = self.shared.table.batch(&rows, vectors)?;
        let filter = format!("source = {}", table::sql_str(&source.rel()));
        self.shared.table.inner.delete(filter.as_str()).await?;
        self.shared.table.inner.add(batch).execute().await?;
        Ok(texts.len())
    }
}

/// The report of a sync with nothing to do, of the files at `current`.
fn checked(current: &Prints) -> SyncReport {
    SyncReport {
        files_checked: current.len(),
        ..SyncReport::default()
    }
}

/// Delete `.memd/index` entirely, under the index lock (`reindex --clear`
/// without a daemon; the embedding cache is kept).
pub(super) async fn clear(layout: &Layout) -> Result<()> {
    let _all = super::table::write_lock(layout).await?;
    super::table::remove(layout).await
}
