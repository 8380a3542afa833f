//! Whether two texts say the same thing, decided without an LLM: tier 2 of
//! deduplication (tier 1, a restatement word for word or of a fact an
//! entry holds, is in `consolidate::plan`).
//!
//! The rule is conservative on purpose. A false merge hides a fact behind
//! another one's words; a missed merge leaves a duplicate, which the user
//! or a later LLM run can fold. So two texts are the same only when
//! - they are made of the same words, in the same order, apart from
//!   articles and the subject words of agent memory ("the user", "user's")
//!   and a plural or third-person "s" ([`Rule::key`]). Names, numbers and
//!   negations are words, so they must match too;
//! - and their embeddings are close ([`Rule::min_cosine`]): a guard
//!   against texts whose words match by accident.
//!
//! `memd eval dedup` measures the rule on labelled pairs of the dev data
//! (pairs that say the same thing, and hard pairs that do not) for each
//! variant and threshold. [`Rule::SHIPPED`] is the setting with no false
//! merge there and the most merges that allows; EVALUATION.md has the
//! table. The same key decides what `memd add` calls a possible duplicate.

use serde::Serialize;

/// Words that carry nothing two memory texts could differ by: articles and
/// the subject of agent memory ("User loves coffee" = "Loves coffee").
const IGNORED: &[&str] = &["a", "an", "the", "user", "users"];

/// How two texts' words must agree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Words {
    /// The same words, in any order ("Bob helped Ann" = "Ann helped Bob":
    /// measured, and refused, see EVALUATION.md).
    Set,
    /// The same words in the same order.
    Sequence,
    /// The same words in the same order but one, on each side, that is
    /// neither a name, a number nor a negation ("kids" for "children").
    OneSwap,
}

/// A tier-2 rule: how words must agree, and the least cosine similarity.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Rule {
    pub words: Words,
    /// Strip a final "s" from words of four letters or more ("loves" =
    /// "love"), so that "Loves dogs" and "Love dog" agree.
    pub stem: bool,
    pub min_cosine: f32,
}

impl Rule {
    /// The rule memd ships: 0 false merges on every dev split of
    /// `memd eval dedup`, with all-MiniLM-L6-v2 (EVALUATION.md). The word
    /// sets and one-word swaps merge pairs that contradict each other at
    /// every threshold ("A man is …" / "A woman is …"); the sequence rule
    /// merges none, and 0.85 is the highest threshold that still merges as
    /// many same pairs as no threshold: the guard costs nothing on dev.
    pub const SHIPPED: Rule = Rule {
        words: Words::Sequence,
        stem: true,
        min_cosine: 0.85,
    };

    /// The comparison form of `text` under this rule: two texts whose
    /// words agree have the same key, so candidates are found by a hash
    /// lookup, not by comparing every pair.
    pub fn key(&self, text: &str) -> String {
        self.words(text).join(" ")
    }

    fn words(&self, text: &str) -> Vec<String> {
        let mut words: Vec<String> = crate::text::fold(text)
            .split(|c: char| !c.is_alphanumeric() && c != '\'')
            .map(|w| w.trim_matches('\''))
            .map(|w| w.strip_suffix("'s").unwrap_or(w))
            .filter(|w| !w.is_empty() && !IGNORED.contains(w))
            .map(|w| self.stemmed(w))
            .collect();
        if self.words == Words::Set {
            words.sort();
            words.dedup();
        }
        words
    }

    fn stemmed(&self, word: &str) -> String {
        match self.stem {
            true => stem(word).to_string(),
            false => word.to_string(),
        }
    }

    /// Whether the words of `a` and `b` agree (see the module doc). A text
    /// with no words agrees with nothing.
    pub fn words_agree(&self, a: &str, b: &str) -> bool {
        let (x, y) = (self.words(a), self.words(b));
        if x.is_empty() || x.len() != y.len() {
            return false;
        }
        let differ: Vec<usize> = (0..x.len()).filter(|&i| x[i] != y[i]).collect();
        match self.words {
            Words::OneSwap => {
                differ.len() <= 1
                    && differ.iter().all(|&i| {
                        plain(&x[i]) && plain(&y[i]) && !named(a, &x[i]) && !named(b, &y[i])
                    })
            }
            _ => differ.is_empty(),
        }
    }

    /// The form of `text` whose embedding the rule compares: the text with
    /// the ignored words taken out, the rest as written. MiniLM puts "User
    /// has a dog called Rex" at 0.81 of "Has a dog called Rex.", though they
    /// say the same; what the guard must weigh is the rest (case,
    /// inflection, punctuation).
    pub fn compared(text: &str) -> String {
        text.split_whitespace()
            .filter(|w| {
                let bare = w
                    .trim_matches(|c: char| !c.is_alphanumeric())
                    .to_lowercase();
                let bare = bare.strip_suffix("'s").unwrap_or(&bare);
                !IGNORED.contains(&bare)
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Whether `a` and `b`, whose [`Rule::compared`] forms' embeddings
    /// have cosine similarity `cosine`, say the same thing.
    pub fn same(&self, a: &str, b: &str, cosine: f32) -> bool {
        cosine >= self.min_cosine && self.words_agree(a, b)
    }
}

/// `word` without a plural or third-person final "s" ("loves" → "love",
/// "dogs" → "dog"): words of four letters or more, not "ss", no digit.
pub(crate) fn stem(word: &str) -> &str {
    let strip = word.chars().count() >= 4
        && word.ends_with('s')
        && !word.ends_with("ss")
        && !word.chars().any(|c| c.is_ascii_digit());
    match strip {
        true => &word[..word.len() - 1],
        false => word,
    }
}

/// Whether `word` is neither a number nor a negation.
fn plain(word: &str) -> bool {
    !word.chars().any(|c| c.is_ascii_digit())
        && !["not", "no", "never", "none", "nobody", "nothing", "without"].contains(&word)
        && !word.ends_with("n't")
}

/// Whether `word` is written with a capital in `text` (a name).
fn named(text: &str, word: &str) -> bool {
    text.split(|c: char| !c.is_alphanumeric() && c != '\'')
        .skip(1)
        .any(|w| w.starts_with(char::is_uppercase) && w.to_lowercase().starts_with(word))
}
