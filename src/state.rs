//! `.consolidation_state.json`: the watermark (by fact), the last run and
//! retry counts.
//!
//! The watermark is "every fact of every day up to `through_day`" plus the
//! ids of later facts already consolidated. A plain position would not do:
//! when one cluster of a run fails, only its facts stay pending while the
//! facts of the clusters that applied are done, so the set of done facts
//! after the watermark can have holes. Whole past days collapse into
//! `through_day`, so the set stays small.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::archive::Fact;
use crate::error::{Context, Result};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Watermark {
    /// Every fact of this day and earlier days is consolidated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub through_day: Option<String>,
    /// Consolidated facts of later days.
    pub done: BTreeSet<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct State {
    pub watermark: Watermark,
    /// RFC 3339 time of the last completed run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_run: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_run_id: Option<String>,
    /// Failed LLM attempts per pending fact, so the fallback triggers after
    /// `max_retries` even across runs.
    pub retries: BTreeMap<String, u32>,
    #[serde(flatten)]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

impl State {
    /// Load the state; a missing file is a fresh state. A file that is not
    /// valid JSON is an error, not a reset: a reset would re-consolidate
    /// everything.
    pub fn load(path: &Path) -> Result<State> {
        let read = crate::atomic::read_if_exists(path);
        match read.with_context(|| format!("reading {}", path.display()))? {
            Some(b) => serde_json::from_slice(&b).map_err(|e| crate::Error::Corrupt {
                path: path.to_path_buf(),
                line: Some(e.line()),
                message: format!(
                    "not valid JSON ({e}); fix it by hand (deleting it makes the next run revisit every fact)"
                ),
            }),
            None => Ok(State::default()),
        }
    }

    pub fn save(&self, path: &Path) -> Result<()> {
        let mut bytes = serde_json::to_vec_pretty(self)?;
        bytes.push(b'\n');
        crate::atomic::write(path, &bytes).with_context(|| format!("writing {}", path.display()))
    }

    /// Whether `fact` is behind the watermark.
    pub fn is_done(&self, fact: &Fact) -> bool {
        self.watermark
            .through_day
            .as_deref()
            .is_some_and(|d| fact.day.as_str() <= d)
            || self.watermark.done.contains(&fact.id)
    }

    /// Mark facts consolidated, then fold whole days before `today` into
    /// `through_day`. `all` is every fact of the archive.
    pub fn mark_done<'a>(
        &mut self,
        ids: impl IntoIterator<Item = &'a str>,
        all: &[Fact],
        today: &str,
    ) {
        for id in ids {
            self.watermark.done.insert(id.to_string());
            self.retries.remove(id);
        }
        let mut days: BTreeMap<&str, Vec<&Fact>> = BTreeMap::new();
        for f in all {
            days.entry(f.day.as_str()).or_default().push(f);
        }
        for (day, facts) in days {
            if self
                .watermark
                .through_day
                .as_deref()
                .is_some_and(|d| day <= d)
            {
                continue;
            }
            if day >= today || !facts.iter().all(|f| self.watermark.done.contains(&f.id)) {
                break;
            }
            for f in facts {
                self.watermark.done.remove(&f.id);
            }
            self.watermark.through_day = Some(day.to_string());
        }
    }
}
