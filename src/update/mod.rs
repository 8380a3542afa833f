//! Whether a newer statement updates an older one, decided without an LLM:
//! the built-in judge's update rule ([`crate::consolidate`] folds such a
//! fact into the entry it updates, keeping the old text as history), and
//! what the current-first order ([`crate::current`]) takes as "the same
//! thing".
//!
//! A cosine line alone cannot tell an update from a second fact of the
//! same kind: "User works at Acme" and "User now works at Globex" are as
//! alike to MiniLM as "User likes swimming" and "User likes hiking", and
//! only the first pair is an update. So the rule reads the words:
//!
//! - **A new value in the same frame.** The two texts say the same words
//!   before and after one differing span (the frame: at least
//!   [`FRAME_MIN_SHARE`] of the longer text, and the subject, its first
//!   word, shared), and each side's span holds a value ("works at Acme" /
//!   "works at Globex", "graduated in biology" / "graduated in mechanical
//!   engineering"). That is an update, unless the word before the span is
//!   one that takes many values ("likes", "has", "speaks", "visited": a
//!   person likes many things, [`MANY_VALUED`]) and the newer text says
//!   nothing of a change: then the two are [`Verdict::Distinct`], both
//!   current.
//! - **A change said in words.** The newer text says a change ("now", "no
//!   longer", "moved to", "switched to", "instead", …, [`CHANGE_WORDS`])
//!   that the older does not, and shares its subject and two content
//!   words with it ([`SAID_MIN_SHARED`]: facts on one person share a topic
//!   word all the time), or a slot of the same kind ("lives in" / "moved
//!   to", [`SLOTS`]; "work" names one only as "works at", "for", "as" or
//!   "in"); a word that only may say a change ("not", "left",
//!   "became", [`WEAK_CHANGE_WORDS`]) counts with a slot of the same kind
//!   only. Or its frame holds with the subject changed ("Ada, not
//!   Mira, interviewed Jonas").
//! - **A denial.** One text denies, in a clause ("not", "never",
//!   "dislikes", [`denial::DENIAL_WORDS`]), what the other affirms of the same
//!   subject: the clause shares [`denial::DENIED_MIN_SHARED`] of the other's
//!   words, names, numbers and words of when aside, and half of them or
//!   [`denial::DENIED_SURE_SHARED`] ("has traveled to more than 20 countries" / "has
//!   never traveled beyond his home country"). A search ranks such a
//!   newer text above the older whatever the query asks
//!   ([`crate::current`]).
//!
//! The LLM judge's per-fact request has a gate of its own on the updates
//! a model proposes (`consolidate::reply::per_fact`, `about_same`): it is
//! looser on purpose, since it only lets a model's decision stand (93.7%
//! of Letta updates pass it, and 6% of related SICK pairs), where this
//! rule decides alone. Its change words and its refusal of subjects it
//! does not name ("A man…") were measured for that gate; sharing them
//! here is to be measured before it is done.
//!
//! Anything else is [`Verdict::Unknown`]: the caller's cosine rule
//! decides an order, and the built-in judge adds the fact beside. Which
//! text is newer is the caller's to say (its day, or archive order).

mod denial;
mod frame;

use std::collections::HashSet;
use std::sync::{LazyLock, OnceLock};

pub(crate) use denial::{DENIED_MIN_SHARED, denial_shares};
use denial::{denial_word, denied, names};
use frame::Frame;

use crate::text::{fold, is_stop};
use crate::{duplicate, history};

/// What the rule says of an older and a newer text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The newer text gives a new value for what the older said: the older
    /// is no longer current.
    Update(Why),
    /// The same frame with a value a subject can have many of, and no
    /// change said: two current facts ("likes swimming", "likes hiking").
    Distinct,
    /// The words do not tell.
    Unknown,
}

/// Which part of the rule found an update.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Why {
    /// A new value in the same frame.
    NewValue,
    /// A change said in words.
    Said,
    /// One text denies what the other says of the same subject ("has
    /// traveled to more than 20 countries" / "has never traveled beyond his
    /// home country").
    Denied,
}

/// Least share of the longer text's words that the frame (the words
/// before and after the differing span) must hold. "User works at Acme" /
/// "User works at Globex" share 3 of 4; "Hanna Berglund is a cellist" /
/// "Hanna Berglund and Iris Okafor run a podcast" share 2 of 8 and are two
/// facts on one person.
pub const FRAME_MIN_SHARE: f32 = 0.6;

