//! Current first: of two texts on the same thing, the one stated on a
//! later day ranks above the older, whatever else raised the older (recall
//! counts for MEMORY.md's lines, words in common with the query for a
//! search). A superseded line never outranks its successor; it is only
//! moved below it, never dropped. A search raises the newer only when the
//! query matches it nearly as well as the older ([`SEARCH_MATCH_RATIO`]):
//! a question about one fact is not answered with a newer, different fact
//! on the same person; and a newer text only its topic ties to the older
//! is not raised for a question asked in words only the older says
//! ([`AskedWords`]).

use std::cell::OnceCell;
use std::collections::{BTreeSet, HashMap, HashSet};

use crate::embed::cosine;
use crate::ids::{FactId, RowId};
use crate::index::rows::{Hit, RowKind};
use crate::update::{self, Read, Verdict, Why};
use crate::{Layout, Result, archive};

/// Least cosine at which two texts are taken to speak of the same thing,
/// for the current-first order. `memd eval dedup` (EVALUATION.md) puts
/// three quarters of the Letta updates at 0.68 or more of the fact they
/// supersede, and three quarters of two different facts about one person
/// at 0.58 or less: at 0.6 most updates are ordered, and most unrelated
/// facts are left as ranked. A pair taken wrongly is only reordered (the
/// newer just above the older), never dropped.
pub const SAME_TOPIC_COSINE: f32 = 0.6;

/// A search raises the newer of two hits on the same thing
/// ([`SAME_TOPIC_COSINE`]) only when the query matches it at least this
/// share as well as the older. An update says what the fact it
/// replaces said, other value aside, so a question about the older
/// matches it nearly as well ("where does the user work": 0.47 for the new
/// employer, 0.48 for the old); a newer, different fact on the same person
/// matches that question far less, and is left where it ranks. `memd eval
/// consolidation --data ../shared/evaldata --sets 100 --updates 10` (536
/// updates, built-in judge, each update beside the entry it replaces):
/// the update's question with the new fact on top / three questions on
/// facts the update left alone with their fact on top, of 1,534:
/// - no current first: 155 / 1,490;
/// - cosine 0.6 alone (the rule before): 482 / 1,279;
/// - cosine 0.7 alone: 405 / 1,448;
/// - **0.6 and this ratio at 0.75: 442 / 1,422** (206 wrong top hits,
///   against 309);
/// - 0.6 and 0.8: 420 / 1,439; 0.6 and 0.85: 390 / 1,463;
/// - 0.65 and 0.75: 426 / 1,450 (194 wrong), but 0.65 leaves a job
///   change ("works at Acme Corp" → "works at Globex", cosine between the
///   two) stale on top.
pub(crate) const SEARCH_MATCH_RATIO: f32 = 0.75;

/// Below this cosine, a newer text that only its topic ties to an older
/// one ([`Anew::ByCosine`]) is not raised above it for a question asked
/// in words only the older says ([`AskedWords::only_the_older`]): such a
/// question asks what the older states, and a newer text on the same
/// person that near is as often another fact as an update. At this
/// cosine or more the two say nearly the same thing, and the newer is
/// raised as before. Built-in judge, MiniLM, `memd eval consolidation
/// --data ../shared/evaldata --sets 100 --updates 10` (EVALUATION.md,
/// "The question's own words"): the update's question with the new fact
/// on top, of 536 / questions on facts left alone with their fact on top,
/// of 1,534:
/// - without this rule: 474 / 1,413;
/// - **below 0.7: 468 / 1,439**;
/// - below 0.75: 461 / 1,448; below 0.8: 450 / 1,451;
/// - at any cosine: 437 / 1,451.
pub(crate) const ASKED_WORDS_COSINE: f32 = 0.7;

/// Least number of words that carry content (names aside) a later text
/// must open with as an older one does to be ordered above it when the
/// cosine is under [`SAME_TOPIC_COSINE`] ([`Anew::ByOpening`]): "… has
/// written several essays on medieval shipbuilding" / "… on the economics
/// of urban bike lanes" open alike in three, and a new value said in many
/// words takes the cosine under the line. Held to the same match ratio
/// and question's words as [`Anew::ByCosine`]. `memd eval consolidation
/// --data ../shared/evaldata --sets 100 --updates 10` (EVALUATION.md,
/// "…, and texts that open alike"): beside 494 / 1,480 → 498 / 1,480
/// (new answer first, of 536 / other facts first, of 1,534), declared
/// unchanged at 524 / 1,497; 2 words gave the same. The subject's name is
/// not one of the words counted.
pub(crate) const OPENING_WORDS: usize = 3;

