//! memd: long-term memory for AI agents, kept as plain markdown.
//!
//! # Map
//!
//! Markdown files in a memory directory are the source of truth; everything
//! under `.memd/` is derived and can be rebuilt. "Memory" means one such
//! directory ([`Memory`]: its [`Layout`], configuration, clock and
//! embedder); its tiers are the archive, the entries and the core memory.
//!
//! ```text
//!   CLI (src/cli/)   HTTP (server)   MCP (mcp)   tests, eval, bench
//!          \               |            |           /
//!           └──── request: one type per operation ─┘
//!                 Target::run — through the daemon, or here
//!                       │
//!   archive ──(parse: facts with stable ids)──► consolidate ──► entries
//!   archive/YYYY-MM-DD.md                        (gate, judge)  consolidated/memory.md
//!        │                                          │   │             │
//!        │                                          │   └► journal    └► core_md
//!        │                                          │      (every op)     MEMORY.md
//!        ▼                                          ▼
//!   tombstones (never resurrect)              state (watermark, last run)
//!   recall (one line per search hit: the usage signal for promotion)
//!   index (derived: rows of the files, vectors, words; one writer per process)
//! ```
//!
//! Each file format has exactly one owning module, and nothing else writes
//! that file ([`layout`] is the one place that spells their paths):
//!
//! | file                                   | module          |
//! |----------------------------------------|-----------------|
//! | `memd.toml`                            | [`config`]      |
//! | `archive/YYYY-MM-DD.md`                | [`archive`]     |
//! | `consolidated/memory.md` (and its lock `.memd/consolidate.lock`) | [`entries`] |
//! | `consolidated/journal.jsonl`           | [`journal`]     |
//! | `consolidated/versions.jsonl`          | [`versions`]    |
//! | `consolidated/review.jsonl`, `consolidated/REVIEW.md` | [`review`] |
//! | `MEMORY.md`                            | [`core_md`]   |
//! | `.tombstones.jsonl`                    | [`tombstones`]  |
//! | `.recall_log.jsonl`                    | [`recall`]      |
//! | `.llm_usage.jsonl`                     | [`usage`]       |
//! | `.memd/erase-pending.jsonl`            | [`erase`]       |
//! | `.memd/versions-tail.json`             | [`versions`]    |
//! | `.consolidation_state.json`            | [`state`]       |
//! | `.memd/watch.json`                     | [`watch`]       |
//! | `.gitattributes` (and lines of `.gitignore`) | [`sync`]  |
//! | `.memd/daemon.json`, `.memd/daemon.lock` | [`server::info`] |
//! | `.memd/index/`, `.memd/index.lock` (the table at `[index] uri` when set) | [`index`] |
//! | `.memd/cache/`                         | [`embed`]       |
//!
//! A root of memories (`memd serve --root DIR`) has files of its own,
//! which no memory's name reaches (a name never starts with a dot):
//!
//! | file under the root                    | module          |
//! |----------------------------------------|-----------------|
//! | `.memd/usage/NAME.jsonl`               | [`usage`], [`server::tenant`] |
//! | `.creating-NAME-PID-N/`                | [`server::tenant`] |
//! | `.memd/moved/NAME`, `.memd/outgoing/`, `.memd/incoming/` | [`server::moves`] |
//!
//! **Requests.** Every operation memd offers is one type in [`request`]
//! (after mini-redis' `src/cmd/`), with its reply type and its route; the
//! command line (`src/cli/`, one file per command), the HTTP API, MCP and
//! in-process callers all build and answer these types, and
//! [`request::Target::run`] is the one rule of where a request runs: the
//! daemon owns the index, and a request that needs it goes there; files
//! are written by whichever process the request is in.
//!
//! **Server.** [`server`] is the daemon, for one memory directory or every
//! memory under a root (a [`server::memories::Memories`] of one, or many):
//! the HTTP API generated from the request types (and its OpenAPI
//! description), the guard, the consolidation and upkeep loops, the
//! daemon's lock and `daemon.json`, shutdown. [`mcp`] serves the same
//! requests as MCP tools over stdio.
//!
//! **Consolidation** is [`consolidate`], a pipeline with one file per
//! stage: gate → plan (pending facts by [`pending`], restatements and near
//! duplicates by the rule of [`duplicate`], clusters) → judge (an [`llm`]
//! with the templates of [`prompts`], or the built-in judge, which reads
//! updates in the words by the rule of [`update`]) → reply (one
//! typed `Reply` from either request shape, checked, repaired, checked) →
//! apply → commit (journal, state) → promote (MEMORY.md, ordered as search
//! hits are by [`current`]: of two on one thing, the later-stated first). A run takes a
//! [`Memory`] and is stamped with its clock ([`journal::Stamp`]); whoever
//! owns the index syncs it after. [`forget`] removes and tombstones an
//! entry (and undoes that) and reads lineage back from the journal;
//! [`edit`] changes one entry on request (journaled, undone as a run);
//! [`erase`] takes an entry's or a fact's text out of every file (the
//! one rewrite of the archive, of the journal and of the tombstones, each
//! still done by the module that owns the file) and says, through [`git`],
//! what a git repository around the memory still holds;
//! [`review`] keeps the ops a run in review mode proposes for a person
//! to accept or reject in `consolidated/REVIEW.md`, and carries the
//! decisions out through the same apply;
//! [`runs`] lists runs and undoes one (and an undo); [`versions`]
//! records every version of the entries file and of MEMORY.md's lines
//! (whoever takes the entries lock records them), for the memory as of a
//! past time (`memd show --as-of`, `memd search --as-of`).
//!
//! **Sync.** [`sync`] keeps one memory on many machines through git:
//! `memd sync` commits, fetches, merges and pushes, and the merge of each
//! file is memd's own ([`sync::merge`], run by git as `memd merge-driver`),
//! with what no one file's merge can see settled across files after.
//!
//! **Index.** [`index`] is split by job: rows of the files, their
//! fingerprints, the LanceDB table (in the memory or on object storage:
//! [`index::store`]), one owner task per handle that does every write
//! and loads the words, publishing after each change an immutable snapshot
//! of the rows' words and vectors that searches read without a lock, a
//! writer handle that asks it, cheap readers with one search call (after
//! tantivy), and the words file (`.memd/index/words.bin`) a new process
//! reads its query's words from; vectors come from [`embed`]. A query's
//! days ([`when`]) add a list of the rows said then to its fusion.
//!
//! **Ids** are types ([`ids`]): a fact's, an entry's, a run's, an index
//! row's. Errors are one enum, [`Error`]; callers branch on
//! [`error::Kind`], never on message text. `anyhow` is for the edges only
//! (the binary, `eval`, `bench`).
//!
//! Shared mechanics live in small helpers: [`atomic`] replaces a file so
//! that no reader ever sees half of it, [`jsonl`] reads and appends
//! JSON-lines files tolerantly, [`json_head`] reads the leading fields
//! of a JSON file no further than they go, [`text`] holds the
//! normalisation, hashing and markup escaping every module must agree
//! on, [`status`] gathers the
//! read-only report behind `memd status`, [`progress`] shows long work,
//! [`alloc`] is the binary's allocator (large blocks in 2 MiB pages),
//! and [`check`] verifies every invariant above (`memd check`, the oracle
//! of the fault tests, which stop processes at failpoints compiled only
//! into test builds). With the `lab` feature, [`eval`] and [`bench`] hold
//! the evaluations and benchmarks behind `memd eval` and `memd bench`.

