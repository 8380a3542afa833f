//! [`Forget`], [`Unforget`] and [`Candidates`]: forgetting an entry or a
//! pending fact for good, taking that back, and finding what to forget.

use serde::{Deserialize, Serialize};

use super::route::{Method, Route};
use super::target::{Request, Target, blocking};
use crate::erase::{self, Erasure};
use crate::error::Result;
use crate::forget::{self, Candidate};
use crate::ids::ItemId;

/// Forget an entry (`e-…`) or a pending fact (`DAY#HASH`) for good: it is
/// removed and tombstoned, so neither a reindex nor a restatement brings it
/// back.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Forget {
    /// An entry id (`e-…`) or a pending fact's id (`DAY#HASH`).
    #[schemars(with = "String")]
    pub id: ItemId,
}

impl Request for Forget {
    /// What was forgotten.
    type Reply = Candidate;

    const ROUTE: Route = Route {
        method: Method::Delete,
        path: "/entries/{id}",
        summary: "Forget an entry or a pending fact for good",
    };

    fn needs_index(&self) -> bool {
        false
    }

    async fn apply(self, target: &Target) -> Result<Candidate> {
        let memory = target.memory.clone();
        let gone = blocking(move || forget::forget(&memory, self.id.as_str())).await?;
        target.settle().await;
        Ok(gone)
    }
}

/// Erase an entry (`e-…`, with the entries merged into it) or a pending
/// fact (`DAY#HASH`): forgotten for good, and its text taken out of every
/// file memd keeps, the day file, the journal and the index's old
/// versions included ([`crate::erase`]). Cannot be undone. An entry or a
/// fact already forgotten can be erased too; running it again finishes
/// an erasure a crash interrupted.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Erase {
    /// An entry id (`e-…`) or a fact's id (`DAY#HASH`).
    #[schemars(with = "String")]
    pub id: ItemId,
}

impl Request for Erase {
    /// What was erased.
    type Reply = Erasure;

    const ROUTE: Route = Route {
        method: Method::Post,
        path: "/entries/{id}/erase",
        summary: "Erase an entry or a pending fact: its text out of every file",
    };

    /// The index is purged of it, deleted rows and old versions included.
    fn needs_index(&self) -> bool {
        true
    }

    async fn apply(self, target: &Target) -> Result<Erasure> {
        let memory = target.memory.clone();
        let gone = blocking(move || erase::erase(&memory, self.id.as_str())).await?;
        target.index().await?.writer.purge().await?;
        erase::purged(&target.memory.layout)?;
        Ok(gone)
    }
}

/// Undo a forget (or the deletion of an entry by hand): its tombstones are
/// lifted and a forgotten entry is restored.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Unforget {
    /// The entry or fact that was forgotten.
    #[schemars(with = "String")]
    pub id: ItemId,
}

impl Request for Unforget {
    /// What is back.
    type Reply = Candidate;

    const ROUTE: Route = Route {
        method: Method::Post,
        path: "/entries/{id}/unforget",
        summary: "Take back the forgetting of an entry or a fact",
    };

    fn needs_index(&self) -> bool {
        false
    }

    async fn apply(self, target: &Target) -> Result<Candidate> {
        let memory = target.memory.clone();
        let back = blocking(move || forget::undo(&memory, self.id.as_str())).await?;
        target.settle().await;
        Ok(back)
    }
}

/// The entries and pending facts whose text contains `text` (case and
/// spacing ignored): what `memd forget --match` lists.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Candidates {
    pub text: String,
}

impl Request for Candidates {
    type Reply = Vec<Candidate>;

    const ROUTE: Route = Route {
        method: Method::Get,
        path: "/candidates",
        summary: "Entries and pending facts whose text contains `text`",
    };

    fn needs_index(&self) -> bool {
        false
    }

    async fn apply(self, target: &Target) -> Result<Vec<Candidate>> {
        let layout = target.memory.layout.clone();
        blocking(move || forget::candidates(&layout, &self.text)).await
    }
}
