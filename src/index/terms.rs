//! Full-text scoring kept by memd: BM25 over the table's live rows, in
//! memory, kept in step by the handle's own writes.
//!
//! It replaces LanceDB's full-text index, which gave two bad choices.
//! Scored by the index, rows indexed at different times were scored with
//! different statistics (the index still counts deleted rows and not yet
//! new ones), so results depended on the index's history; keeping them a
//! function of the rows meant building the index anew after every change,
//! ~25 ms at 3,000 rows inside the sync lock, which held a busy daemon
//! under 300 requests/s (`memd bench serve --clients 16`). Scored without
//! it, every query tokenised every row (3.3 µs a row). Here a write costs
//! the tokenising of its own rows, and a query touches only the rows that
//! share a word with it.
//!
//! The words are LanceDB's (`FtsIndexBuilder::default()`: split on what is
//! not a letter or digit, tokens over 40 bytes dropped, lower case, English
//! stemming and stop words, ASCII folding) and so is the score (BM25, k1
//! 1.2, b 0.75, idf `ln(1 + (N - n + 0.5) / (n + 0.5))`), with `N`, `n` and
//! the mean length over the live rows that have a word: a row's score is a
//! function of the rows, however and whenever they were written. Equal
//! scores are ordered by id, and a list ends where scores differ
//! ([`Terms::top`]).
//!
//! Like `super::row_hashes`, it is valid for one table version: every write of
//! the handle records the version it left, and a version the handle did
//! not leave (another process wrote, or the process just started) means a
//! reload: from the words file when it is of that version ([`super::words`],
//! read in place, and dropped at the handle's first write), else from the
//! table, which then writes the words file. What is in memory is never
//! written back, so a crash loses nothing.
//!
//! A write may show its rows to searches before LanceDB commits them
//! ([`Terms::ahead`]): the rows then stay labelled with the version
//! before the write, and they are what that version's rows become once
//! the commit lands ([`Terms::wrote`]). Every search reads its rows here
//! (and its vectors, which is why only rows whose vectors are kept go
//! ahead), so a search answered in between sees the files as the write
//! makes them, as it would a moment later; a write that fails drops the
//! rows, to be loaded again from the table.

use rustc_hash::FxHashMap as HashMap;

use lance_index::scalar::inverted::tokenizer::document_tokenizer::LanceTokenizer;
use lance_tokenizer::TokenStream;
use lancedb::index::scalar::FtsIndexBuilder;

use super::RowKind;
use super::search::{Hit, Ranked};
use super::vectors::Vectors;
use crate::Result;
use crate::ids::RowId;
use crate::layout::Source;

/// BM25's term-frequency saturation and length normalisation (LanceDB's).
const K1: f32 = 1.2;
const B: f32 = 0.75;

/// A live row: the hit it shows (its score unset), and its words with how
/// often each occurs (its length is in `Terms::lens`).
struct Slot {
    hit: Hit,
    words: Vec<(u32, u32)>,
}

pub(super) struct Terms {
    version: Option<u64>,
    /// The last table version this handle's own writes left (kept when
    /// the rows are dropped): a version the process made itself.
    made: Option<u64>,
    tokenizer: Box<dyn LanceTokenizer>,
    slots: Vec<Option<Slot>>,
    /// Each slot's length in words (0 when free), beside `slots` for the
    /// scoring loop.
    lens: Vec<u32>,
    free: Vec<u32>,
    by_row: HashMap<(Source, RowId), u32>,
    words: HashMap<String, u32>,
    /// Word → (slot → occurrences).
    postings: Vec<HashMap<u32, u32>>,
    /// Live rows with at least one word, and their words in all.
    counted: u64,
    tokens: u64,
    /// The rows' vectors, while there are few enough ([`super::vectors`]).
    vectors: Option<Vectors>,
    /// The rows as the words file holds them, read instead of loading
    /// them from the table ([`super::words`]): read only, so the first
    /// write of the handle takes them into memory ([`Terms::unmapped`]).
    mapped: Option<super::words::Mapped>,
    /// The version a write of the handle started from, while its rows are
    /// shown ahead of its commit ([`Terms::ahead`]).
    ahead: Option<u64>,
}

