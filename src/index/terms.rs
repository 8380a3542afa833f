//! Full-text scoring kept by memd: BM25 over the table's live rows, in
//! memory, kept in step by the handle's own writes.
//!
//! It replaces LanceDB's full-text index, which gave two bad choices.
//! Scored by the index, rows indexed at different times were scored with
//! different statistics (the index still counts deleted rows and not yet
//! new ones), so results depended on the index's history; keeping them a
//! function of the rows meant building the index anew after every change,
//! inside the sync lock, which held a busy daemon under 300 requests/s
//! (`memd bench serve --clients 16`; BENCHMARKS.md, "Daemon under load:
//! fragments were the cost"). Scored without it, every query tokenised
//! every row (BENCHMARKS.md, "Identical results whatever the build path:
//! the cost"). Here a write costs the tokenising of its own rows, and a
//! query touches only the rows that share a word with it.
//!
//! The words are LanceDB's (`FtsIndexBuilder::default()`: split on what is
//! not a letter or digit, tokens over 40 bytes dropped, lower case, English
//! stemming and stop words, ASCII folding) and so is the score (BM25, k1
//! 1.2, b 0.75, idf `ln(1 + (N - n + 0.5) / (n + 0.5))`), with `N`, `n` and
//! the mean length over the live rows that have a word: a row's score is a
//! function of the rows, however and whenever they were written. Equal
//! scores are ordered by id, and a list ends where scores differ
//! ([`top`]).
//!
//! Which table version the rows are, the rows written since on top of
//! them, and how searches read them without a lock, are
//! [`super::snapshot`]'s; here are the rows' words themselves and the
//! scoring over any [`Lists`] of them.

use std::cell::RefCell;
use std::sync::OnceLock;

use rustc_hash::FxHashMap as HashMap;

use lance_index::scalar::inverted::tokenizer::document_tokenizer::LanceTokenizer;
use lance_tokenizer::TokenStream;
use lancedb::index::scalar::FtsIndexBuilder;

use super::RowKind;
use super::rows::Hit;
use super::vectors::Vectors;
use crate::ids::RowId;
use crate::layout::Source;
use crate::{Error, Result};

/// BM25's term-frequency saturation and length normalisation (LanceDB's).
const K1: f32 = 1.2;
const B: f32 = 0.75;

/// A live row: the hit it shows (its score unset), and its words with how
/// often each occurs (its length is in `Terms::lens`).
#[derive(Clone)]
pub(super) struct Slot {
    pub(super) hit: Hit,
    pub(super) words: Vec<(u32, u32)>,
}

