//! Updates the built-in judge sees in the words ([`crate::update`]): a
//! pending fact that gives a new value for what an entry, or an earlier
//! pending fact, states as current ("User works at Acme", then "User now
//! works at Globex") is folded into it, the old text kept as history
//! ("User now works at Globex (since 2026-11-20; previously: User works
//! at Acme, since 2026-11-18)", [`crate::history`]), as a
//! declared update is ([`super::declared`]). Every other fact is added as
//! it is. Nothing is dropped: the old text stays in the entry, and every
//! fact stays a source of the entry that holds it.
//!
//! Facts are taken in archive order, so of a chain stated within one run
//! (Acme, Globex, Initech) the last is current and the others history.
//! An entry a person pinned is never updated (a pin is the person's word),
//! nor one another decision of the run already takes (a KEEP, a declared
//! update): its text is what that decision expects.

use std::collections::{HashMap, HashSet};

use super::ops::{Group, Op, Snapshot};
use super::planned::Planned;
use super::reply::repair::declared_history;
use crate::Result;
use crate::embed::cache::Cached;
use crate::embed::cosine;
use crate::history::Stated;
use crate::ids::EntryId;
use crate::update::{self, Read, Verdict};

/// An entry or a new text the facts of the run may update.
struct Item {
    /// The entry, when the item is one.
    entry: Option<Snapshot>,
    /// The text the item will have (history included).
    text: String,
    /// `text` as the update rule reads it.
    read: Read,
    /// Its facts of this run, merged into one group (oldest first).
    group: Option<Group>,
    /// The day its current text was first stated, when its text does not
    /// say ([`crate::history`]): a new text's fact day, an entry's first.
    day: Option<String>,
}

/// The items of a run, and which of them a fact may update, found by
/// keys rather than by comparing the fact with every item: those it
/// shares a frame key with ([`Read::older_keys`]), and, for a fact or an
/// item whose update needs no frame ([`Read::updates_unframed`],
/// [`Read::updated_unframed`]), those it shares a word with
/// ([`Read::keys`]). Archives mostly about one subject ("User …") share
/// that word in nearly every fact, so a fact compared with every item
/// sharing a word would make a run's cost grow with the square of its
/// facts.
#[derive(Default)]
struct Items {
    all: Vec<Item>,
    /// Every item, by its words.
    by_word: HashMap<String, Vec<usize>>,
    /// The items updated without a frame, by their words.
    unframed_by_word: HashMap<String, Vec<usize>>,
    /// Every item, by its frame keys.
    by_frame: HashMap<u64, Vec<usize>>,
}

impl Items {
    fn push(&mut self, item: Item) {
        self.index(self.all.len(), &item.read);
        self.all.push(item);
    }

    /// Files item `i` under what `read` (its current text) gives; what an
    /// earlier text of it gave stays, and [`Items::candidates`] tests
    /// each item found on its current text.
    fn index(&mut self, i: usize, read: &Read) {
        let unframed = read.updated_unframed();
        for k in read.keys() {
            if unframed {
                add(&mut self.unframed_by_word, k.clone(), i);
            }
            add(&mut self.by_word, k, i);
        }
        for k in read.older_keys() {
            add(&mut self.by_frame, k, i);
        }
    }

    /// The items `fact` may update by its words, whatever their cosine.
    fn candidates(&self, fact: &Read) -> Vec<usize> {
        let by_word = |map: &HashMap<String, Vec<usize>>| -> Vec<usize> {
            let keys = fact.keys();
            keys.iter()
                .filter_map(|k| map.get(k))
                .flatten()
                .copied()
                .collect()
        };
        let mut out = match fact.updates_unframed() {
            true => by_word(&self.by_word),
            false => {
                let mut found = by_word(&self.unframed_by_word);
                let framed = fact.newer_keys();
                found.extend(framed.iter().filter_map(|k| self.by_frame.get(k)).flatten());
                found
            }
        };
        out.sort_unstable();
        out.dedup();
        out.retain(|&i| updates(&self.all[i].read, fact, 1.0));
        out
    }
}