impl Terms {
    pub(super) fn new() -> Result<Terms> {
        Ok(Terms {
            version: None,
            made: None,
            tokenizer: FtsIndexBuilder::default()
                .build()
                .map_err(|e| crate::Error::Index(Box::new(e)))?,
            slots: Vec::new(),
            lens: Vec::new(),
            free: Vec::new(),
            by_row: HashMap::default(),
            words: HashMap::default(),
            postings: Vec::new(),
            counted: 0,
            tokens: 0,
            vectors: None,
            mapped: None,
            ahead: None,
        })
    }

    /// The table version these rows are, if any.
    pub(super) fn version(&self) -> Option<u64> {
        self.version
    }

    /// Every row of the table at `version`, in place of what it held.
    /// Tokenising is half of it (3 µs a row), so it is split across the
    /// cores; the rows then go in one by one, in table order. Measured
    /// (`memd bench index`, `terms_load_ms`): 28 ms at 10,000 rows, 0.36 s
    /// at 100,000, once per process.
    pub(super) fn load(&mut self, version: u64, rows: Vec<(Hit, Vec<f32>)>, dim: Option<usize>) {
        self.clear();
        self.vectors = dim.map(Vectors::new);
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        let chunk = rows.len().div_ceil(threads).max(1);
        let tokens: Vec<Vec<Vec<String>>> = std::thread::scope(|scope| {
            let running: Vec<_> = rows
                .chunks(chunk)
                .map(|part| {
                    let mut tokenizer = self.tokenizer.box_clone();
                    scope.spawn(move || {
                        part.iter()
                            .map(|(d, _)| tokens(tokenizer.as_mut(), &d.text))
                            .collect()
                    })
                })
                .collect();
            running
                .into_iter()
                .map(|t| t.join().expect("tokenising panicked"))
                .collect()
        });
        for ((row, v), tokens) in rows.into_iter().zip(tokens.into_iter().flatten()) {
            self.insert_tokens(row, tokens, &v);
        }
        self.version = Some(version);
    }

