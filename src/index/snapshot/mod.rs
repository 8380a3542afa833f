//! What a search reads of the index's words and vectors: an immutable
//! [`Snapshot`] the owner publishes after each change, which readers take
//! and score without a lock, a load or a write.
//!
//! A snapshot is a base shared by every snapshot since it was made (the
//! rows' words loaded from the table, or read in place from the words
//! file: [`super::terms`], [`super::words`]) and the rows written since,
//! on top ([`Top`]): rows added, and the base's rows taken out. A write
//! copies the top only, never the base; once the top holds more than
//! [`model::fold_at`] rows, the owner folds it into a new base (a copy of the
//! old one with the top's changes made), so what a write copies stays
//! small and a fold's copy is paid once per that many rows. Readers that
//! hold an older snapshot keep its base alive until they let go.
//!
//! The owner's side is [`Model`]: the snapshot's parts as plain fields,
//! and the rules of which table version they are:
//! - every write of the handle records the version it left, and a version
//!   the handle did not leave (another process wrote, or the process just
//!   started) means a reload: from the words file when it is of that
//!   version, else from the table, which then writes the words file.
//!   What is in memory is never written back, so a crash loses nothing;
//! - a write may show its rows to searches before LanceDB commits them
//!   ([`Model::ahead`]): the rows then stay labelled with the version
//!   before the write, and they are what that version's rows become once
//!   the commit lands ([`Model::wrote`]). Every search reads its rows
//!   here (and its vectors, which is why only rows whose vectors are kept
//!   go ahead), so a search answered in between sees the files as the
//!   write makes them, as it would a moment later; a write that fails
//!   drops the rows, to be loaded again from the table.

mod model;

use std::sync::Arc;

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use super::RowKind;
use super::search::{Hit, Ranked};
use super::terms::{self, Lists, Slot, Terms};
use super::vectors;
use super::words::Mapped;
use crate::ids::RowId;
use crate::layout::Source;

pub(super) use model::Model;

/// What a snapshot's rows build on: the words in memory, or those of the
/// words file, read in place (read only: the first write of the handle
/// takes them into memory, [`Model::unmapped`]).
#[derive(Clone)]
enum Base {
    Terms(Arc<Terms>),
    Mapped(Arc<Mapped>),
}

/// The rows written on top of a base of [`Terms`]: its slots and word
/// numbers go on from the base's (slot `base_slots + i` is `rows[i]`, a
/// word the base lacks is `base_words + i`), and the base's rows taken
/// out are listed, with what they counted.
#[derive(Clone, Default)]
struct Top {
    base_slots: u32,
    base_words: u32,
    /// Base slots taken out (deleted, or written again on top).
    gone: HashSet<u32>,
    /// Base word → how many of the base's rows taken out have it.
    gone_df: HashMap<u32, u32>,
    rows: Vec<Option<Slot>>,
    lens: Vec<u32>,
    vectors: Vec<(Vec<f32>, f32)>,
    by_row: HashMap<(Source, RowId), u32>,
    new_words: HashMap<String, u32>,
    /// Word → (slot → occurrences), of the rows on top only.
    postings: HashMap<u32, HashMap<u32, u32>>,
    /// What the rows on top add to the base's counts (less what the rows
    /// taken out counted).
    counted: i64,
    tokens: i64,
    /// Whether the rows' vectors are still kept ([`vectors::MAX_ROWS`]).
    vectors_lost: bool,
}

impl Top {
    fn on(base: &Terms) -> Top {
        Top {
            base_slots: Lists::slots(base) as u32,
            base_words: base.words() as u32,
            ..Top::default()
        }
    }

    /// Rows changed since the base: a write copies that many.
    fn size(&self) -> usize {
        self.gone.len() + self.rows.len()
    }

