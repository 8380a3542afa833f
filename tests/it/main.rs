//! memd's integration tests: real files in temp dirs, the real binary.
//!
//! One test binary on purpose: each extra one links the whole LanceDB tree.

mod api;
mod archive;
mod asof;
mod boundaries;
mod browser;
mod budget;
mod check;
mod check_kept;
mod cli;
mod config;
mod consolidate;
mod conventions;
mod current;
mod daemon;
mod deploy;
mod docs;
mod duplicate;
mod edit;
mod entries;
mod entry_api;
mod erase;
#[cfg(feature = "lab")]
mod eval;
mod formats;
mod found;
mod found_review;
mod index;
mod judge;
mod limits;
mod mcp;
mod objectstore;
mod offline;
mod page;
mod pipe;
mod random;
mod remedies;
mod review;
mod root;
mod runs;
mod search;
mod serving;
mod support;
mod sync;
mod tenant;
mod trust;
mod updates;
mod words;
