//! [`Reindex`]: bring the index in step with the files, or (`clear`)
//! rebuild it from them.

use serde::{Deserialize, Serialize};

use super::route::{Method, Route};
use super::target::{Request, Target};
use crate::check;
use crate::error::Result;
use crate::index::{Index, SyncReport};

#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, schemars::JsonSchema, clap::Args)]
#[serde(default, deny_unknown_fields)]
pub struct Reindex {
    /// Drop the index and build it again from the files: everything is
    /// taken in again (the embedding cache keeps that cheap).
    #[arg(long)]
    pub clear: bool,
}

/// What a reindex did, and the rows the index holds after it.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Reindexed {
    pub report: SyncReport,
    pub rows: usize,
}

impl Request for Reindex {
    type Reply = Reindexed;

    const ROUTE: Route = Route {
        method: Method::Post,
        path: "/reindex",
        summary: "Bring the index in step with the files (`clear` rebuilds it)",
    };

    fn needs_index(&self) -> bool {
        true
    }

    async fn apply(self, target: &Target) -> Result<Reindexed> {
        if self.clear {
            clear(target).await?;
        }
        let index = target.index().await?;
        let (report, rows) = sync_repairing(&index, target).await?;
        Ok(Reindexed { report, rows })
    }
}

/// Empty the index: a process that holds it open, or may (a daemon),
/// empties the table in place; one that has not opened it and is alone
/// deletes `.memd/index` (nothing of the old table is read again).
async fn clear(target: &Target) -> Result<()> {
    match target.may_delete_index() {
        true => Index::clear(&target.memory.layout).await,
        false => target.index().await?.writer.reset().await,
    }
}

/// Sync, then rebuild from the files if the index still disagrees with
/// them (rows a sync cannot see, such as duplicates); the report and the
/// number of rows.
async fn sync_repairing(index: &Index, target: &Target) -> Result<(SyncReport, usize)> {
    let mut report = index.writer.sync().await?;
    if check::index_only(&target.memory.layout)
        .await?
        .index_fixable
    {
        tracing::warn!("the index disagreed with the files: rebuilding it");
        index.writer.reset().await?;
        report = index.writer.sync().await?;
    }
    Ok((report, index.reader.ids().await?.len()))
}
