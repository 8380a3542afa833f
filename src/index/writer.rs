//! The index's one writer in a process: it brings the table in step with
//! the files ([`Writer::sync`]) and keeps the table compact.
//!
//! Sync is per source file and by content hash: rows whose (id, hash) is
//! new are embedded first (so an embedding failure leaves the old rows in
//! place), then the stale rows are deleted in one batch, then the new rows
//! are added. Running a sync twice changes nothing the second time. The
//! sources it writes are marked (`.memd/index/syncing.json`) before the
//! table changes and the mark is lifted with the new fingerprints: a sync
//! stopped in between (SIGKILL at the failpoint `index-written`) is redone
//! for those sources, and `memd check` meanwhile sees them as not synced. A file
//! whose fingerprint has not changed since the last sync is not read at
//! all.
//!
//! Every write takes `.memd/index.lock` (other processes may write the same
//! table) and then the table's latest version. The daemon's writer is the
//! sole writer of its table: it is made with the daemon's lock on the
//! directory ([`Writer::sole`]), which no CLI command writes past, so a
//! sync that finds the files as it last synced them returns at once.
//!
//! Between its embedding and its table write, a sync shows its rows to
//! this process's searches ([`Writer::sync_to_read`],
//! [`super::terms::Terms::ahead`]). That state is in memory only: a crash
//! there (SIGKILL at the failpoint `index-shown`) leaves the table and the
//! marks as a crash before the write does, and a write that fails takes
//! the rows back, to be loaded from the table.
//!
//! A sync asked for by `remember` may also hold its rows back from the
//! table, shown to searches, and commit them later with others in one
//! add ([`super::held`]).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::ops::ControlFlow;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use arrow_array::RecordBatch;

use super::fingerprints::{self, Prints, Seen};
use super::held::{self, Held};
use super::row_hashes::{RowHashes, Stale};
use super::rows::{self, Hashed};
use super::search::Hit;
use super::table;
use super::{Shared, SyncReport};
use crate::error::Result;
use crate::ids::FactId;
use crate::layout::Source;

/// What a sync writes: batches to add, ids to delete per source, and the
/// rows added (each with its hash).
struct Changes<'a> {
    batches: Vec<RecordBatch>,
    stale: BTreeMap<&'a str, Vec<String>>,
    added: Vec<Hashed>,
    /// The vectors of `added`, in its order.
    vectors: Vec<Vec<f32>>,
}

pub struct Writer {
    shared: Arc<Shared>,
    /// For the daemon's writer, the daemon's lock on the directory: while
    /// it is held no other process writes this table.
    sole: Option<crate::lock::Guard>,
    /// When the last sync started: a sync asked for before then has
    /// nothing left to do once that one finishes (every file change that
    /// preceded the request preceded its start too). Under load, the
    /// searches waiting behind one sync share it instead of queueing a
    /// sync each.
    last_sync_start: Mutex<Option<Instant>>,
    /// When a sync last added rows (for [`Writer::compact_if_needed`]).
    last_added: Mutex<Option<Instant>>,
    /// The table version of this writer's last prune, or of its first
    /// write ([`Writer::prune_if_due`]).
    pruned_at: Mutex<Option<u64>>,
    /// The entries' sources as last read, with the entries file's
    /// fingerprint: every sync of a day file needs them (a fact in one is
    /// not pending, [`crate::pending`]); a daemon reads them once per
    /// change of the file.
    sources: Mutex<Option<(String, Arc<HashSet<FactId>>)>>,
    /// The rows' (id, hash) per source, as this handle last read or wrote
    /// them ([`super::row_hashes`]).
    known: Mutex<RowHashes>,
    /// The files' fingerprints, hashed again only when a file changed.
    seen: Mutex<Seen>,
    /// The day files as last read, parsed again only where they grew.
    days: Mutex<rows::DayRows>,
    /// The fingerprints this writer's last sync brought the table to.
    synced: Mutex<Option<Arc<Prints>>>,
    /// The fingerprints of the files whose rows the running sync shows to
    /// searches ahead of its commit ([`super::terms::Terms::ahead`]), while
    /// it runs: a search of files as they are then need not wait for the
    /// table ([`Writer::sync_to_read`]).
    shown: tokio::sync::watch::Sender<Option<Arc<Prints>>>,
    /// Rows shown to searches and held back from the table ([`super::held`]).
    held: Mutex<Option<Held>>,
    /// The number of the last group of held rows.
    groups: std::sync::atomic::AtomicU64,
}

/// While a sync runs: what it shows ahead of its commit. Dropped (the sync
/// ended, failed, or its future was dropped), it shows nothing more, and
/// rows shown but not committed are taken back.
struct Showing<'a>(&'a Writer);

impl Drop for Showing<'_> {
    fn drop(&mut self) {
        self.0.take_back();
    }
}

