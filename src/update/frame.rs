//! Two texts as one frame around one differing span ("User works at
//! Acme" / "User works at Globex": the frame "user works at …"), and the
//! keys by which a text finds the earlier texts it may share a frame
//! with, so that a caller comparing each new fact with every earlier one
//! ([`crate::consolidate`]'s built-in judge) compares it only with those.
//!
//! The keys are exact, not a guess: a pair [`super::judge_read`] calls an
//! update through its frame shares a key ([`older_keys`], [`newer_keys`]),
//! and a pair it calls an update otherwise has a side that may
//! ([`super::Read::updates_unframed`], [`super::Read::updated_unframed`]).

use std::hash::{DefaultHasher, Hash, Hasher};

use super::{
    FRAME_MIN_SHARE, FRAME_MIN_WORDS, MANY_VALUED_LISTED, NEGATION_WORDS, SPAN_MAX_WORDS, action,
    is_content, subject,
};

/// Two word lists as one frame around one differing span.
pub(super) struct Frame<'a> {
    /// Words the two share at the start.
    pub(super) prefix: usize,
    /// Words they share at the end (after the prefix).
    pub(super) suffix: usize,
    old_span: &'a [String],
    new_span: &'a [String],
    longer: usize,
}

impl<'a> Frame<'a> {
    pub(super) fn of(a: &'a [String], b: &'a [String]) -> Option<Frame<'a>> {
        let prefix = a.iter().zip(b).take_while(|(x, y)| x == y).count();
        let room = a.len().min(b.len()) - prefix;
        let suffix = a
            .iter()
            .rev()
            .zip(b.iter().rev())
            .take(room)
            .take_while(|(x, y)| x == y)
            .count();
        if a.is_empty() || b.is_empty() {
            return None;
        }
        Some(Frame {
            prefix,
            suffix,
            old_span: &a[prefix..a.len() - suffix],
            new_span: &b[prefix..b.len() - suffix],
            longer: a.len().max(b.len()),
        })
    }

    /// The shared words (of `a`, the older) hold enough of the texts, say
    /// something besides the subject ("User is tall" / "User is a runner"
    /// share only "user is"), and the spans are short.
    pub(super) fn holds(&self, a: &[String]) -> bool {
        let shared = self.prefix + self.suffix;
        fits(shared, self.longer)
            && says(a, self.prefix, self.suffix)
            && self.old_span.len() <= SPAN_MAX_WORDS
            && self.new_span.len() <= SPAN_MAX_WORDS
    }

    /// One text says the other with a negation added or taken away ("User
    /// likes coffee" / "User does not like coffee"): the spans are a
    /// negation (with its auxiliary) on one side and nothing on the other.
    pub(super) fn negates(&self) -> bool {
        (self.old_span.is_empty() && negation(self.new_span))
            || (self.new_span.is_empty() && negation(self.old_span))
    }

    /// Both spans hold a value: a word that carries content and is not an
    /// action ("watching" / "playing" cricket are two things done, not
    /// one thing with two values). A span empty on one side is a detail
    /// added or dropped, not a new value.
    pub(super) fn values(&self) -> bool {
        value(self.old_span, self.suffix) && value(self.new_span, self.suffix)
    }

    /// The span is one of many values its subject has at once ([`many`]),
    /// `a` being the older text.
    pub(super) fn many(&self, a: &[String]) -> bool {
        many(&a[..self.prefix], &a[a.len() - self.suffix..])
    }
}

/// Whether `shared` words of texts the longer of which has `longer` are
/// enough of a frame.
fn fits(shared: usize, longer: usize) -> bool {
    shared >= FRAME_MIN_WORDS && shared as f32 >= FRAME_MIN_SHARE * longer as f32
}

/// Whether the words `a` keeps around its span (`prefix` before, `suffix`
/// after) say something besides its subject.
fn says(a: &[String], prefix: usize, suffix: usize) -> bool {
    let subject = subject(a);
    let mut frame = a[..prefix].iter().chain(&a[a.len() - suffix..]);
    frame.any(|w| w.as_str() != subject && is_content(w))
}

/// Whether the span `s` holds a value, with `suffix` words of the frame
/// after it ([`Frame::values`]).
fn value(s: &[String], suffix: usize) -> bool {
    // An action followed by the rest of the frame is a verb with its
    // object ("watching cricket"); one that ends the statement names a
    // thing ("likes swimming").
    let acts = |w: &str| action(w) && suffix > 0;
    s.iter().any(|w| is_content(w) && !acts(w))
}