/// `i` added to the items under `key`, once.
fn add<K: std::hash::Hash + Eq>(map: &mut HashMap<K, Vec<usize>>, key: K, i: usize) {
    let at = map.entry(key).or_default();
    if at.last() != Some(&i) {
        at.push(i);
    }
}

/// Whether the rule calls `newer` an update of `older` at `cosine`.
fn updates(older: &Read, newer: &Read, cosine: f32) -> bool {
    matches!(update::judge_read(older, newer, cosine), Verdict::Update(_))
}

/// The built-in judge's decisions for `groups` (archive order): each an
/// ADD, or a REPLACE of the entry it updates; with the number of facts
/// decided as updates. `taken` holds the entries other decisions of the
/// run touch. Only a fact the words say may be an update, and its
/// candidates, are embedded (the embedder caches them).
pub(crate) async fn plan(
    groups: Vec<Group>,
    entries: &[Snapshot],
    taken: &HashSet<EntryId>,
    embedder: &Cached,
) -> Result<(Vec<Planned>, usize)> {
    let mut items = Items::default();
    for e in entries
        .iter()
        .filter(|e| !e.pinned && !taken.contains(&e.id))
    {
        items.push(Item {
            entry: Some(e.clone()),
            text: e.text.clone(),
            read: Read::of(&e.text),
            group: None,
            day: Some(e.first_seen.clone()),
        });
    }
    let mut updates = 0;
    for g in groups {
        let read = Read::of(&g.text);
        match updated(&items, (&g.text, &read), embedder).await? {
            Some(i) => {
                updates += g.ids.len();
                fold(&mut items.all[i], g, read);
                let read = items.all[i].read.clone();
                items.index(i, &read);
            }
            None => items.push(Item {
                entry: None,
                text: g.text.clone(),
                read,
                day: g.days.last().cloned(),
                group: Some(g),
            }),
        }
    }
    Ok((
        items.all.into_iter().filter_map(decision).collect(),
        updates,
    ))
}

/// The item the fact (`text`, read) updates: of those the rule calls
/// updated at their cosine, the closest.
async fn updated(
    items: &Items,
    (text, read): (&str, &Read),
    embedder: &Cached,
) -> Result<Option<usize>> {
    let candidates = items.candidates(read);
    if candidates.is_empty() {
        return Ok(None);
    }
    let texts: Vec<String> = std::iter::once(text.to_string())
        .chain(
            candidates
                .iter()
                .map(|&i| update::current_part(&items.all[i].text).to_string()),
        )
        .collect();
    let vectors = embedder.embed(&texts).await?;
    let best = candidates
        .iter()
        .zip(&vectors[1..])
        .map(|(&i, v)| (i, cosine(&vectors[0], v)))
        .filter(|&(i, cos)| updates(&items.all[i].read, read, cos))
        .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)));
    Ok(best.map(|(i, _)| i))
}

/// `item` updated by the facts of `g` (its text read as `read`): `g`'s
/// text current, the item's kept as history; `g`'s facts join the
/// item's. What the rule reads of the item is then `g`'s text, which is
/// its current part.
fn fold(item: &mut Item, g: Group, read: Read) {
    tracing::debug!(fact = %g.text, of = %item.text, "the words say the fact updates a text");
    let now = Stated::new(&g.text, g.days.last().map(String::as_str));
    item.text = declared_history(&now, &[(&item.text, item.day.as_deref())]);
    item.day = now.day;
    item.read = read;
    match &mut item.group {
        Some(mine) => {
            mine.ids.extend(g.ids);
            mine.days.extend(g.days);
            mine.text = g.text;
        }
        None => item.group = Some(g),
    }
}

/// The decision an item stands for: none for an entry no fact updated.
fn decision(item: Item) -> Option<Planned> {
    let group = item.group?;
    let from = group.ids.clone();
    let Some(entry) = item.entry else {
        let add = Op::Add {
            text: item.text,
            from,
        };
        return Some(Planned::built_in(add, group, None));
    };
    let replace = Op::Replace {
        target: entry.id.clone(),
        text: item.text,
        from,
    };
    Some(Planned::built_in(replace, group, Some(entry)))
}
