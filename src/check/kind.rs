//! What a finding is about, for `memd check --json` and for callers that
//! branch on it (the random test's oracle among them).

use serde::{Deserialize, Serialize};

/// The kind of a [`super::Finding`]. Problems and notes share one list of
/// kinds; which a finding is, is said by the list it is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// A file (or one of its lines) that cannot be read as what it is.
    Unreadable,
    /// An archive line read with a warning.
    ArchiveWarning,
    /// A hand-written block that gets its metadata at the next run.
    AwaitingMetadata,
    /// An entry whose text a person changed.
    EditedByHand,
    /// Two entries with one id.
    DuplicateId,
    /// A source naming a fact no archive file has.
    UnknownSource,
    /// A fact two entries claim.
    HeldTwice,
    /// A decided fact that the journal says an entry holds, while no
    /// entry of the file does and no tombstone keeps it out (its id taken
    /// out of an entry's sources by hand).
    FactHidden,
    /// A decided fact that nothing accounts for any more (no entry of the
    /// file or of the journal holds it, no tombstone covers it: a person
    /// deleted `consolidated/`): pending again, and the next run decides
    /// it anew (a note, [`crate::pending`]).
    DecidedAgain,
    /// A fact the user forgot that a live entry still holds: it is back in
    /// search.
    ForgottenButHeld,
    /// A fact kept out by a hand deletion that never happened (no entry
    /// memd wrote lost its text).
    NoSuchHandDeletion,
    /// A live entry that a tombstone names: search and MEMORY.md leave it
    /// out while the file shows it (a forget that did not finish).
    EntryHidden,
    /// A live entry whose text a tombstone holds: it stays visible (a
    /// tombstone keeps facts out, never a live entry).
    EntrySaysForgotten,
    /// The journal says an entry was forgotten, and the files disagree.
    JournalDisagrees,
    /// An entry memd wrote is gone from the file; the next run records its
    /// facts as forgotten (deleted by hand).
    DeletedByHand,
    /// A generated line of MEMORY.md that names no live entry.
    CoreLineNotLive,
    /// A generated line of MEMORY.md naming an entry that neither the
    /// entries file nor its journal knows (a note: a person deleted
    /// `consolidated/`; the next run takes the line out).
    CoreLineUnknown,
    /// A generated line of MEMORY.md dated otherwise than its entry's
    /// `updated` (a note: the entry changed since the last promotion; the
    /// next run dates the line again).
    CoreLineDate,
    /// A fact that declared it supersedes an entry is decided, and that
    /// entry is live beside the one holding the fact (a note: it was
    /// pinned or forgotten when the run decided, and is back since).
    SupersededLive,
    /// A fact that declared it supersedes a pending fact is decided, and
    /// that fact is pending beside it (a note: it was forgotten or under
    /// review when the run decided, and is back since).
    SupersededPending,
    /// A live entry of the file that the entries resource (`GET
    /// /v1/entries`, `memd entries`, MCP `list_entries`) does not list as
    /// the file holds it, or a listed entry the file does not hold live.
    EntryUnlisted,
    /// An erasure that did not finish: a file still holds a text it
    /// erased, or the entry it erased (running it again finishes it).
    EraseUnfinished,
    /// An archive line that says an erased text again (a person or a
    /// remote wrote it: kept out, but the text the erasure took is on
    /// disk again; erasing its id takes it out of the file).
    ErasedSaidAgain,
    /// A redaction line that no erasure receipt names: a fact taken out
    /// of the archive with nothing saying why (a remote's or a hand
    /// edit's; a sync puts it back when a copy holds it live).
    RedactedWithoutReceipt,
    /// A run that called the LLM when the day's budget was already spent
    /// (`[llm] max_tokens_per_day`).
    PastBudget,
    /// A version of the entries file or of MEMORY.md's generated lines
    /// that `consolidated/versions.jsonl` cannot rebuild byte for byte
    /// (not for an erasure: a damaged record).
    VersionDamaged,
    /// `.memd/versions-tail.json` holds a file's stamp that the file
    /// still has, with a hash the file no longer has: a writer would take
    /// an edit for the last version and not record it. Derived: `memd
    /// check --fix` deletes it, and the next writer reads the history.
    VersionsTail,
    /// A merge `memd sync` left for the person: a file still in conflict
    /// (nothing is committed or pushed until it is finished).
    SyncUnfinished,
    /// A memory set up for `memd sync` whose repository lacks memd's merge
    /// drivers (a note: a fresh clone; the next `memd sync` registers
    /// them).
    SyncDrivers,
    /// A line of `consolidated/REVIEW.md` that looks like an item and is
    /// not one memd can read (a note: while it is there, no item gone
    /// from the file is taken as rejected).
    ReviewUnreadable,
    /// An item of REVIEW.md naming a proposal memd never made (a note:
    /// memd leaves it).
    ReviewUnknown,
    /// An item of REVIEW.md whose proposal was carried out already (a
    /// note: the next carry-out takes it out, applying nothing twice).
    ReviewDecided,
    /// An open proposal whose item is gone from REVIEW.md (a note: the
    /// next carry-out rejects it, and keeps its facts word for word).
    ReviewRejected,
    /// A run in review mode that applied an op it should only have
    /// proposed: the journal holds ops of a run that proposed.
    ReviewBypassed,
    /// A memory of a root that the root handed over to another node
    /// (`ROOT/.memd/moved/NAME`) while its directory is still here: its
    /// node refuses it, so its facts are in no search (a handover or a
    /// takeover stopped midway: running it again finishes it).
    HandedOver,
    /// Index rows that differ from what the files call for.
    IndexRows,
    /// Index rows of a file changed since the last sync.
    IndexUnsynced,
    /// The words file of the index (`.memd/index/words.bin`) names the
    /// table's version and holds other words than its rows make (a
    /// problem: searches read them); or it is damaged (a note: searches
    /// ignore it, and the next one writes it anew).
    IndexWords,
}