    /// The handle changed the rows from `before` to `after`: `deleted`
    /// (source, id) gone and `added` there. Valid only if these were the
    /// rows at `before`; otherwise they are dropped, to be loaded again.
    /// When these rows were shown ahead of the write ([`Terms::ahead`]),
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
                false => self.clear(),
            }
            return;
        }
        if self.version != Some(before) || !self.unmapped() {
            return self.clear();
        }
        self.apply(deleted, added);
        self.version = Some(after);
    }

    /// Show a write's rows to searches before the table commits them: the
    /// rows of version `before` with `deleted` gone and `added` there,
    /// still labelled `before` until [`Terms::wrote`] gives them the
    /// version the commit made, or [`Terms::behind`] drops them. Only
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
        let kept = self.vectors.is_some() || self.mapped.as_ref().is_some_and(|m| m.dim > 0);
        // Rows shown ahead keep their version's label: a write from
        // another version is refused here.
        if self.version != Some(before) || !kept || !self.unmapped() {
            return false;
        }
        self.apply(deleted, added);
        if self.vectors.is_none() {
            // One row too many to keep vectors: no search may read these.
            self.clear();
            return false;
        }
        self.ahead = Some(before);
        true
    }

    /// The write shown ahead did not commit: drop every row, to be loaded
    /// again from the table.
    pub(super) fn behind(&mut self) {
        if self.ahead.is_some() {
            self.clear();
        }
    }

    fn apply<'a>(
        &mut self,
        deleted: impl IntoIterator<Item = (&'a str, &'a str)>,
        added: impl IntoIterator<Item = (Hit, &'a [f32])>,
    ) {
        for (source, id) in deleted {
            self.remove(source, id);
        }
        for (d, v) in added {
            let tokens = tokens(self.tokenizer.as_mut(), &d.text);
            self.insert_tokens(d, tokens, v);
        }
    }

    /// The handle rewrote the table from `before` to `after` without
    /// changing its rows (compaction, an index build).
    pub(super) fn same_rows(&mut self, before: u64, after: u64) {
        self.made = Some(after);
        match self.version == Some(before) && self.ahead.is_none() {
            true => self.version = Some(after),
            false => self.clear(),
        }
    }

    /// Forget every row (to be loaded again).
    pub(super) fn clear(&mut self) {
        self.version = None;
        self.ahead = None;
        self.slots.clear();
        self.lens.clear();
        self.free.clear();
        self.by_row.clear();
        self.words.clear();
        self.postings.clear();
        self.counted = 0;
        self.tokens = 0;
        self.vectors = None;
        self.mapped = None;
    }

    /// Add a row, given its words (from [`tokens`]) and its vector (kept
    /// while there are few enough rows: a vector of another dimension, or
    /// one row too many, and no vector is kept).
    fn insert_tokens(&mut self, hit: Hit, tokens: Vec<String>, vector: &[f32]) {
        let key = (hit.source.clone(), hit.id.clone());
        if let Some(&old) = self.by_row.get(&key) {
            // The same row twice (a table with a duplicate row): the last
            // one read stands, as one row.
            self.take(old);
        }
        let len = tokens.len() as u32;
        let mut words: Vec<(u32, u32)> = Vec::new();
        for t in tokens {
            let w = match self.words.get(&t) {
                Some(&w) => w,
                None => {
                    let w = self.words.len() as u32;
                    self.words.insert(t, w);
                    w
                }
            };
            match words.iter_mut().find(|(x, _)| *x == w) {
                Some((_, n)) => *n += 1,
                None => words.push((w, 1)),
            }
        }
        let slot = match self.free.pop() {
            Some(s) => s,
            None => {
                self.slots.push(None);
                self.lens.push(0);
                (self.slots.len() - 1) as u32
            }
        };
        self.postings
            .resize_with(self.words.len(), HashMap::default);
        for &(w, n) in &words {
            self.postings[w as usize].insert(slot, n);
        }
        if len > 0 {
            self.counted += 1;
            self.tokens += len as u64;
        }
        self.by_row.insert(key, slot);
        self.lens[slot as usize] = len;
        self.slots[slot as usize] = Some(Slot { hit, words });
        if let Some(v) = self.vectors.as_mut()
            && (!v.set(slot, vector) || v.len() > super::vectors::MAX_ROWS)
        {
            self.vectors = None;
        }
    }

    fn remove(&mut self, source: &str, id: &str) {
        let Some(source) = Source::parse(source) else {
            return;
        };
        if let Some(slot) = self.by_row.get(&(source, RowId::from(id))) {
            self.take(*slot);
        }
    }

    fn take(&mut self, slot: u32) {
        let Some(s) = self.slots[slot as usize].take() else {
            return;
        };
        for (w, _) in &s.words {
            self.postings[*w as usize].remove(&slot);
        }
        let len = std::mem::take(&mut self.lens[slot as usize]);
        if len > 0 {
            self.counted -= 1;
            self.tokens -= len as u64;
        }
        self.by_row.remove(&(s.hit.source, s.hit.id));
        if let Some(v) = self.vectors.as_mut() {
            v.unset(slot);
        }
        self.free.push(slot);
    }

    /// The vector list of a search from the vectors kept in memory (or
    /// in the words file): the `n` rows nearest `query` by cosine
    /// distance, each scored minus its distance, as LanceDB's exact scan
    /// lists them (equal distances by id). `None` when no vectors are
    /// kept: LanceDB answers.
    pub(super) fn nearest(&self, query: &[f32], n: usize) -> Option<Ranked> {
        self.nearest_where(query, n, |_| true)
    }

    /// [`Terms::nearest`] among the rows of `kind` only (the similar
    /// entries an append is shown).
    pub(super) fn nearest_of(&self, query: &[f32], n: usize, kind: RowKind) -> Option<Ranked> {
        let lists = self.lists();
        self.nearest_where(query, n, |slot| lists.kind(slot) == Some(kind))
    }

    fn nearest_where(&self, query: &[f32], n: usize, keep: impl Fn(u32) -> bool) -> Option<Ranked> {
        let near = match (&self.mapped, &self.vectors) {
            (Some(m), _) if m.dim > 0 => {
                let vector = |s: u32| m.vector(s).unwrap_or((&[], 0.0));
                let asked = (query, n);
                super::vectors::nearest_among(m.dim, m.rows, asked, keep, vector)
            }
            (None, Some(v)) => v.nearest(query, n, keep),
            _ => return None,
        };
        let lists = self.lists();
        let mut near: Vec<(Hit, u32, f32)> = near
            .into_iter()
            .filter_map(|(slot, d)| Some((lists.hit(slot)?, slot, d)))
            .collect();
        near.sort_by(|a, b| a.2.total_cmp(&b.2).then_with(|| a.0.id.cmp(&b.0.id)));
        near.truncate(n);
        Some(Ranked {
            scores: near.iter().map(|(_, _, d)| -d).collect(),
            rows: near
                .into_iter()
                .map(|(hit, slot, _)| {
                    let v = self.vector_at(slot).unwrap_or_default();
                    (hit, v)
                })
                .collect(),
        })
    }

    fn vector_at(&self, slot: u32) -> Option<Vec<f32>> {
        match &self.mapped {
            Some(m) => m.vector(slot).map(|(v, _)| v.to_vec()),
            None => self.vectors.as_ref().map(|v| v.get(slot).to_vec()),
        }
    }

    /// The vector of row `id` of `source`, if vectors are kept.
    pub(super) fn vector_of(&self, source: &Source, id: &RowId) -> Option<Vec<f32>> {
        let slot = match &self.mapped {
            Some(m) => m.slot_of(source, id.as_str())?,
            None => *self.by_row.get(&(source.clone(), id.clone()))?,
        };
        self.vector_at(slot)
    }

    /// What scoring reads: the words in memory, or those of the words file.
    fn lists(&self) -> &dyn Lists {
        match &self.mapped {
            Some(m) => m,
            None => self,
        }
    }

    /// The distinct words of `query`, as the tokenizer reads a search.
    fn query_tokens(&mut self, query: &str) -> Vec<String> {
        let mut seen: Vec<String> = Vec::new();
        let mut stream = self.tokenizer.token_stream_for_search(query);
        while stream.advance() {
            let text = &stream.token().text;
            if !seen.contains(text) {
                seen.push(text.clone());
            }
        }
        seen
    }

    /// The sum of the idf of `query`'s distinct words, a word no live row
    /// has counted at the greatest idf (as if one row had it): the BM25
    /// score of a row holding each word once at the mean length, which a
    /// hit's score is read against ([`super::search::words_score`]). So a
    /// row that holds the one known word of a query with another word no
    /// row has scores half, not all.
    pub(super) fn idf_sum(&mut self, query: &str) -> f32 {
        let tokens = self.query_tokens(query);
        let lists = self.lists();
        let docs = lists.counted() as f32;
        tokens
            .iter()
            .map(|w| {
                let df = lists.word(w).map_or(0, |i| lists.df(i));
                idf(docs, df.max(1) as f32)
            })
            .sum()
    }

    /// The `n` rows scoring best for `query` (at least one of its words),
    /// best first, equal scores by id; each hit's `score` is its BM25 score.
    /// Rows tied with the first row left out are left out too: which of
    /// equal rows make the cut would depend only on their ids, and in
    /// reciprocal rank fusion each would gain as much as a real match
    /// (a query whose one rare word is in one row, and whose common words
    /// are in 50 rows of the same length, must not lift 31 of those 50
    /// beside the one).
    ///
    /// Words are taken most telling first, each over all its rows, until
    /// `n` rows score more than any row not yet seen could with the words
    /// left (their greatest weight, idf × (k1 + 1), summed); the words left
    /// then only add to the rows that can still reach the `n`-th score
    /// (MaxScore). A word in every row (`user`) has an idf near 0, so a
    /// query costs the rows of its rarer words, not the whole table. The
    /// scores are the ones a full pass gives, summed in the same order.
    pub(super) fn top(&mut self, query: &str, n: usize) -> Vec<Hit> {
        let tokens = self.query_tokens(query);
        top(self.lists(), &tokens, n)
    }

    /// Whether the rows are served from the words file.
    #[cfg(test)]
    pub(super) fn is_mapped(&self) -> bool {
        self.mapped.is_some()
    }

    /// Whether this handle's own writes left the table at the version
    /// these rows are.
    pub(super) fn made_here(&self) -> bool {
        self.version.is_some() && self.made == self.version
    }

    /// The words file's contents for these rows, if they were loaded from
    /// the table (not kept in step by writes, nor read from the file);
    /// the caller sets its stamp.
    pub(super) fn parts(&self) -> Option<super::words::Parts<'_>> {
        let version = self
            .version
            .filter(|_| self.mapped.is_none() && self.ahead.is_none())?;
        let dim = self.vectors.as_ref().map_or(0, Vectors::dim);
        let mut slot_row = vec![u32::MAX; self.slots.len()];
        let mut rows = Vec::new();
        for (slot, s) in self.slots.iter().enumerate() {
            let Some(s) = s else { continue };
            slot_row[slot] = rows.len() as u32;
            let vector = match dim {
                0 => &[][..],
                _ => self.vectors.as_ref()?.get(slot as u32),
            };
            rows.push(super::words::Row {
                hit: &s.hit,
                len: self.lens[slot],
                vector,
            });
        }
        let mut spelled: Vec<&str> = vec![""; self.words.len()];
        for (w, &i) in &self.words {
            spelled[i as usize] = w;
        }
        let words = spelled
            .into_iter()
            .zip(&self.postings)
            .map(|(w, list)| {
                let list = list.iter().map(|(&s, &n)| (slot_row[s as usize], n));
                (w, list.collect())
            })
            .collect();
        Some(super::words::Parts {
            version,
            stamp: 0,
            counted: self.counted,
            tokens: self.tokens,
            dim,
            rows,
            words,
        })
    }

    /// The rows of the words file this handle serves, if any, taken into
    /// memory, so that a write can change them: false (and nothing held)
    /// if the file does not read back whole. Decoding the file's hits is
    /// most of it, and it is a fraction of loading the rows from the
    /// table and tokenising them (BENCHMARKS.md, issue 28): a first
    /// append after a search that read the file (a daemon's, `memd
    /// mcp`'s) paid that load.
    pub(super) fn unmapped(&mut self) -> bool {
        let Some(m) = self.mapped.take() else {
            return true;
        };
        let version = self.version;
        self.clear();
        if self.take_in(&m).is_none() {
            self.clear();
            return false;
        }
        self.version = version;
        true
    }

    /// Fill the emptied rows and words from `m`: the same slots and word
    /// numbers as the file's rows and words.
    fn take_in(&mut self, m: &super::words::Mapped) -> Option<()> {
        let mut row_words: Vec<Vec<(u32, u32)>> = vec![Vec::new(); m.rows];
        for w in 0..m.words as u32 {
            self.words.insert(m.spelling(w)?.to_string(), w);
            let list = m.postings(w);
            for &[slot, n] in list {
                row_words.get_mut(slot as usize)?.push((w, n));
            }
            self.postings
                .push(list.iter().map(|&[s, n]| (s, n)).collect());
        }
        self.vectors = (m.dim > 0).then(|| Vectors::new(m.dim));
        for (slot, words) in (0..m.rows as u32).zip(row_words) {
            let hit = m.hit(slot)?;
            if let Some(v) = self.vectors.as_mut() {
                v.set(slot, m.vector(slot)?.0);
            }
            self.by_row
                .insert((hit.source.clone(), hit.id.clone()), slot);
            self.lens.push(m.len(slot));
            self.slots.push(Some(Slot { hit, words }));
        }
        (self.counted, self.tokens) = (m.counted, m.tokens);
        Some(())
    }

    /// Serve the rows of the words file `m` (read for the table's version).
    pub(super) fn map(&mut self, m: super::words::Mapped) {
        self.clear();
        self.version = Some(m.version);
        self.mapped = Some(m);
    }
}

