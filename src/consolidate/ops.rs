//! The judge's decisions for one cluster: parsing a reply into operations
//! and validating them before anything is written.
//!
//! The LLM sees short aliases (`F1`, `E1`) instead of ids: small models copy
//! `F3` faithfully and mangle `2026-11-20#14de240e`. Parsing is lenient about
//! shape (a bare array, `type` for `op`, a single id for a list, any case),
//! because shape is not where the danger is; validation is strict about
//! meaning, because that is what keeps the files safe.
//!
//! Two rules guard against a reply that would quietly drop what a fact or
//! an entry said (small models do both). Code uses word overlap here only
//! to refuse or to keep more, never to merge:
//! - every fact must be said by the text of an op that names it: for a
//!   KEEP, the entry it claims already says it (at least
//!   [`SAYS_MIN_COVERAGE`] of the fact's content words); for an ADD or
//!   REPLACE, the new text, more loosely ([`WRITTEN_MIN_COVERAGE`]: an
//!   update or a correction rewrites, "Switched to spaces" becomes "Now
//!   prefers spaces"); a REMOVE must fold its entry into one whose text
//!   (after this reply) says it.
//!   Otherwise the reply is invalid and asked again, naming the fact;
//! - a REPLACE whose text keeps too little of the entry it replaces
//!   ([`REPLACE_MIN_COVERAGE`]) gets the old text appended as history,
//!   "(previously: …)", so an update never erases the value it updates.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;

use serde::Serialize;
use serde_json::Value;

use crate::text::{content_words, coverage};

/// Least share of a fact's (or a merged entry's) content words that an
/// existing text said to carry it must contain.
pub const SAYS_MIN_COVERAGE: f32 = 0.5;

/// The same for a text the judge wrote from the fact (ADD, REPLACE).
pub const WRITTEN_MIN_COVERAGE: f32 = 0.25;

/// Least share of an entry's content words a REPLACE that writes its own
/// history ("…; previously …") must keep before the old text is appended
/// as well. As strict as the evaluation's test of a fact still being
/// carried (60% of its content words): at 0.3 a REPLACE could keep an
/// entry's names, drop the rest of what it said, and nothing would bring it
/// back. A REPLACE without words of the past must keep every word (see
/// [`with_history`]).
pub const REPLACE_MIN_COVERAGE: f32 = 0.6;

/// Words with which a text keeps a value as a thing of the past.
const PAST_MARKERS: &[&str] = &[
    "previously",
    "formerly",
    "used to",
    "no longer",
    "earlier",
    "before that",
    "until",
];

const HISTORY_OPEN: &str = " (previously: ";

/// Most words a judge's text may bring that nothing it was shown says.
/// One allows an inflection ("taught" for "teaches") in a rewrite; a real
/// 1.5B model, told to keep history, appended "; previously she was a
/// student at the University of Edinburgh" to facts that never said so:
/// three words no fact had.
pub const INVENTED_MAX: usize = 1;

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
/// capital inside a sentence ("William Sutter", "Lyon") and words with a
/// digit. They are the values a fact is about; a text that drops one no
/// longer says the fact ("Nathaniel and Annette ran the fundraiser" does
/// not say "Nathaniel and William ran the fundraiser", though most words
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