/// How many of the best-ranked entries promotion compares with every
/// entry for a newer one on the same thing: the lines it can show and
/// more.
pub(crate) const PROMOTION_TOP: usize = 90;

/// Which items [`raise_newer`] compares: each of the `older` best with
/// each of the `newer` best (`usize::MAX`: every item).
///
/// Promotion compares its best with every entry: a newer entry outside
/// them takes the older's place in MEMORY.md. A search only reorders the
/// hits it returns (`k` and `k`): raising a newer text from outside them
/// would put a hit the query did not find in place of one it did. On
/// LoCoMo (`memd eval locomo --conversations 5 --sessions 40`, where
/// every session adds observations on the same people) comparing the
/// best `2k` with every candidate took evidence recall@10 from 0.825 to
/// 0.506; within the hits it stays 0.825.
#[derive(Clone, Copy)]
pub(crate) struct Compared<'a> {
    pub older: usize,
    pub newer: usize,
    /// Least share of the older's [`Ranked::matched`] the newer must have
    /// to be raised above it (0: any).
    pub match_ratio: f32,
    /// What was asked, in words (`None`: nothing was, as for promotion).
    pub asked: Option<AskedWords<'a>>,
}

/// A search's query in the words its full-text half reads (stemmed, stop
/// words out), and how a text's words are read the same way.
#[derive(Clone, Copy)]
pub(crate) struct AskedWords<'a> {
    pub words: &'a [String],
    pub read: fn(&str) -> Vec<String>,
}

impl AskedWords<'_> {
    /// Whether the query says a word that `old` (the words of what a text
    /// states, read by `read`) says and `new` does not, and no word that
    /// only `new` says: the question is about what only the older states
    /// (names and the like, which both say, decide nothing).
    fn only_the_older(&self, old: &[String], new: &[String]) -> bool {
        let said = |w: &String, by: &[String]| by.contains(w);
        let older = self.words.iter().any(|w| said(w, old) && !said(w, new));
        let newer = self.words.iter().any(|w| said(w, new) && !said(w, old));
        older && !newer
    }
}

/// What [`raise_newer`] reads and changes of a ranked item.
pub(crate) trait Ranked {
    /// The day it was stated (`YYYY-MM-DD`: for an entry, its last
    /// update), `None` when it has none.
    fn day(&self) -> Option<&str>;
    /// What it says (for a search hit, the row's text).
    fn text(&self) -> &str;
    /// Whether it keeps its rank whatever its date (a pinned entry).
    fn fixed(&self) -> bool {
        false
    }
    fn score(&self) -> f64;
    /// How well it matches what was asked, 0 to 1, when something was
    /// (a search's hit: its `score`); `None` for promotion.
    fn matched(&self) -> Option<f32> {
        None
    }
    /// Take the least score above `score` (another item's).
    fn set_above(&mut self, score: f64);
}

