//! Entries deleted by hand. Deleting an entry from
//! `consolidated/memory.md` is forgetting it (DESIGN §1): an entry memd
//! wrote (the journal says so) that no REMOVE or forget took away and
//! whose text is nowhere in the file any more is tombstoned with every
//! fact it held, and journaled as `HAND_REMOVE`. Its facts are then
//! forgotten, not hidden, and neither a reindex nor a restatement brings
//! it back. An entry whose text is still in the file (its metadata line
//! broken by hand, say) has not vanished.

use std::collections::{BTreeMap, HashSet};

use crate::Layout;
use crate::entries::Document;
use crate::error::Result;
use crate::ids::{EntryId, FactId};
use crate::journal::{self, Op, Stamp};
use crate::text::normalize;
use crate::tombstones::{self, Tombstone};

/// What the journal says of one entry.
#[derive(Default)]
struct Lineage {
    alive: bool,
    sources: Vec<FactId>,
    text: Option<String>,
}

/// Tombstone and journal every entry deleted by hand; how many there were.
pub(crate) fn record(layout: &Layout, doc: &Document, stamp: &Stamp) -> Result<usize> {
    let records = journal::read(&layout.journal_file())?;
    let mut lineage: BTreeMap<&str, Lineage> = BTreeMap::new();
    for r in &records {
        let l = lineage.entry(&r.entry).or_default();
        match r.op {
            Op::Add | Op::Adopt | Op::Replace | Op::Keep | Op::Unforget => {
                l.alive = true;
                l.sources.extend(r.sources.iter().cloned());
                if let Some(after) = &r.after {
                    l.text = Some(after.clone());
                }
            }
            Op::Remove | Op::Forget | Op::HandRemove => l.alive = false,
            Op::Suppress => {}
            // An undo states what the entry holds now, whole.
            Op::Undo => {
                l.alive = r.after.is_some();
                l.sources = r
                    .meta_after
                    .iter()
                    .flat_map(|m| m.sources.clone())
                    .collect();
                l.text = r.after.clone().or(l.text.take());
            }
        }
        if let (Op::Remove, Some(into)) = (r.op, &r.into) {
            let merged = lineage.entry(into.as_str()).or_default();
            merged.sources.extend(r.sources.iter().cloned());
        }
    }
    let ids: HashSet<&str> = doc
        .entries()
        .filter_map(|e| e.id())
        .map(|i| i.as_str())
        .collect();
    let texts: HashSet<String> = doc.entries().map(|e| normalize(&e.text)).collect();
    let mut stones = Vec::new();
    let mut gone = Vec::new();
    for (id, l) in lineage {
        let text = l.text.unwrap_or_default();
        if !l.alive || ids.contains(id) || texts.contains(&normalize(&text)) {
            continue;
        }
        let mut sources = l.sources;
        sources.sort();
        sources.dedup();
        stones.push(Tombstone::new(
            &stamp.clock,
            Some(EntryId::from(id)),
            &text,
            sources.clone(),
            "deleted by hand",
        ));
        let mut r = stamp.record(Op::HandRemove, id);
        r.before = Some(text);
        r.sources = sources;
        gone.push(r);
    }
    if gone.is_empty() {
        return Ok(0);
    }
    tracing::info!(
        entries = gone.len(),
        "entries deleted by hand: recorded as forgotten"
    );
    tombstones::append(&layout.tombstones_file(), &stones)?;
    journal::append(&layout.journal_file(), &gone)?;
    Ok(gone.len())
}
