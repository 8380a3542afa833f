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
use crate::json_head;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Watermark {
    /// Written by older versions; decides nothing (see the module doc).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub through_day: Option<String>,
    /// The facts runs have decided.
    pub done: BTreeSet<FactId>,
}

/// The fields are written in their order here: the last run first, so
/// that [`State::last_run`] finds it in the file's first lines, ahead of
/// the watermark, which lists every fact ever decided.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct State {
    /// RFC 3339 time of the last completed run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_run: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_run_id: Option<RunId>,
    pub watermark: Watermark,
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

    /// The last run alone ([`State::last_run`]): what the time gate needs
    /// ([`crate::consolidate::gate`]), at a cost that does not grow with
    /// the facts. The file is read up to its `last_run` field, which a
    /// save writes first ([`json_head`]); a file written with the
    /// watermark first (by an older version, or by hand) is read whole.
    /// What comes after the field is not read: its errors are found when a
    /// run loads the file whole, and by `check`.
    pub fn last_run(path: &Path) -> Result<Option<String>> {
        #[derive(Default, Deserialize)]
        #[serde(default)]
        struct LastRun {
            last_run: Option<String>,
        }
        let read = json_head::fields::<LastRun>(path, &["last_run"]);
        match read.with_context(|| format!("reading {}", path.display()))? {
            Some(Ok(read)) => Ok(read.last_run),
            // A head that does not read so: the file read whole, as a
            // load reads it (its answer, or its error).
            Some(Err(_)) => Ok(parsed::<State>(path)?.last_run),
            None => Ok(None),
        }
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
        Some(b) => serde_json::from_slice(&b).map_err(|e| corrupt(path, e)),
        None => Ok(T::default()),
    }
}

/// A state file that is not valid JSON, as the error says.
fn corrupt(path: &Path, e: serde_json::Error) -> Error {
    Error::Corrupt {
        path: path.to_path_buf(),
        line: (e.line() > 0).then_some(e.line()),
        message: format!(
            "not valid JSON ({e}); fix it by hand (deleting it makes the next run revisit every fact)"
        ),
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::json_head::HEAD;

    /// A state whose watermark lists `facts` facts, run at `last_run`.
    fn state(facts: usize, last_run: Option<&str>) -> State {
        let mut state = State {
            last_run: last_run.map(str::to_string),
            ..State::default()
        };
        state.mark_done((0..facts).map(|i| FactId::new("2026-01-01", &format!("{i:08x}"), 0)));
        state
    }

    #[test]
    fn the_last_run_is_read_from_the_first_lines_whatever_the_watermark() {
        let t = tempfile::tempdir().unwrap();
        let path = t.path().join("state.json");
        let at = "2026-11-20T10:00:00+00:00";
        state(10_000, Some(at)).save(&path).unwrap();
        assert_eq!(State::last_run(&path).unwrap().as_deref(), Some(at));
        // Damage past the first lines: the gate's read does not reach it,
        // a whole load does.
        let mut bytes = std::fs::read(&path).unwrap();
        assert!(bytes.len() as u64 > 10 * HEAD);
        bytes.truncate(2 * HEAD as usize);
        std::fs::write(&path, &bytes).unwrap();
        assert_eq!(State::last_run(&path).unwrap().as_deref(), Some(at));
        assert!(matches!(State::load(&path), Err(Error::Corrupt { .. })));
    }

    #[test]
    fn a_state_in_another_shape_reads_as_a_whole_load_reads_it_errors_included() {
        let t = tempfile::tempdir().unwrap();
        let path = t.path().join("state.json");
        let at = "2026-11-20T10:00:00+00:00";
        let s = state(10_000, Some(at));
        let older = serde_json::json!({"watermark": s.watermark, "last_run": at, "retries": {}});
        std::fs::write(&path, serde_json::to_vec_pretty(&older).unwrap()).unwrap();
        assert_eq!(State::last_run(&path).unwrap().as_deref(), Some(at));
        let none = serde_json::json!({"watermark": s.watermark});
        std::fs::write(&path, serde_json::to_vec_pretty(&none).unwrap()).unwrap();
        assert_eq!(State::last_run(&path).unwrap(), None);
        std::fs::write(
            &path,
            &serde_json::to_vec(&none).unwrap()[..3 * HEAD as usize],
        )
        .unwrap();
        assert!(matches!(State::last_run(&path), Err(Error::Corrupt { .. })));
        std::fs::write(&path, b"{\"last_run\": 7}").unwrap();
        assert!(matches!(State::last_run(&path), Err(Error::Corrupt { .. })));
        std::fs::write(&path, b"[]").unwrap();
        assert!(matches!(State::last_run(&path), Err(Error::Corrupt { .. })));
        assert!(matches!(State::load(&path), Err(Error::Corrupt { .. })));
        std::fs::remove_file(&path).unwrap();
        assert_eq!(State::last_run(&path).unwrap(), None);
    }

    proptest! {
        /// Whatever the order of the fields and the size of the watermark,
        /// the last run read from the first lines is the one a whole load
        /// reads.
        #[test]
        fn the_last_run_read_first_is_the_one_a_whole_load_reads(
            facts in 0usize..600,
            last_run in proptest::option::of("2026-0[1-9]-1[0-9]T10:00:00Z"),
            keys in Just(["watermark", "last_run", "retries", "other"]).prop_shuffle(),
            pretty in any::<bool>(),
        ) {
            let t = tempfile::tempdir().unwrap();
            let path = t.path().join("state.json");
            let s = state(facts, last_run.as_deref());
            let whole = serde_json::to_value(&s).unwrap();
            // Written by hand, so that the fields keep this order.
            let fields: Vec<String> = keys
                .iter()
                .filter_map(|&key| {
                    let value = match key {
                        "other" => Some(serde_json::json!({"kept": [1, {"last_run": "no"}]})),
                        k => whole.get(k).cloned(),
                    }?;
                    let value = match pretty {
                        true => serde_json::to_string_pretty(&value).unwrap(),
                        false => value.to_string(),
                    };
                    Some(format!("{key:?}: {value}"))
                })
                .collect();
            let sep = if pretty { ",\n  " } else { "," };
            std::fs::write(&path, format!("{{{}}}", fields.join(sep))).unwrap();
            prop_assert_eq!(State::last_run(&path).unwrap(), State::load(&path).unwrap().last_run);
            s.save(&path).unwrap();
            prop_assert_eq!(State::last_run(&path).unwrap(), last_run);
        }
    }
}
