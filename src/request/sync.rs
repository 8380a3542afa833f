//! [`Sync`]: this memory and its git remote, merged both ways
//! ([`crate::sync`]).

use serde::{Deserialize, Serialize};

use super::forget::Erase;
use super::route::{Method, Route};
use super::target::{Request, Target, blocking};
use crate::error::Result;
use crate::ids::ItemId;
use crate::sync::{self, Synced};

/// Commit this memory's changes, fetch, merge with memd's drivers, push.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema, clap::Args)]
#[serde(default, deny_unknown_fields)]
pub struct Sync {
    /// The git remote to sync with, from now on (the first sync makes the
    /// directory a repository, or adopts the one it is in).
    #[arg(long)]
    pub remote: Option<String>,
}

impl Request for Sync {
    type Reply = Synced;

    const ROUTE: Route = Route {
        method: Method::Post,
        path: "/sync",
        summary: "Sync with the memory's git remote: commit, fetch, merge, push",
    };

    /// Git writes files; an erasure the other side made is purged from
    /// the index where the index is (an [`Erase`] again).
    fn needs_index(&self) -> bool {
        false
    }

    async fn apply(self, target: &Target) -> Result<Synced> {
        let memory = target.memory.clone();
        let synced = blocking(move || sync::sync(&memory, self.remote.as_deref())).await?;
        for id in &synced.erased_again {
            target
                .run(Erase {
                    id: ItemId::given(id),
                })
                .await?;
        }
        Ok(synced)
    }
}
