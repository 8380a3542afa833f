//! Repair: the rewriting of a reply's ops that keeps a fact's own words,
//! separate from validation (which only checks). Each rewrite is named:
//! - an ADD whose text invents or drops a name is written in its facts'
//!   own words ([`verbatim`]);
//! - a REPLACE whose text does so is not applied: the entry stays and the
//!   facts are ADDed in their own words (a stand-in that another op already
//!   says is dropped as a duplicate);
//! - a REPLACE keeps the old text as history unless the new one carries it
//!   ([`with_history`]).
//!
//! A cluster whose replies stay invalid is added verbatim and unreviewed
//! ([`fallback`]).

use std::collections::HashSet;

use super::faithful::{PAST_MARKERS, negated, replace_becomes_add, says, unfaithful};
use super::parse::{Kind, Proposed};
use crate::consolidate::ops::{Cluster, Op};
use crate::duplicate::stem;
use crate::history;
use crate::text::{content_word_list, coverage, says_word};

/// Least share of an entry's content words a REPLACE that writes its own
/// history ("…; previously …") must keep before the old text is appended
/// as well. As strict as the evaluation's test of a fact still being
/// carried (60% of its content words): at 0.3 a REPLACE could keep an
/// entry's names, drop the rest of what it said, and nothing would bring it
/// back. A REPLACE without words of the past must keep every word (see
/// [`with_history`]).
pub(crate) const REPLACE_MIN_COVERAGE: f32 = 0.6;

