//! `.recall_log.jsonl`: one line per search hit, the usage signal that
//! promotion ranks by.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Context, Result};
use crate::ids::RowId;
use crate::{jsonl, text};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hit {
    /// RFC 3339 time of the search.
    pub ts: String,
    pub query: String,
    /// The row that was returned.
    pub id: RowId,
    pub kind: String,
    pub rank: u32,
}

/// Append the hits of one search, fsync'd.
pub fn append(path: &Path, hits: &[Hit]) -> Result<()> {
    jsonl::append(path, hits).with_context(|| format!("appending to {}", path.display()))
}

/// An erasure's rewrite ([`crate::erase`]): each hit through `change`
/// (see [`jsonl::rewrite`]), atomically. Returns how many changed.
pub(crate) fn erase(path: &Path, change: impl Fn(&Hit) -> Option<Option<Hit>>) -> Result<usize> {
    jsonl::rewrite(path, change, &[]).with_context(|| format!("rewriting {}", path.display()))
}

/// How long after a search its recalls may wait for their fsync: the
/// searches within it share one.
pub(crate) const SYNC_WITHIN: std::time::Duration = std::time::Duration::from_millis(500);

/// The recall log of a process that searches again and again (a daemon,
/// `memd mcp`): each search's hits are appended whole and at once (every
/// reader sees them, a consolidation's promotion included), and fsync'd
/// within [`SYNC_WITHIN`], in groups, off the searches. A search then
/// costs no fsync. A power cut can lose the last half second's recalls
/// (or, of a command that exits sooner, those the kernel had not yet
/// written back), which are a ranking hint and never a fact; a crash of
/// memd loses nothing written.
pub(crate) struct Log {
    path: std::path::PathBuf,
    due: Option<tokio::sync::mpsc::UnboundedSender<()>>,
}

impl Log {
    /// The log at `path`; its fsyncs run on the current tokio runtime, or
    /// with each append when there is none.
    pub(crate) fn open(path: std::path::PathBuf) -> Log {
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return Log { path, due: None };
        };
        let (due, mut asked) = tokio::sync::mpsc::unbounded_channel::<()>();
        let synced = path.clone();
        rt.spawn(async move {
            // Ends when the log is dropped, after a last fsync.
            while asked.recv().await.is_some() {
                tokio::time::sleep(SYNC_WITHIN).await;
                while asked.try_recv().is_ok() {}
                let path = synced.clone();
                let done = tokio::task::spawn_blocking(move || {
                    std::fs::File::open(&path).and_then(|f| f.sync_data())
                });
                // A log that is gone (its memory removed) has nothing to sync.
                if let Ok(Err(e)) = done.await
                    && e.kind() != std::io::ErrorKind::NotFound
                {
                    tracing::warn!(error = %e, "fsync of the recall log failed");
                }
            }
        });
        Log {
            path,
            due: Some(due),
        }
    }

    /// Append the hits of one search (blocking: call it off the async
    /// workers).
    pub(crate) fn append(&self, hits: &[Hit]) -> Result<()> {
        let sync = self.due.is_none();
        jsonl::append_then(&self.path, hits, sync)
            .with_context(|| format!("appending to {}", self.path.display()))?;
        if let Some(due) = &self.due
            && due.send(()).is_err()
        {
            // The runtime that synced it is gone: sync now.
            std::fs::File::open(&self.path)
                .and_then(|f| f.sync_data())
                .with_context(|| format!("fsync of {}", self.path.display()))?;
        }
        Ok(())
    }
}

/// Per-id usage: how often, how recently, for how many distinct queries.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Usage {
    pub count: u32,
    pub last: String,
    pub distinct_queries: u32,
    /// What promotion ranks by ([`Usage::weight_of`]), so that what
    /// mattered last month fades and one question asked again and again
    /// does not outweigh many questions.
    pub weight: f64,
    /// Each query (normalised): the searches that returned the id (each
    /// search once, at its time), and the age of the latest in days.
    #[serde(skip)]
    queries: HashMap<String, (HashSet<String>, f64)>,
}