    fn remove(&mut self, base: &Terms, source: &Source, id: &RowId) {
        let key = (source.clone(), id.clone());
        if let Some(slot) = self.by_row.remove(&key) {
            let i = (slot - self.base_slots) as usize;
            let Some(s) = self.rows[i].take() else {
                return;
            };
            for (w, _) in &s.words {
                if let Some(list) = self.postings.get_mut(w) {
                    list.remove(&slot);
                }
            }
            let len = std::mem::take(&mut self.lens[i]);
            self.uncount(len);
            return;
        }
        let Some(slot) = base.slot_of(source, id) else {
            return;
        };
        if !self.gone.insert(slot) {
            return;
        }
        let Some(s) = base.slot(slot) else {
            return;
        };
        for (w, _) in &s.words {
            *self.gone_df.entry(*w).or_default() += 1;
        }
        self.uncount(Lists::len(base, slot));
    }

    fn uncount(&mut self, len: u32) {
        if len > 0 {
            self.counted -= 1;
            self.tokens -= len as i64;
        }
    }

    fn insert(&mut self, base: &Terms, hit: Hit, tokens: Vec<String>, vector: &[f32]) {
        self.remove(base, &hit.source, &hit.id);
        let len = tokens.len() as u32;
        let words = terms::counted_words(tokens, |t| match base.word_of(&t) {
            Some(w) => w,
            None => {
                let next = self.base_words + self.new_words.len() as u32;
                *self.new_words.entry(t).or_insert(next)
            }
        });
        let slot = self.base_slots + self.rows.len() as u32;
        for &(w, n) in &words {
            self.postings.entry(w).or_default().insert(slot, n);
        }
        if len > 0 {
            self.counted += 1;
            self.tokens += len as i64;
        }
        let dim = base.vectors().map(vectors::Vectors::dim);
        if dim != Some(vector.len()) {
            self.vectors_lost = true;
        }
        let kept = (!self.vectors_lost).then(|| (vector.to_vec(), vectors::inverse_norm(vector)));
        self.vectors.push(kept.unwrap_or_default());
        self.by_row
            .insert((hit.source.clone(), hit.id.clone()), slot);
        self.lens.push(len);
        self.rows.push(Some(Slot { hit, words }));
    }

    /// Whether the rows' vectors are all kept, `base`'s and these.
    fn vectors_kept(&self, base: &Terms) -> bool {
        let Some(v) = base.vectors() else {
            return false;
        };
        let on_top = self.by_row.len();
        !self.vectors_lost && v.len() - self.gone.len().min(v.len()) + on_top <= vectors::MAX_ROWS
    }

    fn row(&self, slot: u32) -> Option<&Slot> {
        let i = slot.checked_sub(self.base_slots)? as usize;
        self.rows.get(i)?.as_ref()
    }
}

/// A base of [`Terms`] with the rows on top, as scoring reads them.
struct View<'a> {
    base: &'a Terms,
    top: &'a Top,
}

impl View<'_> {
    fn base_slot(&self, slot: u32) -> bool {
        slot < self.top.base_slots && !self.top.gone.contains(&slot)
    }
}

impl Lists for View<'_> {
    fn slots(&self) -> usize {
        (self.top.base_slots as usize) + self.top.rows.len()
    }
    fn counted(&self) -> u64 {
        (self.base.counted() as i64 + self.top.counted) as u64
    }
    fn tokens(&self) -> u64 {
        (Lists::tokens(self.base) as i64 + self.top.tokens) as u64
    }
    fn word(&self, text: &str) -> Option<u32> {
        (self.base.word_of(text)).or_else(|| self.top.new_words.get(text).copied())
    }
    fn df(&self, w: u32) -> usize {
        let gone = self.top.gone_df.get(&w).copied().unwrap_or(0) as usize;
        let on_top = self.top.postings.get(&w).map_or(0, HashMap::len);
        self.base.df(w) - gone + on_top
    }
    fn each(&self, w: u32, f: &mut dyn FnMut(u32, u32)) {
        match self.top.gone.is_empty() {
            true => self.base.each(w, f),
            false => self.base.each(w, &mut |slot, tf| {
                if !self.top.gone.contains(&slot) {
                    f(slot, tf)
                }
            }),
        }
        for (&slot, &tf) in self.top.postings.get(&w).into_iter().flatten() {
            f(slot, tf);
        }
    }
    fn tf(&self, w: u32, slot: u32) -> Option<u32> {
        match slot < self.top.base_slots {
            true if self.base_slot(slot) => self.base.tf(w, slot),
            true => None,
            false => self.top.postings.get(&w)?.get(&slot).copied(),
        }
    }
    fn len(&self, slot: u32) -> u32 {
        match slot < self.top.base_slots {
            true if self.base_slot(slot) => Lists::len(self.base, slot),
            true => 0,
            false => (self.top.lens)
                .get((slot - self.top.base_slots) as usize)
                .copied()
                .unwrap_or(0),
        }
    }
    fn kind(&self, slot: u32) -> Option<RowKind> {
        Some(self.slot(slot)?.hit.kind)
    }
    fn id(&self, slot: u32) -> Option<&str> {
        Some(self.slot(slot)?.hit.id.as_str())
    }
    fn hit(&self, slot: u32) -> Option<Hit> {
        Some(self.slot(slot)?.hit.clone())
    }
}