/// Least words the frame holds: two texts of two words that share one are
/// not a frame.
const FRAME_MIN_WORDS: usize = 2;

/// Longest differing span on either side, in words, before the texts are
/// taken to say different things rather than one thing with another
/// value.
const SPAN_MAX_WORDS: usize = 6;

/// Least cosine between two texts for a change said in words to update
/// the older when they share no frame: they must still speak of one
/// thing.
pub const SAID_MIN_COSINE: f32 = 0.45;

/// Least content words two texts must share, besides their subject and
/// names, for a change said in words ("now", "used to", "instead") to
/// update the older when they share no frame or slot ([`shares_more`]).
/// Facts on one person share a topic word all the time ("hiking",
/// "turtles", "basketball"), and with one word a change said of something
/// else folded one into the other (EVALUATION.md, "A change said of
/// something else").
pub const SAID_MIN_SHARED: usize = 2;

/// Words dropped before texts are compared: articles, and the adverbs that
/// only say a statement is current ("User now works at Globex" has the
/// frame of "User works at Acme").
const FILLER: &[&str] = &[
    "a",
    "an",
    "the",
    "now",
    "currently",
    "actually",
    "presently",
    "nowadays",
    "still",
    "recently",
    "just",
    "also",
    "once",
];

/// Words and phrases by which a text says that something changed. A
/// phrase is matched as whole words.
pub const CHANGE_WORDS: &[&str] = &[
    "now",
    "no longer",
    "not anymore",
    "anymore",
    "any more",
    "any longer",
    "nowadays",
    "these days",
    "moved to",
    "moved from",
    "switched",
    "instead",
    "rather than",
    "used to",
    "formerly",
    "previously",
    "has since",
    "since then",
    "correction",
    "actually",
    "got a new",
    "has a new",
];

/// Words that may say a change, and as often say something else ("not",
/// "left", "became"): they count where the texts share a frame, or a
/// one-valued slot ([`SLOTS`]), never on a shared word alone ("User's
/// sister never liked the cold" says nothing new of where she lives).
pub const WEAK_CHANGE_WORDS: &[&str] = &[
    "not",
    "never",
    "left",
    "quit",
    "stopped",
    "gave up",
    "became",
    "has become",
    "changed",
    "changes",
    "relocated",
    "new",
];

/// The words of a negation and its auxiliary ("does not", "is no
/// longer"), for a span that only negates.
const NEGATION_WORDS: &[&str] = &[
    "not", "no", "never", "longer", "anymore", "do", "does", "did", "is", "are", "was", "were",
    "has", "have", "had", "can", "will",
];

/// Words after which a span names one of many values a subject can have
/// (one of the last two words before it): a person likes, has, speaks and
/// has been to many things at once.
pub const MANY_VALUED: &[&str] = &[
    "like",
    "likes",
    "liked",
    "love",
    "loves",
    "loved",
    "enjoy",
    "enjoys",
    "enjoyed",
    "has",
    "have",
    "had",
    "own",
    "owns",
    "owned",
    "play",
    "plays",
    "played",
    "playing",
    "speak",
    "speaks",
    "visit",
    "visits",
    "visited",
    "read",
    "reads",
    "watch",
    "watches",
    "watched",
    "collect",
    "collects",
    "know",
    "knows",
    "met",
    "meets",
    "learn",
    "learns",
    "learning",
    "studying",
    "study",
    "studies",
    "practice",
    "practices",
    "practicing",
    "practise",
    "practises",
    "and",
    "or",
    "with",
    "also",
    "both",
    "been",
    "interested",
    "into",
    "fan",
    "friends",
    "allergic",
    "favourites",
    "favorites",
    "hobbies",
    "hobby",
    "pets",
    "pet",
    "kids",
    "children",
    "eats",
    "eat",
    "drinks",
    "drink",
    "wears",
    "uses",
    "use",
    "cooks",
    "makes",
    "writes",
    "attended",
    "attends",
    "tried",
    "went",
    "goes",
];

/// Slots a subject has one value of at a time, each as the words that
/// name it: "User lives in Paris" and "User moved to Berlin" fill the
/// same slot, so a change said in words updates one with the other.
pub const SLOTS: &[&[&str]] = &[
    &[
        "lives",
        "live",
        "living",
        "moved",
        "relocated",
        "resides",
        "home",
        "address",
        "based",
    ],
    &[
        "works", "work", "working", "job", "employer", "employed", "joined", "hired", "company",
    ],
    &["called", "named", "name"],
    &[
        "married",
        "husband",
        "wife",
        "partner",
        "girlfriend",
        "boyfriend",
        "dating",
        "engaged",
    ],
    &["age", "old", "aged"],
    &["drives", "car"],
    &["role", "title", "position", "promoted"],
];

