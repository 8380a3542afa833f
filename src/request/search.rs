//! [`Search`]: hybrid search over facts, entries and MEMORY.md, logged as
//! recall.

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
        let index = target.index().await?;
        if !self.wait.unwrap_or(true) {
            let behind = index.writer.files_behind()?;
            let hits = index.reader.search_as_is(&text, k).await?;
            let indexing =
                (!behind.is_empty()).then(|| serde_json::json!({ "files_behind": behind }));
            return Ok(Found::AsIs { hits, indexing });
        }
        index.writer.sync().await?;
        Ok(Found::Hits(index.reader.search(&text, k).await?))
    }
}