/// Whether `text` keeps every name and number of `fact`, except those of
/// `replaced` (the entry a REPLACE rewrites: "John, not Jon" names the old
/// value only to drop it).
fn keeps_names(fact: &str, text: &str, replaced: &str) -> bool {
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

/// The facts' own words, for a judge's text that invented some.
fn verbatim(groups: &[usize], cluster: &Cluster) -> String {
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
/// drop the old one ("Joren and Eliza run the podcast" replacing "Nora and
/// Eliza run the podcast"), and the old value is then gone from the memory.
/// `old` is kept unless `new` still has every content word of `old`, or
/// `new` writes its own history (a word of the past that `old` lacked) and
/// keeps [`REPLACE_MIN_COVERAGE`] of it, or every dropped word is a
/// misspelling of a word `new` brings (a typo fix: "Jon" → "John", where
/// keeping the wrong name would be the error; a number is never a typo).
/// An `old` that already has history is flattened: "new (previously: old
/// value; older values)", not parentheses inside parentheses.
pub fn with_history(new: &str, old: &str) -> String {
    let new = new.trim();
    let old_words = content_words(old);
    let new_words = content_words(new);
    let dropped: Vec<&String> = old_words.difference(&new_words).collect();
    if dropped.is_empty() {
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
    let added: Vec<&String> = new_words.difference(&old_words).collect();
    let typo_fix = dropped
        .iter()
        .all(|d| added.iter().any(|a| misspelling(d, a)));
    if typo_fix {
        return new.to_string();
    }
    let old = old.replace('\n', " ");
    let old = old.trim();
    let flat = match old.split_once(HISTORY_OPEN) {
        Some((value, older)) if older.ends_with(')') => {
            format!("{}; {}", value.trim(), &older[..older.len() - 1])
        }
        _ => old.to_string(),
    };
    format!("{new}{HISTORY_OPEN}{flat})")
}

/// Pending facts with the same normalised text: one item for the judge.
#[derive(Debug, Clone, Serialize)]
pub struct Group {
    /// Fact ids, oldest first.
    pub ids: Vec<String>,
    pub text: String,
    /// Days of the facts, oldest first.
    pub days: Vec<String>,
}

/// An entry as it was when the run planned (what the judge saw).
#[derive(Debug, Clone, Serialize)]
pub struct Snapshot {
    pub id: String,
    pub text: String,
    pub pinned: bool,
    pub unreviewed: bool,
    pub first_seen: String,
    pub updated: String,
}

/// What one judge call sees.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Cluster {
    pub groups: Vec<Group>,
    pub entries: Vec<Snapshot>,
}

impl Cluster {
    /// Every fact id of the cluster.
    pub fn fact_ids(&self) -> impl Iterator<Item = &str> {
        self.groups
            .iter()
            .flat_map(|g| g.ids.iter().map(String::as_str))
    }

    pub fn entry(&self, id: &str) -> Option<&Snapshot> {
        self.entries.iter().find(|e| e.id == id)
    }
}

/// One operation, with real ids.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[serde(tag = "op", rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Op {
    Add {
        text: String,
        from: Vec<String>,
    },
    Replace {
        target: String,
        text: String,
        from: Vec<String>,
    },
    Remove {
        target: String,
        into: String,
    },
    Keep {
        target: String,
        from: Vec<String>,
    },
}

impl Op {
    /// The archive facts behind the op.
    pub fn from(&self) -> &[String] {
        match self {
            Op::Add { from, .. } | Op::Replace { from, .. } | Op::Keep { from, .. } => from,
            Op::Remove { .. } => &[],
        }
    }

    pub fn target(&self) -> Option<&str> {
        match self {
            Op::Add { .. } => None,
            Op::Replace { target, .. } | Op::Remove { target, .. } | Op::Keep { target, .. } => {
                Some(target)
            }
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            Op::Add { .. } => "ADD",
            Op::Replace { .. } => "REPLACE",
            Op::Remove { .. } => "REMOVE",
            Op::Keep { .. } => "KEEP",
        }
    }
}

/// The prompt's view of a cluster: aliases, the text of the two lists.
pub struct Aliases {
    facts: HashMap<String, usize>,
    entries: HashMap<String, usize>,
}

impl Aliases {
    pub fn new(cluster: &Cluster) -> Aliases {
        let mut facts = HashMap::new();
        for (i, g) in cluster.groups.iter().enumerate() {
            facts.insert(format!("F{}", i + 1), i);
            for id in &g.ids {
                facts.insert(id.to_lowercase(), i);
            }
        }
        let mut entries = HashMap::new();
        for (i, e) in cluster.entries.iter().enumerate() {
            entries.insert(format!("E{}", i + 1), i);
            entries.insert(e.id.to_lowercase(), i);
        }
        Aliases { facts, entries }
    }

    fn fact(&self, s: &str) -> Option<usize> {
        lookup(&self.facts, s)
    }

    fn entry(&self, s: &str) -> Option<usize> {
        lookup(&self.entries, s)
    }
}

/// An alias (`F1`, `f1`) or an id (any case) in `map`.
fn lookup(map: &HashMap<String, usize>, s: &str) -> Option<usize> {
    let s = s.trim();
    map.get(&s.to_uppercase())
        .or_else(|| map.get(&s.to_lowercase()))
        .copied()
}

/// The entries and facts as the prompt lists them.
pub fn prompt_lists(cluster: &Cluster) -> (String, String) {
    let mut entries = String::new();
    for (i, e) in cluster.entries.iter().enumerate() {
        let mut flags = Vec::new();
        if e.pinned {
            flags.push("pinned");
        }
        if e.unreviewed {
            flags.push("unreviewed");
        }
        let flags = if flags.is_empty() {
            String::new()
        } else {
            format!(" ({})", flags.join(", "))
        };
        let _ = writeln!(
            entries,
            "E{} [since {}, updated {}]{flags}: {}",
            i + 1,
            e.first_seen,
            e.updated,
            e.text.replace('\n', " ")
        );
    }
    if entries.is_empty() {
        entries.push_str("(none)\n");
    }
    let mut facts = String::new();
    for (i, g) in cluster.groups.iter().enumerate() {
        let said = if g.ids.len() > 1 {
            format!(", noted {} times", g.ids.len())
        } else {
            String::new()
        };
        let _ = writeln!(
            facts,
            "F{} [{}{said}]: {}",
            i + 1,
            g.days.last().map(String::as_str).unwrap_or(""),
            g.text.replace('\n', " ")
        );
    }
    if facts.is_empty() {
        facts.push_str("(none)\n");
    }
    (entries, facts)
}

fn field<'a>(op: &'a Value, names: &[&str]) -> Option<&'a Value> {
    names
        .iter()
        .find_map(|n| op.get(*n))
        .filter(|v| !v.is_null())
}