/// What the rule says of `older` and `newer`, whose embeddings have cosine
/// `cosine`. History a text keeps ("… (previously: …)") is not compared:
/// only what it states as current.
pub fn judge(older: &str, newer: &str, cosine: f32) -> Verdict {
    judge_read(&Read::of(older), &Read::of(newer), cosine)
}

/// A text as [`judge`] reads it, read once: its words and whether it says
/// a change (a caller comparing many pairs reads each text once).
#[derive(Debug, Clone)]
pub struct Read {
    words: Vec<String>,
    change: Option<Strength>,
    /// It opens on someone it does not name ([`unnamed_subject`]).
    unnamed: bool,
    /// What it states as current: [`denied`] reads its clauses and names
    /// from it, only for a pair of which one text denies.
    now: String,
    /// The history it keeps after that, lowercased ("(since …;
    /// previously: …)"; empty when it keeps none).
    history: String,
    /// The words of `now` written with a capital after its first word,
    /// and those written without one ([`names`]): read once, when a pair
    /// first asks.
    names: OnceLock<(HashSet<String>, HashSet<String>)>,
}

impl Read {
    /// What `text` states as current ([`current_part`]), read.
    pub fn of(text: &str) -> Read {
        let now = current_part(text);
        Read {
            words: words(now),
            change: change_said(now),
            unnamed: unnamed_subject(now),
            now: now.to_string(),
            history: text[now.len()..].trim().to_lowercase(),
            names: OnceLock::new(),
        }
    }

    /// Whether it keeps history: an update already decided (declared, or
    /// judged at a run), whose history says what it replaced.
    pub fn keeps_history(&self) -> bool {
        !self.history.is_empty()
    }

    /// Whether its history holds what `older` states as current: `older`
    /// is what it replaced.
    pub fn replaced(&self, older: &Read) -> bool {
        let then = older.now.trim().to_lowercase();
        !then.is_empty() && self.history.contains(&then)
    }

    /// How many words that carry content, names and its subject aside, it opens with
    /// together with `other`, past which both go on with words of their
    /// own ("Tomas Berg has written several essays on medieval
    /// shipbuilding" / "… on urban bike lanes": 3, "written", "several",
    /// "essays"). Two texts that open alike say one thing of
    /// one subject with two values, or two things of which the opening
    /// says the kind.
    pub fn opening_shared_with(&self, other: &Read) -> usize {
        let (a, b) = (&self.words, &other.words);
        let n = a.iter().zip(b).take_while(|(x, y)| x == y).count();
        if n == 0 || n == a.len() || n == b.len() {
            return 0;
        }
        let name = self.name_with(other);
        // The first word is the subject, or its first name (which
        // [`names`] cannot see written with a capital after a first word).
        let subject = subject(a);
        (a[1..n].iter())
            .filter(|w| is_content(w) && !name(w) && w.as_str() != subject)
            .count()
    }

    /// Whether a word is a name in the pair of `self` and `other`: written
    /// with a capital in one of them, never without ("Award" in "the
    /// National Archive Award" is the word "awards" too).
    pub(super) fn name_with<'a>(&'a self, other: &'a Read) -> impl Fn(&String) -> bool + 'a {
        let names = |r: &'a Read| r.names.get_or_init(|| names(&r.now));
        let ((cap_a, small_a), (cap_b, small_b)) = (names(self), names(other));
        move |w| {
            (cap_a.contains(w) || cap_b.contains(w)) && !small_a.contains(w) && !small_b.contains(w)
        }
    }

    /// Whether it says a denial word ([`denial::DENIAL_WORDS`]).
    fn denies(&self) -> bool {
        self.words.iter().any(|w| denial_word(w))
    }

    /// The keys under which, as the older text, it is found by a newer
    /// text that may update it through a shared frame ([`Read::newer_keys`]);
    /// none for a text [`judge_read`] never calls updated.
    pub fn older_keys(&self) -> Vec<u64> {
        match self.unnamed {
            true => Vec::new(),
            false => frame::older_keys(&self.words),
        }
    }