/// The rows' words as scoring reads them, from memory ([`Terms`]) or
/// from the words file ([`super::words::Mapped`]). Rows are slots, and
/// words numbers, of either.
trait Lists {
    /// Slots (free ones included).
    fn slots(&self) -> usize;
    /// Live rows with at least one word, and their words in all.
    fn counted(&self) -> u64;
    fn tokens(&self) -> u64;
    fn word(&self, text: &str) -> Option<u32>;
    /// Rows that have word `w`.
    fn df(&self, w: u32) -> usize;
    /// `f(slot, occurrences)` for each row that has word `w`.
    fn each(&self, w: u32, f: &mut dyn FnMut(u32, u32));
    /// Occurrences of word `w` in row `slot`, if any.
    fn tf(&self, w: u32, slot: u32) -> Option<u32>;
    /// Row `slot`'s length in words.
    fn len(&self, slot: u32) -> u32;
    fn kind(&self, slot: u32) -> Option<RowKind>;
    /// Row `slot`'s id (`None`: a free slot).
    fn id(&self, slot: u32) -> Option<&str>;
    fn hit(&self, slot: u32) -> Option<Hit>;
}

impl Lists for Terms {
    fn slots(&self) -> usize {
        self.slots.len()
    }
    fn counted(&self) -> u64 {
        self.counted
    }
    fn tokens(&self) -> u64 {
        self.tokens
    }
    fn word(&self, text: &str) -> Option<u32> {
        self.words.get(text).copied()
    }
    fn df(&self, w: u32) -> usize {
        self.postings.get(w as usize).map_or(0, HashMap::len)
    }
    fn each(&self, w: u32, f: &mut dyn FnMut(u32, u32)) {
        for (&slot, &tf) in self.postings.get(w as usize).into_iter().flatten() {
            f(slot, tf);
        }
    }
    fn tf(&self, w: u32, slot: u32) -> Option<u32> {
        self.postings.get(w as usize)?.get(&slot).copied()
    }
    fn len(&self, slot: u32) -> u32 {
        self.lens.get(slot as usize).copied().unwrap_or(0)
    }
    fn kind(&self, slot: u32) -> Option<RowKind> {
        Some(self.slots.get(slot as usize)?.as_ref()?.hit.kind)
    }
    fn id(&self, slot: u32) -> Option<&str> {
        Some(self.slots.get(slot as usize)?.as_ref()?.hit.id.as_str())
    }
    fn hit(&self, slot: u32) -> Option<Hit> {
        Some(self.slots.get(slot as usize)?.as_ref()?.hit.clone())
    }
}

