//! Whether a text says a fact: the rules that keep a reply from quietly
//! dropping what a fact or an entry said, or from saying what nothing
//! said (small models do both). Code uses word overlap here only to refuse
//! or to keep more, never to merge:
//! - every fact must be said by the text of an op that names it: for a
//!   KEEP, the entry it claims already says it (at least
//!   [`SAYS_MIN_COVERAGE`] of the fact's content words); for an ADD or
//!   REPLACE, the new text, more loosely ([`WRITTEN_MIN_COVERAGE`]: an
//!   update or a correction rewrites, "Switched to spaces" becomes "Now
//!   prefers spaces"); and every name and number of the fact;
//! - a text the judge wrote may bring at most [`INVENTED_MAX`] words that
//!   nothing shown says, and no number.

use std::collections::HashSet;

use super::parse::{Kind, Proposed};
use crate::consolidate::ops::{Cluster, Op};
use crate::text::{content_words, coverage};

/// Least share of a fact's (or a merged entry's) content words that an
/// existing text said to carry it must contain.
pub(crate) const SAYS_MIN_COVERAGE: f32 = 0.5;

/// The same for a text the judge wrote from the fact (ADD, REPLACE).
pub(crate) const WRITTEN_MIN_COVERAGE: f32 = 0.25;

/// Words with which a text keeps a value as a thing of the past.
pub(crate) const PAST_MARKERS: &[&str] = &[
    "previously",
    "formerly",
    "used to",
    "no longer",
    "earlier",
    "before that",
    "until",
];

/// Most words a judge's text may bring that nothing it was shown says.
/// One allows an inflection ("taught" for "teaches") in a rewrite; a real
/// 1.5B model, told to keep history, appended "; previously she was a
/// student at the University of Edinburgh" to facts that never said so:
/// three words no fact had.
pub(crate) const INVENTED_MAX: usize = 1;

/// Words that write time rather than content, besides those of
/// [`PAST_MARKERS`].
const TIME_WORDS: &[&str] = &[
    "currently",
    "since",
    "before",
    "later",
    "instead",
    "anymore",
    "past",
];

/// Whether `word` writes history or time rather than content.
fn time_word(word: &str) -> bool {
    TIME_WORDS.contains(&word) || PAST_MARKERS.iter().any(|m| m.split(' ').any(|p| p == word))
}

/// What `text` invents, sorted: its content words that none of `sources`
/// has (words of time and history, and one- or two-letter words, aside),
/// when they are more than [`INVENTED_MAX`] or one is a number (a number
/// from nowhere is a made-up value: "previously over 20 countries" where
/// the fact said 30); empty when it invents nothing.
pub fn invented(text: &str, sources: &[&str]) -> Vec<String> {
    let known: HashSet<String> = sources.iter().flat_map(|s| content_words(s)).collect();
    let is_number = |w: &String| w.chars().any(|c| c.is_ascii_digit());
    let mut out: Vec<String> = content_words(text)
        .into_iter()
        .filter(|w| !known.contains(w) && !time_word(w))
        .filter(|w| w.chars().count() > 2 || is_number(w))
        .collect();
    if out.len() <= INVENTED_MAX && !out.iter().any(is_number) {
        return Vec::new();
    }
    out.sort();
    out
}

/// The names and numbers of `text`, lowercased: words written with a
/// capital inside a sentence ("Rufus Kane", "Lyon") and words with a
/// digit. They are the values a fact is about; a text that drops one no
/// longer says the fact ("Caspar and Colette ran the fundraiser" does
/// not say "Caspar and Rufus ran the fundraiser", though most words
/// match).
fn names(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut sentence_start = true;
    for token in text.split_whitespace() {
        let word = token.trim_matches(|c: char| !c.is_alphanumeric());
        let number = word.chars().any(|c| c.is_ascii_digit());
        if number || (!sentence_start && word.starts_with(char::is_uppercase)) {
            out.extend(
                content_words(word)
                    .into_iter()
                    .filter(|w| w.chars().count() > 1),
            );
        }
        sentence_start = token.ends_with(['.', '!', '?', ':']);
    }
    out
}

/// Words that turn a statement into its opposite. They are stop words for
/// overlap (too common to say what a text is about), so they are checked
/// on their own: "User is not vegetarian" shares every content word with
/// "User is vegetarian" and says the opposite.
const NEGATIONS: &[&str] = &[
    "not",
    "no",
    "never",
    "none",
    "nobody",
    "nothing",
    "neither",
    "nor",
    "without",
    "cannot",
    "isn't",
    "aren't",
    "wasn't",
    "weren't",
    "don't",
    "doesn't",
    "didn't",
    "won't",
    "can't",
    "hasn't",
    "haven't",
    "hadn't",
    "shouldn't",
    "wouldn't",
];

