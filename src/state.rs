//! `.consolidation_state.json`: the watermark (by fact), the last run and
//! retry counts.
//!
//! The watermark is the set of ids of the facts runs have decided. It is
//! per fact and only per fact: a position, or a day up to which "every
//! fact is done", would hide a fact that lands on an earlier day later (an
//! appender in another time zone, a line added by hand to an old day file),
//! and a hidden fact is never consolidated. Older versions folded whole
//! days into `through_day`; it is still read (so such files load) but
//! decides nothing: the facts of those days are in their entries'
//! `sources`, which settle them ([`crate::pending`]).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::archive::Fact;
use crate::atomic;
use crate::error::{Context, Error, Result};
use crate::ids::{FactId, RunId};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Watermark {
    /// Written by older versions; decides nothing (see the module doc).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub through_day: Option<String>,
    /// The facts runs have decided.
    pub done: BTreeSet<FactId>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct State {
    pub watermark: Watermark,
    /// RFC 3339 time of the last completed run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_run: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_run_id: Option<RunId>,
    /// Failed LLM attempts per pending fact, so the fallback triggers after
    /// `max_retries` even across runs.
    pub retries: BTreeMap<FactId, u32>,
    #[serde(flatten)]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

impl State {
    /// Load the state; a missing file is a fresh state. A file that is not
    /// valid JSON is an error, not a reset: a reset would re-consolidate
    /// everything.
    pub fn load(path: &Path) -> Result<State> {
        parsed(path)
    }

    /// The last run alone ([`State::last_run`]), read without building the
    /// watermark, which lists every fact ever decided: what the time gate
    /// needs ([`crate::consolidate::gate`]), at a cost that does not grow
    /// with the facts. The file must still be JSON; the rest of it is read
    /// (and its errors found) when a run loads it whole.
    pub fn last_run(path: &Path) -> Result<Option<String>> {
        #[derive(Default, Deserialize)]
        #[serde(default)]
        struct LastRun {
            last_run: Option<String>,
        }
        Ok(parsed::<LastRun>(path)?.last_run)
    }

    pub fn save(&self, path: &Path) -> Result<()> {
        let mut bytes = serde_json::to_vec_pretty(self)?;
        bytes.push(b'\n');
        atomic::write(path, &bytes).with_context(|| format!("writing {}", path.display()))
    }

    /// Whether a run has decided `fact` (by its id, never its day).
    pub fn is_done(&self, fact: &Fact) -> bool {
        self.watermark.done.contains(&fact.id)
    }

    /// Record facts as decided; their retry counts are done with too.
    pub fn mark_done(&mut self, ids: impl IntoIterator<Item = impl Into<FactId>>) {
        for id in ids {
            let id = id.into();
            self.retries.remove(&id);
            self.watermark.done.insert(id);
        }
    }
}

/// The state file as `T`; a missing file is `T`'s default.
fn parsed<T: serde::de::DeserializeOwned + Default>(path: &Path) -> Result<T> {
    let read = atomic::read_if_exists(path);
    match read.with_context(|| format!("reading {}", path.display()))? {
        Some(b) => serde_json::from_slice(&b).map_err(|e| Error::Corrupt {
            path: path.to_path_buf(),
            line: Some(e.line()),
            message: format!(
                "not valid JSON ({e}); fix it by hand (deleting it makes the next run revisit every fact)"
            ),
        }),
        None => Ok(T::default()),
    }
}