impl Showing<'_> {
    /// The rows shown stay shown, held ([`super::held`]).
    fn keep(self) {
        std::mem::forget(self);
    }
}

impl Writer {
    /// A writer among others: every sync reads what the files and the
    /// table are now.
    pub(super) fn new(shared: Arc<Shared>) -> Writer {
        Writer::with_lock(shared, None)
    }

    /// The sole writer of the table, holding `served`, the daemon's lock
    /// on the directory.
    pub(super) fn sole(shared: Arc<Shared>, served: crate::lock::Guard) -> Writer {
        Writer::with_lock(shared, Some(served))
    }

    fn with_lock(shared: Arc<Shared>, sole: Option<crate::lock::Guard>) -> Writer {
        Writer {
            shared,
            sole,
            last_sync_start: Mutex::new(None),
            last_added: Mutex::new(None),
            pruned_at: Mutex::new(None),
            sources: Mutex::new(None),
            known: Mutex::new(RowHashes::default()),
            seen: Mutex::new(Seen::watching()),
            days: Mutex::new(rows::DayRows::default()),
            synced: Mutex::new(None),
            shown: tokio::sync::watch::Sender::new(None),
            held: Mutex::new(None),
            groups: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// Take back every row shown and not committed (held ones included),
    /// to be loaded from the table.
    fn take_back(&self) {
        self.shared.terms.lock().unwrap().behind();
        self.shown.send_replace(None);
        self.held.lock().unwrap().take();
    }

    /// Whether searches are shown the rows of the files at `current`.
    fn shows(&self, current: &Prints) -> bool {
        self.shown
            .borrow()
            .as_ref()
            .is_some_and(|s| **s == *current)
    }

    /// For the sole writer, a sync with nothing to do when the files are
    /// as its last sync left them (no lock taken): `Break` with its report,
    /// or `Continue` with the fingerprints it took (none when not the sole
    /// writer, which takes them under the lock).
    fn nothing_to_sync(&self) -> Result<ControlFlow<SyncReport, Option<Arc<Prints>>>> {
        if self.sole.is_none() || self.held.lock().unwrap().is_some() {
            return Ok(ControlFlow::Continue(None));
        }
        let current = crate::steps::timed_now("sync: fingerprints", || self.fingerprints())?;
        let mut synced = self.synced.lock().unwrap();
        let same = synced
            .as_ref()
            .is_some_and(|s| Arc::ptr_eq(s, &current) || **s == *current);
        if !same {
            return Ok(ControlFlow::Continue(Some(current)));
        }
        // The next comparison is of two pointers.
        *synced = Some(current.clone());
        Ok(ControlFlow::Break(SyncReport {
            files_checked: current.len(),
            ..SyncReport::default()
        }))
    }

    /// The source files whose rows searches do not see as they are now
    /// (changed since their last sync, or never synced, and not shown
    /// ahead of the running sync's table write).
    pub fn files_behind(&self) -> Result<Vec<String>> {
        let synced = fingerprints::synced(&self.shared.layout);
        let shown = self.shown.borrow().clone();
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

    /// The source files' fingerprints now.
    fn fingerprints(&self) -> Result<Arc<Prints>> {
        self.seen.lock().unwrap().fingerprints(&self.shared.layout)
    }

    /// Bring the index in step with every file that changed since the last
    /// sync.
    pub async fn sync(&self) -> Result<SyncReport> {
        self.sync_as(false).await
    }

    /// [`Writer::sync`], whose rows may be held back from the table if
    /// they are shown to searches ([`super::held`]; `remember`): the rows
    /// held before are committed later, by the task [`super::Index::sync_shown`]
    /// starts.
    pub async fn sync_held(&self) -> Result<SyncReport> {
        self.sync_as(true).await
    }

    async fn sync_as(&self, hold: bool) -> Result<SyncReport> {
        if let ControlFlow::Break(nothing) = self.nothing_to_sync()? {
            return Ok(nothing);
        }
        let asked = Instant::now();
        let one = self.shared.moving.lock().await;
        self.sync_holding(one, asked, hold).await
    }

    /// [`Writer::sync`] for a search: done as soon as a search finds the
    /// rows of the files as they are now, which a running sync of these
    /// files shows ahead of its commit to the table (LanceDB's one-row add
    /// was 2.5 to 6 ms of an append → searchable of 23 ms at 10,000 facts:
    /// `memd bench search-path`). The table itself may not hold them yet;
    /// a caller that reads the table waits for [`Writer::sync`].
    ///
    /// Answering then is as if the search came just after that sync: the
    /// sync holds the index's lock, so no write of another process comes
    /// in between, and the rows shown are those its commit makes.
    pub async fn sync_to_read(&self) -> Result<SyncReport> {
        let current = match self.nothing_to_sync()? {
            ControlFlow::Break(nothing) => return Ok(nothing),
            ControlFlow::Continue(Some(current)) => current,
            ControlFlow::Continue(None) => self.fingerprints()?,
        };
        if self.shows(&current) {
            return Ok(SyncReport {
                files_checked: current.len(),
                ..SyncReport::default()
            });
        }
        let asked = Instant::now();
        let one = tokio::select! {
            biased;
            one = self.shared.moving.lock() => one,
            shown = self.shown_as(&current) => return Ok(shown),
        };
        self.sync_holding(one, asked, false).await
    }

    /// Once a sync shows searches the rows of the files at `current`
    /// ([`Writer::show_ahead`]): a sync's report with nothing left to do.
    async fn shown_as(&self, current: &Arc<Prints>) -> SyncReport {
        let mut shown = self.shown.subscribe();
        let now = |s: &Option<Arc<Prints>>| s.as_ref().is_some_and(|p| **p == **current);
        // The sender lives as long as this writer: waiting cannot fail.
        let _ = shown.wait_for(now).await;
        SyncReport {
            files_checked: current.len(),
            ..SyncReport::default()
        }
    }

    /// [`Writer::sync_to_read`] for a caller that leaves the sync to
    /// `running`, a [`Writer::sync`] of this writer on a task of its own
    /// started after the files changed ([`super::Index::sync_shown`]):
    /// done as soon as `running` shows the rows of the files as they are
    /// now, or ends. The table write then goes on after the caller is
    /// answered: `remember` through `memd mcp` waited for LanceDB's one-row
    /// add, and now answers in 7.3 ms against 10.3 (p50 at 1,000 facts, an
    /// agent's pace of 50 ms between cycles; BENCHMARKS.md, issue 28).
    pub async fn shown_by(
        &self,
        running: tokio::task::JoinHandle<Result<SyncReport>>,
    ) -> Result<SyncReport> {
        let current = self.fingerprints()?;
        tokio::select! {
            ended = running => ended?,
            shown = self.shown_as(&current) => Ok(shown),
        }
    }

    /// Wait for the sync running now, if any, to end, and commit the rows
    /// held (a process about to exit lets the table write that
    /// [`Writer::shown_by`] left running land, so that the next process
    /// need not redo it). A failure is a warning: the files are what
    /// counts, and the next sync redoes the write.
    pub async fn idle(&self) {
        let _one = self.shared.moving.lock().await;
        if self.held.lock().unwrap().is_some()
            && let Err(e) = self.commit_now().await
        {
            tracing::warn!("index not updated yet: {e:#}");
        }
    }

    /// The group of rows held now, if no task waits to commit it yet: the
    /// caller is that task ([`super::Index::sync_shown`]).
    pub(super) fn watch_held(&self) -> Option<u64> {
        match self.held.lock().unwrap().as_mut() {
            Some(h) if !h.watched => {
                h.watched = true;
                Some(h.group)
            }
            _ => None,
        }
    }

    /// When `group` is due to be committed ([`Held::due`]), while held.
    pub(super) fn held_due(&self, group: u64) -> Option<Instant> {
        match self.held.lock().unwrap().as_ref() {
            Some(h) if h.group == group => Some(h.due()),
            _ => None,
        }
    }

    /// Commit `group` if it is held and due; false when it is not due yet.
    /// A failure is a warning, as for [`Writer::idle`].
    pub(super) async fn commit_if_due(&self, group: u64) -> bool {
        let _one = self.shared.moving.lock().await;
        match self.held_due(group) {
            None => return true,
            Some(at) if at > Instant::now() => return false,
            Some(_) => {}
        }
        if let Err(e) = self.commit_now().await {
            tracing::warn!("index not updated yet: {e:#}");
        }
        true
    }

    /// Commit the rows held, under the index lock, holding `moving`.
    async fn commit_now(&self) -> Result<()> {
        let _all = self.writing().await?;
        self.commit_held_at_latest().await?;
        Ok(())
    }

    /// With the index lock, at the table's latest version: commit the rows
    /// held ([`Writer::keep_held_if_latest`]). Returns whether it
    /// committed any.
    async fn commit_held_at_latest(&self) -> Result<bool> {
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
    async fn keep_held_if_latest(&self) -> Result<()> {
        let before = match self.held.lock().unwrap().as_ref() {
            Some(h) => h.before,
            None => return Ok(()),
        };
        let served = match self.sole {
            Some(_) => {
                self.shared.table.inner.checkout_latest().await?;
                false
            }
            None => crate::lock::is_held(&self.shared.layout.daemon_lock()),
        };
        if served || self.shared.table.version().await? != before {
            self.take_back();
        }
        Ok(())
    }

    /// Commit the rows held in one add (holding `moving` and the index
    /// lock, the table at the version they build on), then record their
    /// fingerprints. A failure takes them back.
    async fn commit_held(&self) -> Result<bool> {
        let Some(held) = self.held.lock().unwrap().take() else {
            return Ok(false);
        };
        let back = Showing(self);
        let table = &self.shared.table.inner;
        let added = table.add(held.batches).execute();
        crate::steps::timed("sync: table add", added).await?;
        *self.last_added.lock().unwrap() = Some(Instant::now());
        let after = table.version().await?;
        let before = held.before;
        self.shared
            .terms
            .lock()
            .unwrap()
            .wrote(before, after, [], []);
        self.known.lock().unwrap().same_rows(before, after);
        self.days.lock().unwrap().same_rows(before, after);
        self.written(held.prints, (held.rows, 0)).await?;
        drop(back);
        Ok(true)
    }

    /// After a table write that added and deleted these many rows: keep
    /// the table fast, drop old versions, and record `prints`, the
    /// fingerprints the table now holds (lifting the sync's marks).
    async fn written(&self, prints: Arc<Prints>, (added, deleted): (usize, usize)) -> Result<()> {
        crate::pause::at(&self.shared.layout, crate::pause::Step::IndexWritten);
        if added > 0 {
            crate::steps::timed("sync: table indices", self.maintain_indices()).await?;
        }
        if added > 0 || deleted > 0 {
            self.prune_if_due().await;
        }
        crate::steps::timed_now("sync: marks", || {
            fingerprints::save_synced(&self.shared.layout, &prints)
        })?;
        *self.synced.lock().unwrap() = Some(prints);
        Ok(())
    }

    /// [`Writer::sync`] holding `one` (the index's `moving` lock), asked
    /// for at `asked`; `hold`: its rows may be held ([`super::held`]).
    /// Boxed, of a type named only by its output: the future of a sync is
    /// deep, and the daemon's, which holds it, overflowed the compiler's
    /// limit of trait checks.
    fn sync_holding<'a>(
        &'a self,
        one: tokio::sync::MutexGuard<'a, ()>,
        asked: Instant,
        hold: bool,
    ) -> futures::future::BoxFuture<'a, Result<SyncReport>> {
        Box::pin(self.sync_unboxed(one, asked, hold))
    }

    async fn sync_unboxed(
        &self,
        _one: tokio::sync::MutexGuard<'_, ()>,
        asked: Instant,
        hold: bool,
    ) -> Result<SyncReport> {
        // A sync that ran while this one waited (one a write started) may
        // have left nothing to do.
        if let ControlFlow::Break(nothing) = self.nothing_to_sync()? {
            return Ok(nothing);
        }
        let _all = crate::steps::timed("sync: lock", self.writing()).await?;
        match hold {
            true => self.keep_held_if_latest().await?,
            false => _ = self.commit_held_at_latest().await?,
        }
        {
            let mut last = self.last_sync_start.lock().unwrap();
            if last.is_some_and(|t| t >= asked) {
                return Ok(SyncReport::default());
            }
            *last = Some(Instant::now());
        }
        let mut report = SyncReport::default();
        let (prints, was_marked) = match self.held.lock().unwrap().as_ref() {
            Some(h) => (h.prints.clone(), h.marked.clone()),
            None => (
                Arc::new(fingerprints::synced(&self.shared.layout)),
                Vec::new(),
            ),
        };
        let current = self.fingerprints()?;
        report.files_checked = current.len();
        let changed: Vec<&Source> = current
            .iter()
            .filter(|(s, f)| prints.get(*s) != Some(f))
            .map(|(s, _)| s)
            .collect();
        let gone: Vec<Source> = prints
            .keys()
            .filter(|s| !current.contains_key(*s))
            .cloned()
            .collect();
        if changed.is_empty() && gone.is_empty() {
            if self.held.lock().unwrap().is_none() {
                *self.synced.lock().unwrap() = Some(current);
            }
            return Ok(report);
        }
        let marked = self.mark(was_marked, changed.iter().copied().chain(&gone))?;
        let showing = Showing(self);
        let holding = hold.then_some(marked.as_slice());
        let written = self.write_changes((&changed, &gone), &current, holding, &mut report);
        if !written.await? {
            showing.keep();
            return Ok(report);
        }
        // Written, the table holds the files as they are now.
        let rows = (report.rows_added, report.rows_deleted);
        self.written(current, rows).await?;
        drop(showing);
        Ok(report)
    }

    /// Mark `sources` as syncing, beside those the rows held marked
    /// (`was_marked`): all the sources marked.
    fn mark<'a>(
        &self,
        was_marked: Vec<Source>,
        sources: impl Iterator<Item = &'a Source>,
    ) -> Result<Vec<Source>> {
        let mut marked = was_marked.clone();
        for source in sources {
            if !marked.contains(source) {
                marked.push(source.clone());
            }
        }
        if marked != was_marked {
            crate::steps::timed_now("sync: marks", || {
                fingerprints::begin_sync(&self.shared.layout, marked.iter())
            })?;
        }
        Ok(marked)
    }

    /// Write the rows of the `changed` and `gone` sources: one delete and
    /// one add for the whole sync. With `holding` (the sources marked as
    /// syncing, those of the rows held before among them), rows only added
    /// are held instead when they can be ([`Writer::hold`]): false then.
    async fn write_changes(
        &self,
        (changed, gone): (&[&Source], &[Source]),
        current: &Arc<Prints>,
        holding: Option<&[Source]>,
        report: &mut SyncReport,
    ) -> Result<bool> {
        let wanted: HashSet<&Source> = changed.iter().copied().collect();
        let before = self.shared.table.version().await?;
        let shared = current
            .values()
            .next()
            .map(|p| fingerprints::shared_part(p));
        let (desired, tails) = crate::steps::timed_now("sync: rows of the files", || {
            let sources = self.sources(&wanted, current.get(&Source::Entries))?;
            let mut days = self.days.lock().unwrap();
            days.starting(shared.unwrap_or_default(), before);
            rows::desired_since(
                &self.shared.layout,
                Some(&wanted),
                &sources,
                Some(&mut days),
            )
        })?;
        let names: Vec<String> = changed
            .iter()
            .copied()
            .chain(gone)
            .map(|s| s.rel().into_owned())
            .collect();
        crate::steps::timed("sync: rows in the table", self.read_rows(&names)).await?;
        let embedded = self.embed_changes(&names, (desired, &tails), report);
        let Changes {
            mut batches,
            stale,
            added,
            vectors,
        } = crate::steps::timed("sync: embedding", embedded).await?;
        report.files_synced = changed.len();
        report.rows_deleted = stale.values().map(Vec::len).sum();
        let days: Vec<&str> = changed
            .iter()
            .filter_map(|s| match s {
                Source::Day(day) => Some(day.as_str()),
                _ => None,
            })
            .collect();
        if let Some(marked) = holding
            && stale.is_empty()
            && self.hold(
                before,
                (&added, &vectors),
                &mut batches,
                &days,
                (current, marked),
            )
        {
            crate::pause::at(&self.shared.layout, crate::pause::Step::IndexShown);
            return Ok(false);
        }
        let sources = changed.iter().copied().chain(gone);
        let before = self.commit_held_first(sources, before).await?;
        let table = &self.shared.table.inner;
        self.show_ahead(before, &stale, &added, &vectors, current);
        crate::pause::at(&self.shared.layout, crate::pause::Step::IndexShown);
        if !stale.is_empty() {
            let filter = table::rows_filter(&stale);
            crate::steps::timed("sync: table delete", table.delete(&filter)).await?;
        }
        if !batches.is_empty() {
            let added = table.add(batches).execute();
            crate::steps::timed("sync: table add", added).await?;
            *self.last_added.lock().unwrap() = Some(Instant::now());
        }
        let after = table.version().await?;
        if !stale.is_empty() || !added.is_empty() {
            let wrote = || self.wrote((before, after), &stale, added, &vectors);
            crate::steps::timed_now("sync: words and hashes", wrote);
        }
        self.days.lock().unwrap().synced(&days, before, after);
        Ok(true)
    }

    /// Before a sync that does not hold its rows writes the table: commit
    /// the rows held, if any. Returns the version the sync then starts
    /// from (`before` when none were held). The commit lifted the marks of
    /// the sync's `sources` too, so they are marked again.
    async fn commit_held_first(
        &self,
        sources: impl Iterator<Item = &Source>,
        before: u64,
    ) -> Result<u64> {
        if !self.commit_held().await? {
            return Ok(before);
        }
        fingerprints::begin_sync(&self.shared.layout, sources)?;
        self.shared.table.version().await
    }

    /// Hold a sync's `added` rows (from version `before`) back from the
    /// table, shown to searches ([`super::held`]) as the rows of the files
    /// at `prints` (`marked`: the sources marked as syncing), and take its
    /// `batches`; false when they cannot be (the group is full or builds
    /// on another version, or the words cannot show them).
    fn hold(
        &self,
        before: u64,
        (added, vectors): (&[Hashed], &[Vec<f32>]),
        batches: &mut Vec<RecordBatch>,
        days: &[&str],
        (prints, marked): (&Arc<Prints>, &[Source]),
    ) -> bool {
        let fits = self
            .held
            .lock()
            .unwrap()
            .as_ref()
            .map_or(added.len() <= held::MAX_ROWS, |h| {
                h.before == before && h.room_for(added.len())
            });
        if added.is_empty() || !fits {
            return false;
        }
        let no_rows: [(&str, &str); 0] = [];
        let mut terms = self.shared.terms.lock().unwrap();
        if !terms.ahead(before, no_rows, hits(added, vectors)) {
            return false;
        }
        drop(terms);
        self.shown.send_replace(Some(prints.clone()));
        let rows = added.iter().map(|row| {
            let source = row.0.source.rel().into_owned();
            (source, row.0.id.to_string(), row.1.clone())
        });
        self.known.lock().unwrap().wrote(before, no_rows, rows);
        self.days.lock().unwrap().synced(days, before, before);
        let now = Instant::now();
        let mut held = self.held.lock().unwrap();
        let group = held.get_or_insert_with(|| Held {
            group: self
                .groups
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
                + 1,
            before,
            batches: Vec::new(),
            rows: 0,
            prints: prints.clone(),
            marked: Vec::new(),
            first: now,
            last: now,
            watched: false,
        });
        group.batches.append(batches);
        group.rows += added.len();
        group.prints = prints.clone();
        group.marked = marked.to_vec();
        group.last = now;
        true
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
        (mut desired, tails): (rows::RowsBySource, &rows::Tails),
        report: &mut SyncReport,
    ) -> Result<Changes<'a>> {
        let mut stale: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        let mut new: Vec<Hashed> = Vec::new();
        {
            let known = self.known.lock().unwrap();
            for source in sources {
                let parsed = Source::parse(source);
                let rows = parsed
                    .as_ref()
                    .and_then(|s| desired.remove(s))
                    .unwrap_or_default();
                let among = match parsed {
                    Some(s) if tails.contains_key(&s) => Stale::Among(&tails[&s]),
                    s => Stale::Held {
                        unique: matches!(s, Some(Source::Day(_))),
                    },
                };
                let (gone, added) = known.diff(source, rows, among);
                if !gone.is_empty() {
                    stale.insert(source, gone);
                }
                new.extend(added);
            }
        }
        let mut batches: Vec<RecordBatch> = Vec::new();
        let mut vectors = Vec::new();
        if !new.is_empty() {
            let texts: Vec<String> = new.iter().map(|row| row.0.text.clone()).collect();
            vectors = self.shared.embedder.embed(&texts).await?;
            report.rows_added += new.len();
            batches.push(self.shared.table.batch(&new, vectors.clone())?);
        }
        Ok(Changes {
            batches,
            stale,
            added: new,
            vectors,
        })
    }