impl Lists for super::words::Mapped {
    fn slots(&self) -> usize {
        self.rows
    }
    fn counted(&self) -> u64 {
        self.counted
    }
    fn tokens(&self) -> u64 {
        self.tokens
    }
    fn word(&self, text: &str) -> Option<u32> {
        super::words::Mapped::word(self, text)
    }
    fn df(&self, w: u32) -> usize {
        self.postings(w).len()
    }
    fn each(&self, w: u32, f: &mut dyn FnMut(u32, u32)) {
        for &[slot, tf] in self.postings(w) {
            f(slot, tf);
        }
    }
    fn tf(&self, w: u32, slot: u32) -> Option<u32> {
        let list = self.postings(w);
        let i = list.binary_search_by_key(&slot, |p| p[0]).ok()?;
        Some(list[i][1])
    }
    fn len(&self, slot: u32) -> u32 {
        super::words::Mapped::len(self, slot)
    }
    fn kind(&self, slot: u32) -> Option<RowKind> {
        super::words::Mapped::kind(self, slot)
    }
    fn id(&self, slot: u32) -> Option<&str> {
        super::words::Mapped::id(self, slot)
    }
    fn hit(&self, slot: u32) -> Option<Hit> {
        super::words::Mapped::hit(self, slot)
    }
}