/// The facts' own words, for a judge's text that invented some.
pub(crate) fn verbatim(groups: &[usize], cluster: &Cluster) -> String {
    let mut seen = HashSet::new();
    groups
        .iter()
        .filter(|g| seen.insert(**g))
        .map(|&g| {
            let t = cluster.groups[g].text.trim();
            if t.ends_with(['.', '!', '?']) {
                t.to_string()
            } else {
                format!("{t}.")
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Whether `wrong` → `right` reads as fixing a typo rather than changing a
/// value: one letter added or dropped ("Jon" → "John"), or one changed or
/// swapped in a long word. A changed letter in a short word is usually
/// another word (Tom → Tim, Ann → Dan), and a number is a value, never a
/// typo (34 → 35 is an update).
fn misspelling(wrong: &str, right: &str) -> bool {
    if wrong.chars().any(|c| c.is_ascii_digit()) {
        return false;
    }
    let (w, r) = (wrong.chars().count(), right.chars().count());
    strsim::osa_distance(wrong, right) == 1 && (w != r || w >= 6)
}

/// The text a REPLACE of `old` by `new` writes: `new`, or `new` with `old`
/// kept as history, "new (previously: old)".
///
/// Why code and not only the prompt: small models write the new value and
/// drop the old one ("Piet and Iris run the podcast" replacing "Hanna and
/// Iris run the podcast"), and the old value is then gone from the memory.
/// `old` is kept unless `new` still says every content word of `old` in
/// `old`'s order, does not set a value against one of them ("Emil,
/// not Dani, …") and still says what `old` said of several together
/// ("both"), or
/// `new` writes its own history (a word of the past that `old` lacked) and
/// keeps [`REPLACE_MIN_COVERAGE`] of it, or every dropped word is a
/// misspelling of a word `new` brings (a typo fix: "Jon" → "John", where
/// keeping the wrong name would be the error; a number is never a typo).
/// An `old` that already has history is flattened: "new (previously: old
/// value; older values)", not parentheses inside parentheses.
pub fn with_history(new: &str, old: &str) -> String {
    let new = new.trim();
    let old_words: HashSet<String> = stemmed(old).into_iter().collect();
    let new_words: HashSet<String> = stemmed(new).into_iter().collect();
    let dropped: Vec<&String> = old_words.difference(&new_words).collect();
    // "Is not vegetarian" replacing "Is vegetarian" drops no content word
    // (negations are stop words) and turns the old value around; so does
    // "Emil, not Dani, collaborated with Luca" replacing "Dani and
    // Luca collaborated", unless the contrast fixes a typo ("John, not
    // Jon").
    let added: Vec<&String> = new_words.difference(&old_words).collect();
    let typo = |w: &String| added.iter().any(|a| misspelling(w, a));
    let contrasted_before = contrasted(old);
    let contrasted: Vec<String> = contrasted(new)
        .into_iter()
        .filter(|w| old_words.contains(w) && !contrasted_before.contains(w))
        .collect();
    let refuted = !contrasted.iter().all(typo);
    // "Hugo attended Stanford, while Ines attended MIT" replacing
    // "Hugo and Ines both attended MIT" keeps every content word in
    // order and no longer says what both did ("both" is a stop word).
    let parted = together(old) && !together(new);
    let flipped = negated(new) != negated(old) || refuted || parted;
    // Every old word kept, but not in the old order, is another
    // statement: "Dani is an author, while Emil is known for design"
    // replacing "Emil is an author" keeps each word and no longer says
    // it.
    if dropped.is_empty() && !flipped && says_within(new, old) {
        return new.to_string();
    }
    let lower = new.to_lowercase();
    let old_lower = old.to_lowercase();
    let own_history = PAST_MARKERS
        .iter()
        .any(|m| lower.contains(m) && !old_lower.contains(m));
    if own_history && coverage(old, new) >= REPLACE_MIN_COVERAGE {
        return new.to_string();
    }
    let mut fixed = dropped.into_iter().chain(&contrasted).peekable();
    let typo_fix = !flipped && fixed.peek().is_some() && fixed.all(typo);
    if typo_fix {
        return new.to_string();
    }
    let undated = history::Stated::new(new, None);
    history::write(&undated, &history::flatten(old, None))
}

/// Whether `text` says something of several together ("both",
/// "together", "neither", "jointly").
fn together(text: &str) -> bool {
    says_word(text, TOGETHER)
}

const TOGETHER: &[&str] = &["both", "together", "neither", "jointly"];

/// Whether `new` says `old`'s content words in `old`'s order, other words
/// between them allowed ("Alice Smith, a nurse, lives in Seattle" says
/// "Alice lives in Seattle"; "Dani is an author, while Emil designs" does
/// not say "Emil is an author").
fn says_within(new: &str, old: &str) -> bool {
    let new = stemmed(new);
    let mut rest = new.iter();
    stemmed(old).iter().all(|w| rest.by_ref().any(|n| n == w))
}

/// The content words of `text` in order, a final "s" aside ("siblings"
/// for "sibling" is the same word, not a typo fixed).
pub(super) fn stemmed(text: &str) -> Vec<String> {
    content_word_list(text)
        .iter()
        .map(|w| stem(w).to_string())
        .collect()
}

/// The content words `text` sets against another value right after a
/// comma, in at most [`CONTRAST_WORDS`] words up to the next comma:
/// "Emil, not Dani Moreau, collaborated" gives dani and moreau; "Works
/// at Acme, not only as an engineer but as a manager" gives none.
fn contrasted(text: &str) -> Vec<String> {
    let lower = text.to_lowercase();
    lower
        .split([',', '.', ';', '('])
        .skip(1)
        .filter_map(|clause| clause.trim_start().strip_prefix("not "))
        .filter(|rest| rest.split_whitespace().count() <= CONTRAST_WORDS)
        .flat_map(stemmed)
        .collect()
}

/// Most words a contrast ("…, not Dani Moreau, …") names: a value, not a
/// clause of its own.
const CONTRAST_WORDS: usize = 3;

/// The text of a declared update ([`crate::consolidate::declared`]) or
/// of one the built-in judge reads in the words: `now`, with every `old`
/// it supersedes (its text, and the day it was first stated when its text
/// does not say) kept as history, always (what was true before stays
/// readable), dated ([`history`]).
pub fn declared_history(now: &history::Stated, olds: &[(&str, Option<&str>)]) -> String {
    let items: Vec<history::Stated> = olds
        .iter()
        .flat_map(|(text, day)| history::flatten(text, *day))
        .collect();
    history::write(now, &items)
}

/// The ops a checked reply stands for, rewritten as the module doc says.
pub fn repair(proposed: &[Proposed], cluster: &Cluster) -> Vec<Op> {
    let mut ops = Vec::with_capacity(proposed.len());
    // Stand-in ADDs for REPLACEs that were not applied.
    let mut converted: Vec<usize> = Vec::new();
    for p in proposed {
        let from = p.fact_ids(cluster);
        let entry = |t: Option<usize>| cluster.entries[t.expect("checked")].id.clone();
        let op = match p.kind {
            Kind::Add => match unfaithful(&p.text, &p.from, cluster, None) {
                Some(made_up) => {
                    tracing::warn!(
                        ?made_up,
                        "an ADD said more or less than its facts; their own words are kept"
                    );
                    Op::Add {
                        text: verbatim(&p.from, cluster),
                        from,
                    }
                }
                None => Op::Add {
                    text: p.text.clone(),
                    from,
                },
            },
            Kind::Replace if replace_becomes_add(p, cluster) => {
                tracing::warn!(
                    "a REPLACE said what nothing shown said, or dropped a name of its facts; \
                     they are added in their own words"
                );
                converted.push(ops.len());
                Op::Add {
                    text: verbatim(&p.from, cluster),
                    from,
                }
            }
            Kind::Replace => {
                let t = p.target.expect("checked");
                Op::Replace {
                    target: entry(p.target),
                    text: with_history(&p.text, &cluster.entries[t].text),
                    from,
                }
            }
            Kind::Keep => Op::Keep {
                target: entry(p.target),
                from,
            },
            Kind::Remove => Op::Remove {
                target: entry(p.target),
                into: entry(p.into),
            },
        };
        ops.push(op);
    }
    drop_duplicate_stand_ins(ops, &converted, cluster)
}

/// A stand-in ADD whose facts another op says already would only be a
/// duplicate entry.
fn drop_duplicate_stand_ins(ops: Vec<Op>, converted: &[usize], cluster: &Cluster) -> Vec<Op> {
    let duplicate = |i: usize| {
        (0..cluster.groups.len())
            .filter(|&g| says(&ops[i], g, cluster))
            .all(|g| {
                ops.iter()
                    .enumerate()
                    .any(|(j, op)| j != i && !converted.contains(&j) && says(op, g, cluster))
            })
    };
    let gone: Vec<usize> = converted
        .iter()
        .copied()
        .filter(|&i| duplicate(i))
        .collect();
    ops.into_iter()
        .enumerate()
        .filter(|(j, _)| !gone.contains(j))
        .map(|(_, op)| op)
        .collect()
}

/// The verbatim ADDs that stand in for a cluster the judge could not
/// decide.
pub fn fallback(cluster: &Cluster) -> Vec<Op> {
    cluster
        .groups
        .iter()
        .map(|g| Op::Add {
            text: g.text.clone(),
            from: g.ids.clone(),
        })
        .collect()
}