    /// Tell [`RowHashes`] and the words what a sync changed: the table went
    /// from `before` to `after`, `stale` rows deleted and `added` ones
    /// there.
    fn wrote(
        &self,
        (before, after): (u64, u64),
        stale: &BTreeMap<&str, Vec<String>>,
        added: Vec<Hashed>,
        vectors: &[Vec<f32>],
    ) {
        let hits = hits(&added, vectors);
        self.shared
            .terms
            .lock()
            .unwrap()
            .wrote(before, after, deleted(stale), hits);
        let added = added.into_iter().map(|row| {
            (
                row.0.source.rel().into_owned(),
                row.0.id.to_string(),
                row.1.clone(),
            )
        });
        self.known
            .lock()
            .unwrap()
            .wrote(after, deleted(stale), added);
    }

    /// Show a sync's changes to searches before the table commits them
    /// (from version `before`), when the words can
    /// ([`super::terms::Terms::ahead`]), and say they are the rows of the
    /// files at `current`.
    fn show_ahead(
        &self,
        before: u64,
        stale: &BTreeMap<&str, Vec<String>>,
        added: &[Hashed],
        vectors: &[Vec<f32>],
        current: &Arc<Prints>,
    ) {
        if stale.is_empty() && added.is_empty() {
            return;
        }
        let hits = hits(added, vectors);
        let mut terms = self.shared.terms.lock().unwrap();
        if terms.ahead(before, deleted(stale), hits) {
            self.shown.send_replace(Some(current.clone()));
        }
    }

