//! Entries deleted by hand. Deleting an entry from
//! `consolidated/memory.md` is forgetting it (docs/CONSOLIDATION.md): an entry memd
//! wrote (the journal says so) that no REMOVE or forget took away and
//! whose text is nowhere in the file any more is tombstoned with every
//! fact it held, and journaled as `HAND_REMOVE`. Its facts are then
//! forgotten, not hidden, and neither a reindex nor a restatement brings
//! it back. An entry whose text is still in the file (its metadata line
//! broken by hand, say) has not vanished, nor has one whose every fact
//! another entry holds (it was merged into that one, by a run killed
//! after saving the file and before its journal), and the journal's
//! records of a pending fact (its forgetting, and that taken back) are
//! never an entry's ([`journal::lineage`]).

use std::collections::{BTreeMap, HashSet};

use crate::entries::{Document, Entry};
use crate::error::Result;
use crate::ids::{EntryId, FactId};
use crate::journal::{self, Lineage, Op, Stamp};
use crate::text::normalize;
use crate::tombstones::{self, Reason, Tombstone, Tombstones};
use crate::{Layout, core_md};

/// Entries memd wrote (alive in `lineage`, named by no tombstone) that
/// the file has no longer by id while it still holds their text: in a
/// block without metadata (a person took the metadata line off), or in
/// another entry memd wrote (a person deleted one of two entries that
/// said the same). Id, normalised text, sources. The next run gives the
/// first back their id and sources ([`Document::reclaim`]) and merges
/// the second into the entry that says the same ([`merge_copies`]);
/// until then `memd check` notes them.
pub(crate) fn unlabelled(
    doc: &Document,
    lineage: &BTreeMap<EntryId, Lineage>,
    stones: &Tombstones,
) -> Vec<(EntryId, String, Vec<FactId>)> {
    let known = |e: &Entry| {
        e.id()
            .is_none_or(|id| lineage.get(id).is_some_and(|l| l.alive))
    };
    let bare: HashSet<String> = doc
        .entries()
        .filter(|e| known(e))
        .map(|e| normalize(&e.text))
        .collect();
    let held: HashSet<&EntryId> = doc.entries().filter_map(Entry::id).collect();
    lineage
        .iter()
        .filter(|(id, l)| l.alive && !held.contains(id))
        .filter(|(id, _)| !stones.names_entry(id.as_str()))
        .filter_map(|(id, l)| {
            let text = normalize(l.text.as_deref()?);
            bare.contains(&text)
                .then(|| (id.clone(), text, l.sources.clone()))
        })
        .collect()
}

/// Merge each of `copies` (entries missing by id whose text another
/// entry memd wrote holds: [`unlabelled`], less those reclaimed) into
/// that entry: its sources move there, and the journal records a REMOVE
/// into it. Returns the journal records.
pub(crate) fn merge_copies(
    doc: &mut Document,
    copies: &[(EntryId, String, Vec<FactId>)],
    stamp: &Stamp,
) -> Vec<journal::Record> {
    let mut records = Vec::new();
    for (id, text, sources) in copies {
        let Some(into) = doc
            .entries()
            .find(|e| e.meta.is_some() && normalize(&e.text) == *text)
            .and_then(|e| e.id().cloned())
        else {
            continue;
        };
        if let Some(m) = doc.get_mut(into.as_str()).and_then(|e| e.meta.as_mut()) {
            for s in sources {
                if !m.sources.contains(s) {
                    m.sources.push(s.clone());
                }
            }
        }
        let mut r = stamp.record(Op::Remove, id);
        r.into = Some(into);
        r.sources = sources.clone();
        records.push(r);
    }
    records
}

/// In `doc` (the caller's save keeps it), a bare block that is an entry
/// whose metadata a person took off gets that entry's id and sources
/// back, as a run gives them ([`Document::reclaim`]): whatever saves the
/// file (a forget, an undo) never gives it a new id while MEMORY.md names
/// the old one.
pub(crate) fn reclaim(layout: &Layout, doc: &mut Document, today: &str) -> Result<()> {
    if !doc.entries().any(|e| e.meta.is_none()) {
        return Ok(());
    }
    let lineage = journal::lineage(&journal::read(&layout.journal_file())?);
    let missing = unlabelled(doc, &lineage, &Tombstones::load(&layout.tombstones_file())?);
    if !missing.is_empty() {
        doc.reclaim(&missing, today);
    }
    Ok(())
}

/// Tombstone and journal every entry deleted by hand; how many there were.
/// Blocks that are entries with their metadata taken off are given it back
/// first ([`reclaim`]).
pub(crate) fn record(layout: &Layout, doc: &mut Document, stamp: &Stamp) -> Result<usize> {
    reclaim(layout, doc, &stamp.today())?;
    let records = journal::read(&layout.journal_file())?;
    let lineage = journal::lineage(&records);
    let ids: HashSet<&str> = doc
        .entries()
        .filter_map(|e| e.id())
        .map(|i| i.as_str())
        .collect();
    let texts: HashSet<String> = doc.entries().map(|e| normalize(&e.text)).collect();
    // The facts live entries hold: an entry gone whose facts all live on
    // in others was merged into them (a run killed after saving the file
    // and before its journal leaves exactly that), not deleted; forgetting
    // its facts would forget what they hold.
    let held: HashSet<&str> = doc
        .entries()
        .filter_map(|e| e.meta.as_ref())
        .flat_map(|m| m.sources.iter().map(|s| s.as_str()))
        .collect();
    let mut stones = Vec::new();
    let mut gone = Vec::new();
    for (id, l) in lineage {
        let text = l.text.unwrap_or_default();
        let merged = !l.sources.is_empty() && l.sources.iter().all(|s| held.contains(s.as_str()));
        if !l.alive || ids.contains(id.as_str()) || texts.contains(&normalize(&text)) || merged {
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
    core_md::drop_lines(&layout.memory_md(), &ids)?;
    tombstones::append(&layout.tombstones_file(), &stones)?;
    journal::append(&layout.journal_file(), &gone)?;
    Ok(gone.len())
}