/// Whether the present-tense part of `text` (before any history it keeps,
/// "(previously: …)" or "; previously …") is negated. A negation right
/// after a comma contrasts a value ("John, not Jon"; "vegetarian, not
/// vegan") and does not turn the statement around.
pub(crate) fn negated(text: &str) -> bool {
    let lower = text.to_lowercase().replace('’', "'");
    let now = PAST_MARKERS
        .iter()
        .filter_map(|m| lower.find(m))
        .min()
        .map_or(lower.as_str(), |at| &lower[..at]);
    now.split(',').enumerate().any(|(clause, text)| {
        text.split(|c: char| !c.is_alphanumeric() && c != '\'')
            .filter(|w| !w.is_empty())
            // The first word after a comma is the contrast's, not a negation.
            .skip(usize::from(clause > 0))
            .any(|w| NEGATIONS.contains(&w.trim_matches('\'')))
    })
}

/// Every capitalised word and every number of `text`, wherever it stands
/// (a sentence may start with a name: "Bob is vegetarian"), stop words
/// aside. Stricter than [`keeps_names`]; for merges, which must lose
/// nothing.
pub(crate) fn capitalised(text: &str) -> Vec<String> {
    text.split_whitespace()
        .map(|t| t.trim_matches(|c: char| !c.is_alphanumeric()))
        .filter(|w| w.starts_with(char::is_uppercase) || w.chars().any(|c| c.is_ascii_digit()))
        .flat_map(content_words)
        .collect()
}

/// Whether `text` keeps every name and number of `fact`, except those of
/// `replaced` (the entry a REPLACE rewrites: "John, not Jon" names the old
/// value only to drop it).
pub(crate) fn keeps_names(fact: &str, text: &str, replaced: &str) -> bool {
    let have = content_words(text);
    let old = content_words(replaced);
    names(fact)
        .iter()
        .all(|n| have.contains(n) || old.contains(n))
}

/// The texts and days of the fact groups `groups`.
fn said_by<'a>(groups: &[usize], cluster: &'a Cluster) -> Vec<&'a str> {
    groups
        .iter()
        .flat_map(|&g| {
            let g = &cluster.groups[g];
            std::iter::once(g.text.as_str()).chain(g.days.iter().map(String::as_str))
        })
        .collect()
}

/// Whether `op` names fact group `g` and its text says it: enough of the
/// fact's content words (more for an existing entry claimed by a KEEP than
/// for a text written from the fact), all of its names and numbers, and
/// the same negation (or none).
pub(crate) fn says(op: &Op, g: usize, cluster: &Cluster) -> bool {
    let entry_text = |id: &str| cluster.entry(id).map_or("", |e| e.text.as_str());
    let (text, min, replaced) = match op {
        Op::Add { text, .. } => (text.as_str(), WRITTEN_MIN_COVERAGE, ""),
        Op::Replace { text, target, .. } => {
            (text.as_str(), WRITTEN_MIN_COVERAGE, entry_text(target))
        }
        Op::Keep { target, .. } => (entry_text(target), SAYS_MIN_COVERAGE, ""),
        Op::Remove { .. } => return false,
    };
    let fact = &cluster.groups[g];
    op.from().iter().any(|id| fact.ids.contains(id))
        && coverage(&fact.text, text) >= min
        && keeps_names(&fact.text, text, replaced)
        && negated(&fact.text) == negated(text)
}

/// Why a text the judge wrote from `groups` cannot stand: the words it
/// invents (see [`invented`]; empty when it only drops a name), or `None`
/// when it is faithful. It may draw on its facts and their days; a
/// REPLACE (`replacing` its target) also on every entry shown (a merge)
/// and their dates, and it may drop the names of the entry it replaces.
pub(crate) fn unfaithful(
    text: &str,
    groups: &[usize],
    cluster: &Cluster,
    replacing: Option<usize>,
) -> Option<Vec<String>> {
    let mut shown = said_by(groups, cluster);
    if replacing.is_some() {
        shown.extend(
            cluster
                .entries
                .iter()
                .flat_map(|e| [e.text.as_str(), e.first_seen.as_str(), e.updated.as_str()]),
        );
    }
    let replaced = replacing.map_or("", |t| cluster.entries[t].text.as_str());
    let made_up = invented(text, &shown);
    let names_kept = groups.iter().all(|&g| {
        let fact = &cluster.groups[g].text;
        keeps_names(fact, text, replaced) && negated(fact) == negated(text)
    });
    (!made_up.is_empty() || !names_kept).then_some(made_up)
}

/// Whether [`super::repair`] turns the REPLACE `p` into an ADD of its facts' own
/// words (its text invents, or drops a name of its facts). Validation asks
/// the same, since such a REPLACE touches no entry.
pub(crate) fn replace_becomes_add(p: &Proposed, cluster: &Cluster) -> bool {
    matches!(p.kind, Kind::Replace)
        && p.target
            .is_some_and(|t| unfaithful(&p.text, &p.from, cluster, Some(t)).is_some())
}
