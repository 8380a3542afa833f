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
//! A second, one-way rule folds a text into one that says it and more
//! ([`Rule::part_of`]): "Tariq lost his job at Parcel Express" into "Tariq lost
//! his job at Parcel Express during the month of the conversation". The shorter
//! must be a leading clause of the longer, word for word as above, ending
//! at a comma or before a word that opens a further phrase ("at", "which",
//! "and", …), and nothing after it may take it back, narrow it or make it
//! a condition ("but", "not", "until", "if", …); their embeddings must be
//! at least [`PART_MIN_COSINE`] alike. Folding it loses nothing: every
//! word of the shorter text is still there in the longer.
//!
//! `memd eval dedup` measures the rule on labelled pairs of the dev data
//! (pairs that say the same thing, and hard pairs that do not) for each
//! variant and threshold. [`Rule::SHIPPED`] is the setting with no false
//! merge there and the most merges that allows; EVALUATION.md has the
//! table. The same key decides what `memd add` calls a possible duplicate.

use serde::Serialize;

use crate::text::fold;

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
        let mut words: Vec<String> = fold(text)
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

/// Words that open a further phrase or clause: what follows one adds to
/// what came before it ("Sven volunteers at a food bank, which he
/// started a year ago"; "Aiko is allergic to peanuts and bakes with sunflower butter").
const OPENS_MORE: &[&str] = &[
    "and", "at", "in", "on", "which", "who", "with", "for", "since", "after", "before", "because",
    "while", "to", "from", "as", "by", "where", "during",
];

/// Words after which a text may take back, narrow or make a condition of
/// what came before it ("likes coffee, but not anymore"; "was vegetarian
/// until 2020"; "would move to Berlin, if offered a job"; "as long as").
const TAKES_BACK: &[&str] = &[
    "if",
    "whether",
    "provided",
    "assuming",
    "long",
    "almost",
    "nearly",
    "hardly",
    "barely",
    "not",
    "no",
    "never",
    "nor",
    "but",
    "however",
    "although",
    "though",
    "except",
    "until",
    "anymore",
    "formerly",
    "previously",
    "once",
    "used",
    "instead",
    "rather",
    "only",
    "unless",
    "without",
    "nobody",
    "nothing",
    "none",
];

/// Least cosine between a text and one it is a leading clause of for
/// consolidation to fold it in ([`Rule::part_of`]). `memd eval dedup`
/// (EVALUATION.md): on the dev pairs no threshold makes a wrong merge, and
/// 0.6 is the highest that still merges every SICK pair whose longer text
/// entails the shorter, so the guard costs nothing there (the way
/// [`Rule::SHIPPED`]'s threshold was chosen).
pub const PART_MIN_COSINE: f32 = 0.6;

/// Fewest words a leading clause needs to count on its own ("Tariq lost
/// his job"): a bare name before "and" says nothing by itself.
const CLAUSE_MIN_WORDS: usize = 3;

/// Whether `rest` (the words after a leading clause) could take the
/// clause back.
fn takes_back(rest: &[String]) -> bool {
    rest.iter()
        .any(|w| TAKES_BACK.contains(&w.as_str()) || w.ends_with("n't"))
}

impl Rule {
    /// The keys ([`Rule::key`]) of `text`'s leading clauses: its first
    /// words up to a comma, semicolon or parenthesis, or up to a word that
    /// opens a further phrase ([`OPENS_MORE`]), when nothing after them
    /// could take them back ([`TAKES_BACK`]). A text says everything each
    /// of its leading clauses says: "Tariq lost his job at Parcel Express during
    /// the month" says "Tariq lost his job at Parcel Express".
    pub fn leading_keys(&self, text: &str) -> Vec<String> {
        let folded = fold(text);
        let mut words: Vec<String> = Vec::new();
        // Positions in `words` where a punctuation mark ends a clause.
        let mut stops: Vec<usize> = Vec::new();
        for piece in folded.split_inclusive([',', ';', '(', ')', ':']) {
            let bare = piece.trim_end_matches([',', ';', '(', ')', ':']);
            words.extend(self.words(bare));
            stops.push(words.len());
        }
        let mut out = Vec::new();
        for at in CLAUSE_MIN_WORDS..words.len() {
            let opens = stops.contains(&at) || OPENS_MORE.contains(&words[at].as_str());
            if opens && !takes_back(&words[at..]) {
                out.push(words[..at].join(" "));
            }
        }
        out
    }

    /// Whether `part` says a leading clause of `whole` ([`Rule::leading_keys`])
    /// and their embeddings have at least `min_cosine`: then `whole` says
    /// everything `part` says, and `part` can be folded into it.
    pub fn part_of(&self, part: &str, whole: &str, cosine: f32, min_cosine: f32) -> bool {
        let words = self.words(part);
        cosine >= min_cosine
            && words.len() >= CLAUSE_MIN_WORDS
            && self.leading_keys(whole).contains(&words.join(" "))
    }
}