    /// What every write of the index starts with: the lock across
    /// processes, then the table's latest version. A handle keeps the
    /// version it was opened at, so without the second step a process that
    /// opened the table before another one's sync read rows that were no
    /// longer all the rows, and added the missing ones again.
    ///
    /// The sole writer ([`Writer::sole`]) skips the second step: its handle
    /// made every version since it opened, so its version is the latest
    /// (at 10k rows reading it was 2.9 ms of the 28 ms an append's sync
    /// took: `memd bench search-path --sizes 10000 --per-day 20000`).
    async fn writing(&self) -> Result<crate::lock::Guard> {
        let guard = table::write_lock(&self.shared.layout).await?;
        if self.sole.is_none() {
            let latest = self.shared.table.inner.checkout_latest();
            crate::steps::timed("sync: latest version", latest).await?;
        }
        Ok(guard)
    }

    /// The entries' sources, which decide which facts are rows: read only
    /// when a day file is among the `wanted` sources, and from the cache
    /// when the entries file's fingerprint is the one cached.
    fn sources(
        &self,
        wanted: &HashSet<&Source>,
        fingerprint: Option<&String>,
    ) -> Result<Arc<HashSet<FactId>>> {
        if !wanted.iter().any(|s| matches!(s, Source::Day(_))) {
            return Ok(Arc::default());
        }
        let mut cache = self.sources.lock().unwrap();
        if let (Some(want), Some((have, sources))) = (fingerprint, cache.as_ref())
            && want == have
        {
            return Ok(sources.clone());
        }
        let path = self.shared.layout.entries_file();
        let sources = Arc::new(crate::entries::sources(&path)?);
        if let Some(f) = fingerprint {
            *cache = Some((f.clone(), sources.clone()));
        }
        Ok(sources)
    }

