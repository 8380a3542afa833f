//! The owner's sync: the table brought in step with the files.
//!
//! Sync is per source file and by content hash: rows whose (id, hash) is
//! new are embedded first (so an embedding failure leaves the old rows in
//! place), then the stale rows are deleted in one batch, then the new rows
//! are added. Running a sync twice changes nothing the second time. The
//! sources it writes are marked (`.memd/index/syncing.json`) before the
//! table changes and the mark is lifted with the new fingerprints: a sync
//! stopped in between (SIGKILL at the failpoint `index-written`) is redone
//! for those sources, and `memd check` meanwhile sees them as not synced.
//! A file whose fingerprint has not changed since the last sync is not
//! read at all.
//!
//! Every write takes `.memd/index.lock` (other processes may write the
//! same table) and then the table's latest version. The daemon's owner is
//! the sole writer of its table: it is made with the daemon's lock on the
//! directory ([`super::super::Writer`]), which no CLI command writes past,
//! so a sync that finds the files as it last synced them returns at once.
//!
//! Between its embedding and its table write, a sync shows its rows to
//! this process's searches ([`super::super::snapshot::Model::ahead`]). That
//! state is in memory only: a crash there (SIGKILL at the failpoint
//! `index-shown`) leaves the table and the marks as a crash before the
//! write does, and a write that fails takes the rows back, to be loaded
//! from the table.
//!
//! A sync asked for by `remember` may also hold its rows back from the
//! table, shown to searches, and commit them later with others in one
//! add ([`super::super::held`]).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::Instant;

use arrow_array::RecordBatch;

use super::Owner;
use crate::error::Result;
use crate::ids::FactId;
use crate::index::fingerprints::{self, Prints};
use crate::index::held::{self, Held};
use crate::index::row_hashes::Stale;
use crate::index::rows::{self, Hashed};
use crate::index::search::Hit;
use crate::index::{SyncReport, table};
use crate::layout::Source;
use crate::lock::Guard;
use crate::steps::{timed, timed_now};
use crate::{entries, pause};

/// What a sync writes: batches to add, ids to delete per source, and the
/// rows added (each with its hash).
struct Changes<'a> {
    batches: Vec<RecordBatch>,
    stale: BTreeMap<&'a str, Vec<String>>,
    added: Vec<Hashed>,
    /// The vectors of `added`, in its order.
    vectors: Vec<Vec<f32>>,
}

impl Owner {
    /// For the sole writer, a sync with nothing to do when the files are
    /// as its last sync left them (no lock taken).
    fn nothing_to_sync(&mut self) -> Result<ControlFlow<SyncReport>> {
        if !self.sole || self.held.is_some() {
            return Ok(ControlFlow::Continue(()));
        }
        let current = timed_now("sync: fingerprints", || self.fingerprints())?;
        let same =
            (self.synced.as_ref()).is_some_and(|s| Arc::ptr_eq(s, &current) || **s == *current);
        if !same {
            return Ok(ControlFlow::Continue(()));
        }
        // The next comparison is of two pointers.
        self.synced = Some(current.clone());
        Ok(ControlFlow::Break(SyncReport {
            files_checked: current.len(),
            ..SyncReport::default()
        }))
    }

