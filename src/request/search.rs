//! [`Search`]: hybrid search over facts, entries and MEMORY.md, logged as
//! recall.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use super::route::{Method, Route};
use super::target::{Request, Target};
use crate::error::Result;
use crate::index::search::Hit;

/// A search. The index is brought in step with the files first, so every
/// fact acknowledged before it is searched; with `wait` false the index
/// answers at once as it is, and says which files it does not cover yet.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Search {
    /// What to search for (`q` in a URL).
    #[serde(alias = "q", default, skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
    /// How many results, 1 to 100 (default: `[search] default_k`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub k: Option<usize>,
    /// `false`: answer from the index as it is, without waiting for it to
    /// take in files that changed (default `true`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait: Option<bool>,
    /// `true`: leave out what MEMORY.md already holds (its lines, the
    /// entries it has a line for and their facts), for an agent that keeps
    /// MEMORY.md in its prompt; the other hits fill the `k` places
    /// (default `false`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exclude_core: Option<bool>,
}

/// The hits, best first; without waiting, also what the index does not
/// cover yet.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum Found {
    Hits(Vec<Hit>),
    AsIs {
        hits: Vec<Hit>,
        /// `{"files_behind": [...]}` while files wait to be indexed.
        indexing: Option<serde_json::Value>,
    },
}

impl Found {
    /// The hits, either way.
    pub fn hits(self) -> Vec<Hit> {
        match self {
            Found::Hits(h) | Found::AsIs { hits: h, .. } => h,
        }
    }
}

/// The most results one search gives.
const MAX_K: usize = 100;

impl Request for Search {
    type Reply = Found;

    const ROUTE: Route = Route {
        method: Method::Get,
        path: "/search",
        summary: "Hybrid search (vector and full text) over facts, entries and MEMORY.md",
    };

    fn needs_index(&self) -> bool {
        true
    }

    async fn apply(self, target: &Target) -> Result<Found> {
        let text = self.query.filter(|t| !t.trim().is_empty()).ok_or_else(|| {
            crate::Error::Invalid("q is required: the text to search for (`q` or `query`)".into())
        })?;
        let default = target.memory.config.search.default_k as usize;
        if self.k == Some(0) {
            return Err(crate::Error::Invalid(format!(
                "k is how many hits to return: 1 to {MAX_K} (0 asks for none)"
            )));
        }
        let k = self.k.unwrap_or(default).clamp(1, MAX_K);
        let core = match self.exclude_core.unwrap_or(false) {
            true => Some(in_core(&target.memory.layout)?),
            false => None,
        };
        let index = target.index().await?;
        let wait = self.wait.unwrap_or(true);
        let behind = match wait {
            true => {
                index.writer.sync().await?;
                Vec::new()
            }
            false => index.writer.files_behind()?,
        };
        let hits = match &core {
            Some(out) => index.reader.search_leaving_out(&text, k, wait, out).await?,
            None if wait => index.reader.search(&text, k).await?,
            None => index.reader.search_as_is(&text, k).await?,
        };
        if wait {
            return Ok(Found::Hits(hits));
        }
        let indexing = (!behind.is_empty()).then(|| serde_json::json!({ "files_behind": behind }));
        Ok(Found::AsIs { hits, indexing })
    }
}

/// The rows MEMORY.md holds: the entries it has a generated line for,
/// and the facts those entries hold (a fact restating a line says what
/// the prompt already says).
fn in_core(layout: &crate::Layout) -> Result<HashSet<String>> {
    let md = crate::core_md::CoreMd::read(&layout.memory_md())?;
    let doc = crate::entries::Document::read(&layout.entries_file())?;
    let mut out = HashSet::new();
    for line in md.lines() {
        if let Some(m) = doc
            .get(line.entry_id.as_str())
            .and_then(|e| e.meta.as_ref())
        {
            out.extend(m.sources.iter().map(|f| f.to_string()));
        }
        out.insert(line.entry_id.to_string());
    }
    Ok(out)
}
