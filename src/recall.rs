//! `.recall_log.jsonl`: one line per search hit, the usage signal that
//! promotion ranks by.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::jsonl;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hit {
    /// RFC 3339 time of the search.
    pub ts: String,
    pub query: String,
    /// The row that was returned (entry id or fact id).
    pub id: String,
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
}

/// Summarise the log by id.
pub fn summary(path: &Path) -> Result<HashMap<String, Usage>> {
    let (hits, _) =
        jsonl::read::<Hit>(path).with_context(|| format!("reading {}", path.display()))?;
    let mut usage: HashMap<String, Usage> = HashMap::new();
    let mut queries: HashMap<String, HashSet<String>> = HashMap::new();
    for h in hits {
        let u = usage.entry(h.id.clone()).or_default();
        u.count += 1;
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
