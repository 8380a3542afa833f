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
//! reload from the table. Nothing is on disk, so a crash loses nothing.

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
}

impl Terms {
    pub(super) fn new() -> Result<Terms> {
        Ok(Terms {
            version: None,
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
    pub(super) fn wrote<'a>(
        &mut self,
        before: u64,
        after: u64,
        deleted: impl IntoIterator<Item = (&'a str, &'a str)>,
        added: impl IntoIterator<Item = (Hit, &'a [f32])>,
    ) {
        if self.version != Some(before) {
            return self.clear();
        }
        for (source, id) in deleted {
            self.remove(source, id);
        }
        for (d, v) in added {
            let tokens = tokens(self.tokenizer.as_mut(), &d.text);
            self.insert_tokens(d, tokens, v);
        }
        self.version = Some(after);
    }

    /// The handle rewrote the table from `before` to `after` without
    /// changing its rows (compaction, an index build).
    pub(super) fn same_rows(&mut self, before: u64, after: u64) {
        match self.version == Some(before) {
            true => self.version = Some(after),
            false => self.clear(),
        }
    }

    /// Forget every row (to be loaded again).
    pub(super) fn clear(&mut self) {
        self.version = None;
        self.slots.clear();
        self.lens.clear();
        self.free.clear();
        self.by_row.clear();
        self.words.clear();
        self.postings.clear();
        self.counted = 0;
        self.tokens = 0;
        self.vectors = None;
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

    /// The vector list of a search from the vectors kept in memory: the
    /// `n` rows nearest `query` by cosine distance, each scored minus its
    /// distance, as LanceDB's exact scan lists them (equal distances by
    /// id). `None` when no vectors are kept: LanceDB answers.
    pub(super) fn nearest(&self, query: &[f32], n: usize) -> Option<Ranked> {
        self.nearest_where(query, n, |_| true)
    }

    /// [`Terms::nearest`] among the rows of `kind` only (the similar
    /// entries an append is shown).
    pub(super) fn nearest_of(&self, query: &[f32], n: usize, kind: RowKind) -> Option<Ranked> {
        let of_kind = |slot: u32| {
            let row = self.slots.get(slot as usize).and_then(Option::as_ref);
            row.is_some_and(|r| r.hit.kind == kind)
        };
        self.nearest_where(query, n, of_kind)
    }

    fn nearest_where(&self, query: &[f32], n: usize, keep: impl Fn(u32) -> bool) -> Option<Ranked> {
        let vectors = self.vectors.as_ref()?;
        let mut near: Vec<(&Hit, u32, f32)> = vectors
            .nearest(query, n, keep)
            .into_iter()
            .filter_map(|(slot, d)| {
                let hit = &self.slots[slot as usize].as_ref()?.hit;
                Some((hit, slot, d))
            })
            .collect();
        near.sort_by(|a, b| a.2.total_cmp(&b.2).then_with(|| a.0.id.cmp(&b.0.id)));
        near.truncate(n);
        Some(Ranked {
            scores: near.iter().map(|(_, _, d)| -d).collect(),
            rows: near
                .into_iter()
                .map(|(hit, slot, _)| (hit.clone(), vectors.get(slot).to_vec()))
                .collect(),
        })
    }

    /// The vector of row `id` of `source`, if vectors are kept.
    pub(super) fn vector_of(&self, source: &Source, id: &RowId) -> Option<Vec<f32>> {
        let vectors = self.vectors.as_ref()?;
        let slot = self.by_row.get(&(source.clone(), id.clone()))?;
        Some(vectors.get(*slot).to_vec())
    }

    /// The query's distinct words that some live row has, each with its
    /// idf, the most telling first (equal ones by spelling): the order
    /// every row's score is summed in, which depends only on the rows.
    fn query_words(&mut self, query: &str) -> Vec<(u32, f32)> {
        let docs = self.counted as f32;
        let mut out: Vec<(u32, f32, String)> = Vec::new();
        let mut stream = self.tokenizer.token_stream_for_search(query);
        while stream.advance() {
            let text = &stream.token().text;
            let Some(&w) = self.words.get(text) else {
                continue;
            };
            let df = self.postings[w as usize].len() as f32;
            if df > 0.0 && !out.iter().any(|(o, _, _)| *o == w) {
                let idf = idf(docs, df);
                out.push((w, idf, text.clone()));
            }
        }
        out.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.2.cmp(&b.2)));
        out.into_iter().map(|(w, idf, _)| (w, idf)).collect()
    }

    /// The sum of the idf of `query`'s distinct words, a word no live row
    /// has counted at the greatest idf (as if one row had it): the BM25
    /// score of a row holding each word once at the mean length, which a
    /// hit's score is read against ([`super::search::words_score`]). So a
    /// row that holds the one known word of a query with another word no
    /// row has scores half, not all.
    pub(super) fn idf_sum(&mut self, query: &str) -> f32 {
        let docs = self.counted as f32;
        let mut seen: Vec<String> = Vec::new();
        let mut stream = self.tokenizer.token_stream_for_search(query);
        while stream.advance() {
            let text = &stream.token().text;
            if !seen.contains(text) {
                seen.push(text.clone());
            }
        }
        seen.iter()
            .map(|w| {
                let df = self
                    .words
                    .get(w)
                    .map_or(0, |&i| self.postings[i as usize].len());
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
        if self.counted == 0 || n == 0 {
            return Vec::new();
        }
        let words = self.query_words(query);
        let left = |i: usize| -> f32 {
            let sum: f32 = words[i..].iter().map(|(_, idf)| idf * (K1 + 1.0)).sum();
            // Room for the rounding of the sums it bounds.
            sum * 1.001 + 1e-6
        };
        let mut scores = vec![0f32; self.slots.len()];
        let mut seen: Vec<u32> = Vec::new();
        let (mut i, mut cut) = (0, None);
        while i < words.len() {
            cut = nth(&scores, &seen, n).filter(|&t| t > left(i));
            if cut.is_some() {
                break;
            }
            let (w, idf) = words[i];
            for (&slot, &tf) in &self.postings[w as usize] {
                let s = &mut scores[slot as usize];
                if *s == 0.0 {
                    seen.push(slot);
                }
                *s += self.weight(idf, tf, slot);
            }
            i += 1;
        }
        if let Some(t) = cut {
            let floor = t - left(i);
            seen.retain(|&s| scores[s as usize] >= floor);
            for &(w, idf) in &words[i..] {
                let postings = &self.postings[w as usize];
                for &slot in &seen {
                    if let Some(&tf) = postings.get(&slot) {
                        scores[slot as usize] += self.weight(idf, tf, slot);
                    }
                }
            }
        }
        self.best(&scores, seen, n)
    }

    /// A word's share of a row's score: idf × (k1 + 1) × tf / (tf + k1 ×
    /// (1 - b + b × length / mean length)).
    fn weight(&self, idf: f32, tf: u32, slot: u32) -> f32 {
        let mean = self.tokens as f32 / self.counted as f32;
        let len = self.lens[slot as usize] as f32;
        let tf = tf as f32;
        let norm = K1 * (1.0 - B + B * len / mean);
        idf * (K1 + 1.0) * tf / (tf + norm)
    }

    fn best(&self, scores: &[f32], seen: Vec<u32>, n: usize) -> Vec<Hit> {
        let mut ranked: Vec<(&Hit, f32)> = seen
            .into_iter()
            .filter_map(|slot| {
                let hit = &self.slots[slot as usize].as_ref()?.hit;
                Some((hit, scores[slot as usize]))
            })
            .collect();
        ranked.sort_by(|(a, x), (b, y)| y.total_cmp(x).then_with(|| a.id.cmp(&b.id)));
        if let Some(&(_, out)) = ranked.get(n) {
            ranked.retain(|(_, s)| *s > out);
        }
        ranked
            .into_iter()
            .take(n)
            .map(|(hit, score)| Hit {
                score,
                ..hit.clone()
            })
            .collect()
    }
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