    /// Bring the index in step with every file that changed since the
    /// sync of the job asked for at `asked` could start; `hold`: its rows
    /// may be held ([`super::super::held`]).
    pub(super) async fn sync(&mut self, hold: bool, asked: Instant) -> Result<SyncReport> {
        // A sync that ran while this one was queued may have left nothing
        // to do.
        if let ControlFlow::Break(nothing) = self.nothing_to_sync()? {
            return Ok(nothing);
        }
        let _all = timed("sync: lock", self.writing()).await?;
        match hold {
            true => self.keep_held_if_latest().await?,
            false => _ = self.commit_held_at_latest().await?,
        }
        if self.last_sync_start.is_some_and(|t| t >= asked) {
            return Ok(SyncReport::default());
        }
        self.last_sync_start = Some(Instant::now());
        let (prints, was_marked) = match &self.held {
            Some(h) => (h.prints.clone(), h.marked.clone()),
            None => (
                self.seen.lock().unwrap().synced(&self.shared.layout),
                Vec::new(),
            ),
        };
        let current = self.fingerprints()?;
        let mut report = SyncReport {
            files_checked: current.len(),
            ..SyncReport::default()
        };
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
            if self.held.is_none() {
                self.synced = Some(current.clone());
                self.publish();
            }
            return Ok(report);
        }
        let marked = self.mark(was_marked, changed.iter().copied().chain(&gone))?;
        // From here on rows may be shown: taken back at the end, unless
        // they stay held.
        let holding = hold.then_some(marked.as_slice());
        let written = self.write_changes((&changed, &gone), &current, holding, &mut report);
        let ended = match written.await {
            Ok(false) => return Ok(report),
            // Written, the table holds the files as they are now.
            Ok(true) => {
                let rows = (report.rows_added, report.rows_deleted);
                self.written(current.clone(), rows).await
            }
            Err(e) => Err(e),
        };
        self.take_back();
        ended.map(|()| report)
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
            timed_now("sync: marks", || {
                fingerprints::begin_sync(&self.shared.layout, marked.iter())
            })?;
        }
        Ok(marked)
    }

    /// Write the rows of the `changed` and `gone` sources: one delete and
    /// one add for the whole sync. With `holding` (the sources marked as
    /// syncing, those of the rows held before among them), rows only added
    /// are held instead when they can be ([`Owner::hold`]): false then.
    async fn write_changes(
        &mut self,
        (changed, gone): (&[&Source], &[Source]),
        current: &Arc<Prints>,
        holding: Option<&[Source]>,
        report: &mut SyncReport,
    ) -> Result<bool> {
        let before = self.shared.table.version().await?;
        let desired = timed_now("sync: rows of the files", || {
            self.rows_of_files(changed, current, before)
        })?;
        let names: Vec<String> = changed
            .iter()
            .copied()
            .chain(gone)
            .map(|s| s.rel().into_owned())
            .collect();
        timed("sync: rows in the table", self.read_rows(&names)).await?;
        let embedded = self.embed_changes(&names, desired, report);
        let mut changes = timed("sync: embedding", embedded).await?;
        report.files_synced = changed.len();
        report.rows_deleted = changes.stale.values().map(Vec::len).sum();
        let days: Vec<&str> = changed
            .iter()
            .filter_map(|s| match s {
                Source::Day(day) => Some(day.as_str()),
                _ => None,
            })
            .collect();
        if let Some(marked) = holding
            && changes.stale.is_empty()
            && self.hold(before, &mut changes, &days, (current, marked))
        {
            pause::at(&self.shared.layout, pause::Step::IndexShown);
            return Ok(false);
        }
        let sources = changed.iter().copied().chain(gone);
        let before = self.commit_held_first(sources, before).await?;
        self.show_ahead(before, &changes, current);
        pause::at(&self.shared.layout, pause::Step::IndexShown);
        self.commit_changes(before, changes, &days).await?;
        Ok(true)
    }

    /// The rows the `changed` files make now (and the day files' tails
    /// read, [`rows::Tails`]), the table at `before`.
    fn rows_of_files(
        &mut self,
        changed: &[&Source],
        current: &Prints,
        before: u64,
    ) -> Result<(rows::RowsBySource, rows::Tails)> {
        let wanted: HashSet<&Source> = changed.iter().copied().collect();
        let shared = current
            .values()
            .next()
            .map(|p| fingerprints::shared_part(p));
        let sources = self.sources(&wanted, current.get(&Source::Entries))?;
        self.days.starting(shared.unwrap_or_default(), before);
        rows::desired_since(
            &self.shared.layout,
            Some(&wanted),
            &sources,
            Some(&mut self.days),
        )
    }

    /// The table write of a sync from version `before`: one delete, one
    /// add, and what they changed told to the words and row hashes.
    async fn commit_changes(
        &mut self,
        before: u64,
        changes: Changes<'_>,
        days: &[&str],
    ) -> Result<()> {
        let table = &self.shared.table.inner;
        if !changes.stale.is_empty() {
            let filter = table::rows_filter(&changes.stale);
            timed("sync: table delete", table.delete(&filter)).await?;
        }
        if !changes.batches.is_empty() {
            let added = table.add(changes.batches).execute();
            timed("sync: table add", added).await?;
            self.last_added = Some(Instant::now());
        }
        let after = table.version().await?;
        if !changes.stale.is_empty() || !changes.added.is_empty() {
            let (stale, added, vectors) = (changes.stale, changes.added, changes.vectors);
            let wrote = || self.wrote((before, after), &stale, added, &vectors);
            timed_now("sync: words and hashes", wrote);
        }
        self.days.synced(days, before, after);
        Ok(())
    }

    /// Before a sync that does not hold its rows writes the table: commit
    /// the rows held, if any. Returns the version the sync then starts
    /// from (`before` when none were held). The commit lifted the marks of
    /// the sync's `sources` too, so they are marked again.
    async fn commit_held_first(
        &mut self,
        sources: impl Iterator<Item = &Source>,
        before: u64,
    ) -> Result<u64> {
        if !self.commit_held().await? {
            return Ok(before);
        }
        fingerprints::begin_sync(&self.shared.layout, sources)?;
        self.shared.table.version().await
    }

    /// Hold a sync's added rows (from version `before`) back from the
    /// table, shown to searches ([`super::super::held`]) as the rows of
    /// the files at `prints` (`marked`: the sources marked as syncing),
    /// and take its batches; false when they cannot be (the group is full
    /// or builds on another version, or the words cannot show them).
    fn hold(
        &mut self,
        before: u64,
        changes: &mut Changes<'_>,
        days: &[&str],
        (prints, marked): (&Arc<Prints>, &[Source]),
    ) -> bool {
        let added = &changes.added;
        let fits = (self.held.as_ref()).map_or(added.len() <= held::MAX_ROWS, |h| {
            h.before == before && h.room_for(added.len())
        });
        if added.is_empty() || !fits {
            return false;
        }
        let no_rows: [(&str, &str); 0] = [];
        let hits = hits(added, &changes.vectors);
        if !self.words.ahead(before, no_rows, hits) {
            return false;
        }
        let rows = added.iter().map(|row| {
            let source = row.0.source.rel().into_owned();
            (source, row.0.id.to_string(), row.1.clone())
        });
        self.known.wrote(before, no_rows, rows);
        self.days.synced(days, before, before);
        let now = Instant::now();
        let group = self.held.get_or_insert_with(|| Held {
            before,
            batches: Vec::new(),
            rows: 0,
            prints: prints.clone(),
            marked: Vec::new(),
            first: now,
            last: now,
        });
        group.batches.append(&mut changes.batches);
        group.rows += added.len();
        group.prints = prints.clone();
        group.marked = marked.to_vec();
        group.last = now;
        self.shown = Some(prints.clone());
        self.publish();
        true
    }

    /// The rows to add (embedded, as batches) and the ids to delete, per
    /// source. Embedding comes first, with progress shown (the cache keeps
    /// each chunk's vectors, so a failure part-way loses no finished work),
    /// and nothing has been deleted yet if it fails; the caller then does
    /// one delete and one add for the whole sync: every commit writes a
    /// fragment, and every search visits every fragment.
    async fn embed_changes<'a>(
        &self,
        sources: &'a [String],
        (mut desired, tails): (rows::RowsBySource, rows::Tails),
        report: &mut SyncReport,
    ) -> Result<Changes<'a>> {
        let mut stale: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        let mut new: Vec<Hashed> = Vec::new();
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
            let (gone, added) = self.known.diff(source, rows, among);
            if !gone.is_empty() {
                stale.insert(source, gone);
            }
            new.extend(added);
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

    /// Tell the row hashes and the words what a sync changed: the table
    /// went from `before` to `after`, `stale` rows deleted and `added`
    /// ones there.
    fn wrote(
        &mut self,
        (before, after): (u64, u64),
        stale: &BTreeMap<&str, Vec<String>>,
        added: Vec<Hashed>,
        vectors: &[Vec<f32>],
    ) {
        let hits = hits(&added, vectors);
        self.words.wrote(before, after, deleted(stale), hits);
        let added = added.into_iter().map(|row| {
            (
                row.0.source.rel().into_owned(),
                row.0.id.to_string(),
                row.1.clone(),
            )
        });
        self.known.wrote(after, deleted(stale), added);
    }

    /// Show a sync's changes to searches before the table commits them
    /// (from version `before`), when the words can
    /// ([`crate::index::snapshot::Model::ahead`]), and say they are the rows
    /// of the files at `current`.
    fn show_ahead(&mut self, before: u64, changes: &Changes<'_>, current: &Arc<Prints>) {
        if changes.stale.is_empty() && changes.added.is_empty() {
            return;
        }
        let hits = hits(&changes.added, &changes.vectors);
        let deleted = deleted(&changes.stale);
        if self.words.ahead(before, deleted, hits) {
            self.shown = Some(current.clone());
            self.publish();
        }
    }

    /// What every write of the index starts with: the lock across
    /// processes, then the table's latest version. A handle keeps the
    /// version it was opened at, so without the second step a process that
    /// opened the table before another one's sync read rows that were no
    /// longer all the rows, and added the missing ones again.
    ///
    /// The sole writer skips the second step: its handle made every
    /// version since it opened, so its version is the latest (reading it
    /// is a tenth of an append's sync: `memd bench search-path`).
    pub(super) async fn writing(&self) -> Result<Guard> {
        let guard = table::write_lock(&self.shared.layout).await?;
        if !self.sole {
            let latest = self.shared.table.inner.checkout_latest();
            timed("sync: latest version", latest).await?;
        }
        Ok(guard)
    }

    /// The entries' sources, which decide which facts are rows: read only
    /// when a day file is among the `wanted` sources, and from the cache
    /// when the entries file's fingerprint is the one cached.
    fn sources(
        &mut self,
        wanted: &HashSet<&Source>,
        fingerprint: Option<&String>,
    ) -> Result<Arc<HashSet<FactId>>> {
        if !wanted.iter().any(|s| matches!(s, Source::Day(_))) {
            return Ok(Arc::default());
        }
        if let (Some(want), Some((have, sources))) = (fingerprint, self.sources.as_ref())
            && want == have
        {
            return Ok(sources.clone());
        }
        let path = self.shared.layout.entries_file();
        let sources = Arc::new(entries::sources(&path)?);
        if let Some(f) = fingerprint {
            self.sources = Some((f.clone(), sources.clone()));
        }
        Ok(sources)
    }

    /// Make the row hashes hold the (id, hash) of the rows of `sources` at
    /// the table's version: read from the table those it does not hold.
    async fn read_rows(&mut self, sources: &[String]) -> Result<()> {
        let version = self.shared.table.version().await?;
        self.known.at(version);
        let missing: Vec<String> = self.known.missing(sources).into_iter().cloned().collect();
        if missing.is_empty() {
            return Ok(());
        }
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
        for (source, rows) in read {
            self.known.insert(source, rows);
        }
        Ok(())
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
