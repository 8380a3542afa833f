//! `.memd/index/words.bin`: the rows' words ([`super::terms`]) as of one
//! version of the table, so that a process that opens the index to search
//! reads the lists of its query's words instead of reading and tokenising
//! every row. At 100,000 rows that load was most of a one-shot `memd
//! search` (BENCHMARKS.md, "A one-shot search reads its words from a
//! file"). The file's rows are served from it until the process first
//! writes the table; they are taken into memory then
//! ([`super::snapshot::Model::unmapped`]).
//!
//! Derived like the rest of `.memd/index/`, and deleting it costs only
//! time:
//! - **Written** by a process that has just loaded the words from the
//!   table, for a version it found (not one its own writes made): under
//!   the index lock, only while the table is still at that version, into
//!   a temporary file renamed over the old one (so a reader sees a whole
//!   file or none, and an erasure, which deletes it under the same lock,
//!   is never undone by a writer that read the table before it). Not
//!   fsynced, like the index's other files: one a power cut tears fails
//!   its checksum.
//! - **Read** only when the table is at the version it names, made at
//!   the time it names (a table made anew, after `.memd/index` was
//!   deleted, counts its versions from 1 again), and its checksum holds.
//!   Anything else (missing, older, damaged, another layout) and the
//!   words are loaded from the table as before, and the file written
//!   anew.
//! - **Canonical**: rows by source and id, words by spelling, each word's
//!   rows in order; so `memd check` compares it byte for byte with the
//!   file the table's rows make ([`crate::check`]), a process whose index
//!   is open once for each file and table version
//!   ([`super::words_check::Checked`]).
//! - **Erased with the rows**: it holds the rows' texts, so an erasure
//!   deletes it ([`super::Writer::purge`]).
//!
//! Layout, little endian, each part starting on 8 bytes: a header of ten
//! u64 (magic, table version, the time that version was made in
//! nanoseconds, rows, words, rows with words, words in all, vector
//! dimension or 0, CRC-32 of the whole file but these 8 bytes, 0); each row's
//! length in words (u32), then at once each row's kind (u8); offsets (u64, one more than there
//! are items) of each row's key (`source` NUL `id`), each row's hit, each
//! word's spelling and each word's postings; the postings (u32 row, u32
//! occurrences); each row's inverse norm and vector (f32, only while the
//! vectors are kept: [`super::vectors::MAX_ROWS`]); then the keys, the
//! spellings and the hits (JSON) themselves.

use std::ops::Range;
use std::path::Path;

use super::RowKind;
use super::rows::Hit;
use crate::Result;
use crate::layout::Source;

/// "memdwrd1": the layout above, written on a little-endian machine (a
/// file from another reads as foreign and is ignored).
const MAGIC: u64 = u64::from_le_bytes(*b"memdwrd1");
const HEADER: usize = 80;

/// One row as the file holds it: its hit (score 0), its length in words,
/// and its vector (empty without vectors).
pub(super) struct Row<'a> {
    pub hit: &'a Hit,
    pub len: u32,
    pub vector: &'a [f32],
}

/// What the file holds, in memory, in any order: [`encode`] puts it in the
/// file's order. Each word's postings name rows by their index in `rows`.
pub(super) struct Parts<'a> {
    pub version: u64,
    /// When the table's version was made ([`super::table::Table::stamp`]).
    pub stamp: u64,
    pub counted: u64,
    pub tokens: u64,
    /// The vectors' dimension, 0 when the vectors are not kept.
    pub dim: usize,
    pub rows: Vec<Row<'a>>,
    pub words: Vec<(&'a str, Vec<(u32, u32)>)>,
}

/// A row's key: its source and id, the order of the file's rows.
fn key(hit: &Hit) -> String {
    format!("{}\u{0}{}", hit.source.rel(), hit.id.as_str())
}

fn kind_byte(kind: RowKind) -> u8 {
    match kind {
        RowKind::Fact => 0,
        RowKind::Entry => 1,
        RowKind::Core => 2,
    }
}