impl View<'_> {
    fn slot(&self, slot: u32) -> Option<&Slot> {
        match slot < self.top.base_slots {
            true if self.base_slot(slot) => self.base.slot(slot),
            true => None,
            false => self.top.row(slot),
        }
    }

    /// Live row `slot`'s vector and its inverse norm, if kept (`None`
    /// for a slot no row holds: a base row taken out, or a row on top
    /// written again or deleted).
    fn vector(&self, slot: u32) -> Option<(&[f32], f32)> {
        self.slot(slot)?;
        match slot < self.top.base_slots {
            true => {
                let v = self.base.vectors()?;
                v.live(slot).then(|| (v.get(slot), v.inverse_norm(slot)))
            }
            false => {
                let i = (slot - self.top.base_slots) as usize;
                let (v, inverse) = self.top.vectors.get(i)?;
                Some((v.as_slice(), *inverse))
            }
        }
    }
}

/// The rows' words and vectors as of one table version (or none yet):
/// what a search reads, without a lock.
#[derive(Clone)]
pub(super) struct Snapshot {
    version: Option<u64>,
    base: Base,
    top: Arc<Top>,
}

impl Default for Snapshot {
    fn default() -> Snapshot {
        Snapshot {
            version: None,
            base: Base::Terms(Arc::default()),
            top: Arc::default(),
        }
    }
}

impl Snapshot {
    /// The table version these rows are, if any.
    pub(super) fn version(&self) -> Option<u64> {
        self.version
    }

    /// Scoring's lists of these rows, for `f`.
    fn with<T>(&self, f: impl FnOnce(&dyn Lists) -> T) -> T {
        match &self.base {
            Base::Mapped(m) => f(m.as_ref()),
            Base::Terms(base) => f(&View {
                base,
                top: &self.top,
            }),
        }
    }

    /// The sum of the idf of `query`'s words ([`terms::idf_sum`]).
    pub(super) fn idf_sum(&self, query: &str) -> f32 {
        let tokens = terms::query_tokens(query);
        self.with(|l| terms::idf_sum(l, &tokens))
    }

    /// The `n` rows scoring best for `query` ([`terms::top`]).
    pub(super) fn top(&self, query: &str, n: usize) -> Vec<Hit> {
        let tokens = terms::query_tokens(query);
        self.with(|l| terms::top(l, &tokens, n))
    }

    /// The vector list of a search from the vectors kept in memory (or
    /// in the words file): the `n` rows nearest `query` by cosine
    /// distance, each scored minus its distance, as LanceDB's exact scan
    /// lists them (equal distances by id). `None` when no vectors are
    /// kept: LanceDB answers.
    pub(super) fn nearest(&self, query: &[f32], n: usize) -> Option<Ranked> {
        self.nearest_where(query, n, None)
    }