    /// The keys under which, as the newer text, it finds the older texts
    /// it may update through a shared frame ([`Read::older_keys`]).
    pub fn newer_keys(&self) -> Vec<u64> {
        match self.unnamed {
            true => Vec::new(),
            false => frame::newer_keys(&self.words),
        }
    }

    /// Whether, as the newer text, it may update an older one it shares no
    /// frame key with: it says a change or a denial, or sets a word apart
    /// with "not" ("Rebeka, not Rhonya"). Such a text is to be compared
    /// with every older one it shares a word of [`Read::keys`] with.
    pub fn updates_unframed(&self) -> bool {
        !self.unnamed
            && (self.change.is_some() || self.denies() || self.words.iter().any(|w| w == "not"))
    }

    /// Whether, as the older text, it may be updated by a newer one it
    /// shares no frame key with: it says a denial the newer may affirm.
    pub fn updated_unframed(&self) -> bool {
        !self.unnamed && self.denies()
    }
}

/// [`judge`] of two texts already read.
pub fn judge_read(older: &Read, newer: &Read, cosine: f32) -> Verdict {
    let (a, b) = (&older.words, &newer.words);
    if a.is_empty() || b.is_empty() || a == b {
        return Verdict::Unknown;
    }
    // "A man is riding a horse" / "A man is riding a bike": nothing says
    // the two are one man.
    if older.unnamed || newer.unnamed {
        return Verdict::Unknown;
    }
    let said = newer.change.filter(|_| older.change.is_none());
    let framed = without_contrast(b.clone(), a);
    let frame = Frame::of(a, &framed);
    if let Some(f) = &frame
        && f.holds(a)
    {
        if f.prefix == 0 {
            // Another subject in the same frame: two facts ("Alice lives in
            // Paris", "Bob lives in Paris"), unless the newer says the
            // older's subject was wrong.
            return match said.is_some() && f.values() {
                true => Verdict::Update(Why::Said),
                false => Verdict::Unknown,
            };
        }
        if f.negates() {
            return Verdict::Update(Why::Said);
        }
        if f.values() {
            return match (said.is_some(), f.many(a)) {
                (true, _) => Verdict::Update(Why::Said),
                (false, true) => Verdict::Distinct,
                (false, false) => Verdict::Update(Why::NewValue),
            };
        }
    }
    if denied(older, newer) {
        return Verdict::Update(Why::Denied);
    }
    let more = match said {
        None => false,
        Some(Strength::Strong) => shares_more(older, newer),
        Some(Strength::Weak) => same_slot(a, b),
    };
    if more && cosine >= SAID_MIN_COSINE && shares_subject(a, b) {
        return Verdict::Update(Why::Said);
    }
    Verdict::Unknown
}

impl Read {
    /// The words by which the text may be found as the older of an
    /// update by the newer: the content words of what it states as
    /// current, and a key for each one-valued slot it names ([`SLOTS`]).
    /// [`judge`] never calls an update two texts that share none of these.
    pub fn keys(&self) -> HashSet<String> {
        let w = &self.words;
        let mut out: HashSet<String> = w.iter().filter(|w| is_content(w)).cloned().collect();
        for (i, slot) in SLOTS_LISTED.iter().enumerate() {
            if w.iter().any(|x| slot.contains(x)) {
                out.insert(format!("slot#{i}"));
            }
        }
        out
    }
}

/// Words that only say a statement is current ("User now works at
/// Globex"): left out of what a search compares with the query
/// ([`statement`]).
const CURRENCY: &[&str] = &["now", "currently", "presently", "nowadays"];

/// What `text` states as current, as a search compares it with a
/// query: [`current_part`] without the words that only say it is current
/// ("User now works at Globex (previously: …)" states "User works at
/// Globex"). `text` itself when that changes nothing.
pub fn statement(text: &str) -> String {
    let now = current_part(text);
    let kept: Vec<&str> = now
        .split(' ')
        .filter(|w| {
            let bare = w
                .trim_matches(|c: char| !c.is_alphanumeric())
                .to_lowercase();
            !CURRENCY.contains(&bare.as_str())
        })
        .collect();
    kept.join(" ")
}

/// The part of `text` it states as current: before any history it keeps
/// ("(since DAY; previously: …)", [`crate::history`]; "(previously: …)",
/// "; previously …").
pub fn current_part(text: &str) -> &str {
    let lower = text.to_lowercase();
    let cut = ["(previously:", "; previously", "(formerly", "; before:"]
        .iter()
        .filter_map(|m| lower.find(m))
        .chain(history::opens_at(text))
        .min();
    // `to_lowercase` may change byte lengths outside ASCII: cut only where
    // the original has a char boundary, else keep the whole text.
    match cut {
        Some(at) if text.is_char_boundary(at) => text[..at].trim_end(),
        _ => text,
    }
}