/// The file's bytes for `parts` (on a little-endian machine; on another,
/// [`read`] never reads them).
pub(super) fn encode(parts: Parts<'_>) -> Result<Vec<u8>> {
    let Parts {
        version,
        stamp,
        counted,
        tokens,
        dim,
        rows,
        mut words,
    } = parts;
    let mut order: Vec<(String, usize)> = rows.iter().map(|r| key(r.hit)).zip(0..).collect();
    order.sort();
    let mut new_slot = vec![0u32; rows.len()];
    for (new, (_, old)) in order.iter().enumerate() {
        new_slot[*old] = new as u32;
    }
    let rows: Vec<(&String, &Row)> = order.iter().map(|(k, old)| (k, &rows[*old])).collect();
    words.retain(|(_, list)| !list.is_empty());
    words.sort_by(|a, b| a.0.cmp(b.0));
    let mut body = Vec::new();
    let lens: Vec<u32> = rows.iter().map(|(_, r)| r.len).collect();
    put(&mut body, &lens);
    body.extend(rows.iter().map(|(_, r)| kind_byte(r.hit.kind)));
    pad(&mut body);
    let hits: Vec<Vec<u8>> = rows
        .iter()
        .map(|(_, r)| serde_json::to_vec(r.hit))
        .collect::<std::result::Result<_, _>>()?;
    offsets(&mut body, rows.iter().map(|(k, _)| k.len()));
    offsets(&mut body, hits.iter().map(Vec::len));
    offsets(&mut body, words.iter().map(|(w, _)| w.len()));
    offsets(&mut body, words.iter().map(|(_, list)| list.len()));
    for (_, list) in &mut words {
        let mut list: Vec<[u32; 2]> = list
            .iter()
            .map(|&(s, n)| [new_slot[s as usize], n])
            .collect();
        list.sort_unstable();
        put(&mut body, &list);
    }
    pad(&mut body);
    if dim > 0 {
        put_vectors(&mut body, rows.iter().map(|(_, r)| r.vector));
    }
    for blob in [
        rows.iter()
            .flat_map(|(k, _)| k.bytes())
            .collect::<Vec<u8>>(),
        words.iter().flat_map(|(w, _)| w.bytes()).collect(),
        hits.concat(),
    ] {
        body.extend(blob);
        pad(&mut body);
    }
    let header = [
        MAGIC,
        version,
        stamp,
        rows.len() as u64,
        words.len() as u64,
        counted,
        tokens,
        dim as u64,
        0,
        0,
    ];
    let mut out: Vec<u8> = header.iter().flat_map(|x| x.to_le_bytes()).collect();
    out.extend(body);
    let crc = checksum(&out) as u64;
    out[CRC..CRC + 8].copy_from_slice(&crc.to_le_bytes());
    Ok(out)
}

/// The rows' vectors, in row order, after their inverse norms.
fn put_vectors<'a>(body: &mut Vec<u8>, vectors: impl Iterator<Item = &'a [f32]> + Clone) {
    let inverse: Vec<f32> = vectors.clone().map(super::vectors::inverse_norm).collect();
    put(body, &inverse);
    pad(body);
    for v in vectors {
        put(body, v);
    }
    pad(body);
}

/// Where the header holds the checksum.
const CRC: usize = 64;

/// CRC-32 of the whole file but the checksum's own 8 bytes: the header's
/// counts too, which every score reads (a damaged one found by the random
/// test of user actions read as a file of the table's version).
fn checksum(file: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&file[..CRC]);
    h.update(&file[CRC + 8..]);
    h.finalize()
}

fn pad(b: &mut Vec<u8>) {
    b.resize(b.len().next_multiple_of(8), 0);
}

/// `items` as their bytes, as the machine holds them: little endian, the
/// only order this file is written and read in ([`read`]).
fn put<T: bytemuck::Pod>(b: &mut Vec<u8>, items: &[T]) {
    b.extend_from_slice(bytemuck::cast_slice(items));
}

/// Offsets of items of these sizes, one more than there are items.
fn offsets(b: &mut Vec<u8>, sizes: impl Iterator<Item = usize>) {
    let at = std::iter::once(0).chain(sizes.scan(0u64, |at, n| {
        *at += n as u64;
        Some(*at)
    }));
    put(b, &at.collect::<Vec<u64>>());
}

/// A words file read into memory, its parts viewed in place.
pub(super) struct Mapped {
    buf: Vec<u64>,
    pub version: u64,
    pub stamp: u64,
    pub rows: usize,
    pub words: usize,
    pub counted: u64,
    pub tokens: u64,
    pub dim: usize,
    lens: Range<usize>,
    kinds: Range<usize>,
    key_at: Range<usize>,
    hit_at: Range<usize>,
    word_at: Range<usize>,
    list_at: Range<usize>,
    postings: Range<usize>,
    inverse: Range<usize>,
    vectors: Range<usize>,
    keys: Range<usize>,
    spellings: Range<usize>,
    hits: Range<usize>,
}