/// Whether the span `s` only negates ("does not", "is no longer").
fn negation(s: &[String]) -> bool {
    !s.is_empty()
        && s.iter()
            .all(|w| NEGATION_WORDS.contains(&w.as_str()) || w.ends_with("n't"))
        && s.iter()
            .any(|w| ["not", "no", "never"].contains(&w.as_str()) || w.ends_with("n't"))
}

/// Whether a span between `before` and `after` (the frame's words) names
/// one of many values its subject has at once. The last two words before
/// the span name what it is a value of ("likes to hike", "has been to
/// Rome", "works at"). "and" or "or" before it makes it an item of a list
/// when it ends the statement ("likes cats and dogs"); before a shared
/// rest it names a partner in one thing ("Ann and Bob wrote the paper on
/// ethics"). After an action, a rest that names one thing ("interviewed
/// Ann for the feature on women in science") makes the span a new value
/// of that one thing; with none ("slicing an onion") it is one of many
/// things done.
fn many(before: &[String], after: &[String]) -> bool {
    let last_two = &before[before.len().saturating_sub(2)..];
    let list = |w: &String| ["and", "or"].contains(&w.as_str());
    let rest_content = after.iter().filter(|w| is_content(w)).count();
    last_two
        .iter()
        .any(|w| MANY_VALUED_LISTED.contains(w.as_str()) && (!list(w) || after.is_empty()))
        || last_two.last().is_some_and(|w| action(w)) && rest_content < 2
}

/// What a text's side of a frame can be in an update through that frame:
/// the partner's side must be the one [`Side::partner`] names.
#[derive(Clone, Copy, Hash)]
enum Side {
    /// No span: the partner's must negate ("likes coffee" / "does not like
    /// coffee").
    Empty,
    /// A span that only negates: the partner's must be empty.
    Negation,
    /// A span that holds a value of one thing: so must the partner's.
    Value,
}

impl Side {
    fn partner(self) -> Side {
        match self {
            Side::Empty => Side::Negation,
            Side::Negation => Side::Empty,
            Side::Value => Side::Value,
        }
    }

    /// The sides a span `s` between `before` and `after` can be.
    fn of(before: &[String], s: &[String], after: &[String]) -> impl Iterator<Item = Side> {
        let value = value(s, after.len()) && !many(before, after);
        [
            s.is_empty().then_some(Side::Empty),
            negation(s).then_some(Side::Negation),
            value.then_some(Side::Value),
        ]
        .into_iter()
        .flatten()
    }
}

/// Every frame `words` can have with another text through which
/// [`super::judge_read`] may call one an update of the other without a
/// change said in words: a prefix of at least one word, a span short
/// enough, and enough words around it. Each with the side `words` takes.
fn frames(words: &[String]) -> impl Iterator<Item = (&[String], &[String], Side)> {
    let n = words.len();
    (1..=n).flat_map(move |i| {
        (0..=SPAN_MAX_WORDS.min(n - i))
            .filter(move |&l| fits(n - l, n))
            .flat_map(move |l| {
                let (before, span, after) = (&words[..i], &words[i..i + l], &words[i + l..]);
                Side::of(before, span, after).map(move |side| (before, after, side))
            })
    })
}

/// The key of a frame's shared words and a side.
fn key(before: &[String], after: &[String], side: Side) -> u64 {
    let mut h = DefaultHasher::new();
    (before, after, side).hash(&mut h);
    h.finish()
}

/// The keys under which `words`, as the older text, is found by a newer
/// one that shares a frame with it ([`newer_keys`]).
pub(super) fn older_keys(words: &[String]) -> Vec<u64> {
    let mut out: Vec<u64> = frames(words)
        .filter(|(before, after, _)| says(words, before.len(), after.len()))
        .map(|(before, after, side)| key(before, after, side))
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// The keys under which `words`, as the newer text, finds the older texts
/// it shares a frame with ([`older_keys`]).
pub(super) fn newer_keys(words: &[String]) -> Vec<u64> {
    let mut out: Vec<u64> = frames(words)
        .map(|(before, after, side)| key(before, after, side.partner()))
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}
