//! Rows held back from the table: a sync that only adds rows, asked for
//! by a caller content with rows shown to searches ([`super::Index::sync_shown`],
//! `remember`), shows them and leaves the table write to a later commit
//! of the whole group, which the index's owner makes once it is due.
//!
//! Why: LanceDB writes four files for every commit, however few its rows
//! (data, transaction, manifest, version hint). An agent that remembers
//! facts back to back paid that for every fact, beside the next query's
//! embedding, and it was what kept append → searchable through `memd mcp`
//! behind the peers' (BENCHMARKS.md, "`remember`'s rows written to the
//! table in groups"). Held, the rows of many facts go in one add.
//!
//! What holds meanwhile:
//! - Searches in this process see the held rows ([`super::snapshot::Model::ahead`],
//!   stacked over one table version): a search of the files as they are
//!   now answers from them, without waiting for the table.
//! - The files are the truth. The held sources stay marked as syncing
//!   (`.memd/index/syncing.json`) and their fingerprints are recorded only
//!   with the commit, so another process (or this one after a crash, a
//!   SIGKILL while rows are held) sees them as not synced and syncs them
//!   from the files. `memd check` notes them as changed since
//!   their sync, as it does during any sync.
//! - Every sync takes the index lock and the table's latest version as
//!   before; if another process wrote the table meanwhile, the held rows
//!   are taken back and the sync starts from the table and the files, so
//!   no row is added twice. The daemon's writer, which skips that check
//!   in its other writes, makes it before it commits held rows.
//! - A writer among others never commits once a daemon serves the
//!   directory: the daemon, the table's sole writer, syncs the marked
//!   files itself. It takes the table's latest version under the index
//!   lock once it holds its own lock ([`super::Index::open_sole`]), so a
//!   commit either lands before that or sees the daemon and does not
//!   happen.
//! - Anything that reads or rewrites the table itself commits first: a
//!   [`super::Writer::sync`], compaction, purge, a process about to exit
//!   ([`super::Writer::idle`]). A sync that deletes rows commits the group
//!   first and then writes as before.
//!
//! A group is committed once no row has joined it for [`QUIET`], once its
//! first row has waited [`AT_MOST`], or once it holds [`MAX_ROWS`].

use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow_array::RecordBatch;

use super::fingerprints::Prints;
use crate::layout::Source;
use crate::pause;

/// A group is committed once no row joined it for this long: longer than
/// the cycle of an agent remembering back to back, which keeps adding to
/// it, and shorter than the pause of one that waits between turns, which
/// has it committed in the pause, as every sync was before (BENCHMARKS.md,
/// "`remember`'s rows written to the table in groups").
pub(super) const QUIET: Duration = Duration::from_millis(25);

/// The longest a row is held, however busy the writer.
pub(super) const AT_MOST: Duration = Duration::from_secs(1);

/// The most rows held at once.
pub(super) const MAX_ROWS: usize = 512;

/// Rows shown to searches and not yet in the table.
pub(super) struct Held {
    /// The table version the rows build on: the table's latest while the
    /// group is held, or the group is taken back.
    pub(super) before: u64,
    pub(super) batches: Vec<RecordBatch>,
    pub(super) rows: usize,
    /// The fingerprints the table will hold once the group is committed.
    pub(super) prints: Arc<Prints>,
    /// The sources marked as syncing for the group.
    pub(super) marked: Vec<Source>,
    pub(super) first: Instant,
    pub(super) last: Instant,
}

impl Held {
    /// When the group is due to be committed.
    pub(super) fn due(&self) -> Instant {
        let (quiet, at_most) = waits();
        (self.last + quiet).min(self.first + at_most)
    }

    /// Whether `more` rows may join the group.
    pub(super) fn room_for(&self, more: usize) -> bool {
        self.rows + more <= MAX_ROWS
    }
}

/// [`QUIET`] and [`AT_MOST`], which a test build may set both to
/// `MEMD_HELD_MS`, so that a test can stop memd while rows are held.
fn waits() -> (Duration, Duration) {
    match pause::tuned("MEMD_HELD_MS").map(Duration::from_millis) {
        Some(both) => (both, both),
        None => (QUIET, AT_MOST),
    }
}