/// Raise, in `ranked` (best first, `vectors` aligned with it; an empty
/// vector is compared with nothing), each of the `compared.newer` best
/// that updates one of the `compared.older` best to just above it: the
/// older's score and a hair more. Newer items are raised in date order,
/// so a chain of updates ends with the newest on top. The caller sorts
/// again by score.
///
/// Which pairs are one thing stated twice is [`same_thing`]'s to say.
/// Returns those pairs, as (older, newer) indices into `ranked` before
/// the caller sorts it.
pub(crate) fn raise_newer<T: Ranked>(
    ranked: &mut [T],
    vectors: &[Vec<f32>],
    compared: Compared<'_>,
) -> Vec<(usize, usize)> {
    let top = ranked.len().min(compared.older);
    let newer = ranked.len().min(compared.newer);
    // Each text read once, not once per pair.
    let reads: Vec<Read> = ranked[..top.max(newer)]
        .iter()
        .map(|r| Read::of(r.text()))
        .collect();
    // And the words of what each states, read only for the pairs that ask.
    let said: Vec<OnceCell<Vec<String>>> = reads.iter().map(|_| OnceCell::new()).collect();
    let words = |a: &AskedWords<'_>, i: usize| {
        said[i].get_or_init(|| (a.read)(&update::statement(ranked[i].text())))
    };
    let mut pairs: Vec<(usize, usize)> = Vec::new(); // (older, newer)
    for a in 0..top {
        for b in 0..newer {
            let (old, new) = (&ranked[a], &ranked[b]);
            if a == b || old.fixed() || new.fixed() {
                continue;
            }
            let items = ((old, &reads[a]), (new, &reads[b]));
            let asks_the_older = || {
                compared
                    .asked
                    .is_some_and(|q| q.only_the_older(words(&q, a), words(&q, b)))
            };
            if same_thing(
                items,
                (&vectors[a], &vectors[b]),
                (compared.match_ratio, &asks_the_older),
            ) {
                pairs.push((a, b));
            }
        }
    }
    pairs.sort_by(|x, y| ranked[x.1].day().cmp(&ranked[y.1].day()));
    for &(old, new) in &pairs {
        let floor = ranked[old].score();
        if ranked[new].score() <= floor {
            ranked[new].set_above(floor);
        }
    }
    pairs
}

/// Whether `new` states anew what `old` stated, and later, so that it
/// must rank above it ([`states_anew`]), and a query (if any) matches the
/// newer at least `match_ratio` as well as the older: a question about
/// one fact is not answered with another. A denial of the older
/// ([`Anew::Denied`]) needs no such match; a newer text only its topic
/// ties to the older, under [`ASKED_WORDS_COSINE`], is not raised for a
/// question asked in words only the older says (`asks_the_older`).
fn same_thing<T: Ranked>(
    ((old, old_read), (new, new_read)): ((&T, &Read), (&T, &Read)),
    (va, vb): (&[f32], &[f32]),
    (match_ratio, asks_the_older): (f32, &dyn Fn() -> bool),
) -> bool {
    let cos = match va.is_empty() || vb.is_empty() {
        true => None,
        false => Some(cosine(va, vb)),
    };
    let matched = || match (old.matched(), new.matched()) {
        (Some(mo), Some(mn)) => mn >= mo * match_ratio,
        _ => true,
    };
    // A denial makes the older untrue whatever the query asks: it is not
    // held to the match ratio. Holding every update the words see to no
    // ratio cost 33 of 1,534 questions on facts left alone (`memd eval
    // consolidation --sets 100 --updates 10`: 1,413 against 1,380).
    match states_anew_read((old_read, old.day()), (new_read, new.day()), cos) {
        Anew::No => false,
        Anew::Denied => true,
        Anew::ByWords => matched(),
        Anew::ByCosine | Anew::ByOpening => {
            let near = cos.is_some_and(|c| c >= ASKED_WORDS_COSINE);
            matched() && (near || !asks_the_older())
        }
    }
}

/// How [`states_anew`] found that a text states anew what another did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Anew {
    /// It does not (or not later).
    No,
    /// The words say it is an update ([`crate::update`]).
    ByWords,
    /// It denies what the older affirmed, or affirms what it denied
    /// ([`crate::update`]), or denies a part of it ([`denied_in_part`]):
    /// the older is no longer true, however well a query matches it.
    Denied,
    /// The words do not tell; it was stated on a later day, at cosine
    /// [`SAME_TOPIC_COSINE`] or more.
    ByCosine,
    /// The words do not tell, nor the cosine; it was stated on a later day
    /// and opens as the older does, with [`OPENING_WORDS`] or more.
    ByOpening,
}