    /// Make [`RowHashes`] hold the (id, hash) of the rows of `sources` at
    /// the table's version: read from the table those it does not hold.
    async fn read_rows(&self, sources: &[String]) -> Result<()> {
        let version = self.shared.table.version().await?;
        let missing: Vec<String> = {
            let mut known = self.known.lock().unwrap();
            known.at(version);
            known.missing(sources).into_iter().cloned().collect()
        };
        if !missing.is_empty() {
            let list = missing
                .iter()
                .map(|s| table::sql_str(s))
                .collect::<Vec<_>>()
                .join(", ");
            let filter = format!("source IN ({list})");
            let mut read: HashMap<String, HashMap<String, String>> =
                missing.into_iter().map(|s| (s, HashMap::new())).collect();
            let columns = ["source", "id", "hash"];
            for [source, id, hash] in self.shared.table.strings(columns, Some(&filter)).await? {
                read.entry(source).or_default().insert(id, hash);
            }
            let mut known = self.known.lock().unwrap();
            for (source, rows) in read {
                known.insert(source, rows);
            }
        }
        Ok(())
    }

    /// Run `op`, which rewrites the table without changing its rows, and
    /// tell [`RowHashes`] and the words so.
    async fn keeping_rows(&self, op: impl std::future::Future<Output = Result<()>>) -> Result<()> {
        let before = self.shared.table.version().await?;
        op.await?;
        let after = self.shared.table.version().await?;
        self.known.lock().unwrap().same_rows(before, after);
        self.shared.terms.lock().unwrap().same_rows(before, after);
        self.days.lock().unwrap().same_rows(before, after);
        Ok(())
    }

