//! Which sources' rows `memd check` must compare row by row, found by a
//! process whose index is open (a daemon's) from what it kept since its
//! last check, not from every row: the table's rows counted by source
//! fragment by fragment ([`Tally`]), and the rows each source file calls
//! for counted by the file's fingerprint.
//!
//! Both sides are reduced to a `Digest` per source (how many rows, and a
//! sum of a hash of each row's id and row hash): equal digests mean the
//! same rows, duplicates included, but for a collision of 128-bit sums of
//! memd's own hashes, which nobody outside controls (the rows are the
//! table's, written by memd; a table someone else wrote is read and
//! counted like any other). A source whose digests differ is compared row
//! by row, as a check with nothing kept compares every source: from the
//! hashes of its rows' ids and row hashes the tally keeps ([`Pair`]) when
//! the files' rows name every id among them once, else from its rows read
//! from the table again.
//!
//! The table side: a fragment's data files never change once written, and
//! what is deleted from it is named by its deletion file; a fragment is
//! counted again only when its manifest entry changed (new, compacted,
//! rows deleted from it), so a check after an append reads the new
//! fragment only. The file side: a source's rows are a function of what
//! its fingerprint hashes ([`super::fingerprints`]), so a source is read
//! again only when its fingerprint moved, and a digest is kept only if
//! the fingerprint held while the file was read.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::hash::{DefaultHasher, Hasher};
use std::sync::Arc;

use arc_swap::ArcSwapOption;
use futures::TryStreamExt;

use super::Index;
use super::fingerprints::Prints;
use super::rows::{self, RowsBySource};
use super::table::{self, string_col};
use crate::Layout;
use crate::error::{Error, Result};
use crate::layout::Source;

/// A row as [`Tally`] keeps it: a hash of its id and one of its row hash.
pub type Pair = (u64, u64);

/// The [`Pair`] of the row `id` whose row hash is `hash`.
pub fn pair(id: &str, hash: &str) -> Pair {
    (hash_of(id), hash_of(hash))
}

fn hash_of(s: &str) -> u64 {
    let mut h = DefaultHasher::new();
    h.write(s.as_bytes());
    h.finish()
}

/// A set of rows, as a count and a sum of a hash of each row's [`Pair`]
/// (two lanes): adding rows in any order gives the same digest.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Digest {
    rows: u64,
    sum: [u64; 2],
}

impl Digest {
    fn add(&mut self, (id, hash): Pair) {
        self.rows += 1;
        for (lane, sum) in self.sum.iter_mut().enumerate() {
            let mut h = DefaultHasher::new();
            h.write_usize(lane);
            h.write_u64(id);
            h.write_u64(hash);
            *sum = sum.wrapping_add(h.finish());
        }
    }

    fn merge(&mut self, other: &Digest) {
        self.rows += other.rows;
        for (sum, o) in self.sum.iter_mut().zip(other.sum) {
            *sum = sum.wrapping_add(o);
        }
    }
}

/// One source's rows in one fragment.
#[derive(Default)]
struct Counted {
    digest: Digest,
    pairs: Vec<Pair>,
}

/// Source (relative path, as the table names it) → its rows.
type BySource = BTreeMap<String, Counted>;

/// The table's rows by source, per fragment, each counted when its
/// manifest entry was last new.
#[derive(Default, Clone)]
struct Tally {
    /// Fragment id → the hash of its manifest entry, and its rows.
    fragments: HashMap<u64, (u64, Arc<BySource>)>,
}

impl Tally {
    /// The table's rows' digest by source at its latest version, reading
    /// only the fragments whose manifest entry is new; `None`: no table.
    async fn read(&mut self, layout: &Layout) -> Result<Option<BTreeMap<String, Digest>>> {
        let Some(table) = table::existing(layout).await? else {
            return Ok(None);
        };
        let Some(dataset) = table.dataset() else {
            return Err(Error::Index("the index's table is not a local one".into()));
        };
        let dataset = dataset.get().await?;
        let mut kept = HashMap::new();
        let mut out = BTreeMap::<String, Digest>::new();
        for fragment in dataset.fragments().iter() {
            let key = hash_of(&serde_json::to_string(fragment)?);
            let rows = match self.fragments.remove(&fragment.id) {
                Some((k, rows)) if k == key => rows,
                _ => {
                    let mut scan = dataset.scan();
                    scan.with_fragments(vec![fragment.clone()]);
                    scan.project(&["id", "source", "hash"]).map_err(lance)?;
                    let batches: Vec<arrow_array::RecordBatch> = (scan.try_into_stream().await)
                        .map_err(lance)?
                        .try_collect()
                        .await
                        .map_err(lance)?;
                    Arc::new(by_source(&batches)?)
                }
            };
            for (source, c) in rows.iter() {
                out.entry(source.clone()).or_default().merge(&c.digest);
            }
            kept.insert(fragment.id, (key, rows));
        }
        self.fragments = kept;
        Ok(Some(out))
    }

