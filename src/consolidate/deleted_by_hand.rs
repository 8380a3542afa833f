//! Entries deleted by hand. Deleting an entry from
//! `consolidated/memory.md` is forgetting it (DESIGN §1): an entry memd
//! wrote (the journal says so) that no REMOVE or forget took away and
//! whose text is nowhere in the file any more is tombstoned with every
//! fact it held, and journaled as `HAND_REMOVE`. Its facts are then
//! forgotten, not hidden, and neither a reindex nor a restatement brings
//! it back. An entry whose text is still in the file (its metadata line
//! broken by hand, say) has not vanished, and the journal's records of a
//! pending fact (its forgetting, and that taken back) are never an entry's
//! ([`journal::lineage`]).

use std::collections::{BTreeMap, HashSet};

use crate::Layout;
use crate::entries::Document;
use crate::error::Result;
use crate::ids::{EntryId, FactId};
use crate::journal::{self, Lineage, Op, Stamp};
use crate::text::normalize;
use crate::tombstones::{self, Reason, Tombstone, Tombstones};

/// Entries memd wrote (alive in `lineage`, named by no tombstone) that
/// the file has no longer by id while a block without metadata holds
/// their text: id, normalised text, sources. The next run gives them
/// back ([`Document::reclaim`]); until then `memd check` notes them.
pub(crate) fn unlabelled(
    doc: &Document,
    lineage: &BTreeMap<EntryId, Lineage>,
    stones: &Tombstones,
) -> Vec<(EntryId, String, Vec<FactId>)> {
    let bare: HashSet<String> = doc
        .entries()
        .filter(|e| e.meta.is_none())
        .map(|e| normalize(&e.text))
        .collect();
    lineage
        .iter()
        .filter(|(id, l)| l.alive && doc.get(id.as_str()).is_none())
        .filter(|(id, _)| !stones.names_entry(id.as_str()))
        .filter_map(|(id, l)| {
            let text = normalize(l.text.as_deref()?);
            bare.contains(&text)
                .then(|| (id.clone(), text, l.sources.clone()))
        })
        .collect()
}

/// Tombstone and journal every entry deleted by hand; how many there were.
pub(crate) fn record(layout: &Layout, doc: &Document, stamp: &Stamp) -> Result<usize> {
    let records = journal::read(&layout.journal_file())?;
    let lineage = journal::lineage(&records);
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
        if !l.alive || ids.contains(id.as_str()) || texts.contains(&normalize(&text)) {
            continue;
        }
        let mut sources = l.sources;
        sources.sort();
        sources.dedup();
        stones.push(Tombstone::new(
            &stamp.clock,
            Some(id.clone()),
            &text,
            sources.clone(),
            Reason::DeletedByHand,
        ));
        let mut r = stamp.record(Op::HandRemove, &id);
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
    // Their lines of MEMORY.md first: a failure after this leaves them
    // unrecorded, and the next run records them.
    let ids: HashSet<&str> = gone.iter().map(|r| r.entry.as_str()).collect();
    crate::core_md::drop_lines(&layout.memory_md(), &ids)?;
    tombstones::append(&layout.tombstones_file(), &stones)?;
    journal::append(&layout.journal_file(), &gone)?;
    Ok(gone.len())
}
