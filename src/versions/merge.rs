//! The versions file rewritten whole: an erasure takes the chunks holding
//! an erased text out, and a sync's merge joins two copies' records.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use chrono::DateTime;

use super::{File, Piece, Record, encode};
use crate::error::Result;
use crate::{Layout, atomic, jsonl};

/// Take the chunks that `holds` says hold an erased text out of the
/// versions file (an erasure's step, under the entries lock). Returns how
/// many records changed.
pub(crate) fn erase(
    layout: &Layout,
    holds: impl Fn(File, &str) -> bool,
    ts: &str,
) -> Result<usize> {
    let path = layout.versions_file();
    if !path.exists() {
        return Ok(0);
    }
    // The tail holds chunk hashes only, but is the file's as it was.
    atomic::remove(&layout.versions_tail())?;
    let changed = jsonl::rewrite(
        &path,
        |r: &Record| {
            let gone: HashSet<&String> = r
                .chunks
                .iter()
                .filter(|(_, t)| t.as_deref().is_some_and(|t| holds(r.file, t)))
                .map(|(h, _)| h)
                .collect();
            if gone.is_empty() {
                return None;
            }
            let mut r2 = r.clone();
            for h in gone {
                r2.chunks.insert(h.clone(), None);
            }
            r2.erased = Some(ts.to_string());
            Some(Some(r2))
        },
        &[],
    )?;
    Ok(changed)
}

/// One version of a versions file, its chunk list spelled out (sync's
/// merge).
struct Spelled {
    record: Record,
    list: Option<Vec<String>>,
}

/// Every chunk's text by hash (`None`: erased).
type ChunkTexts = HashMap<String, Option<String>>;

/// Store chunk `h`'s text once; erased (`None`) wins over any text.
fn keep_chunk(store: &mut ChunkTexts, h: String, t: Option<String>) {
    let slot = store.entry(h).or_insert_with(|| t.clone());
    if t.is_none() {
        *slot = None;
    }
}

/// Every version a versions file holds, spelled out, and every chunk it
/// stores (`None`: erased). `None` for a file with a line that is not a
/// version: a merge does not guess around damage.
fn spell(bytes: &[u8]) -> Option<(Vec<Spelled>, ChunkTexts)> {
    let (records, bad) = jsonl::parse::<Record>(std::path::Path::new("versions"), bytes);
    if !bad.is_empty() {
        return None;
    }
    let (mut out, mut store) = (Vec::new(), HashMap::new());
    let mut last: [Vec<String>; 2] = [Vec::new(), Vec::new()];
    for mut r in records {
        let prev = &mut last[r.file as usize];
        let list = r.pieces.take().map(|pieces| {
            let mut list = Vec::new();
            for p in pieces {
                match p {
                    Piece::Run([s, l]) => {
                        list.extend(prev.iter().skip(s).take(l).cloned());
                    }
                    Piece::Chunk(h) => list.push(h),
                }
            }
            list
        });
        *prev = list.clone().unwrap_or_default();
        for (h, t) in std::mem::take(&mut r.chunks) {
            keep_chunk(&mut store, h, t);
        }
        out.push(Spelled { record: r, list });
    }
    Some((out, store))
}

/// The versions file merged from three versions of it (`memd sync`, run
/// by git): every version either side holds, once, in time order (ties by
/// file and hash: an order of the versions alone, so a merge of merges
/// finds what it merges however each side came to hold it), each encoded
/// again against the version before it in the merge. A chunk either side
/// erased is erased. `None` when a side's file has a line that is not a
/// version. (The base adds nothing: versions are only ever added.)
pub(crate) fn merge(_base: &[u8], ours: &[u8], theirs: &[u8]) -> Option<Vec<u8>> {
    let (a, mut store) = spell(ours)?;
    let (b, b_store) = spell(theirs)?;
    for (h, t) in b_store {
        keep_chunk(&mut store, h, t);
    }
    let key = |v: &Spelled| {
        let r = &v.record;
        let ts = DateTime::parse_from_rfc3339(&r.ts).ok();
        (
            ts,
            r.ts.clone(),
            r.file as u8,
            r.sha.clone(),
            r.from.clone(),
            r.by as u8,
        )
    };
    let mut all: Vec<(_, &Spelled)> = a.iter().chain(&b).map(|v| (key(v), v)).collect();
    all.sort_by(|x, y| x.0.cmp(&y.0));
    all.dedup_by(|x, y| x.0 == y.0);
    let order: Vec<&Spelled> = all.into_iter().map(|(_, v)| v).collect();
    let mut prev: [Vec<Arc<str>>; 2] = [Vec::new(), Vec::new()];
    let mut written: HashSet<&str> = HashSet::new();
    let mut out = Vec::new();
    for v in order {
        let mut r = v.record.clone();
        if let Some(list) = &v.list {
            let slot = &mut prev[r.file as usize];
            r.pieces = Some(encode(slot, list));
            for h in list {
                if written.insert(h) {
                    let text = store.get(h).cloned().flatten();
                    if text.is_none() && r.erased.is_none() {
                        r.erased = Some(r.ts.clone());
                    }
                    r.chunks.insert(h.clone(), text);
                }
            }
            *slot = list.iter().map(|h| Arc::from(h.as_str())).collect();
        } else {
            // Unreadable then: the next version is read against nothing,
            // as [`History::replay`] reads it.
            prev[r.file as usize].clear();
        }
        out.extend(serde_json::to_vec(&r).ok()?);
        out.push(b'\n');
    }
    Some(out)
}
