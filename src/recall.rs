//! `.recall_log.jsonl`: one line per search hit, the usage signal that
//! promotion ranks by.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Context, Result};
use crate::ids::RowId;
use crate::jsonl;

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

/// Append the hits of one search.
pub fn append(path: &Path, hits: &[Hit]) -> Result<()> {
    jsonl::append(path, hits).with_context(|| format!("appending to {}", path.display()))
}

/// Per-id usage: how often, how recently, for how many distinct queries.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Usage {
    pub count: u32,
    pub last: String,
    pub distinct_queries: u32,
    /// Recalls weighted by age (half-life [`WEIGHT_HALF_LIFE_DAYS`]): what
    /// promotion ranks by, so that what mattered last month fades.
    pub weight: f64,
}

pub(crate) const WEIGHT_HALF_LIFE_DAYS: f64 = 14.0;

/// Summarise the log by id, each recall weighed by its age at `now`.
pub fn summary(
    path: &Path,
    now: chrono::DateTime<chrono::FixedOffset>,
) -> Result<HashMap<RowId, Usage>> {
    let (hits, _) =
        jsonl::read::<Hit>(path).with_context(|| format!("reading {}", path.display()))?;
    let mut usage: HashMap<RowId, Usage> = HashMap::new();
    let mut queries: HashMap<RowId, HashSet<String>> = HashMap::new();
    for h in hits {
        let u = usage.entry(h.id.clone()).or_default();
        u.count += 1;
        let age_days = chrono::DateTime::parse_from_rfc3339(&h.ts)
            .map(|t| (now - t).num_seconds().max(0) as f64 / 86_400.0)
            .unwrap_or(365.0);
        u.weight += 0.5f64.powf(age_days / WEIGHT_HALF_LIFE_DAYS);
        if h.ts > u.last {
            u.last = h.ts.clone();
        }
        queries
            .entry(h.id)
            .or_default()
            .insert(crate::text::normalize(&h.query));
    }
    for (id, q) in queries {
        if let Some(u) = usage.get_mut(&id) {
            u.distinct_queries = q.len() as u32;
        }
    }
    Ok(usage)
}