    /// Drop old table versions once this writer has made
    /// [`table::PRUNE_EVERY_VERSIONS`] since its last prune (or its first
    /// write: a one-shot command does not prune). A failure is a warning:
    /// the versions are only kept longer.
    async fn prune_if_due(&self) {
        let Ok(now) = self.shared.table.version().await else {
            return;
        };
        {
            let mut pruned_at = self.pruned_at.lock().unwrap();
            let last = *pruned_at.get_or_insert(now);
            if now < last + table::PRUNE_EVERY_VERSIONS {
                return;
            }
            *pruned_at = Some(now);
        }
        let pruned = self.shared.table.prune(table::versions_kept_for());
        if let Err(e) = crate::steps::timed("sync: prune", pruned).await {
            tracing::warn!("old index versions not dropped yet: {e:#}");
        }
    }

    /// Keep the table fast as it grows: a vector index (IVF_HNSW_SQ,
    /// cosine) once a flat scan gets slow, with new rows folded into it in
    /// bulk.
    async fn maintain_indices(&self) -> Result<()> {
        let table = &self.shared.table;
        let indices = table.inner.list_indices().await?;
        if let Some(text) = table::on_column(&indices, "text") {
            self.drop_text_index(&text.name).await?;
        }
        let vector = table::on_column(&indices, "vector");
        if vector.is_none() && table.inner.count_rows(None).await? >= table::VECTOR_INDEX_MIN_ROWS {
            tracing::info!("creating the vector index (IVF_HNSW_SQ)");
            return self.keeping_rows(table.create_vector_index()).await;
        }
        // Without a daemon compacting in the background (CLI use: each
        // `memd search` after an add writes one small fragment), a sync
        // compacts itself once fragments have piled up well past the
        // daemon's threshold, so searches never slow down for good.
        let small = table.fragments_under(table::COMPACT_TARGET_ROWS).await?;
        if small >= table::INLINE_COMPACT_SMALL_FRAGMENTS {
            return self.keeping_rows(table.compact()).await;
        }
        if table.fragments_under(table::TAIL_ROWS).await? >= table::TAIL_FRAGMENTS {
            self.keeping_rows(table.merge_fragments(table::TAIL_ROWS))
                .await?;
        }
        // Unindexed rows are still found by the vector search (an exact
        // scan), so new rows are folded into the vector index only once
        // enough have piled up: doing it after every small write would cost
        // more than the write itself.
        let Some(vector) = vector else {
            return Ok(());
        };
        let unindexed = match table.inner.index_stats(&vector.name).await? {
            Some(stats) => stats.num_unindexed_rows,
            None => 0,
        };
        if unindexed >= table::FOLD_UNINDEXED_ROWS {
            self.keeping_rows(table.fold(vec![vector.name.clone()]))
                .await?;
        }
        Ok(())
    }