pub(crate) const WEIGHT_HALF_LIFE_DAYS: f64 = 14.0;

impl Usage {
    /// `other`'s recalls added to these (an entry's own row, its
    /// MEMORY.md line and its facts': one search that returned two of
    /// them is one recall of the entry).
    pub fn merge(&mut self, other: &Usage) {
        for (q, (searches, age)) in &other.queries {
            let mine = self
                .queries
                .entry(q.clone())
                .or_insert_with(|| (HashSet::new(), f64::INFINITY));
            mine.0.extend(searches.iter().cloned());
            mine.1 = mine.1.min(*age);
        }
        self.last = self.last.clone().max(other.last.clone());
        self.settle();
    }

    /// Count, distinct queries and weight again from `queries`.
    fn settle(&mut self) {
        self.count = self.queries.values().map(|(s, _)| s.len() as u32).sum();
        self.distinct_queries = self.queries.len() as u32;
        self.weight = self
            .queries
            .values()
            .map(|(s, age)| Usage::weight_of(s.len(), *age))
            .sum();
    }

    /// What one query adds to an entry's weight: its latest recall,
    /// halved every [`WEIGHT_HALF_LIFE_DAYS`], times `1 + ln(searches)`.
    /// Each further search of the same question adds less: an agent that
    /// asks one question every turn would otherwise keep whatever that
    /// question finds in MEMORY.md for good, the stale answer included.
    pub fn weight_of(searches: usize, age_days: f64) -> f64 {
        let decay = 0.5f64.powf(age_days / WEIGHT_HALF_LIFE_DAYS);
        decay * (1.0 + (searches.max(1) as f64).ln())
    }
}

/// Summarise the log by id, each recall weighed by its age at `now`
/// ([`Usage::weight_of`]).
pub fn summary(
    path: &Path,
    now: chrono::DateTime<chrono::FixedOffset>,
) -> Result<HashMap<RowId, Usage>> {
    let (hits, _) =
        jsonl::read::<Hit>(path).with_context(|| format!("reading {}", path.display()))?;
    let mut usage: HashMap<RowId, Usage> = HashMap::new();
    for h in hits {
        let u = usage.entry(h.id.clone()).or_default();
        let age_days = chrono::DateTime::parse_from_rfc3339(&h.ts)
            .map(|t| (now - t).num_seconds().max(0) as f64 / 86_400.0)
            .unwrap_or(365.0);
        let q = u
            .queries
            .entry(text::normalize(&h.query))
            .or_insert_with(|| (HashSet::new(), f64::INFINITY));
        q.0.insert(h.ts.clone());
        q.1 = q.1.min(age_days);
        if h.ts > u.last {
            u.last = h.ts;
        }
    }
    usage.values_mut().for_each(Usage::settle);
    Ok(usage)
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;
    use crate::ids::FactId;

    /// What the process logged, as text.
    #[derive(Clone, Default)]
    struct Logged(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Logged {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// A memory removed while its last recalls wait for their fsync (an
    /// evaluation's scratch memory, a tenant's directory deleted) has
    /// nothing left to sync: no warning for each search it answered.
    #[tokio::test]
    async fn a_log_whose_memory_was_removed_before_its_fsync_warns_of_nothing() {
        let logged = Logged::default();
        let to = logged.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || to.clone())
            .with_ansi(false)
            .finish();
        let _default = tracing::subscriber::set_default(subscriber);
        let dir = tempfile::tempdir().unwrap();
        let log = Log::open(dir.path().join(".recall_log.jsonl"));
        let hit = Hit {
            ts: "2026-12-01T12:00:00Z".into(),
            query: "where does the user work".into(),
            id: RowId::fact(&FactId::new("2026-12-01", "0123abcd", 0)),
            kind: "fact".into(),
            rank: 1,
        };
        log.append(&[hit]).unwrap();
        drop(dir);
        tokio::time::sleep(SYNC_WITHIN * 3).await;
        let said = String::from_utf8(logged.0.lock().unwrap().clone()).unwrap();
        assert!(!said.contains("recall log"), "{said}");
    }
}
