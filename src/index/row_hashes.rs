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

use super::rows::Hashed;

/// Which rows held for a source a [`RowHashes::diff`] may find stale.
pub(super) enum Stale<'a> {
    /// Any of them. With `unique` (the rows' ids are distinct, as a day
    /// file's fact ids are by their occurrence numbers), when every row
    /// held matches one of the rows wanted nothing is stale and no map of
    /// them is made: an append to a day of 10,000 facts compares each once.
    Held { unique: bool },
    /// Only these: the rows the facts of a day file's tail had before
    /// ([`super::rows::Tails`]), when every row before the tail is in the
    /// table as it should be.
    Among(&'a [Hashed]),
}

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

    /// What makes the table hold exactly `rows` for `source` (held: see
    /// [`RowHashes::missing`]): the ids of its rows to delete, among the
    /// rows `stale` names, and the rows to add.
    pub(super) fn diff(
        &self,
        source: &str,
        rows: Vec<Hashed>,
        stale: Stale<'_>,
    ) -> (Vec<String>, Vec<Hashed>) {
        let empty = HashMap::new();
        let have = self.by_source.get(source).unwrap_or(&empty);
        let held = |row: &Hashed| have.get(row.0.id.as_str()) == Some(&row.1);
        let fresh: Vec<bool> = rows.iter().map(|row| !held(row)).collect();
        let matched = fresh.iter().filter(|f| !**f).count();
        let stale = match stale {
            Stale::Held { unique: true } if matched == have.len() => Vec::new(),
            stale => {
                let want: HashMap<&str, &str> = rows
                    .iter()
                    .map(|row| (row.0.id.as_str(), row.1.as_str()))
                    .collect();
                let gone = |id: &String| {
                    let held = have.get(id.as_str());
                    held.is_some_and(|h| want.get(id.as_str()) != Some(&h.as_str()))
                };
                match stale {
                    Stale::Held { .. } => have.keys().filter(|id| gone(id)).cloned().collect(),
                    Stale::Among(replaced) => {
                        let ids = replaced.iter().map(|row| row.0.id.to_string());
                        ids.filter(gone).collect()
                    }
                }
            }
        };
        let added = rows
            .into_iter()
            .zip(fresh)
            .filter_map(|(row, fresh)| fresh.then_some(row))
            .collect();
        (stale, added)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::RowId;
    use crate::index::rows::{Row, RowKind};
    use crate::layout::Source;

    fn row(id: &str, hash: &str) -> Hashed {
        let row = Row {
            id: RowId::hand(id),
            kind: RowKind::Fact,
            source: Source::Day("2026-01-02".into()),
            day: None,
            text: id.into(),
            session: None,
            category: None,
        };
        std::sync::Arc::new((row, hash.into()))
    }

    fn held(rows: &[(&str, &str)]) -> RowHashes {
        let mut known = RowHashes::default();
        let rows = rows
            .iter()
            .map(|(id, h)| (RowId::hand(id).to_string(), h.to_string()));
        known.insert("d".into(), rows.collect());
        known
    }

    fn ids(rows: &[Hashed]) -> Vec<String> {
        rows.iter().map(|row| row.0.id.to_string()).collect()
    }

    #[test]
    fn a_diff_adds_what_is_new_and_deletes_what_changed_or_went() {
        let known = held(&[("a", "1"), ("b", "1"), ("c", "1")]);
        for unique in [true, false] {
            // Appended: nothing stale.
            let (stale, added) = known.diff(
                "d",
                vec![row("a", "1"), row("b", "1"), row("c", "1"), row("n", "1")],
                Stale::Held { unique },
            );
            assert!(stale.is_empty());
            assert_eq!(ids(&added), [RowId::hand("n").to_string()]);
            // One changed, one gone.
            let (mut stale, added) = known.diff(
                "d",
                vec![row("a", "1"), row("b", "2")],
                Stale::Held { unique },
            );
            stale.sort();
            assert_eq!(
                stale,
                [RowId::hand("b").to_string(), RowId::hand("c").to_string()]
            );
            assert_eq!(ids(&added), [RowId::hand("b").to_string()]);
        }
    }

    /// A tail's diff deletes only the rows its facts had before: a held
    /// row before the tail stays, though the rows given leave it out.
    #[test]
    fn a_diff_of_a_tail_finds_stale_only_among_the_rows_it_replaced() {
        let known = held(&[("a", "1"), ("b", "1"), ("c", "1")]);
        let rows = vec![row("c", "2"), row("d", "1")];
        let (stale, added) = known.diff("d", rows, Stale::Among(&[row("c", "1")]));
        assert_eq!(stale, [RowId::hand("c").to_string()]);
        let want = [RowId::hand("c").to_string(), RowId::hand("d").to_string()];
        assert_eq!(ids(&added), want);
        // A tail that did not change the row it replaced deletes nothing.
        let rows = vec![row("c", "1"), row("d", "1")];
        let (stale, added) = known.diff("d", rows, Stale::Among(&[row("c", "1")]));
        assert!(stale.is_empty());
        assert_eq!(ids(&added), [RowId::hand("d").to_string()]);
    }

    /// The shortcut is taken only when the rows' ids are distinct: two
    /// rows with one id would count as two matches of one held row.
    #[test]
    fn rows_that_repeat_an_id_still_find_the_stale_ones() {
        let known = held(&[("a", "1"), ("b", "1")]);
        let rows = vec![row("a", "1"), row("a", "1")];
        let (stale, added) = known.diff("d", rows, Stale::Held { unique: false });
        assert_eq!(stale, [RowId::hand("b").to_string()]);
        assert!(added.is_empty());
    }
}