/// The query's distinct words (`tokens`) that some live row has, each with
/// its idf, the most telling first (equal ones by spelling): the order
/// every row's score is summed in, which depends only on the rows.
fn query_words(l: &dyn Lists, tokens: &[String]) -> Vec<(u32, f32)> {
    let docs = l.counted() as f32;
    let mut out: Vec<(u32, f32, &String)> = Vec::new();
    for text in tokens {
        let Some(w) = l.word(text) else {
            continue;
        };
        let df = l.df(w) as f32;
        if df > 0.0 && !out.iter().any(|(o, _, _)| *o == w) {
            out.push((w, idf(docs, df), text));
        }
    }
    out.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.2.cmp(b.2)));
    out.into_iter().map(|(w, idf, _)| (w, idf)).collect()
}

/// [`Terms::top`] over `l`, for the query's distinct words `tokens`.
fn top(l: &dyn Lists, tokens: &[String], n: usize) -> Vec<Hit> {
    if l.counted() == 0 || n == 0 {
        return Vec::new();
    }
    let words = query_words(l, tokens);
    let left = |i: usize| -> f32 {
        let sum: f32 = words[i..].iter().map(|(_, idf)| idf * (K1 + 1.0)).sum();
        // Room for the rounding of the sums it bounds.
        sum * 1.001 + 1e-6
    };
    let mut scores = vec![0f32; l.slots()];
    let mut seen: Vec<u32> = Vec::new();
    let (mut i, mut cut) = (0, None);
    while i < words.len() {
        cut = nth(&scores, &seen, n).filter(|&t| t > left(i));
        if cut.is_some() {
            break;
        }
        let (w, idf) = words[i];
        l.each(w, &mut |slot, tf| {
            let Some(s) = scores.get_mut(slot as usize) else {
                return;
            };
            if *s == 0.0 {
                seen.push(slot);
            }
            *s += weight(l, idf, tf, slot);
        });
        i += 1;
    }
    if let Some(t) = cut {
        let floor = t - left(i);
        seen.retain(|&s| scores[s as usize] >= floor);
        for &(w, idf) in &words[i..] {
            for &slot in &seen {
                if let Some(tf) = l.tf(w, slot) {
                    scores[slot as usize] += weight(l, idf, tf, slot);
                }
            }
        }
    }
    best(l, &scores, seen, n)
}

