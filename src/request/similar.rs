//! [`Similar`]: the existing entries most like each of some texts (what
//! `memd add` shows after a write).

use serde::{Deserialize, Serialize};

use super::route::{Method, Route};
use super::target::{Request, Target};
use crate::error::{Error, Result};
use crate::index::search::SimilarEntry;

/// How many similar entries are shown per text.
pub const SIMILAR_SHOWN: usize = 3;

/// The most texts one request may ask about.
pub const SIMILAR_MAX_TEXTS: usize = 20;

#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Similar {
    /// At most 20 texts.
    pub texts: Vec<String>,
}

impl Request for Similar {
    /// For each text, in order, its most similar entries.
    type Reply = Vec<Vec<SimilarEntry>>;

    const ROUTE: Route = Route {
        method: Method::Post,
        path: "/similar",
        summary: "The existing entries most like each text",
    };

    fn needs_index(&self) -> bool {
        true
    }

    async fn apply(self, target: &Target) -> Result<Self::Reply> {
        if self.texts.len() > SIMILAR_MAX_TEXTS {
            return Err(Error::Invalid(format!(
                "at most {SIMILAR_MAX_TEXTS} texts per request"
            )));
        }
        let index = target.index().await?;
        // The lookup needs the rows shown, not the table written.
        index.sync_shown().await?;
        let mut out = Vec::with_capacity(self.texts.len());
        for t in &self.texts {
            out.push(index.reader.similar_entries(t, SIMILAR_SHOWN).await?);
        }
        Ok(out)
    }
}