fn string_list(v: Option<&Value>) -> Vec<String> {
    match v {
        Some(Value::String(s)) => s
            .split(',')
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect(),
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(|v| match v {
                Value::String(s) => Some(s.trim().to_string()),
                Value::Number(n) => Some(n.to_string()),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// Parse and validate a reply (already JSON) for `cluster`. `remove_budget`
/// is what the run has left; the caller takes the REMOVEs off it when the
/// reply is accepted. The error names what is wrong, to be sent back.
pub fn validate(reply: &Value, cluster: &Cluster, remove_budget: u32) -> Result<Vec<Op>, String> {
    let list = match reply {
        Value::Array(a) => a,
        Value::Object(o) => match ["ops", "operations", "actions"]
            .iter()
            .find_map(|k| o.get(*k))
        {
            Some(Value::Array(a)) => a,
            _ => return Err("the reply must be an object with an \"ops\" array".into()),
        },
        _ => return Err("the reply must be an object with an \"ops\" array".into()),
    };
    let aliases = Aliases::new(cluster);
    let mut ops = Vec::new();
    let mut touched: HashSet<usize> = HashSet::new();
    let mut removed: HashSet<usize> = HashSet::new();
    let mut merged_into: Vec<(usize, usize)> = Vec::new();
    let mut covered: HashSet<usize> = HashSet::new();
    // ADDs that stand in for a REPLACE that was not applied.
    let mut converted: Vec<usize> = Vec::new();
    for (n, raw) in list.iter().enumerate() {
        let at = format!("operation {}", n + 1);
        let kind = field(raw, &["op", "type", "action", "operation"])
            .and_then(Value::as_str)
            .map(|s| s.trim().to_uppercase())
            .ok_or_else(|| format!("{at} has no \"op\""))?;
        let from_names = string_list(field(raw, &["from", "facts", "sources"]));
        let mut from_groups = Vec::new();
        for f in &from_names {
            let g = aliases.fact(f).ok_or_else(|| {
                format!(
                    "{at}: {f:?} is not one of the new facts (F1…F{})",
                    cluster.groups.len()
                )
            })?;
            from_groups.push(g);
        }
        let from: Vec<String> = {
            let mut seen = HashSet::new();
            from_groups
                .iter()
                .filter(|g| seen.insert(**g))
                .flat_map(|&g| cluster.groups[g].ids.iter().cloned())
                .collect()
        };
        let text = field(raw, &["text", "content", "new_text"])
            .and_then(Value::as_str)
            .map(crate::entries::sanitize_text)
            .unwrap_or_default();
        let target = |name: &str| -> Result<usize, String> {
            let t = field(raw, &[name])
                .and_then(|v| v.as_str().map(String::from).or_else(|| Some(v.to_string())))
                .ok_or_else(|| format!("{at} ({kind}) needs \"{name}\""))?;
            aliases.entry(&t).ok_or_else(|| {
                format!(
                    "{at} ({kind}): {t:?} is not one of the entries shown (E1…E{}); only those may be changed",
                    cluster.entries.len()
                )
            })
        };
        let touch = |touched: &mut HashSet<usize>, e: usize| -> Result<(), String> {
            if !touched.insert(e) {
                return Err(format!("{at}: E{} is touched more than once", e + 1));
            }
            Ok(())
        };
        let op = match kind.as_str() {
            "ADD" => {
                if text.is_empty() {
                    return Err(format!("{at} (ADD) has no text"));
                }
                if from.is_empty() {
                    return Err(format!("{at} (ADD) must name the facts it comes from"));
                }
                // An ADD is a new fact in its own words: text that says
                // more than its facts, or drops one of their names or
                // numbers, is replaced by them, not asked again.
                let text = match unfaithful(&text, &from_groups, cluster, None) {
                    Some(made_up) => {
                        tracing::warn!(
                            ?made_up,
                            "an ADD said more or less than its facts; their own words are kept"
                        );
                        verbatim(&from_groups, cluster)
                    }
                    None => text,
                };
                Op::Add { text, from }
            }
            "REPLACE" | "UPDATE" => {
                let t = target("target")?;
                if text.is_empty() {
                    return Err(format!("{at} (REPLACE) has no text"));
                }
                if cluster.entries[t].pinned {
                    return Err(format!("{at}: E{} is pinned and cannot be replaced", t + 1));
                }
                // A REPLACE that invents or drops a name of its facts is
                // not applied: the entry stays as it is and the facts are
                // ADDed in their own words (the second look may still find
                // the entry they update).
                if let Some(made_up) = unfaithful(&text, &from_groups, cluster, Some(t)) {
                    if from_groups.is_empty() {
                        return Err(format!(
                            "{at} (REPLACE E{}) says what no fact or entry shown says ({}); write only what they say",
                            t + 1,
                            made_up.join(", ")
                        ));
                    }
                    tracing::warn!(
                        ?made_up,
                        "a REPLACE said what nothing shown said, or dropped a name of its facts; \
                         they are added in their own words"
                    );
                    converted.push(ops.len());
                    Op::Add {
                        text: verbatim(&from_groups, cluster),
                        from,
                    }
                } else {
                    touch(&mut touched, t)?;
                    Op::Replace {
                        target: cluster.entries[t].id.clone(),
                        text: with_history(&text, &cluster.entries[t].text),
                        from,
                    }
                }
            }
            "KEEP" | "NOOP" | "NONE" => {
                let t = target("target")?;
                if from.is_empty() {
                    return Err(format!("{at} (KEEP) must name the facts it restates"));
                }
                touch(&mut touched, t)?;
                Op::Keep {
                    target: cluster.entries[t].id.clone(),
                    from,
                }
            }
            "REMOVE" | "DELETE" | "MERGE" => {
                let t = target("target")?;
                let into = target("into")?;
                if t == into {
                    return Err(format!("{at}: an entry cannot be merged into itself"));
                }
                if cluster.entries[t].pinned {
                    return Err(format!("{at}: E{} is pinned and cannot be removed", t + 1));
                }
                touch(&mut touched, t)?;
                removed.insert(t);
                merged_into.push((t, into));
                Op::Remove {
                    target: cluster.entries[t].id.clone(),
                    into: cluster.entries[into].id.clone(),
                }
            }
            other => {
                return Err(format!(
                    "{at}: unknown op {other:?} (use ADD, REPLACE, REMOVE or KEEP)"
                ));
            }
        };
        covered.extend(from_groups);
        ops.push(op);
    }
    if let Some((_, into)) = merged_into.iter().find(|(_, into)| removed.contains(into)) {
        return Err(format!(
            "E{} is removed, so nothing can be merged into it",
            into + 1
        ));
    }
    // A stand-in ADD whose facts another op says already would only be a
    // duplicate entry.
    let duplicates: Vec<usize> = converted
        .iter()
        .copied()
        .filter(|&i| {
            (0..cluster.groups.len())
                .filter(|&g| says(&ops[i], g, cluster))
                .all(|g| {
                    ops.iter()
                        .enumerate()
                        .any(|(j, op)| j != i && !converted.contains(&j) && says(op, g, cluster))
                })
        })
        .collect();
    let ops: Vec<Op> = ops
        .into_iter()
        .enumerate()
        .filter(|(j, _)| !duplicates.contains(j))
        .map(|(_, op)| op)
        .collect();
    // Each fact must be said by some op that names it.
    let said = |g: usize| ops.iter().any(|op| says(op, g, cluster));
    if let Some(g) = (0..cluster.groups.len()).find(|&g| covered.contains(&g) && !said(g)) {
        return Err(format!(
            "F{} ({:?}) is named in \"from\" but no text says it: ADD it in its own words, or REPLACE an entry with a text that includes it",
            g + 1,
            cluster.groups[g].text
        ));
    }
    // A merge must land in an entry that says what the removed one said.
    for &(t, into) in &merged_into {
        let into_id = &cluster.entries[into].id;
        let final_text = ops
            .iter()
            .find_map(|op| match op {
                Op::Replace { target, text, .. } if target == into_id => Some(text.as_str()),
                _ => None,
            })
            .unwrap_or(&cluster.entries[into].text);
        if coverage(&cluster.entries[t].text, final_text) < SAYS_MIN_COVERAGE {
            return Err(format!(
                "REMOVE E{} into E{}: E{} does not say what E{} says; REPLACE E{} with a text holding both, or leave E{}",
                t + 1,
                into + 1,
                into + 1,
                t + 1,
                into + 1,
                t + 1
            ));
        }
    }
    let removes = removed.len() as u32;
    if removes > remove_budget {
        return Err(format!(
            "{removes} REMOVE operations, but only {remove_budget} are allowed in this run; remove only to merge true duplicates"
        ));
    }
    let missing: Vec<String> = (0..cluster.groups.len())
        .filter(|g| !covered.contains(g))
        .map(|g| format!("F{}", g + 1))
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "every new fact must appear in the \"from\" of an operation; missing: {}",
            missing.join(", ")
        ));
    }
    Ok(ops)
}

/// The second look at an ADD (DESIGN §3 leaves how the judge is asked to
/// memd): small models ADD a fact that updates an entry shown beside it
/// far more often than they REPLACE ("beside": the stale entry stays and
/// reads as current). So for each ADD of a reply, when the cluster has
/// entries no op of the reply touches, the judge is asked one narrow
/// question: does this fact make one of these entries out of date? A yes
/// turns the ADD into a REPLACE that keeps the old text as history; any
/// other answer (none, an entry not shown, no reply) leaves the ADD.
///
/// The entries the ADD at `i` could update: shown in the cluster, not
/// pinned, not touched by another op, sharing a content word with the
/// ADD's text (a yes for an entry with nothing in common is a misreading),
/// at most [`SECOND_LOOK_MAX`] of them, those sharing the most words.
pub fn update_candidates(ops: &[Op], i: usize, cluster: &Cluster) -> Vec<usize> {
    let Some(Op::Add { text, from }) = ops.get(i) else {
        return Vec::new();
    };
    // A fact another op places already (a REPLACE, say) is not asked about
    // again: one fact updating two entries is far more often a misreading.
    let elsewhere = ops
        .iter()
        .enumerate()
        .any(|(j, op)| j != i && op.from().iter().any(|id| from.contains(id)));
    if elsewhere {
        return Vec::new();
    }
    let words = content_words(text);
    let busy: HashSet<&str> = ops
        .iter()
        .flat_map(|op| match op {
            Op::Remove { target, into } => vec![target.as_str(), into.as_str()],
            other => other.target().into_iter().collect(),
        })
        .collect();
    let mut shared: Vec<(usize, usize)> = cluster
        .entries
        .iter()
        .enumerate()
        .filter(|(_, e)| !e.pinned && !busy.contains(e.id.as_str()))
        .map(|(k, e)| {
            let n = content_words(&e.text)
                .iter()
                .filter(|w| words.contains(*w))
                .count();
            (k, n)
        })
        .filter(|&(_, n)| n > 0)
        .collect();
    // Most shared words first, and only a few: every extra entry is one
    // more distractor for a small model.
    shared.sort_by_key(|&(k, n)| (std::cmp::Reverse(n), k));
    shared.truncate(SECOND_LOOK_MAX);
    shared.into_iter().map(|(k, _)| k).collect()
}

/// Most entries one second look shows.
pub const SECOND_LOOK_MAX: usize = 3;

/// What the second look asks about: the ADD's text as the one fact, the
/// candidate entries.
pub fn update_question(ops: &[Op], i: usize, cluster: &Cluster, candidates: &[usize]) -> Cluster {
    let (text, from) = match &ops[i] {
        Op::Add { text, from } => (text.clone(), from.clone()),
        _ => Default::default(),
    };
    let days = cluster
        .groups
        .iter()
        .filter(|g| g.ids.iter().any(|id| from.contains(id)))
        .flat_map(|g| g.days.iter().cloned())
        .max()
        .into_iter()
        .collect();
    Cluster {
        groups: vec![Group {
            ids: from,
            text,
            days,
        }],
        entries: candidates
            .iter()
            .map(|&k| cluster.entries[k].clone())
            .collect(),
    }
}

/// The entry (index into `question.entries`) a second-look reply names as
/// out of date, if it names one that was shown. Lenient about shape:
/// `{"outdated": "E2"}`, `{"entry": "e2"}`, a bare `"E2"`.
pub fn outdated(reply: &Value, question: &Cluster) -> Option<usize> {
    let v = match reply {
        Value::Object(_) => field(reply, &["outdated", "entry", "target", "answer"])?,
        other => other,
    };
    let name = v.as_str()?.trim();
    Aliases::new(question).entry(name)
}

/// Turn the ADD at `i` into a REPLACE of `cluster.entries[k]` (one of its
/// [`update_candidates`]) that keeps the entry's text as history.
pub fn make_update(ops: &mut [Op], i: usize, cluster: &Cluster, k: usize) {
    if let Op::Add { text, from } = &ops[i] {
        let entry = &cluster.entries[k];
        ops[i] = Op::Replace {
            target: entry.id.clone(),
            text: with_history(text, &entry.text),
            from: from.clone(),
        };
    }
}

/// Whether `op` names fact group `g` and its text says it: enough of the
/// fact's content words (more for an existing entry claimed by a KEEP than
/// for a text written from the fact), and all of its names and numbers.
fn says(op: &Op, g: usize, cluster: &Cluster) -> bool {
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
}

/// Why a text the judge wrote from `groups` cannot stand: the words it
/// invents (see [`invented`]; empty when it only drops a name), or `None`
/// when it is faithful. It may draw on its facts and their days; a
/// REPLACE (`replacing` its target) also on every entry shown (a merge)
/// and their dates, and it may drop the names of the entry it replaces.
fn unfaithful(
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
    let names_kept = groups
        .iter()
        .all(|&g| keeps_names(&cluster.groups[g].text, text, replaced));
    (!made_up.is_empty() || !names_kept).then_some(made_up)
}

/// The ops of one cluster as a readable diff (for `--dry-run`).
pub fn render_diff(ops: &[Op], cluster: &Cluster) -> String {
    let text_of = |id: &str| {
        cluster
            .entry(id)
            .map(|e| e.text.replace('\n', " "))
            .unwrap_or_default()
    };
    let mut out = String::new();
    for op in ops {
        match op {
            Op::Add { text, from } => {
                let _ = writeln!(out, "  + ADD      {}", text.replace('\n', " "));
                let _ = writeln!(out, "             from {}", from.join(", "));
            }
            Op::Replace { target, text, from } => {
                let _ = writeln!(out, "  ~ REPLACE  {target}");
                let _ = writeln!(out, "    -        {}", text_of(target));
                let _ = writeln!(out, "    +        {}", text.replace('\n', " "));
                if !from.is_empty() {
                    let _ = writeln!(out, "             from {}", from.join(", "));
                }
            }
            Op::Remove { target, into } => {
                let _ = writeln!(out, "  - REMOVE   {target} (merged into {into})");
                let _ = writeln!(out, "    -        {}", text_of(target));
            }
            Op::Keep { target, from } => {
                let _ = writeln!(out, "  = KEEP     {target}: {}", text_of(target));
                let _ = writeln!(out, "             +sources {}", from.join(", "));
            }
        }
    }
    out
}