/// The file at `path`, if it is one and of table version `version` made
/// at `stamp` (`None`: missing, damaged, of another layout or another
/// version; the caller loads from the table). The header is read first,
/// so a file of another version costs one small read.
pub(super) fn read(path: &Path, stamp: (u64, u64)) -> Option<Mapped> {
    read_if(path, Some(stamp))
}

/// The file at `path`, if it is one: of `want`'s version only, when given.
fn read_if(path: &Path, want: Option<(u64, u64)>) -> Option<Mapped> {
    use std::io::Read;
    let mut file = std::fs::File::open(path).ok()?;
    let size = usize::try_from(file.metadata().ok()?.len()).ok()?;
    let mut buf = aligned(size)?;
    let bytes = bytemuck::cast_slice_mut::<u64, u8>(&mut buf);
    file.read_exact(&mut bytes[..HEADER]).ok()?;
    let field = |i: usize| u64::from_le_bytes(bytes[i * 8..i * 8 + 8].try_into().unwrap());
    if want.is_some_and(|w| w != (field(1), field(2))) {
        return None;
    }
    file.read_exact(&mut bytes[HEADER..]).ok()?;
    Mapped::parse(buf)
}

/// A words file already read, whatever table version it names (`memd
/// check` compares what it read once, so that a file written anew
/// meanwhile cannot pair one file's header with another's words).
pub(super) fn from_bytes(bytes: &[u8]) -> Option<Mapped> {
    let mut buf = aligned(bytes.len())?;
    bytemuck::cast_slice_mut::<u64, u8>(&mut buf).copy_from_slice(bytes);
    Mapped::parse(buf)
}

/// A buffer, aligned for the file's parts, for a file of `size` bytes, if
/// such a file can be one this machine reads (`None`: too short, not
/// whole 8-byte words, or a big-endian machine).
fn aligned(size: usize) -> Option<Vec<u64>> {
    if cfg!(target_endian = "big") || size < HEADER || !size.is_multiple_of(8) {
        return None;
    }
    Some(vec![0u64; size / 8])
}

impl Mapped {
    fn parse(buf: Vec<u64>) -> Option<Mapped> {
        // The header's fields, by their place in it.
        let h = |i: usize| buf.get(i).copied().map(u64::from_le);
        let bytes: &[u8] = bytemuck::cast_slice(&buf);
        if buf.len() < HEADER / 8 || h(0)? != MAGIC || checksum(bytes) as u64 != h(8)? {
            return None;
        }
        let size = |i: usize| usize::try_from(h(i)?).ok();
        let (rows, words, dim) = (size(3)?, size(4)?, size(7)?);
        // The rows' lengths and kinds are one part: the kinds follow the
        // lengths at once, as [`encode`] writes them.
        let lens = HEADER..HEADER.checked_add(rows.checked_mul(4)?)?;
        let mut at = lens.end;
        let mut part = |n: usize| -> Option<Range<usize>> {
            let r = at..at.checked_add(n)?;
            at = r.end.checked_next_multiple_of(8)?;
            (at <= bytes.len()).then_some(r)
        };
        let kinds = part(rows)?;
        let key_at = part(rows.checked_add(1)?.checked_mul(8)?)?;
        let hit_at = part(rows.checked_add(1)?.checked_mul(8)?)?;
        let word_at = part(words.checked_add(1)?.checked_mul(8)?)?;
        let list_at = part(words.checked_add(1)?.checked_mul(8)?)?;
        let last = |r: &Range<usize>| -> Option<usize> {
            let v: &[u64] = bytemuck::cast_slice(&bytes[r.clone()]);
            usize::try_from(*v.last()?).ok()
        };
        let postings = part(last(&list_at)?.checked_mul(8)?)?;
        let (inverse, vectors) = match dim {
            0 => (0..0, 0..0),
            _ => (
                part(rows.checked_mul(4)?)?,
                part(rows.checked_mul(dim)?.checked_mul(4)?)?,
            ),
        };
        let keys = part(last(&key_at)?)?;
        let spellings = part(last(&word_at)?)?;
        let hits = part(last(&hit_at)?)?;
        Some(Mapped {
            version: h(1)?,
            stamp: h(2)?,
            rows,
            words,
            counted: h(5)?,
            tokens: h(6)?,
            dim,
            lens,
            kinds,
            key_at,
            hit_at,
            word_at,
            list_at,
            postings,
            inverse,
            vectors,
            keys,
            spellings,
            hits,
            buf,
        })
    }

