//! The owner's side of the snapshots ([`Model`]): their parts as plain
//! fields, the version rules, and the fold of the rows on top into a new
//! base.

use std::sync::Arc;

use arc_swap::ArcSwap;
use lance_index::scalar::inverted::tokenizer::document_tokenizer::LanceTokenizer;

use super::{Base, Snapshot, Top, View};
use crate::Result;
use crate::ids::RowId;
use crate::index::search::Hit;
use crate::index::terms::{self, Terms};
use crate::index::words::{Mapped, Parts};
use crate::layout::Source;

/// Rows on top past which a write folds them into a new base: twice the
/// square root of the base's rows, at least 64. A write copies the top (T
/// rows, T/2 on average) and a fold copies the base (N rows) once per T
/// rows written, so a row written costs about c_top × T/2 + c_base × N/T,
/// least at T = √(2 N c_base / c_top); copying costs about the same per
/// row either way (0.7 µs a row on top, 0.7–1.5 µs a row of the base at
/// 3,000 and 20,000 rows: BENCHMARKS.md, "Searches read a snapshot"), so
/// T = 2√N.
fn fold_at(base_rows: usize) -> usize {
    (2 * base_rows.isqrt()).max(64)
}

/// The owner's side of the snapshots: their parts as plain fields, and
/// the version rules (module doc). Every change publishes a snapshot.
pub(in crate::index) struct Model {
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
    pub(in crate::index) fn new(published: Arc<ArcSwap<Snapshot>>) -> Result<Model> {
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
    pub(in crate::index) fn version(&self) -> Option<u64> {
        self.version
    }

    /// Every row of the table at `version`, in place of what it held.
    pub(in crate::index) fn load(
        &mut self,
        version: u64,
        rows: Vec<(Hit, Vec<f32>)>,
        dim: Option<usize>,
    ) {
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
    pub(in crate::index) fn map(&mut self, m: Mapped) {
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
    pub(in crate::index) fn wrote<'a>(
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
    pub(in crate::index) fn ahead<'a>(
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
    pub(in crate::index) fn behind(&mut self) {
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
                top.remove(base, &source, &RowId::stored(id));
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
    pub(in crate::index) fn same_rows(&mut self, before: u64, after: u64) {
        self.made = Some(after);
        match self.version == Some(before) && self.ahead.is_none() {
            true => self.version = Some(after),
            false => return self.clear(),
        }
        self.publish();
    }

    /// Forget every row (to be loaded again).
    pub(in crate::index) fn clear(&mut self) {
        self.version = None;
        self.set_base(Base::Terms(Arc::default()));
        self.publish();
    }

    /// Whether this handle's own writes left the table at the version
    /// these rows are.
    pub(in crate::index) fn made_here(&self) -> bool {
        self.version.is_some() && self.made == self.version
    }

    /// The words file's contents for these rows, if they were loaded from
    /// the table (not changed by writes since, nor read from the file);
    /// the caller sets its stamp.
    pub(in crate::index) fn parts(&self) -> Option<Parts<'_>> {
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
    pub(in crate::index) fn unmapped(&mut self) -> bool {
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