/// A word's share of a row's score: idf × (k1 + 1) × tf / (tf + k1 ×
/// (1 - b + b × length / mean length)).
fn weight(l: &dyn Lists, idf: f32, tf: u32, slot: u32) -> f32 {
    let mean = l.tokens() as f32 / l.counted() as f32;
    let len = l.len(slot) as f32;
    let tf = tf as f32;
    let norm = K1 * (1.0 - B + B * len / mean);
    idf * (K1 + 1.0) * tf / (tf + norm)
}

fn best(l: &dyn Lists, scores: &[f32], seen: Vec<u32>, n: usize) -> Vec<Hit> {
    let mut ranked: Vec<(u32, &str, f32)> = seen
        .into_iter()
        .filter_map(|slot| Some((slot, l.id(slot)?, scores[slot as usize])))
        .collect();
    ranked.sort_by(|(_, a, x), (_, b, y)| y.total_cmp(x).then_with(|| a.cmp(b)));
    if let Some(&(_, _, out)) = ranked.get(n) {
        ranked.retain(|(_, _, s)| *s > out);
    }
    ranked
        .into_iter()
        .take(n)
        .filter_map(|(slot, _, score)| {
            Some(Hit {
                score,
                ..l.hit(slot)?
            })
        })
        .collect()
}