    fn bytes(&self, r: &Range<usize>) -> &[u8] {
        &bytemuck::cast_slice::<u64, u8>(&self.buf)[r.clone()]
    }

    fn u32s(&self, r: &Range<usize>) -> &[u32] {
        bytemuck::cast_slice(self.bytes(r))
    }

    fn u64s(&self, r: &Range<usize>) -> &[u64] {
        bytemuck::cast_slice(self.bytes(r))
    }

    fn f32s(&self, r: &Range<usize>) -> &[f32] {
        bytemuck::cast_slice(self.bytes(r))
    }

    /// Item `i` of a blob, by its offsets.
    fn item(&self, at: &Range<usize>, blob: &Range<usize>, i: usize) -> Option<&[u8]> {
        let at = self.u64s(at);
        let (a, b) = (*at.get(i)? as usize, *at.get(i + 1)? as usize);
        self.bytes(blob).get(a..b)
    }

    /// The word spelled `text`, if a row has it.
    pub(super) fn word(&self, text: &str) -> Option<u32> {
        self.find(&self.word_at, &self.spellings, self.words, text.as_bytes())
    }

    /// Which of the `n` sorted items of a blob is `want`, if one is.
    fn find(&self, at: &Range<usize>, blob: &Range<usize>, n: usize, want: &[u8]) -> Option<u32> {
        let (mut lo, mut hi) = (0, n);
        while lo < hi {
            let mid = (lo + hi) / 2;
            match self.item(at, blob, mid)?.cmp(want) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Some(mid as u32),
            }
        }
        None
    }

    /// Word `w`'s spelling.
    pub(super) fn spelling(&self, w: u32) -> Option<&str> {
        std::str::from_utf8(self.item(&self.word_at, &self.spellings, w as usize)?).ok()
    }

    /// Word `w`'s postings: (row, occurrences), by row.
    pub(super) fn postings(&self, w: u32) -> &[[u32; 2]] {
        let at = self.u64s(&self.list_at);
        let w = w as usize;
        let (Some(&a), Some(&b)) = (at.get(w), at.get(w + 1)) else {
            return &[];
        };
        let all: &[[u32; 2]] = bytemuck::cast_slice(self.u32s(&self.postings));
        all.get(a as usize..b as usize).unwrap_or(&[])
    }

    /// Row `slot`'s length in words.
    pub(super) fn len(&self, slot: u32) -> u32 {
        self.u32s(&self.lens)
            .get(slot as usize)
            .copied()
            .unwrap_or(0)
    }

    pub(super) fn kind(&self, slot: u32) -> Option<RowKind> {
        match self.bytes(&self.kinds).get(slot as usize)? {
            0 => Some(RowKind::Fact),
            1 => Some(RowKind::Entry),
            2 => Some(RowKind::Core),
            _ => None,
        }
    }

    /// Row `slot`'s id.
    pub(super) fn id(&self, slot: u32) -> Option<&str> {
        let key = self.item(&self.key_at, &self.keys, slot as usize)?;
        let key = std::str::from_utf8(key).ok()?;
        key.split_once('\u{0}').map(|(_, id)| id)
    }

    /// Row `slot` as a search shows it (score 0).
    pub(super) fn hit(&self, slot: u32) -> Option<Hit> {
        serde_json::from_slice(self.item(&self.hit_at, &self.hits, slot as usize)?).ok()
    }

    /// The row of `source` and `id`, if the file has it.
    pub(super) fn slot_of(&self, source: &Source, id: &str) -> Option<u32> {
        let want = format!("{}\u{0}{id}", source.rel());
        self.find(&self.key_at, &self.keys, self.rows, want.as_bytes())
    }

    /// Row `slot`'s vector and its inverse norm, if the file keeps vectors.
    pub(super) fn vector(&self, slot: u32) -> Option<(&[f32], f32)> {
        if self.dim == 0 {
            return None;
        }
        let s = slot as usize;
        let v = self
            .f32s(&self.vectors)
            .get(s * self.dim..(s + 1) * self.dim)?;
        Some((v, *self.f32s(&self.inverse).get(s)?))
    }
}