    /// Drop the full-text index an older memd built (and its
    /// `text-index-behind` mark): memd scores the words itself now
    /// ([`super::terms`]), and each compaction would only remap it.
    async fn drop_text_index(&self, name: &str) -> Result<()> {
        tracing::info!("dropping LanceDB's full-text index (memd scores text itself)");
        let drop = async { Ok(self.shared.table.inner.drop_index(name).await?) };
        self.keeping_rows(drop).await?;
        Ok(crate::atomic::remove(
            &self.shared.layout.old_text_index_mark(),
        )?)
    }

    /// The baseline memd is benchmarked against: re-embed every row of a
    /// source file without the cache, delete all its rows, add them all
    /// back. Returns how many texts were embedded. Not used by memd itself.
    #[cfg(feature = "lab")]
    pub(crate) async fn rewrite_source_uncached(&self, source: &Source) -> Result<usize> {
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

    /// Empty the table and forget every file's fingerprint, so the next sync
    /// rebuilds everything (`reindex --clear` while the daemon holds the
    /// table open; the embedding cache keeps it cheap).
    pub(crate) async fn reset(&self) -> Result<()> {
        let _one = self.shared.moving.lock().await;
        let _all = self.writing().await?;
        self.take_back();
        *self.last_sync_start.lock().unwrap() = None;
        *self.synced.lock().unwrap() = None;
        self.shared.table.inner.delete("true").await?;
        self.known.lock().unwrap().clear();
        self.shared.terms.lock().unwrap().clear();
        fingerprints::forget_synced(&self.shared.layout)
    }

    /// Compact once [`table::COMPACT_SMALL_FRAGMENTS`] have piled up, or
    /// [`table::COMPACT_IDLE_SMALL_FRAGMENTS`] with no rows added for
    /// [`table::COMPACT_IDLE`] (the daemon checks this in the background);
    /// returns whether it compacted.
    pub async fn compact_if_needed(&self) -> Result<bool> {
        let idle = self
            .last_added
            .lock()
            .unwrap()
            .is_none_or(|t| t.elapsed() >= table::COMPACT_IDLE);
        let table = &self.shared.table;
        let small = table.fragments_under(table::COMPACT_TARGET_ROWS).await?;
        let few = small >= table::COMPACT_IDLE_SMALL_FRAGMENTS;
        if small < table::COMPACT_SMALL_FRAGMENTS && !(idle && few) {
            return Ok(false);
        }
        self.compact().await?;
        Ok(true)
    }

    /// Take what the files no longer hold out of the index for good (an
    /// erasure's last step, [`crate::erase`]): a sync, then the deleted
    /// rows' bytes and every old version of the table (and the words file,
    /// [`super::words`]), then the embedding cache down to the texts of
    /// the rows left.
    pub async fn purge(&self) -> Result<()> {
        self.sync().await?;
        {
            let _one = self.shared.moving.lock().await;
            let _all = self.writing().await?;
            self.commit_held_at_latest().await?;
            self.keeping_rows(self.shared.table.purge()).await?;
            // It holds the rows' texts as of an older version.
            match std::fs::remove_file(self.shared.layout.index_words()) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e.into()),
                _ => {}
            }
        }
        let texts = self.shared.table.strings(["text"], None).await?;
        let texts: Vec<String> = texts.into_iter().map(|[t]| t).collect();
        self.shared.embedder.retain(&texts).await
    }

    /// Compact now, whatever the fragments (tests and benchmarks).
    pub async fn compact(&self) -> Result<()> {
        let _one = self.shared.moving.lock().await;
        let _all = self.writing().await?;
        self.commit_held_at_latest().await?;
        self.keeping_rows(self.shared.table.compact()).await
    }
}

/// The (source, id) of the rows a sync deletes.
fn deleted<'a>(stale: &'a BTreeMap<&str, Vec<String>>) -> impl Iterator<Item = (&'a str, &'a str)> {
    stale
        .iter()
        .flat_map(|(source, ids)| ids.iter().map(move |id| (*source, id.as_str())))
}

/// The hits of the rows a sync adds, with their vectors.
fn hits<'a>(
    added: &'a [Hashed],
    vectors: &'a [Vec<f32>],
) -> impl Iterator<Item = (Hit, &'a [f32])> {
    added
        .iter()
        .zip(vectors)
        .map(|(row, v)| (row.0.hit(), v.as_slice()))
}

/// Delete `.memd/index` entirely, under the index lock (`reindex --clear`
/// without a daemon; the embedding cache is kept).
pub(super) async fn clear(layout: &crate::Layout) -> Result<()> {
    let _all = table::write_lock(layout).await?;
    table::remove(layout).await
}
