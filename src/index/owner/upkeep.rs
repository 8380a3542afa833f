//! What keeps the table fast and small after writes, and the jobs that
//! rewrite it whole: reset, purge, compaction.

use std::sync::Arc;

use super::Owner;
use crate::error::Result;
use crate::index::fingerprints::{self, Prints};
use crate::index::table;
use crate::steps::{timed, timed_now};
use crate::{atomic, pause};

impl Owner {
    /// After a table write that added and deleted these many rows: keep
    /// the table fast, drop old versions, and record `prints`, the
    /// fingerprints the table now holds (lifting the sync's marks).
    pub(super) async fn written(
        &mut self,
        prints: Arc<Prints>,
        (added, deleted): (usize, usize),
    ) -> Result<()> {
        pause::at(&self.shared.layout, pause::Step::IndexWritten);
        if added > 0 {
            timed("sync: table indices", self.maintain_indices()).await?;
        }
        if added > 0 || deleted > 0 {
            self.prune_if_due().await;
        }
        timed_now("sync: marks", || {
            fingerprints::save_synced(&self.shared.layout, &prints)
        })?;
        self.synced = Some(prints);
        self.publish();
        Ok(())
    }

    /// Run `op`, which rewrites the table without changing its rows, and
    /// tell the row hashes and the words so.
    async fn keeping_rows(
        &mut self,
        op: impl std::future::Future<Output = Result<()>>,
    ) -> Result<()> {
        let before = self.shared.table.version().await?;
        op.await?;
        let after = self.shared.table.version().await?;
        self.known.same_rows(before, after);
        self.words.same_rows(before, after);
        self.days.same_rows(before, after);
        Ok(())
    }

    /// Drop old table versions once this writer has made
    /// [`table::PRUNE_EVERY_VERSIONS`] since its last prune (or its first
    /// write: a one-shot command does not prune). A failure is a warning:
    /// the versions are only kept longer.
    async fn prune_if_due(&mut self) {
        let Ok(now) = self.shared.table.version().await else {
            return;
        };
        let last = *self.pruned_at.get_or_insert(now);
        if now < last + table::PRUNE_EVERY_VERSIONS {
            return;
        }
        self.pruned_at = Some(now);
        let pruned = self.shared.table.prune(table::versions_kept_for());
        if let Err(e) = timed("sync: prune", pruned).await {
            tracing::warn!("old index versions not dropped yet: {e:#}");
        }
    }

    /// Keep the table fast as it grows: a vector index (IVF_HNSW_SQ,
    /// cosine) once a flat scan gets slow, with new rows folded into it in
    /// bulk.
    async fn maintain_indices(&mut self) -> Result<()> {
        let shared = self.shared.clone();
        let table = &shared.table;
        let indices = table.inner.list_indices().await?;
        if let Some(text) = table::on_column(&indices, "text") {
            self.drop_text_index(&text.name).await?;
        }
        let vector = table::on_column(&indices, "vector");
        if vector.is_none() && table.inner.count_rows(None).await? >= table::VECTOR_INDEX_MIN_ROWS {
            tracing::info!("creating the vector index (IVF_HNSW_SQ)");
            return self.keeping_rows(table.create_vector_index()).await;
        }
        // Without a daemon compacting in the background (CLI use: each
        // `memd search` after an add writes one small fragment), a sync
        // compacts itself once fragments have piled up well past the
        // daemon's threshold, so searches never slow down for good.
        let small = table.fragments_under(table::COMPACT_TARGET_ROWS).await?;
        if small >= table::INLINE_COMPACT_SMALL_FRAGMENTS {
            return self.keeping_rows(table.compact()).await;
        }
        if table.fragments_under(table::TAIL_ROWS).await? >= table::TAIL_FRAGMENTS {
            self.keeping_rows(table.merge_fragments(table::TAIL_ROWS))
                .await?;
        }
        // Unindexed rows are still found by the vector search (an exact
        // scan), so new rows are folded into the vector index only once
        // enough have piled up: doing it after every small write would cost
        // more than the write itself.
        let Some(vector) = vector else {
            return Ok(());
        };
        let unindexed = match table.inner.index_stats(&vector.name).await? {
            Some(stats) => stats.num_unindexed_rows,
            None => 0,
        };
        if unindexed >= table::FOLD_UNINDEXED_ROWS {
            self.keeping_rows(table.fold(vec![vector.name.clone()]))
                .await?;
        }
        Ok(())
    }

    /// Drop the full-text index an older memd built (and its
    /// `text-index-behind` mark): memd scores the words itself now
    /// ([`crate::index::terms`]), and each compaction would only remap it.
    async fn drop_text_index(&mut self, name: &str) -> Result<()> {
        tracing::info!("dropping LanceDB's full-text index (memd scores text itself)");
        let shared = self.shared.clone();
        let drop = async { Ok(shared.table.inner.drop_index(name).await?) };
        self.keeping_rows(drop).await?;
        Ok(atomic::remove(&self.shared.layout.old_text_index_mark())?)
    }

    /// Empty the table and forget every file's fingerprint, so the next
    /// sync rebuilds everything.
    pub(super) async fn reset(&mut self) -> Result<()> {
        let _all = self.writing().await?;
        self.take_back();
        self.last_sync_start = None;
        self.synced = None;
        self.publish();
        self.shared.table.inner.delete("true").await?;
        self.known.clear();
        self.words.clear();
        fingerprints::forget_synced(&self.shared.layout)
    }

    /// Compact once [`table::COMPACT_SMALL_FRAGMENTS`] have piled up, or
    /// [`table::COMPACT_IDLE_SMALL_FRAGMENTS`] with no rows added for
    /// [`table::COMPACT_IDLE`]; returns whether it compacted.
    pub(super) async fn compact_if_needed(&mut self) -> Result<bool> {
        let idle = (self.last_added).is_none_or(|t| t.elapsed() >= table::COMPACT_IDLE);
        let table = &self.shared.table;
        let small = table.fragments_under(table::COMPACT_TARGET_ROWS).await?;
        let few = small >= table::COMPACT_IDLE_SMALL_FRAGMENTS;
        if small < table::COMPACT_SMALL_FRAGMENTS && !(idle && few) {
            return Ok(false);
        }
        self.compact().await?;
        Ok(true)
    }

    /// Compact now, whatever the fragments.
    pub(super) async fn compact(&mut self) -> Result<()> {
        let _all = self.writing().await?;
        self.commit_held_at_latest().await?;
        let shared = self.shared.clone();
        self.keeping_rows(shared.table.compact()).await
    }

    /// The deleted rows' bytes and every old version of the table out, and
    /// the words file (it holds the rows' texts as of an older version).
    pub(super) async fn purge(&mut self) -> Result<()> {
        let _all = self.writing().await?;
        self.commit_held_at_latest().await?;
        let shared = self.shared.clone();
        self.keeping_rows(shared.table.purge()).await?;
        match std::fs::remove_file(self.shared.layout.index_words()) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e.into()),
            _ => Ok(()),
        }
    }
}