/// The words of `text` as the rule compares them: lowercased, a
/// possessive "'s" kept as its own word, a plural or third-person "s"
/// dropped ("likes" = "like", [`crate::duplicate::stem`]), [`FILLER`]
/// dropped.
fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for w in fold(text).split(|c: char| !c.is_alphanumeric() && c != '\'') {
        let w = w.trim_matches('\'');
        if w.is_empty() || FILLER.contains(&w) {
            continue;
        }
        match w.strip_suffix("'s") {
            Some(owner) if !owner.is_empty() => {
                out.push(owner.to_string());
                out.push("'s".to_string());
            }
            _ if is_stop(w) => out.push(w.to_string()),
            _ => out.push(duplicate::stem(w).to_string()),
        }
    }
    out
}

/// `b` without a contrast that names words of `a` ("Rebeka, not Rhonya,
/// interviewed Karnel": "not rhonya" goes), so that the frame of the
/// rest can be compared with `a`: of the runs of `a`'s words after
/// "not", the one whose removal leaves the most of the frame.
fn without_contrast(b: Vec<String>, a: &[String]) -> Vec<String> {
    let Some(at) = b.iter().position(|w| w == "not") else {
        return b;
    };
    // "does not like" negates; "John, not Jon" contrasts.
    if at > 0 && NEGATION_WORDS.contains(&b[at - 1].as_str()) {
        return b;
    }
    let run = b[at + 1..].iter().take_while(|w| a.contains(w)).count();
    let without = |n: usize| {
        let mut c = b.clone();
        c.drain(at..at + 1 + n);
        c
    };
    let shared = |c: &[String]| Frame::of(a, c).map_or(0, |f| f.prefix + f.suffix);
    let best = (1..=run).max_by_key(|&n| (shared(&without(n)), std::cmp::Reverse(n)));
    match best {
        Some(n) => without(n),
        None => b,
    }
}

/// How surely a word says a change ([`CHANGE_WORDS`],
/// [`WEAK_CHANGE_WORDS`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Strength {
    Strong,
    Weak,
}

/// Whether, and how surely, `text` says in words that something changed
/// (a negation, "Rebeka, not Rhonya", is a weak word).
fn change_said(text: &str) -> Option<Strength> {
    let folded = format!(" {} ", words_only(text));
    let has = |list: &[&str]| list.iter().any(|c| folded.contains(&format!(" {c} ")));
    if has(CHANGE_WORDS) {
        Some(Strength::Strong)
    } else if has(WEAK_CHANGE_WORDS) || folded.contains("n't ") {
        Some(Strength::Weak)
    } else {
        None
    }
}

/// Whether `text` says, in words, that something changed (surely or
/// not).
pub fn says_change(text: &str) -> bool {
    change_said(text).is_some()
}

