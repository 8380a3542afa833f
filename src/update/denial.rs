//! A denial: one text denies, in a clause, what the other affirms of the
//! same subject ([`denied`]), the third way the update rule sees a change
//! ([`super`]).

use std::collections::HashSet;
use std::sync::LazyLock;

use super::{Listed, Read, akin, is_content, shares_subject, subject, with_stems, words};

/// Words by which a text denies what another affirms ("not", "never",
/// "dislikes"): a denial of a thing the other text says, in its words,
/// makes one of the two no longer true ([`denied`]).
pub(super) const DENIAL_WORDS: &[&str] = &[
    "not", "no", "never", "unable", "dislike", "dislikes", "refuse", "refuses", "refused", "avoid",
    "avoids", "aversion",
];

/// Least number of words, names and the subject aside, that what a text
/// denies must share with the text that affirms it ([`denied`]). One is a
/// verb of many objects ("User never drinks alcohol" / "User drinks
/// coffee"); two name the thing ("has never traveled outside his home
/// country" / "has traveled to more than 20 countries").
pub(crate) const DENIED_MIN_SHARED: usize = 2;

/// Shared words that make a denial whatever else the affirming text
/// says; with fewer, they must be half its words ([`denied`]). "Never led
/// training sessions for aspiring folk musicians" shares two words with
/// "is known for her work in folk dance education", which it does not
/// deny, and four with "has led workshops for aspiring folk musicians",
/// which it does.
pub(super) const DENIED_SURE_SHARED: usize = 4;

/// Words that end the clause a denial covers ("did not attend university
/// and is self-taught in environmental science" denies attending
/// university only).
const CLAUSE_ENDS: &[&str] = &[
    "and", "but", "while", "whereas", "though", "although", "yet", "instead", "prefer",
];

/// Words that say when, not what: "did not make it to the finals of the
/// last game tournament" and "won a big game tournament last week" share
/// "game tournament", not "last" ([`denied`]).
const WHEN_WORDS: &[&str] = &[
    "last",
    "next",
    "first",
    "week",
    "month",
    "year",
    "day",
    "weekend",
    "ago",
    "yesterday",
    "today",
    "tomorrow",
    "recently",
    "before",
    "after",
    "again",
    "ever",
    "still",
];

/// [`CLAUSE_ENDS`] and [`WHEN_WORDS`], with their stems.
static CLAUSE_ENDS_LISTED: Listed = LazyLock::new(|| with_stems(CLAUSE_ENDS));
static WHEN_WORDS_LISTED: Listed = LazyLock::new(|| with_stems(WHEN_WORDS));

/// What `text` (what a text states as current) denies: the words after
/// each denial word of a clause, to the clause's end (a mark of
/// punctuation or one of [`CLAUSE_ENDS`]). "Decided to run again, despite
/// not being successful before, to make a difference" denies being
/// successful, not making a difference; "has never lived in Ohio and has
/// not been involved in its arts" denies both. `None` when it denies
/// nothing.
pub(super) fn denial(text: &str) -> Option<Vec<String>> {
    let mut denied: Option<Vec<String>> = None;
    for clause in text.split([',', ';', ':', '.', '(', ')', '!', '?']) {
        let w = words(clause);
        let mut at = 0;
        while let Some(d) = w[at..].iter().position(|w| denial_word(w)) {
            let from = at + d + 1;
            let span = w[from..]
                .iter()
                .take_while(|w| !CLAUSE_ENDS_LISTED.contains(w.as_str()));
            denied.get_or_insert_default().extend(span.cloned());
            at = from;
        }
    }
    denied
}

/// Whether `w` (a word of [`words`]) denies ([`DENIAL_WORDS`], "n't").
pub(super) fn denial_word(w: &str) -> bool {
    DENIAL_WORDS.contains(&w) || w.ends_with("n't")
}

/// The words of `text` written with a capital after its first word, and
/// those written without one, as [`words`] gives them.
pub(super) fn names(text: &str) -> (HashSet<String>, HashSet<String>) {
    let (capital, small): (Vec<&str>, Vec<&str>) = text
        .split(|c: char| !c.is_alphanumeric() && c != '\'')
        .filter(|w| !w.is_empty())
        .skip(1)
        .partition(|w| w.starts_with(char::is_uppercase));
    let set = |w: Vec<&str>| words(&w.join(" ")).into_iter().collect();
    (set(capital), set(small))
}

/// Whether one of the two texts denies what the other affirms of the
/// same subject: exactly one denies, the newer speaks of the older's
/// subject, what the one denies shares [`DENIED_MIN_SHARED`] words
/// (names and the subject aside) with the other, and half the other's
/// words or [`DENIED_SURE_SHARED`], and any numbers the two give agree
/// ("did not attend in 2023" does not deny "attended in 2022": two
/// occasions).
pub(super) fn denied(older: &Read, newer: &Read) -> bool {
    let (shared, said) = denial_shares(older, newer);
    shared >= DENIED_MIN_SHARED && (shared >= DENIED_SURE_SHARED || shared * 2 >= said)
}

/// Of two texts one of which denies (the same subject, numbers that
/// agree, as [`denied`] asks): how many words (names, numbers, the
/// subject and words of when aside) what the one denies shares with what
/// the other affirms, and how many the other affirms. `(0, 0)` for any
/// other pair.
pub(crate) fn denial_shares(older: &Read, newer: &Read) -> (usize, usize) {
    let (a, b) = (&older.words, &newer.words);
    let (denier, affirms) = match (older.denies(), newer.denies()) {
        (true, false) => (older, b),
        (false, true) => (newer, a),
        _ => return (0, 0),
    };
    if !shares_subject(a, b) {
        return (0, 0);
    }
    let Some(clause) = denial(&denier.now) else {
        return (0, 0);
    };
    let number = |w: &String| w.chars().any(|c| c.is_ascii_digit());
    let numbers =
        |w: &[String]| -> HashSet<String> { w.iter().filter(|w| number(w)).cloned().collect() };
    let (na, nb) = (numbers(a), numbers(b));
    if !na.is_empty() && !nb.is_empty() && na.is_disjoint(&nb) {
        return (0, 0);
    }
    let subject = subject(a);
    let name = older.name_with(newer);
    let kept = |w: &String| {
        is_content(w)
            && !number(w)
            && w.as_str() != subject
            && !name(w)
            && !WHEN_WORDS_LISTED.contains(w.as_str())
    };
    let said: HashSet<&String> = affirms.iter().filter(|w| kept(w)).collect();
    let shared = said
        .iter()
        .filter(|x| clause.iter().filter(|w| kept(w)).any(|y| akin(x, y)))
        .count();
    (shared, said.len())
}