pub mod alloc;
pub mod archive;
pub mod atomic;
#[cfg(feature = "lab")]
pub mod bench;
pub mod check;
pub mod clock;
pub mod config;
pub mod consolidate;
pub mod core_md;
pub mod current;
pub mod duplicate;
pub mod edit;
pub mod embed;
pub mod entries;
pub mod entry_view;
pub mod erase;
pub mod error;
#[cfg(feature = "lab")]
pub mod eval;
pub mod forget;
pub mod git;
pub mod history;
pub(crate) mod http;
pub mod ids;
pub mod index;
pub mod journal;
pub(crate) mod json_head;
pub mod jsonl;
pub mod layout;
pub mod limits;
pub mod llm;
pub(crate) mod lock;
pub mod mcp;
pub mod memory;
pub(crate) mod pause;
pub(crate) mod pending;
pub mod progress;
pub(crate) mod prompts;
pub mod recall;
pub mod remedy;
pub mod request;
pub mod review;
pub mod runs;
pub mod server;
pub(crate) mod stamp;
pub mod state;
pub mod status;
pub mod steps;
pub mod sync;
pub mod text;
pub mod tombstones;
pub mod update;
pub mod usage;
pub mod versions;
pub mod watch;
pub mod when;

pub use error::{Error, Result};
pub use layout::Layout;
pub use memory::Memory;