/// Whether `new` (its text and day) states anew what `old` stated, and
/// later, at cosine `cos` (`None`: not compared). The words decide first
/// ([`crate::update`]): an update they see is one (on the same day too,
/// when only the newer says a change: "User works at Acme", then "User now
/// works at Globex"). Otherwise a text stated on a later day is when it
/// denies part of the older ([`denied_in_part`]), or at cosine
/// [`SAME_TOPIC_COSINE`] or more, or when it opens as the older does
/// ([`OPENING_WORDS`]): a second value of a many-valued thing
/// ("likes swimming", then "likes hiking") is ordered after the first, a
/// reorder that loses nothing, though the judge keeps both as facts of
/// their own; but not a newer text that keeps history ("… (since …;
/// previously: …)") holding something other than the older: that update
/// was decided, declared or judged, and it replaced what its history
/// holds. The order of MEMORY.md and of search hits follows this.
pub fn states_anew(
    (old, old_day): (&str, Option<&str>),
    (new, new_day): (&str, Option<&str>),
    cos: Option<f32>,
) -> Anew {
    states_anew_read((&Read::of(old), old_day), (&Read::of(new), new_day), cos)
}

/// [`states_anew`] of texts already read.
fn states_anew_read(
    (old, old_day): (&Read, Option<&str>),
    (new, new_day): (&Read, Option<&str>),
    cos: Option<f32>,
) -> Anew {
    let (later, same_day) = match (old_day, new_day) {
        (Some(o), Some(n)) => (n > o, n == o),
        _ => (false, false),
    };
    if !later && !same_day {
        return Anew::No;
    }
    match update::judge_read(old, new, cos.unwrap_or(0.0)) {
        Verdict::Update(Why::Said) => return Anew::ByWords,
        Verdict::Update(Why::Denied) => return Anew::Denied,
        Verdict::Update(Why::NewValue) if later => return Anew::ByWords,
        _ => {}
    }
    // A newer text that keeps history was decided an update of what its
    // history holds; the cosine alone, or a denial of a part, does not
    // make it one of another text too (`memd eval consolidation --sets
    // 100 --updates 10 --declared`: 4 fewer updates' questions answered
    // first, 26 more questions on facts left alone; EVALUATION.md, "An
    // update already decided").
    if !later || (new.keeps_history() && !new.replaced(old)) {
        return Anew::No;
    }
    if denied_in_part(old, new, cos) {
        return Anew::Denied;
    }
    if cos.is_some_and(|c| c >= SAME_TOPIC_COSINE) {
        return Anew::ByCosine;
    }
    match new.opening_shared_with(old) >= OPENING_WORDS {
        true => Anew::ByOpening,
        false => Anew::No,
    }
}

/// Whether, of `old` and the later `new`, one denies part of what the
/// other affirms: the denial shares [`update::DENIED_MIN_SHARED`] words
/// with it, or one at cosine [`SAME_TOPIC_COSINE`] or more ("has never
/// attended robotics conferences, but teaches physics" / "has given
/// keynote talks at global robotics conferences"). The judge asks more
/// before it folds the two (half the affirming text's words, or
/// four): a fold
/// changes an entry, while this only orders the denial first, and the
/// older stays a hit below it. One word at the cosine line is enough,
/// and, as for any denial, the newer comes first whatever the query
/// asks: holding that case to the match ratio and the question's words,
/// as the cosine rule is, answered 3 fewer updates' questions first and 1
/// more question on another fact (495 / 1,481 beside), the 3 being
/// questions asked in the denied text's words ("what degree did X
/// receive" after "X did not attend university"). `memd eval consolidation --data
/// ../shared/evaldata --sets 100 --updates 10` (EVALUATION.md, "…, a
/// denial in part, …"), the update's question with the new fact on top,
/// of 536 / questions on facts left alone with their fact on top, of
/// 1,534: beside 477 / 1,481 → 494 / 1,480 (7 of the 17 gained are the
/// measure's own fix, counted on the log); declared 517 / 1,497 → 524 /
/// 1,497.
fn denied_in_part(old: &Read, new: &Read, cos: Option<f32>) -> bool {
    let (shared, _) = update::denial_shares(old, new);
    let near = cos.is_some_and(|c| c >= SAME_TOPIC_COSINE);
    shared >= update::DENIED_MIN_SHARED || (shared >= 1 && near)
}

