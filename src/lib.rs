//! memd: long-term memory for AI agents, kept as plain markdown.
//!
//! # Map
//!
//! Markdown files in a memory directory are the source of truth; everything
//! under `.memd/` is derived and can be rebuilt (see `../shared/DESIGN.md`).
//!
//! ```text
//!   agent / CLI / API
//!        │ add
//!        ▼
//!   archive ──(parse: facts with stable ids)──► consolidate ──► entries
//!   archive/YYYY-MM-DD.md                        (gate, LLM)    consolidated/memory.md
//!        │                                          │   │             │
//!        │                                          │   └► journal    └► memory_md
//!        │                                          │      (every op)     MEMORY.md
//!        ▼                                          ▼
//!   tombstones (never resurrect)              state (watermark, last run)
//!   recall (one line per search hit: the usage signal for promotion)
//! ```
//!
//! Each file format has exactly one owning module, and nothing else writes
//! that file:
//!
//! | file                                   | module          |
//! |----------------------------------------|-----------------|
//! | `memd.toml`                            | [`config`]      |
//! | `archive/YYYY-MM-DD.md`                | [`archive`]     |
//! | `consolidated/memory.md` (and its lock `.memd/consolidate.lock`) | [`entries`] |
//! | `consolidated/journal.jsonl`           | [`journal`]     |
//! | `MEMORY.md`                            | [`memory_md`]   |
//! | `.tombstones.jsonl`                    | [`tombstones`]  |
//! | `.recall_log.jsonl`                    | [`recall`]      |
//! | `.consolidation_state.json`            | [`state`]       |
//! | `.memd/watch.json`                     | [`watch`]       |
//! | `.memd/daemon.json`, `.memd/daemon.lock` | [`daemon_info`] |
//! | `.memd/index/`, `.memd/index.lock`     | [`index`]       |
//! | `.memd/cache/`                         | [`embed`]       |
//!
//! Consolidation is [`consolidate`], a pipeline with one file per stage:
//! gate → plan (inputs, [`pending`] facts, restatements and near-duplicates
//! by the rule of [`same`], clusters) → judge
//! (an [`llm`] with the templates of [`prompts`], or the built-in judge) →
//! reply (parse → validate → repair → validate) → apply → commit (journal,
//! state) → promote (MEMORY.md, [`consolidate::promote`]). It takes an
//! embedder, not the index, and a [`clock`]; whoever owns the index syncs
//! it after the run ([`service::consolidate_then_sync`]). [`forget`]
//! removes and tombstones an entry (and undoes that) and reads lineage back
//! from the journal; [`runs`] lists runs from the journal and undoes one
//! (and an undo).
//! The derived [`index`] (LanceDB, vectors from [`embed`]) serves search
//! and is kept in step by [`watch`]; [`entries::lock`] (a [`lock`]) keeps
//! two writers of the entries apart.
//!
//! Front ends: the binary (`src/main.rs` parses, dispatches to a command of
//! `src/cli/` and maps errors to exit codes), the daemon ([`daemon`]:
//! watcher, consolidation loop, index upkeep; given its listener and a
//! shutdown future, stopped through [`shutdown`]) with its HTTP API
//! ([`api`], whose requests [`guard`] screens first), the daemon for many
//! memories under one root (`daemon::many`, `api::many`, the open
//! memories capped by [`memories`]), and the MCP server ([`mcp`]). The CLI and MCP reach the index through [`service`], which
//! goes through the daemon's API when one runs (it owns the index) and
//! works in process otherwise; `add`, the API and MCP share its one add
//! path.
//!
//! Errors are one enum, [`Error`]; callers branch on [`error::Kind`], never
//! on message text. `anyhow` is for the edges only (the binary, `eval`,
//! `bench`).
//!
//! Shared mechanics live in small helpers: [`layout`] knows where every
//! file is and creates a directory, [`atomic`] replaces a file so that no
//! reader ever sees half of it (and is where a missing file reads as
//! empty), [`jsonl`] reads and appends JSON-lines files tolerantly,
//! [`http`] POSTs JSON with retries for the embedder and the LLM client,
//! [`text`] holds the normalisation, hashing and markup escaping every
//! module must agree on. [`status`] gathers the read-only report behind
//! `memd status`, [`progress`] shows long work (a bar on a terminal, log
//! lines otherwise), and [`check`] verifies every invariant above (`memd
//! check`, the oracle of the fault tests, which stop processes at [`pause`]
//! points). With the `lab` feature, [`eval`] and [`bench`] hold the
//! evaluations and benchmarks behind `memd eval` and `memd bench`.

pub(crate) mod api;
pub mod archive;
pub mod atomic;
#[cfg(feature = "lab")]
pub mod bench;
pub mod check;
pub mod clock;
pub mod config;
pub mod consolidate;
pub mod daemon;
pub(crate) mod daemon_info;
pub mod embed;
pub mod entries;
pub mod error;
#[cfg(feature = "lab")]
pub mod eval;
pub mod forget;
pub(crate) mod guard;
pub(crate) mod http;
pub mod index;
pub mod journal;
pub mod jsonl;
pub mod layout;
pub mod llm;
pub(crate) mod lock;
pub mod mcp;
pub mod memories;
pub mod memory_md;
pub(crate) mod pause;
pub(crate) mod pending;
pub mod progress;
pub(crate) mod prompts;
pub mod recall;
pub mod runs;
pub mod same;
pub mod service;
pub mod shutdown;
pub mod state;
pub mod status;
pub mod text;
pub mod tombstones;
pub mod watch;

pub use error::{Error, Result};
pub use layout::Layout;
