//! [`History`]: an entry's lineage from the journal.

use serde::{Deserialize, Serialize};

use super::route::{Method, Route};
use super::target::{Request, Target, blocking};
use crate::error::Result;
use crate::journal::Record;

/// The journal records of an entry's lineage, oldest first: its own, and
/// those of every entry merged into it.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct History {
    pub id: String,
}

impl Request for History {
    type Reply = Vec<Record>;

    const ROUTE: Route = Route {
        method: Method::Get,
        path: "/entries/{id}/history",
        summary: "An entry's lineage from the journal",
    };

    fn needs_index(&self) -> bool {
        false
    }

    async fn apply(self, target: &Target) -> Result<Vec<Record>> {
        let layout = target.memory.layout.clone();
        blocking(move || crate::forget::history(&layout, &self.id)).await
    }
}
