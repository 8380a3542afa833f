//! What a search reads of the index's words and vectors: an immutable
//! [`Snapshot`] the owner publishes after each change, which readers take
//! and score without a lock, a load or a write.
//!
//! A snapshot is a base shared by every snapshot since it was made (the
//! rows' words loaded from the table, or read in place from the words
//! file: [`super::terms`], [`super::words`]) and the rows written since,
//! on top ([`Top`]): rows added, and the base's rows taken out. A write
//! copies the top only, never the base; once the top holds more than
//! [`fold_at`] rows, the owner folds it into a new base (a copy of the
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

use std::sync::Arc;

use arc_swap::ArcSwap;
use lance_index::scalar::inverted::tokenizer::document_tokenizer::LanceTokenizer;
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use super::RowKind;
use super::search::{Hit, Ranked};
use super::terms::{self, Lists, Slot, Terms};
use super::vectors;
use super::words::Mapped;
use crate::Result;
use crate::ids::RowId;
use crate::layout::Source;

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

    /// Row `slot`'s vector and its inverse norm, if kept.
    fn vector(&self, slot: u32) -> Option<(&[f32], f32)> {
        match slot < self.top.base_slots {
            true => {
                let v = self.base.vectors()?;
                v.live(slot).then(|| (v.get(slot), v.inverse_norm(slot)))
            }
            false => {
                let (v, inverse) = self
                    .top
                    .vectors
                    .get((slot - self.top.base_slots) as usize)?;
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
                    view.vector(s).is_some()
                        && (s >= self.top.base_slots || view.base_slot(s))
                        && kind.is_none_or(|k| view.kind(s) == Some(k))
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
                let view = View {
                    base,
                    top: &self.top,
                };
                let on_top = self.top.by_row.get(&(source.clone(), id.clone()));
                let slot = match on_top {
                    Some(&slot) => slot,
                    None => base.slot_of(source, id).filter(|&s| view.base_slot(s))?,
                };
                view.vector(slot).map(|(v, _)| v.to_vec())
            }
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

/// Rows on top past which a write folds them into a new base: the
/// larger of 256 and four times the square root of the base's rows, so
/// that the top a write copies and the base a fold copies (once per that
/// many rows) cost about alike per row written.
fn fold_at(base_rows: usize) -> usize {
    (4 * base_rows.isqrt()).max(256)
}

/// The owner's side of the snapshots: their parts as plain fields, and
/// the version rules (module doc). Every change publishes a snapshot.
pub(super) struct Model {
    version: Option<u64>,
    /// The last table version this handle's own writes left (kept when
    /// the rows are dropped): a version the process made itself.
    made: Option<u64>,
    /// The version a write of the handle started from, while its rows are
    /// shown ahead of its commit ([`Model::ahead`]).
    ahead: Option<u64>,
    base: Base,
    top: Arc<Top>,
    tokenizer: Box<dyn LanceTokenizer>,
    published: Arc<ArcSwap<Snapshot>>,
}

impl Model {
    /// No rows yet; snapshots go to `published`.
    pub(super) fn new(published: Arc<ArcSwap<Snapshot>>) -> Result<Model> {
        let mut model = Model {
            version: None,
            made: None,
            ahead: None,
            base: Base::Terms(Arc::default()),
            top: Arc::default(),
            tokenizer: terms::doc_tokenizer()?,
            published,
        };
        model.clear();
        Ok(model)
    }

    fn publish(&self) {
        self.published.store(Arc::new(Snapshot {
            version: self.version,
            base: self.base.clone(),
            top: self.top.clone(),
        }));
    }

    /// The table version these rows are, if any.
    pub(super) fn version(&self) -> Option<u64> {
        self.version
    }

    /// Every row of the table at `version`, in place of what it held.
    pub(super) fn load(&mut self, version: u64, rows: Vec<(Hit, Vec<f32>)>, dim: Option<usize>) {
        match Terms::loaded(rows, dim) {
            Ok(terms) => {
                self.set_base(Base::Terms(Arc::new(terms)));
                self.version = Some(version);
                self.publish();
            }
            Err(e) => {
                tracing::warn!("the words not loaded: {e:#}");
                self.clear();
            }
        }
    }

    /// Serve the rows of the words file `m` (read for the table's version).
    pub(super) fn map(&mut self, m: Mapped) {
        let version = m.version;
        self.set_base(Base::Mapped(Arc::new(m)));
        self.version = Some(version);
        self.publish();
    }

    fn set_base(&mut self, base: Base) {
        self.top = Arc::new(match &base {
            Base::Terms(t) => Top::on(t),
            Base::Mapped(_) => Top::default(),
        });
        self.base = base;
        self.ahead = None;
    }

    /// The handle changed the rows from `before` to `after`: `deleted`
    /// (source, id) gone and `added` there. Valid only if these were the
    /// rows at `before`; otherwise they are dropped, to be loaded again.
    /// When these rows were shown ahead of the write ([`Model::ahead`]),
    /// they are already `after`'s.
    pub(super) fn wrote<'a>(
        &mut self,
        before: u64,
        after: u64,
        deleted: impl IntoIterator<Item = (&'a str, &'a str)>,
        added: impl IntoIterator<Item = (Hit, &'a [f32])>,
    ) {
        self.made = Some(after);
        if let Some(from) = self.ahead.take() {
            match from == before && self.version == Some(before) {
                true => self.version = Some(after),
                false => return self.clear(),
            }
            return self.publish();
        }
        if self.version != Some(before) || !self.unmapped() {
            return self.clear();
        }
        self.apply(deleted, added);
        self.version = Some(after);
        self.publish();
    }

    /// Show a write's rows to searches before the table commits them: the
    /// rows of version `before` with `deleted` gone and `added` there,
    /// still labelled `before` until [`Model::wrote`] gives them the
    /// version the commit made, or [`Model::behind`] drops them. Only
    /// when these are `before`'s rows and their vectors are kept, after
    /// the write too (a search whose vectors LanceDB lists would not find
    /// the rows yet); false when not shown. Writes shown from the same
    /// version stack: one commit then makes them all ([`super::held`]).
    pub(super) fn ahead<'a>(
        &mut self,
        before: u64,
        deleted: impl IntoIterator<Item = (&'a str, &'a str)>,
        added: impl IntoIterator<Item = (Hit, &'a [f32])>,
    ) -> bool {
        let kept = match &self.base {
            Base::Terms(t) => t.vectors().is_some(),
            Base::Mapped(m) => m.dim > 0,
        };
        // Rows shown ahead keep their version's label: a write from
        // another version is refused here.
        if self.version != Some(before) || !kept || !self.unmapped() {
            return false;
        }
        self.apply(deleted, added);
        if !self.vectors_kept() {
            // One row too many to keep vectors: no search may read these.
            self.clear();
            return false;
        }
        self.ahead = Some(before);
        self.publish();
        true
    }

    fn vectors_kept(&self) -> bool {
        match &self.base {
            Base::Terms(t) => self.top.vectors_kept(t),
            Base::Mapped(m) => m.dim > 0,
        }
    }

    /// The write shown ahead did not commit: drop every row, to be loaded
    /// again from the table.
    pub(super) fn behind(&mut self) {
        if self.ahead.is_some() {
            self.clear();
        }
    }

    /// Put the changes on top (the base in memory: [`Model::unmapped`]),
    /// folding them into a new base once the top is large.
    fn apply<'a>(
        &mut self,
        deleted: impl IntoIterator<Item = (&'a str, &'a str)>,
        added: impl IntoIterator<Item = (Hit, &'a [f32])>,
    ) {
        let Base::Terms(base) = &self.base else {
            return;
        };
        let top = Arc::make_mut(&mut self.top);
        for (source, id) in deleted {
            if let Some(source) = Source::parse(source) {
                top.remove(base, &source, &RowId::from(id));
            }
        }
        for (hit, v) in added {
            let tokens = terms::tokens(self.tokenizer.as_mut(), &hit.text);
            top.insert(base, hit, tokens, v);
        }
        if top.size() > fold_at(base.rows()) {
            self.fold();
        }
    }

    /// A new base: the old one's rows with the top's changes made.
    fn fold(&mut self) {
        let Base::Terms(base) = &self.base else {
            return;
        };
        let mut folded = Terms::clone(base);
        let view = View {
            base,
            top: &self.top,
        };
        for &slot in &self.top.gone {
            if let Some(s) = base.slot(slot) {
                folded.remove(&s.hit.source, &s.hit.id);
            }
        }
        for (i, row) in self.top.rows.iter().enumerate() {
            let Some(row) = row else { continue };
            let slot = self.top.base_slots + i as u32;
            let vector = view.vector(slot).map_or(&[][..], |(v, _)| v);
            let tokens = terms::tokens(self.tokenizer.as_mut(), &row.hit.text);
            folded.insert(row.hit.clone(), tokens, vector);
        }
        let ahead = self.ahead;
        self.set_base(Base::Terms(Arc::new(folded)));
        self.ahead = ahead;
    }

    /// The handle rewrote the table from `before` to `after` without
    /// changing its rows (compaction, an index build).
    pub(super) fn same_rows(&mut self, before: u64, after: u64) {
        self.made = Some(after);
        match self.version == Some(before) && self.ahead.is_none() {
            true => self.version = Some(after),
            false => return self.clear(),
        }
        self.publish();
    }

    /// Forget every row (to be loaded again).
    pub(super) fn clear(&mut self) {
        self.version = None;
        self.set_base(Base::Terms(Arc::default()));
        self.publish();
    }

    /// Whether this handle's own writes left the table at the version
    /// these rows are.
    pub(super) fn made_here(&self) -> bool {
        self.version.is_some() && self.made == self.version
    }

    /// The words file's contents for these rows, if they were loaded from
    /// the table (not changed by writes since, nor read from the file);
    /// the caller sets its stamp.
    pub(super) fn parts(&self) -> Option<super::words::Parts<'_>> {
        let version = self.version.filter(|_| self.ahead.is_none())?;
        match &self.base {
            Base::Terms(t) if self.top.size() == 0 => t.parts(version),
            _ => None,
        }
    }

    /// The rows of the words file this handle serves, if any, taken into
    /// memory, so that a write can change them: false (and nothing held)
    /// if the file does not read back whole. Decoding the file's hits is
    /// most of it, and it is a fraction of loading the rows from the
    /// table and tokenising them (BENCHMARKS.md): a first append after a
    /// search that read the file (a daemon's, `memd mcp`'s) paid that
    /// load.
    pub(super) fn unmapped(&mut self) -> bool {
        let Base::Mapped(m) = &self.base else {
            return true;
        };
        match Terms::from_mapped(m) {
            Some(terms) => {
                self.set_base(Base::Terms(Arc::new(terms)));
                self.publish();
                true
            }
            None => {
                self.clear();
                false
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::rows::Row;

    const DAY: &str = "archive/2026-01-01.md";

    fn row(i: u32, text: &str) -> (Hit, Vec<f32>) {
        let row = Row {
            id: RowId::from(format!("r{i}").as_str()),
            kind: RowKind::Fact,
            source: Source::Day("2026-01-01".into()),
            day: Some("2026-01-01".into()),
            text: text.into(),
            session: None,
            category: None,
        };
        (row.hit(), vec![i as f32 + 1.0, 1.0])
    }

    fn model() -> (Model, Arc<ArcSwap<Snapshot>>) {
        let published = Arc::new(ArcSwap::default());
        (Model::new(published.clone()).unwrap(), published)
    }

    /// What a search reads of `s`: its words' and its vectors' lists.
    fn lists(s: &Snapshot, queries: &[&str]) -> Vec<Vec<(String, String)>> {
        let mut out = Vec::new();
        for q in queries {
            let top = s.top(q, 10).into_iter();
            out.push(
                top.map(|h| (h.id.to_string(), h.score.to_string()))
                    .collect(),
            );
            out.push(vec![("idf".into(), s.idf_sum(q).to_string())]);
        }
        let near = s.nearest(&[4.0, 1.0], 10).expect("vectors kept");
        let pairs = near.rows.iter().zip(&near.scores);
        out.push(
            pairs
                .map(|((h, v), s)| (format!("{} {v:?}", h.id), s.to_string()))
                .collect(),
        );
        out
    }

    const QUERIES: [&str; 4] = ["basil", "dog rex", "garden tea morning", "the"];

    /// Rows shown ahead of a write are, to a search, the rows the write
    /// leaves (the same words, scores and vectors as those rows loaded
    /// anew); the write landing gives them its version without changing
    /// them again, and a write that does not land leaves none of them.
    #[test]
    fn rows_shown_ahead_of_a_write_are_those_it_leaves_and_go_if_it_does_not_land() {
        let base = vec![
            row(0, "tea in the morning"),
            row(1, "a dog called rex"),
            row(2, "bees in the garden"),
        ];
        let added = row(3, "basil beside the tomatoes in the garden");
        let deleted = [(DAY, "r1")];
        let hits = || [(added.0.clone(), added.1.as_slice())];
        let (mut left, seen) = model();
        let rows = vec![base[0].clone(), base[2].clone(), added.clone()];
        left.load(8, rows, Some(2));
        let want = lists(&seen.load(), &QUERIES);

        let (mut shown, seen) = model();
        shown.load(7, base.clone(), Some(2));
        assert!(shown.ahead(7, deleted, hits()));
        assert_eq!(
            seen.load().version(),
            Some(7),
            "labelled as before the write"
        );
        assert_eq!(lists(&seen.load(), &QUERIES), want, "shown ahead");
        shown.wrote(7, 8, deleted, hits());
        assert_eq!(seen.load().version(), Some(8));
        assert_eq!(lists(&seen.load(), &QUERIES), want, "once the write landed");
        shown.behind();
        assert_eq!(
            seen.load().version(),
            Some(8),
            "a landed write is not taken back"
        );

        let (mut failed, seen) = model();
        failed.load(7, base.clone(), Some(2));
        assert!(failed.ahead(7, deleted, hits()));
        let more = row(4, "mint by the door");
        let none: [(&str, &str); 0] = [];
        let mint = || [(more.0.clone(), more.1.as_slice())];
        assert!(
            !failed.ahead(6, none, mint()),
            "writes from another version"
        );
        assert!(seen.load().top("mint", 10).is_empty());
        assert!(
            failed.ahead(7, none, mint()),
            "writes from one version stack"
        );
        assert_eq!(seen.load().top("mint", 10).len(), 1);
        failed.behind();
        assert_eq!(seen.load().version(), None, "to be loaded again");
        assert!(seen.load().top("basil", 10).is_empty());
        assert!(seen.load().top("mint", 10).is_empty());

        let (mut other, _) = model();
        other.load(6, base.clone(), Some(2));
        assert!(!other.ahead(7, deleted, hits()), "rows of another version");
        let (mut unkept, seen) = model();
        unkept.load(7, base, None);
        assert!(!unkept.ahead(7, deleted, hits()), "vectors not kept");
        assert!(seen.load().top("basil", 10).is_empty());
        assert_eq!(seen.load().version(), Some(7));
    }

    /// Rows written on top of a base, and folded into new bases as they
    /// pile up, read as the same rows loaded anew at every step, while a
    /// snapshot taken before the writes reads as it did.
    #[test]
    fn snapshots_read_as_their_rows_loaded_anew_and_never_change_once_taken() {
        let words = [
            "tea", "dog", "rex", "garden", "basil", "bees", "mint", "the", "morning",
        ];
        let text = |i: u32| -> String {
            let pick = |k: u32| words[((i * 7 + k * 3) as usize) % words.len()];
            format!("{} {} {} {}", pick(0), pick(i % 3), pick(2), i % 5)
        };
        let mut live: Vec<(Hit, Vec<f32>)> = (0..40).map(|i| row(i, &text(i))).collect();
        let (mut model, seen) = model();
        model.load(1, live.clone(), Some(2));
        let first = seen.load_full();
        let first_read = lists(&first, &QUERIES);
        let mut version = 1;
        for step in 0..700u32 {
            let gone = (step % 4 == 0 && live.len() > 10)
                .then(|| live.remove((step as usize * 13) % live.len()));
            let i = 40 + step % 500;
            let new = row(i, &text(i + step));
            live.retain(|(h, _)| h.id != new.0.id);
            live.push(new.clone());
            let deleted: Vec<(String, String)> = gone
                .iter()
                .map(|(h, _)| (DAY.to_string(), h.id.to_string()))
                .collect();
            let deleted = deleted.iter().map(|(s, i)| (s.as_str(), i.as_str()));
            model.wrote(
                version,
                version + 1,
                deleted,
                [(new.0.clone(), new.1.as_slice())],
            );
            version += 1;
            if step % 50 == 0 || step > 690 {
                let (mut fresh, fresh_seen) = super::tests::model();
                fresh.load(version, live.clone(), Some(2));
                let want = lists(&fresh_seen.load(), &QUERIES);
                assert_eq!(lists(&seen.load(), &QUERIES), want, "step {step}");
            }
        }
        assert_eq!(seen.load().version(), Some(version));
        assert_eq!(lists(&first, &QUERIES), first_read, "a snapshot taken");
    }
}