/// Order `hits` (best first) so that what a pending fact among them
/// declared it supersedes (`supersedes`: a pending fact, an entry or its
/// MEMORY.md line) comes right below that fact, never above it: until the
/// next run folds the two, the superseded text is stale, and a search
/// answers with the declared update first. Reads only the day files of
/// the pending facts among the hits (at most `k`), not the archive. The
/// scores shown are then lowered where needed so that they still never
/// rise down the list.
pub(crate) fn declared_below(layout: &Layout, hits: &mut [Hit]) -> Result<()> {
    let facts: HashSet<FactId> = hits
        .iter()
        .filter(|h| h.kind == RowKind::Fact)
        .filter_map(|h| h.id.parse().ok())
        .collect();
    let days: BTreeSet<&str> = facts.iter().map(FactId::day).collect();
    // Row superseded → the fact hit that declared it.
    let mut declared: HashMap<String, String> = HashMap::new();
    for day in days {
        for f in archive::declaring(layout, day)? {
            // The fact's id parsed from its line alone lacks the count of
            // the same text earlier that day (`.2`): its hash decides.
            let by = facts
                .iter()
                .find(|h| h.first_of_text() == f.id.first_of_text());
            let Some(by) = by else { continue };
            let rows = f.supersedes_facts.iter().map(|t| t.to_string()).chain(
                f.supersedes
                    .iter()
                    .flat_map(|e| [RowId::entry(e).to_string(), RowId::core(e).to_string()]),
            );
            for row in rows {
                declared.entry(row).or_insert_with(|| by.to_string());
            }
        }
    }
    if declared.is_empty() {
        return Ok(());
    }
    // Each move puts a superseded hit below its declarer; declarations
    // have no cycles (`memd add` refuses them), so this ends; the bound
    // is for a hand-made archive.
    for _ in 0..hits.len() * hits.len() {
        let at = |id: &str| hits.iter().position(|h| h.id.as_str() == id);
        let stale = (0..hits.len()).find_map(|i| {
            let by = declared.get(hits[i].id.as_str())?;
            at(by).filter(|&j| j > i).map(|j| (i, j))
        });
        let Some((i, j)) = stale else { break };
        hits[i..=j].rotate_left(1);
    }
    for i in 1..hits.len() {
        hits[i].score = hits[i].score.min(hits[i - 1].score);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Item {
        text: &'static str,
        day: &'static str,
        score: f64,
    }

    impl Ranked for Item {
        fn day(&self) -> Option<&str> {
            Some(self.day)
        }
        fn text(&self) -> &str {
            self.text
        }
        fn score(&self) -> f64 {
            self.score
        }
        fn matched(&self) -> Option<f32> {
            Some(self.score as f32)
        }
        fn set_above(&mut self, score: f64) {
            self.score = score + 1e-6;
        }
    }

    fn split(text: &str) -> Vec<String> {
        text.split(' ').map(str::to_lowercase).collect()
    }

    /// Whether the newer of an award and an article on one person, at
    /// cosine `cos`, is raised above the older for a query of `asked`.
    fn raised(cos: f32, asked: Option<&[&str]>) -> bool {
        let mut ranked = [
            Item {
                text: "Maya received an award for her research",
                day: "2026-11-01",
                score: 0.8,
            },
            Item {
                text: "Maya published an article in a journal",
                day: "2026-11-02",
                score: 0.7,
            },
        ];
        let vectors = [vec![1.0, 0.0], vec![cos, (1.0 - cos * cos).sqrt()]];
        let asked: Option<Vec<String>> = asked.map(|a| a.iter().map(|w| w.to_string()).collect());
        let compared = Compared {
            older: 2,
            newer: 2,
            match_ratio: SEARCH_MATCH_RATIO,
            asked: asked
                .as_deref()
                .map(|words| AskedWords { words, read: split }),
        };
        !raise_newer(&mut ranked, &vectors, compared).is_empty()
    }

    #[test]
    fn a_newer_text_only_its_topic_ties_is_not_raised_for_words_only_the_older_says() {
        assert!(!raised(0.65, Some(&["maya", "award"])));
        assert!(
            raised(0.65, Some(&["maya", "award", "journal"])),
            "a word only the newer says"
        );
        assert!(raised(0.65, Some(&["maya", "an"])), "words both say");
        assert!(raised(0.65, None), "nothing asked (promotion)");
        assert!(raised(0.75, Some(&["maya", "award"])), "near restatements");
        assert!(!raised(0.5, None), "not the same topic");
    }

    #[test]
    fn a_later_entry_that_keeps_history_is_not_tied_by_its_topic_to_what_it_did_not_replace() {
        let day = |d: &'static str| Some(d);
        let taught = (
            "Marta Silvan taught piano at the Riverside school",
            day("2026-01-01"),
        );
        let replaced = (
            "Marta Silvan plays the violin in a quartet",
            day("2026-01-01"),
        );
        let kept = "Marta Silvan plays the cello in a quartet (since 2026-02-01; previously: \
                    Marta Silvan plays the violin in a quartet, since 2026-01-01)";
        let newer = (kept, day("2026-02-01"));
        assert_eq!(states_anew(taught, newer, Some(0.8)), Anew::No);
        assert_ne!(
            states_anew(replaced, newer, Some(0.8)),
            Anew::No,
            "what its history holds it states anew"
        );
        let bare = (
            "Marta Silvan plays the cello in a quartet",
            day("2026-02-01"),
        );
        assert_eq!(
            states_anew(taught, bare, Some(0.8)),
            Anew::ByCosine,
            "without history, the topic ties them as before"
        );
    }

    #[test]
    fn a_later_text_that_denies_part_of_an_older_one_states_it_anew() {
        let old = "Priya Natarajan has given keynote talks at global robotics conferences in Asia.";
        let denies =
            "Priya Natarajan has never attended robotics conferences, but she teaches physics.";
        let (then, later) = (Some("2026-01-01"), Some("2026-02-01"));
        assert!(
            !matches!(update::judge(old, denies, 0.59), Verdict::Update(_)),
            "the judge keeps the two apart: it shares 2 of the 6 words affirmed"
        );
        assert_eq!(
            states_anew((old, then), (denies, later), Some(0.59)),
            Anew::Denied
        );
        assert_eq!(
            states_anew((denies, then), (old, later), Some(0.59)),
            Anew::Denied,
            "affirmed again later"
        );
        assert_eq!(
            states_anew((old, later), (denies, then), Some(0.59)),
            Anew::No,
            "not later"
        );
        let one_word = "Priya Natarajan never drinks coffee before her talks.";
        assert_eq!(
            states_anew((old, then), (one_word, later), Some(0.41)),
            Anew::No,
            "one word shared, on another topic"
        );
        assert_eq!(
            states_anew((old, then), (one_word, later), Some(0.6)),
            Anew::Denied,
            "one word shared, on the same topic"
        );
        let decided = format!(
            "{denies} (since 2026-02-01; previously: Priya Natarajan taught chemistry., since 2026-01-01)"
        );
        assert_eq!(
            states_anew((old, then), (&decided, later), Some(0.59)),
            Anew::No,
            "a decided update denies in part only what its history holds"
        );
    }

    #[test]
    fn a_later_text_that_opens_as_an_older_one_states_it_anew_under_the_cosine_line() {
        let old = "Tomas Berg has written several essays on medieval shipbuilding.";
        let new = "Tomas Berg has written several essays on the economics of urban bike lanes.";
        let (then, later) = (Some("2026-01-01"), Some("2026-02-01"));
        assert_eq!(
            states_anew((old, then), (new, later), Some(0.48)),
            Anew::ByOpening
        );
        assert_eq!(
            states_anew((new, then), (old, later), Some(0.48)),
            Anew::ByOpening
        );
        assert_eq!(states_anew((old, later), (new, then), Some(0.48)), Anew::No);
        let two = (
            "Tomas Berg likes old maps of the Baltic coast.",
            "Tomas Berg likes fresh bread from the market.",
        );
        assert_eq!(
            states_anew((two.0, then), (two.1, later), Some(0.48)),
            Anew::No,
            "an opening of one word says no kind"
        );
        let two_past_the_name = (
            "Tomas Berg teaches physics at a college in Leeds.",
            "Tomas Berg teaches physics to children on weekends.",
        );
        assert_eq!(
            states_anew(
                (two_past_the_name.0, then),
                (two_past_the_name.1, later),
                Some(0.48)
            ),
            Anew::No,
            "the subject's name is not one of the words it opens with"
        );
        let moved = "Tomas Berg moved to Lisbon with his family.";
        assert_eq!(
            states_anew((old, then), (moved, later), Some(0.41)),
            Anew::No
        );
    }
}
