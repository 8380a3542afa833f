//! [`History`]: an entry's lineage from the journal.

use serde::{Deserialize, Serialize};

use super::route::{Method, Route};
use super::target::{Request, Target, blocking};
use crate::entries::Document;
use crate::error::{Error, Result};
use crate::ids::ItemId;
use crate::journal::Record;
use crate::{Layout, archive, forget};

/// The journal records of an entry's lineage, oldest first: its own, and
/// those of every entry merged into it.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema, clap::Args)]
pub struct History {
    /// The entry (`e-…`) whose lineage to give.
    #[schemars(with = "String")]
    pub id: ItemId,
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

    /// An id with no records that names no entry and no fact is not
    /// found (as `forget` says of it), not an empty history.
    async fn apply(self, target: &Target) -> Result<Vec<Record>> {
        let layout = target.memory.layout.clone();
        blocking(move || {
            let id = self.id.as_str();
            let records = forget::history(&layout, id)?;
            if records.is_empty() && !known(&layout, id)? {
                return Err(Error::NotFound { id: id.to_string() });
            }
            Ok(records)
        })
        .await
    }
}

/// Whether `id` is an entry of the file or a fact of the archive.
fn known(layout: &Layout, id: &str) -> Result<bool> {
    let doc = Document::read(&layout.entries_file())?;
    if doc.get(id).is_some() {
        return Ok(true);
    }
    let (facts, _) = archive::read_all(layout)?;
    Ok(facts.iter().any(|f| f.id == id))
}