/// `text` folded to its words separated by single spaces (apostrophes
/// kept), filler included.
fn words_only(text: &str) -> String {
    fold(text)
        .split(|c: char| !c.is_alphanumeric() && c != '\'')
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The subject of `w`: its first word, or what a possessive at its start
/// owns ("User's manager is called Jon": "manager").
fn subject(w: &[String]) -> &str {
    match (w.get(1), w.get(2)) {
        (Some(p), Some(owned)) if p == "'s" => owned,
        _ => w.first().map_or("", String::as_str),
    }
}

/// Whether `text` is about someone it does not name: it opens with an
/// indefinite article, a number or a quantifier ("A man…", "Two dogs…",
/// "Some children…", "Someone…").
pub(crate) fn unnamed_subject(text: &str) -> bool {
    let first = text
        .split_whitespace()
        .next()
        .unwrap_or("")
        .trim_matches(|c: char| !c.is_alphanumeric())
        .to_lowercase();
    UNNAMED.contains(&first.as_str())
}

const UNNAMED: &[&str] = &[
    "a", "an", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    "several", "some", "many", "few", "various", "numerous", "someone", "somebody", "people",
];

/// Whether two words are one word in two forms: equal, or sharing their
/// first five letters and three quarters of the shorter ("countries" /
/// "country", "scored" / "score", "exhibited" / "exhibitions").
fn akin(x: &str, y: &str) -> bool {
    let common = x.chars().zip(y.chars()).take_while(|(p, q)| p == q).count();
    let shorter = x.chars().count().min(y.chars().count());
    x == y || common >= 5 && common * 4 >= shorter * 3
}

/// Whether the newer text speaks of the older's subject: it starts with
/// the same word, or says the older's subject, or both start with a word
/// of one slot (an agent's memory leaves the user unsaid: "Lives in
/// Seattle", "Moved to Lisbon").
fn shares_subject(a: &[String], b: &[String]) -> bool {
    let slot_first = (SLOTS_LISTED.iter()).any(|s| s.contains(&a[0]) && s.contains(&b[0]));
    a[0] == b[0] || b.iter().any(|w| w == subject(a)) || slot_first
}

/// Whether the two say more in common than their subject: two content
/// words ([`SAID_MIN_SHARED`]) besides the older's subject, its first word
/// and the names either writes, or a one-valued slot of the same kind
/// ([`SLOTS`]). "User's sister lives in Denver" and "User's sister never
/// liked the cold" share only their subject.
fn shares_more(older: &Read, newer: &Read) -> bool {
    let (a, b) = (&older.words, &newer.words);
    let name = older.name_with(newer);
    let skip = [a[0].as_str(), subject(a)];
    let content = |w: &[String]| -> HashSet<String> {
        w.iter()
            .filter(|w| !skip.contains(&w.as_str()) && is_content(w) && !name(w))
            .cloned()
            .collect()
    };
    content(a).intersection(&content(b)).count() >= SAID_MIN_SHARED || same_slot(a, b)
}

/// Whether a word of [`words`] carries content: not a stop word, a
/// possessive or a word that says a change.
fn is_content(w: &str) -> bool {
    w != "'s" && !CHANGE_WORDS.contains(&w) && !WEAK_CHANGE_WORDS.contains(&w) && !is_stop(w)
}

/// Whether `w` reads as an action or a past event ("slicing", "watched"):
/// what follows it is what was done, of which a subject does many.
fn action(w: &str) -> bool {
    w.len() > 4 && (w.ends_with("ing") || w.ends_with("ed")) && !NAMING_LISTED.contains(w)
}

/// Words that give a name, not an action ("a book titled …").
const NAMING: &[&str] = &[
    "called",
    "named",
    "titled",
    "entitled",
    "nicknamed",
    "known",
];

/// A list's words with their stems, so that a word of [`words`]
/// (stemmed) is looked up in it as it is: built once, since a run's judge
/// looks up every word of every pair.
type Listed = LazyLock<HashSet<String>>;

/// The words of `list` and their stems.
fn with_stems(list: &[&str]) -> HashSet<String> {
    list.iter()
        .flat_map(|m| [m.to_string(), duplicate::stem(m).to_string()])
        .collect()
}

/// [`MANY_VALUED`], [`NAMING`] and each of [`SLOTS`], with their stems.
static MANY_VALUED_LISTED: Listed = LazyLock::new(|| with_stems(MANY_VALUED));
static NAMING_LISTED: Listed = LazyLock::new(|| with_stems(NAMING));
static WORK_LISTED: Listed = LazyLock::new(|| with_stems(WORK));
static SLOTS_LISTED: LazyLock<Vec<HashSet<String>>> =
    LazyLock::new(|| SLOTS.iter().map(|s| with_stems(s)).collect());

/// Whether both texts name the same one-valued slot ([`SLOTS`]).
fn same_slot(a: &[String], b: &[String]) -> bool {
    SLOTS_LISTED.iter().any(|slot| {
        let names = |w: &[String]| {
            (w.iter().enumerate()).any(|(i, x)| slot.contains(x) && names_slot(x, w.get(i + 1)))
        };
        names(a) && names(b)
    })
}

/// Whether `word`, of a slot's words, names its slot where `next`
/// follows it: "work" names one's employment only as "works at", "for",
/// "as" or "in" ("keeps up the good work", "working on new routines"
/// and "make it work" name none).
fn names_slot(word: &str, next: Option<&String>) -> bool {
    let employment = |n: &String| ["at", "for", "as", "in"].contains(&n.as_str());
    match WORK_LISTED.contains(word) {
        true => next.is_some_and(employment),
        false => true,
    }
}

/// The words of work that name employment only with what follows them
/// ([`names_slot`]).
const WORK: &[&str] = &["work", "works", "working", "worked"];

#[cfg(test)]
mod tests;