/// The words of a set of rows, with their vectors while there are few
/// enough: what a snapshot shares as its base ([`super::snapshot`]).
/// Which table version the rows are is the snapshot's to say.
#[derive(Clone, Default)]
pub(super) struct Terms {
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

/// The tokenizer every other is cloned from: LanceDB's default.
fn tokenizer() -> Result<Box<dyn LanceTokenizer>> {
    static MADE: OnceLock<std::result::Result<Box<dyn LanceTokenizer>, String>> = OnceLock::new();
    let made = MADE.get_or_init(|| {
        FtsIndexBuilder::default()
            .build()
            .map_err(|e| e.to_string())
    });
    match made {
        Ok(t) => Ok(t.box_clone()),
        Err(e) => Err(Error::Index(e.clone().into())),
    }
}

/// A document tokenizer of the writer's own (the owner's, or a scratch
/// load's).
pub(super) fn doc_tokenizer() -> Result<Box<dyn LanceTokenizer>> {
    tokenizer()
}

thread_local! {
    /// Each thread's tokenizer for queries: a search reads a snapshot
    /// without taking any lock, so it cannot borrow the writer's.
    static QUERY: RefCell<Option<Box<dyn LanceTokenizer>>> = const { RefCell::new(None) };
}

/// The distinct words of `query`, as the tokenizer reads a search.
pub(super) fn query_tokens(query: &str) -> Vec<String> {
    QUERY.with(|cell| {
        let mut cell = cell.borrow_mut();
        if cell.is_none() {
            *cell = tokenizer().ok();
        }
        let Some(tokenizer) = cell.as_mut() else {
            return Vec::new();
        };
        let mut seen: Vec<String> = Vec::new();
        let mut stream = tokenizer.token_stream_for_search(query);
        while stream.advance() {
            let text = &stream.token().text;
            if !seen.contains(text) {
                seen.push(text.clone());
            }
        }
        seen
    })
}

impl Terms {
    /// Every row of `rows`, tokenised. Tokenising is half of it (3 µs a
    /// row), so it is split across the cores; the rows then go in one by
    /// one, in table order. Its cost is measured by `memd bench index`
    /// (`terms_load_ms`; BENCHMARKS.md, "Full-text scores kept by memd").
    pub(super) fn loaded(rows: Vec<(Hit, Vec<f32>)>, dim: Option<usize>) -> Result<Terms> {
        let tokenizer = tokenizer()?;
        let mut terms = Terms {
            vectors: dim.map(Vectors::new),
            ..Terms::default()
        };
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        let chunk = rows.len().div_ceil(threads).max(1);
        let tokens: Vec<Vec<Vec<String>>> = std::thread::scope(|scope| {
            let running: Vec<_> = rows
                .chunks(chunk)
                .map(|part| {
                    let mut tokenizer = tokenizer.box_clone();
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
            terms.insert(row, tokens, &v);
        }
        Ok(terms)
    }

    /// The rows of the words file `m` in memory, so that a write can
    /// change them (the same slots and word numbers as the file's); `None`
    /// if the file does not read back whole.
    pub(super) fn from_mapped(m: &super::words::Mapped) -> Option<Terms> {
        let mut terms = Terms::default();
        let mut row_words: Vec<Vec<(u32, u32)>> = vec![Vec::new(); m.rows];
        for w in 0..m.words as u32 {
            terms.words.insert(m.spelling(w)?.to_string(), w);
            let list = m.postings(w);
            for &[slot, n] in list {
                row_words.get_mut(slot as usize)?.push((w, n));
            }
            terms
                .postings
                .push(list.iter().map(|&[s, n]| (s, n)).collect());
        }
        terms.vectors = (m.dim > 0).then(|| Vectors::new(m.dim));
        for (slot, words) in (0..m.rows as u32).zip(row_words) {
            let hit = m.hit(slot)?;
            if let Some(v) = terms.vectors.as_mut() {
                v.set(slot, m.vector(slot)?.0);
            }
            terms
                .by_row
                .insert((hit.source.clone(), hit.id.clone()), slot);
            terms.lens.push(m.len(slot));
            terms.slots.push(Some(Slot { hit, words }));
        }
        (terms.counted, terms.tokens) = (m.counted, m.tokens);
        Some(terms)
    }

    /// Add a row, given its words (from [`tokens`]) and its vector (kept
    /// while there are few enough rows: a vector of another dimension, or
    /// one row too many, and no vector is kept).
    pub(super) fn insert(&mut self, hit: Hit, tokens: Vec<String>, vector: &[f32]) {
        let key = (hit.source.clone(), hit.id.clone());
        if let Some(&old) = self.by_row.get(&key) {
            // The same row twice (a table with a duplicate row): the last
            // one read stands, as one row.
            self.take(old);
        }
        let len = tokens.len() as u32;
        let words = counted_words(tokens, |t| {
            let next = self.words.len() as u32;
            *self.words.entry(t).or_insert(next)
        });
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

    /// Take row `id` of `source` out, if it is here.
    pub(super) fn remove(&mut self, source: &Source, id: &RowId) {
        if let Some(slot) = self.by_row.get(&(source.clone(), id.clone())) {
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

    /// Live rows.
    pub(super) fn rows(&self) -> usize {
        self.by_row.len()
    }

    /// The slot of row `id` of `source`, if it is here.
    pub(super) fn slot_of(&self, source: &Source, id: &RowId) -> Option<u32> {
        self.by_row.get(&(source.clone(), id.clone())).copied()
    }

    /// Live slot `slot`.
    pub(super) fn slot(&self, slot: u32) -> Option<&Slot> {
        self.slots.get(slot as usize)?.as_ref()
    }

    /// The word spelled `text`'s number, if a row has (or had) it.
    pub(super) fn word_of(&self, text: &str) -> Option<u32> {
        self.words.get(text).copied()
    }

    /// Words numbered so far.
    pub(super) fn words(&self) -> usize {
        self.words.len()
    }

    /// The rows' vectors, if kept.
    pub(super) fn vectors(&self) -> Option<&Vectors> {
        self.vectors.as_ref()
    }

    /// The words file's contents for these rows, as of table `version`;
    /// the caller sets its stamp.
    pub(super) fn parts(&self, version: u64) -> Option<super::words::Parts<'_>> {
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

    /// The sum of the idf of `query`'s words ([`idf_sum`]).
    pub(super) fn idf_sum(&self, query: &str) -> f32 {
        idf_sum(self, &query_tokens(query))
    }

    /// The `n` rows scoring best for `query` ([`top`]).
    pub(super) fn top(&self, query: &str, n: usize) -> Vec<Hit> {
        top(self, &query_tokens(query), n)
    }
}

/// Each distinct word of `tokens`, numbered by `number`, with how often it
/// occurs, in order of first occurrence.
pub(super) fn counted_words(
    tokens: Vec<String>,
    mut number: impl FnMut(String) -> u32,
) -> Vec<(u32, u32)> {
    let mut words: Vec<(u32, u32)> = Vec::new();
    for t in tokens {
        let w = number(t);
        match words.iter_mut().find(|(x, _)| *x == w) {
            Some((_, n)) => *n += 1,
            None => words.push((w, 1)),
        }
    }
    words
}

/// The sum of the idf of the query's distinct words (`tokens`), a word no
/// live row has counted at the greatest idf (as if one row had it): the
/// BM25 score of a row holding each word once at the mean length, which a
/// hit's score is read against ([`super::search::words_score`]). So a row
/// that holds the one known word of a query with another word no row has
/// scores half, not all.
pub(super) fn idf_sum(lists: &dyn Lists, tokens: &[String]) -> f32 {
    let docs = lists.counted() as f32;
    tokens
        .iter()
        .map(|w| {
            let df = lists.word(w).map_or(0, |i| lists.df(i));
            idf(docs, df.max(1) as f32)
        })
        .sum()
}

/// The rows' words as scoring reads them, from memory ([`Terms`]) or
/// from the words file ([`super::words::Mapped`]). Rows are slots, and
/// words numbers, of either.
pub(super) trait Lists {
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

/// The `n` rows of `l` scoring best for the query's distinct words
/// `tokens` (at least one of them), best first, equal scores by id; each
/// hit's `score` is its BM25 score. Rows tied with the first row left out
/// are left out too: which of equal rows make the cut would depend only
/// on their ids (a query whose one rare word is in one row, and whose
/// common words are in 50 rows of the same length, must not lift 31 of
/// those 50, chosen by id, beside the one).
///
/// Words are taken most telling first, each over all its rows, until
/// `n` rows score more than any row not yet seen could with the words
/// left (their greatest weight, idf × (k1 + 1), summed); the words left
/// then only add to the rows that can still reach the `n`-th score
/// (MaxScore). A word in every row (`user`) has an idf near 0, so a
/// query costs the rows of its rarer words, not the whole table. The
/// scores are the ones a full pass gives, summed in the same order.
pub(super) fn top(l: &dyn Lists, tokens: &[String], n: usize) -> Vec<Hit> {
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
            // A slot no row holds (its postings kept by the lists) adds
            // to no list and to no score the cut is taken from.
            if *s == 0.0 && l.id(slot).is_some() {
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
    let mut ranked: Vec<(u32, &str, f32)> = within_reach(scores, seen, n)
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

/// The rows of `seen` (live rows only) that [`best`] may list or must
/// compare with: those scoring at least the (n + 1)-th best of `seen`.
/// A common word's rows are thousands, nearly all scoring alike, so only
/// the rows that can make the cut are sorted by score and id
/// (BENCHMARKS.md, "A search's words ranked past 100,000 rows").
fn within_reach(scores: &[f32], seen: Vec<u32>, n: usize) -> Vec<u32> {
    if seen.len() <= n + 1 {
        return seen;
    }
    let mut v: Vec<f32> = seen.iter().map(|&s| scores[s as usize]).collect();
    let (_, &mut floor, _) = v.select_nth_unstable_by(n, |a, b| b.total_cmp(a));
    (seen.into_iter())
        .filter(|&s| scores[s as usize] >= floor)
        .collect()
}

/// BM25's idf of a word `df` of `docs` rows have (LanceDB's formula).
fn idf(docs: f32, df: f32) -> f32 {
    ((docs - df + 0.5) / (df + 0.5) + 1.0).ln()
}

/// A text's words, as LanceDB's full-text index would store them.
pub(super) fn tokens(tokenizer: &mut dyn LanceTokenizer, text: &str) -> Vec<String> {
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
    use std::collections::HashSet;

    use proptest::prelude::*;

    use super::*;
    use crate::index::rows::Row;

    /// Lists whose rows `hidden` hold no row (as a slot of a row taken
    /// out or written again on top of a snapshot), their postings kept.
    struct Hiding<'a> {
        terms: &'a Terms,
        hidden: &'a HashSet<u32>,
    }

    impl Lists for Hiding<'_> {
        fn slots(&self) -> usize {
            self.terms.slots()
        }
        fn counted(&self) -> u64 {
            self.terms.counted()
        }
        fn tokens(&self) -> u64 {
            Lists::tokens(self.terms)
        }
        fn word(&self, text: &str) -> Option<u32> {
            self.terms.word(text)
        }
        fn df(&self, w: u32) -> usize {
            self.terms.df(w)
        }
        fn each(&self, w: u32, f: &mut dyn FnMut(u32, u32)) {
            self.terms.each(w, f)
        }
        fn tf(&self, w: u32, slot: u32) -> Option<u32> {
            self.terms.tf(w, slot)
        }
        fn len(&self, slot: u32) -> u32 {
            Lists::len(self.terms, slot)
        }
        fn kind(&self, slot: u32) -> Option<RowKind> {
            self.terms.kind(slot)
        }
        fn id(&self, slot: u32) -> Option<&str> {
            match self.hidden.contains(&slot) {
                true => None,
                false => self.terms.id(slot),
            }
        }
        fn hit(&self, slot: u32) -> Option<Hit> {
            match self.hidden.contains(&slot) {
                true => None,
                false => self.terms.hit(slot),
            }
        }
    }

    /// The rule [`top`] keeps, by a full pass: every live row holding a
    /// word of the query, scored with every word, ranked by score and
    /// id; the rows tied with the first row left out are left out.
    fn full_pass(l: &dyn Lists, tokens: &[String], n: usize) -> Vec<(String, f32)> {
        let words = query_words(l, tokens);
        let mut all = Vec::new();
        for slot in 0..l.slots() as u32 {
            let Some(id) = l.id(slot) else { continue };
            let held: Vec<(f32, u32)> = (words.iter())
                .filter_map(|&(w, idf)| Some((idf, l.tf(w, slot)?)))
                .collect();
            if !held.is_empty() {
                let score = held.iter().map(|&(idf, tf)| weight(l, idf, tf, slot)).sum();
                all.push((id.to_string(), score));
            }
        }
        all.sort_by(|(a, x), (b, y): &(String, f32)| y.total_cmp(x).then_with(|| a.cmp(b)));
        if let Some(&(_, out)) = all.get(n) {
            all.retain(|(_, s)| *s > out);
        }
        all.truncate(n);
        all
    }

    /// A row held no more (a slot written again on top of a snapshot)
    /// that alone has the query's rarest word scores above what any
    /// other row could: the rows still live are listed all the same.
    #[test]
    fn a_row_held_no_more_that_outscores_every_live_row_does_not_hide_them() {
        let texts = ["basil", "rex basil", "basil tea", "tea", "dog"];
        let rows = (texts.iter().enumerate())
            .map(|(i, text)| (Row::fact(&format!("r{i:02}"), text).hit(), Vec::new()))
            .collect();
        let terms = Terms::loaded(rows, None).unwrap();
        let hidden = HashSet::from([4]);
        let lists = Hiding {
            terms: &terms,
            hidden: &hidden,
        };
        let tokens = query_tokens("basil dog");
        let got: Vec<String> = (top(&lists, &tokens, 1).into_iter())
            .map(|h| h.id.to_string())
            .collect();
        assert_eq!(got, ["r00"]);
        assert_eq!(full_pass(&lists, &tokens, 1)[0].0, "r00");
    }

    const VOCABULARY: [&str; 6] = ["tea", "garden", "dog", "rex", "basil", "morning"];

    proptest! {
        /// The rows a search's words list are those a full pass over
        /// every row lists, scores to the bit, with rows sharing scores
        /// by the thousand (a common word) and rows that hold no row.
        #[test]
        fn the_best_rows_are_those_a_full_pass_lists(
            texts in prop::collection::vec(prop::collection::vec(0..6usize, 1..4), 1..60),
            query in prop::collection::vec(0..6usize, 1..4),
            hidden in prop::collection::hash_set(0..60u32, 0..10),
            n in 1..12usize,
        ) {
            let rows = (texts.iter().enumerate())
                .map(|(i, words)| {
                    let text: Vec<&str> = words.iter().map(|&w| VOCABULARY[w]).collect();
                    (Row::fact(&format!("r{i:02}"), &text.join(" ")).hit(), Vec::new())
                })
                .collect();
            let terms = Terms::loaded(rows, None).unwrap();
            let lists = Hiding { terms: &terms, hidden: &hidden };
            let query: Vec<&str> = query.iter().map(|&w| VOCABULARY[w]).collect();
            let tokens = query_tokens(&query.join(" "));
            let got: Vec<(String, f32)> = (top(&lists, &tokens, n).into_iter())
                .map(|h| (h.id.to_string(), h.score))
                .collect();
            prop_assert_eq!(got, full_pass(&lists, &tokens, n));
        }
    }
}
