//! What a sync diffs the files against: the (id, hash) of each source's
//! rows, kept in memory by the handle between syncs.
//!
//! Reading them back from the table on every sync was the slowest step of
//! a daemon under load (`memd bench serve --clients 16`: 31–342 ms of a
//! sync's ~45 ms–0.4 s, a filtered scan of every fragment while searches
//! ran), yet the handle itself wrote them. The memory is valid for one
//! table version: every write of this handle happens under the index lock
//! and records the version it left, so a version this handle did not
//! leave (another process wrote, or a crash left a write behind) empties
//! it and the rows are read again.

use std::collections::HashMap;

/// Source → (id → hash), for the sources read or written at `version`.
#[derive(Default)]
pub(super) struct RowHashes {
    version: Option<u64>,
    by_source: HashMap<String, HashMap<String, String>>,
}

impl RowHashes {
    /// The memory is for `version` from now on: emptied unless it already
    /// was for it.
    pub(super) fn at(&mut self, version: u64) {
        if self.version != Some(version) {
            self.by_source.clear();
            self.version = Some(version);
        }
    }

    /// The sources of `sources` it does not hold.
    pub(super) fn missing<'a>(&self, sources: &'a [String]) -> Vec<&'a String> {
        sources
            .iter()
            .filter(|s| !self.by_source.contains_key(*s))
            .collect()
    }

    /// Remember what the table holds for `source` (every source read gets
    /// an entry, empty when it has no row).
    pub(super) fn insert(&mut self, source: String, rows: HashMap<String, String>) {
        self.by_source.insert(source, rows);
    }

    /// The rows of `sources` (all held: see [`RowHashes::missing`]).
    pub(super) fn rows_of(&self, sources: &[String]) -> HashMap<String, HashMap<String, String>> {
        sources
            .iter()
            .filter_map(|s| Some((s.clone(), self.by_source.get(s)?.clone())))
            .collect()
    }

    /// This handle changed the rows and left the table at `version`:
    /// `deleted` ids gone and `added` (source, id, hash) rows there.
    pub(super) fn wrote<'a>(
        &mut self,
        version: u64,
        deleted: impl IntoIterator<Item = (&'a str, &'a str)>,
        added: impl IntoIterator<Item = (String, String, String)>,
    ) {
        for (source, id) in deleted {
            if let Some(rows) = self.by_source.get_mut(source) {
                rows.remove(id);
            }
        }
        for (source, id, hash) in added {
            self.by_source.entry(source).or_default().insert(id, hash);
        }
        self.version = Some(version);
    }

    /// This handle rewrote the table from `before` to `after` without
    /// changing its rows (compaction, an index build).
    pub(super) fn same_rows(&mut self, before: u64, after: u64) {
        match self.version == Some(before) {
            true => self.version = Some(after),
            false => self.clear(),
        }
    }

    /// Forget everything (the table was emptied).
    pub(super) fn clear(&mut self) {
        self.by_source.clear();
        self.version = None;
    }
}