    /// [`Snapshot::nearest`] among the rows of `kind` only (the similar
    /// entries an append is shown).
    pub(super) fn nearest_of(&self, query: &[f32], n: usize, kind: RowKind) -> Option<Ranked> {
        self.nearest_where(query, n, Some(kind))
    }

    fn nearest_where(&self, query: &[f32], n: usize, kind: Option<RowKind>) -> Option<Ranked> {
        match &self.base {
            Base::Mapped(m) if m.dim > 0 => {
                let keep = |s: u32| kind.is_none_or(|k| m.kind(s) == Some(k));
                let vector = |s: u32| m.vector(s).unwrap_or((&[], 0.0));
                let near = vectors::nearest_among(m.dim, m.rows, (query, n), keep, vector);
                Some(ranked(m.as_ref(), near, n, |s| m.vector(s)))
            }
            Base::Terms(base) if self.top.vectors_kept(base) => {
                let view = View {
                    base,
                    top: &self.top,
                };
                let dim = base.vectors()?.dim();
                let keep = |s: u32| {
                    view.vector(s).is_some() && kind.is_none_or(|k| view.kind(s) == Some(k))
                };
                let vector = |s: u32| view.vector(s).unwrap_or((&[], 0.0));
                let slots = Lists::slots(&view);
                let near = vectors::nearest_among(dim, slots, (query, n), keep, vector);
                Some(ranked(&view, near, n, |s| view.vector(s)))
            }
            _ => None,
        }
    }

    /// The vector of row `id` of `source`, if vectors are kept.
    pub(super) fn vector_of(&self, source: &Source, id: &RowId) -> Option<Vec<f32>> {
        match &self.base {
            Base::Mapped(m) => {
                let slot = m.slot_of(source, id.as_str())?;
                m.vector(slot).map(|(v, _)| v.to_vec())
            }
            Base::Terms(base) => {
                let view = self.view(base);
                let slot = self.slot_on(base, source, id)?;
                view.vector(slot).map(|(v, _)| v.to_vec())
            }
        }
    }

    /// Row `id` of `source` as a search shows it (score 0), if it is one
    /// of these rows.
    pub(super) fn hit_of(&self, source: &Source, id: &RowId) -> Option<Hit> {
        match &self.base {
            Base::Mapped(m) => m.hit(m.slot_of(source, id.as_str())?),
            Base::Terms(base) => self.view(base).hit(self.slot_on(base, source, id)?),
        }
    }

    fn view<'a>(&'a self, base: &'a Terms) -> View<'a> {
        View {
            base,
            top: &self.top,
        }
    }

    /// The slot of row `id` of `source` on `base` with the rows on top
    /// (a base slot the top took out holds no row: [`View`] says so).
    fn slot_on(&self, base: &Terms, source: &Source, id: &RowId) -> Option<u32> {
        match self.top.by_row.get(&(source.clone(), id.clone())) {
            Some(&slot) => Some(slot),
            None => base.slot_of(source, id),
        }
    }

    /// Whether the rows are served from the words file.
    #[cfg(test)]
    pub(super) fn is_mapped(&self) -> bool {
        matches!(self.base, Base::Mapped(_))
    }
}

/// The nearest slots `near` (with their distances) as a search's vector
/// list: equal distances by id, at most `n`, each with its vector.
fn ranked<'a>(
    lists: &dyn Lists,
    near: Vec<(u32, f32)>,
    n: usize,
    vector: impl Fn(u32) -> Option<(&'a [f32], f32)>,
) -> Ranked {
    let mut near: Vec<(Hit, u32, f32)> = near
        .into_iter()
        .filter_map(|(slot, d)| Some((lists.hit(slot)?, slot, d)))
        .collect();
    near.sort_by(|a, b| a.2.total_cmp(&b.2).then_with(|| a.0.id.cmp(&b.0.id)));
    near.truncate(n);
    Ranked {
        scores: near.iter().map(|(_, _, d)| -d).collect(),
        rows: near
            .into_iter()
            .map(|(hit, slot, _)| {
                let v = vector(slot).map(|(v, _)| v.to_vec()).unwrap_or_default();
                (hit, v)
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests;
