//! Test failpoints, compiled only with the cargo feature `failpoints`
//! (which `scripts/test.sh` turns on, and `cargo install` leaves off: a
//! shipped memd never reads `MEMD_PAUSE_AT`).
//!
//! With `MEMD_PAUSE_AT=<step>` the process stops at the named [`Step`],
//! leaves `.memd/paused-at-<step>` and waits to be killed. The crash-safety
//! tests kill it there with SIGKILL, one step after another, and then run
//! `memd check`.

use crate::Layout;
#[cfg(feature = "failpoints")]
use crate::atomic;

/// A point where a test may stop memd for good.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// An append: the day file is locked, nothing written yet.
    AppendLocked,
    /// An append: the lines are written, not yet synced.
    AppendWritten,
    /// A consolidation run: every op planned, nothing written.
    Planned,
    /// A consolidation run: the new entries file is written to its temp
    /// file, not yet renamed over the old one.
    BeforeRename,
    /// A consolidation run: the entries file and tombstones are written.
    EntriesWritten,
    JournalWritten,
    StateWritten,
    MemoryMdWritten,
    /// An undo ([`crate::runs`]): its records are in the journal.
    UndoJournaled,
    /// An undo: the entries file holds its new text.
    UndoEntriesWritten,
    /// An edit ([`crate::edit`]): its record is in the journal, the
    /// entries file not yet renamed over.
    EditJournaled,
    /// An index sync: its rows are shown to searches, the table not yet
    /// written ([`crate::index::Writer::sync_to_read`]).
    IndexShown,
    /// An index sync: the table holds the new rows, the fingerprints of
    /// the sync are not recorded yet.
    IndexWritten,
    /// An erasure ([`crate::erase`]): its receipt is in the tombstones.
    EraseReceipt,
    /// An erasure: the journal's records hold no text of it.
    EraseJournaled,
    /// An erasure: the entries file and MEMORY.md are without it.
    EraseEntriesWritten,
    /// An erasure: the day files hold redaction lines in its place; the
    /// index not yet purged.
    EraseArchiveWritten,
    /// A sync ([`crate::sync`]): the local changes are committed, nothing
    /// fetched.
    SyncCommitted,
    /// A sync: git merged the other side's files, nothing settled or
    /// committed.
    SyncMerged,
    /// A sync: the merge is settled across files, not committed.
    SyncSettled,
    /// `memd merge-driver`, run by git during a sync's merge: nothing
    /// read or written yet (git runs one per file; each stops here). Its
    /// one caller is compiled only with the failpoints.
    #[cfg_attr(not(feature = "failpoints"), allow(dead_code))]
    MergeDriver,
    /// A run in review mode: its proposals are in `consolidated/review.jsonl`,
    /// `consolidated/REVIEW.md` not yet written.
    ReviewProposed,
    /// A review's decisions carried out: the entries, journal and state
    /// written, the decisions not yet recorded.
    ReviewApplied,
    /// A daemon over a root makes a memory (its first write): the memory
    /// is whole in its folder beside the root's, not yet renamed into
    /// place ([`crate::server::tenant`]). The marker is the root's.
    MemoryCreated,
    /// A handover ([`crate::server::moves`]): the memory's mark is
    /// written, its directory not yet moved out. The marker is the root's.
    HandoverMarked,
    /// A takeover: the copy is renamed into place, the mark not yet
    /// removed. The marker is the root's.
    TakeoverMovedIn,
}

#[cfg_attr(not(feature = "failpoints"), allow(dead_code))]
impl Step {
    /// The name `MEMD_PAUSE_AT` gives it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Step::AppendLocked => "append-locked",
            Step::AppendWritten => "append-written",
            Step::Planned => "planned",
            Step::BeforeRename => "before-rename",
            Step::EntriesWritten => "entries-written",
            Step::JournalWritten => "journal-written",
            Step::StateWritten => "state-written",
            Step::MemoryMdWritten => "memory-md-written",
            Step::UndoJournaled => "undo-journaled",
            Step::UndoEntriesWritten => "undo-entries-written",
            Step::EditJournaled => "edit-journaled",
            Step::IndexShown => "index-shown",
            Step::IndexWritten => "index-written",
            Step::EraseReceipt => "erase-receipt",
            Step::EraseJournaled => "erase-journaled",
            Step::EraseEntriesWritten => "erase-entries-written",
            Step::EraseArchiveWritten => "erase-archive-written",
            Step::SyncCommitted => "sync-committed",
            Step::SyncMerged => "sync-merged",
            Step::SyncSettled => "sync-settled",
            Step::MergeDriver => "merge-driver",
            Step::ReviewProposed => "review-proposed",
            Step::ReviewApplied => "review-applied",
            Step::MemoryCreated => "memory-created",
            Step::HandoverMarked => "handover-marked",
            Step::TakeoverMovedIn => "takeover-moved-in",
        }
    }
}

/// Stop here for good if `MEMD_PAUSE_AT` names `step`.
#[cfg(feature = "failpoints")]
pub(crate) fn at(layout: &Layout, step: Step) {
    if std::env::var("MEMD_PAUSE_AT").ok().as_deref() == Some(step.name()) {
        // Whole or absent: a test that read the marker as it was being
        // written got no pid, and its `kill` failed (seen under load).
        let _ = atomic::write_unsynced(
            &layout.paused_at(step.name()),
            std::process::id().to_string().as_bytes(),
        );
        loop {
            std::thread::sleep(std::time::Duration::from_secs(3600));
        }
    }
}

/// A setting a test build takes from the environment variable `name`
/// (a wait a test cannot sit out); `None` when unset or unreadable.
#[cfg(feature = "failpoints")]
pub(crate) fn tuned<T: std::str::FromStr>(name: &str) -> Option<T> {
    std::env::var(name).ok()?.parse().ok()
}

/// Without the `failpoints` feature: never set.
#[cfg(not(feature = "failpoints"))]
#[inline(always)]
pub(crate) fn tuned<T: std::str::FromStr>(_name: &str) -> Option<T> {
    None
}

/// Without the `failpoints` feature: nothing, and `MEMD_PAUSE_AT` is never
/// read.
#[cfg(not(feature = "failpoints"))]
#[inline(always)]
pub(crate) fn at(_layout: &Layout, _step: Step) {}