    /// The rows of `source` in every fragment.
    fn pairs(&self, source: &str) -> Vec<Pair> {
        let of = |(_, rows): &(u64, Arc<BySource>)| rows.get(source).map(|c| c.pairs.clone());
        self.fragments.values().filter_map(of).flatten().collect()
    }
}

fn lance(e: impl std::error::Error + Send + Sync + 'static) -> Error {
    Error::Index(Box::new(e))
}

/// The rows of `batches` (id, source, hash) by source.
fn by_source(batches: &[arrow_array::RecordBatch]) -> Result<BySource> {
    let mut out = BySource::new();
    for b in batches {
        let (ids, sources, hashes) = (
            string_col(b, "id")?,
            string_col(b, "source")?,
            string_col(b, "hash")?,
        );
        for i in 0..b.num_rows() {
            let c = out.entry(sources.value(i).to_string()).or_default();
            let p = pair(ids.value(i), hashes.value(i));
            c.digest.add(p);
            c.pairs.push(p);
        }
    }
    Ok(out)
}

/// What a process keeps between its checks: the table's [`Tally`], and
/// each source's rows' digest with the fingerprint they were read at.
#[derive(Default, Clone)]
struct Memo {
    table: Tally,
    files: HashMap<Source, (String, Digest)>,
}

/// What [`compare`] keeps between checks (taken out while one runs: two
/// checks at once are each correct, the second reading everything).
#[derive(Default)]
pub struct Kept(ArcSwapOption<Memo>);

/// What [`compare`] found.
pub struct Compared {
    /// The table's rows.
    pub rows: usize,
    /// The sources (as the table names them) whose rows in the table may
    /// differ from the rows their files call for, or that no file is
    /// behind, each with its rows in the table: these, and only these,
    /// are compared row by row.
    pub differ: BTreeMap<String, Vec<Pair>>,
    /// The fingerprints the sources were compared at.
    pub prints: Arc<Prints>,
    /// The sources whose files were read for this comparison, and the
    /// rows they call for.
    pub read: (HashSet<Source>, RowsBySource),
}

/// The sources whose table rows may differ from their files' (read only),
/// from what `index` kept since its last check; `None`: no table.
pub async fn compare(layout: &Layout, index: &Index) -> Result<Option<Compared>> {
    let mut memo = match index.rows_checked.0.swap(None) {
        Some(m) => Arc::unwrap_or_clone(m),
        None => Memo::default(),
    };
    let Some(table) = memo.table.read(layout).await? else {
        return Ok(None);
    };
    let before = index.writer.fingerprints()?;
    let read: Vec<&Source> = (before.iter())
        .filter(|(s, print)| memo.files.get(*s).is_none_or(|(p, _)| p != *print))
        .map(|(s, _)| s)
        .collect();
    let called = rows::expected_only(layout, &read.iter().copied().collect())?;
    let after = index.writer.fingerprints()?;
    for &source in &read {
        let mut d = Digest::default();
        for row in called.get(source).into_iter().flatten() {
            d.add(pair(row.0.id.as_str(), &row.1));
        }
        match (before.get(source), after.get(source)) {
            (Some(b), Some(a)) if a == b => memo.files.insert(source.clone(), (b.clone(), d)),
            _ => memo.files.remove(source),
        };
    }
    let (rows, differ) = differ(&table, &memo, &before);
    let read = read.into_iter().cloned().collect();
    memo.files.retain(|s, _| before.contains_key(s));
    index.rows_checked.0.store(Some(Arc::new(memo)));
    Ok(Some(Compared {
        rows,
        differ,
        prints: before,
        read: (read, called),
    }))
}

/// The table's rows; and the sources whose digests differ, with those of
/// the table no file is behind, each with its rows in the table.
fn differ(
    table: &BTreeMap<String, Digest>,
    memo: &Memo,
    prints: &Prints,
) -> (usize, BTreeMap<String, Vec<Pair>>) {
    let none = Digest::default();
    let mut differ = BTreeSet::new();
    for source in prints.keys() {
        let want = memo.files.get(source).map(|(_, d)| d);
        let have = table.get(&*source.rel());
        if want.is_none() || want != Some(have.unwrap_or(&none)) {
            differ.insert(source.rel().into_owned());
        }
    }
    let known: HashSet<String> = prints.keys().map(|s| s.rel().into_owned()).collect();
    differ.extend(table.keys().filter(|s| !known.contains(*s)).cloned());
    let rows = table.values().map(|d| d.rows as usize).sum();
    let differ = (differ.into_iter())
        .map(|s| {
            let pairs = memo.table.pairs(&s);
            (s, pairs)
        })
        .collect();
    (rows, differ)
}
