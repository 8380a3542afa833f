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
//! | file                           | module        |
//! |--------------------------------|---------------|
//! | `memd.toml`                    | [`config`]    |
//! | `archive/YYYY-MM-DD.md`        | [`archive`]   |
//! | `consolidated/memory.md`       | [`entries`]   |
//! | `consolidated/journal.jsonl`   | [`journal`]   |
//! | `MEMORY.md`                    | [`memory_md`] |
//! | `.tombstones.jsonl`            | [`tombstones`]|
//! | `.recall_log.jsonl`            | [`recall`]    |
//! | `.consolidation_state.json`    | [`state`]     |
//! | `.memd/watch.json`             | [`watch`]     |
//! | `.memd/daemon.json`            | [`daemon`]    |
//!
//! Consolidation is [`consolidate`] (gate, pending facts, clusters from
//! [`consolidate::cluster`], the judge's ops validated by
//! [`consolidate::ops`], a second look at each ADD beside entries, apply,
//! watermark), asking an [`llm`] with the
//! templates of [`prompts`] or, with no LLM configured, its built-in judge;
//! it ends with [`promote`] (MEMORY.md) and an [`index`] sync. [`forget`]
//! removes and tombstones an entry and reads lineage back from the journal.
//! The derived [`index`] (LanceDB, vectors from [`embed`]) serves search and
//! is kept in step by [`watch`]; [`lock`] keeps two runs from writing the
//! entries at once.
//!
//! Front ends: the binary (`src/main.rs`, argument parsing only), the
//! daemon ([`daemon`]: watcher, consolidation loop, index upkeep) with its
//! HTTP API ([`api`]), and the MCP server ([`mcp`]). The CLI and MCP reach
//! the index through [`service`], which goes through the daemon's API when
//! one runs (it owns the index) and works in process otherwise.
//!
//! Shared mechanics live in small helpers: [`layout`] knows where every file
//! is and creates a directory, [`atomic`] replaces a file so that no reader
//! ever sees half of it, [`jsonl`] reads and appends JSON-lines files
//! tolerantly, [`http`] POSTs JSON with retries for the embedder and the LLM
//! client, [`text`] holds the normalisation and hashing every module must
//! agree on. [`status`] gathers the read-only report behind `memd status`,
//! and [`bench`] holds the benchmarks behind `memd bench`.

pub mod api;
pub mod archive;
pub mod atomic;
pub mod bench;
pub mod config;
pub mod consolidate;
pub mod daemon;
pub mod embed;
pub mod entries;
pub mod eval;
pub mod forget;
pub mod http;
pub mod index;
pub mod journal;
pub mod jsonl;
pub mod layout;
pub mod llm;
pub mod lock;
pub mod mcp;
pub mod memory_md;
pub mod promote;
pub mod prompts;
pub mod recall;
pub mod service;
pub mod state;
pub mod status;
pub mod text;
pub mod tombstones;
pub mod watch;

pub use layout::Layout;