/// BM25's idf of a word `df` of `docs` rows have (LanceDB's formula).
fn idf(docs: f32, df: f32) -> f32 {
    ((docs - df + 0.5) / (df + 0.5) + 1.0).ln()
}

/// A text's words, as LanceDB's full-text index would store them.
fn tokens(tokenizer: &mut dyn LanceTokenizer, text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut stream = tokenizer.token_stream_for_doc(text);
    while stream.advance() {
        out.push(stream.token().text.clone());
    }
    out
}

/// The `n`-th best score of the rows `seen`, if there are `n`.
fn nth(scores: &[f32], seen: &[u32], n: usize) -> Option<f32> {
    if seen.len() < n {
        return None;
    }
    let mut v: Vec<f32> = seen.iter().map(|&s| scores[s as usize]).collect();
    let (_, t, _) = v.select_nth_unstable_by(n - 1, |a, b| b.total_cmp(a));
    Some(*t)
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

    /// What a search reads of `terms`: its words' and its vectors' lists.
    fn lists(terms: &mut Terms) -> Vec<Vec<(String, String)>> {
        let mut out = Vec::new();
        for q in ["basil", "dog rex", "garden tea morning", "the"] {
            let top = terms.top(q, 10).into_iter();
            out.push(
                top.map(|h| (h.id.to_string(), h.score.to_string()))
                    .collect(),
            );
        }
        let near = terms.nearest(&[4.0, 1.0], 10).expect("vectors kept");
        let pairs = near.rows.iter().zip(&near.scores);
        out.push(
            pairs
                .map(|((h, _), s)| (h.id.to_string(), s.to_string()))
                .collect(),
        );
        out
    }

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
        let mut left = Terms::new().unwrap();
        let rows = vec![base[0].clone(), base[2].clone(), added.clone()];
        left.load(8, rows, Some(2));
        let want = lists(&mut left);

        let mut shown = Terms::new().unwrap();
        shown.load(7, base.clone(), Some(2));
        assert!(shown.ahead(7, deleted, hits()));
        assert_eq!(shown.version(), Some(7), "labelled as before the write");
        assert_eq!(lists(&mut shown), want, "shown ahead");
        shown.wrote(7, 8, deleted, hits());
        assert_eq!(shown.version(), Some(8));
        assert_eq!(lists(&mut shown), want, "once the write landed");
        shown.behind();
        assert_eq!(shown.version(), Some(8), "a landed write is not taken back");

        let mut failed = Terms::new().unwrap();
        failed.load(7, base.clone(), Some(2));
        assert!(failed.ahead(7, deleted, hits()));
        let more = row(4, "mint by the door");
        let none: [(&str, &str); 0] = [];
        let mint = || [(more.0.clone(), more.1.as_slice())];
        assert!(
            !failed.ahead(6, none, mint()),
            "writes from another version"
        );
        assert!(failed.top("mint", 10).is_empty());
        assert!(
            failed.ahead(7, none, mint()),
            "writes from one version stack"
        );
        assert_eq!(failed.top("mint", 10).len(), 1);
        failed.behind();
        assert_eq!(failed.version(), None, "to be loaded again");
        assert!(failed.top("basil", 10).is_empty());
        assert!(failed.top("mint", 10).is_empty());

        let mut other = Terms::new().unwrap();
        other.load(6, base.clone(), Some(2));
        assert!(!other.ahead(7, deleted, hits()), "rows of another version");
        let mut unkept = Terms::new().unwrap();
        unkept.load(7, base, None);
        assert!(!unkept.ahead(7, deleted, hits()), "vectors not kept");
        assert!(unkept.top("basil", 10).is_empty());
        assert_eq!(unkept.version(), Some(7));
    }
}
