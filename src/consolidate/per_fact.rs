//! The per-fact request shape (`[consolidation] request = "per-fact"`):
//! the judge gives one decision per fact, in order, instead of a list of
//! ops. A 1.5B model asked for ops leaves facts out of a 10-fact reply and
//! proposes merges of entries nobody asked about (EVALUATION.md); here the
//! schema lists every fact, so a constraining server cannot leave one out,
//! and there is no REMOVE to misuse.
//!
//! The decisions become ops JSON ([`to_ops`]) and then go through the same
//! parse, validation and repair as any reply: the shape changes what is
//! asked, never what is accepted.

use std::collections::HashSet;

use serde_json::{Map, Value, json};

use super::ops::{Aliases, Cluster};
use crate::text::content_words;

/// The schema of a reply `{"decisions": [...]}` for `cluster`: exactly one
/// decision per fact, in order; a fact may be the same as an entry or an
/// earlier fact, and may update an entry; no text. It needs `prefixItems` and
/// `minItems` (llama.cpp, vLLM); an endpoint that refuses them is asked
/// with `json_object`, and validation names any fact left out.
pub(crate) fn schema(cluster: &Cluster) -> Value {
    let n = cluster.groups.len();
    let entries: Vec<String> = (1..=cluster.entries.len())
        .map(|i| format!("E{i}"))
        .collect();
    let mut decisions = vec!["NEW", "SAME", "UPDATE"];
    if !cluster.forgotten.is_empty() {
        decisions.push("FORGOTTEN");
    }
    let items: Vec<Value> = (1..=n)
        .map(|i| {
            let mut targets = vec!["none".to_string()];
            targets.extend(entries.iter().cloned());
            targets.extend((1..=cluster.forgotten.len()).map(|x| format!("X{x}")));
            targets.extend((1..i).map(|j| format!("F{j}")));
            json!({
                "type": "object",
                "properties": {
                    "fact": {"enum": [format!("F{i}")]},
                    "decision": {"enum": decisions},
                    "entry": {"enum": targets},
                },
                "required": ["fact", "decision", "entry"],
                "additionalProperties": false,
            })
        })
        .collect();
    json!({
        "type": "object",
        "properties": {"decisions": {
            "type": "array", "prefixItems": items, "minItems": n, "maxItems": n,
        }},
        "required": ["decisions"],
        "additionalProperties": false,
    })
}

/// The ops a per-fact reply stands for, as ops JSON for
/// [`super::reply::read`]: NEW (or a decision naming nothing it may name)
/// is an ADD of the fact's own words; SAME as an entry a KEEP; SAME as an
/// earlier fact joins that fact's op; UPDATE a REPLACE of the entry with
/// the fact's own words, which the history rule of [`super::repair`] turns
/// into "now; (previously: …)" (two updates of one entry are one REPLACE
/// holding both facts, with the first one's words). The model writes no
/// text at all: a 1.5B model asked to write the updated entry dropped the
/// old value (EVALUATION.md). A fact with no decision is in no op, which
/// validation refuses, naming it. A reply in the ops shape is passed
/// through.
pub(crate) fn to_ops(reply: &Value, cluster: &Cluster) -> Result<Value, String> {
    let Some(decisions) = reply.get("decisions").and_then(Value::as_array) else {
        return match reply.get("ops") {
            Some(_) => Ok(reply.clone()),
            None => Err("the reply must be an object with a \"decisions\" array".into()),
        };
    };
    let aliases = Aliases::new(cluster);
    let mut ops: Vec<Map<String, Value>> = Vec::new();
    // The op each fact alias and each entry alias was placed in.
    let mut placed: std::collections::HashMap<String, usize> = Default::default();
    for d in decisions {
        let field = |k: &str| d.get(k).and_then(Value::as_str).unwrap_or("").trim();
        let fact = field("fact").to_uppercase();
        let g = aliases.fact(&fact).ok_or_else(|| {
            format!(
                "{fact:?} is not one of the new facts (F1…F{})",
                cluster.groups.len()
            )
        })?;
        let text = &cluster.groups[g].text;
        let target = field("entry").to_uppercase();
        let joined = placed.get(&target).copied();
        let at = match (
            field("decision").to_uppercase().as_str(),
            target.chars().next(),
        ) {
            ("SAME", Some('F')) if joined.is_some() => joined,
            ("SAME", Some('E')) => Some(keep_or_join(&mut ops, &mut placed, &target)),
            ("FORGOTTEN", Some('X')) => {
                let mut forget = op("FORGET", Some(&target), None);
                push_from(&mut forget, &fact);
                ops.push(forget);
                continue;
            }
            ("UPDATE", Some('E')) => {
                if let Some(e) = aliases.entry(&target) {
                    check_update(&fact, text, e, cluster)?;
                }
                Some(replace_or_join(&mut ops, &mut placed, &target, text))
            }
            _ => None,
        };
        let at = at.unwrap_or_else(|| {
            ops.push(op("ADD", None, Some(text)));
            ops.len() - 1
        });
        push_from(&mut ops[at], &fact);
        placed.insert(fact, at);
    }
    Ok(json!({"ops": ops}))
}

/// Why fact `alias` (`text`) cannot update entry `e` of `cluster` (see
/// [`about_same`] and [`closer_entry`]), said to the judge.
fn check_update(alias: &str, text: &str, e: usize, cluster: &Cluster) -> Result<(), String> {
    let target = format!("E{}", e + 1);
    if !about_same(text, &cluster.entries[e].text, cluster) {
        return Err(format!(
            "{alias} UPDATE {target}: {target} is not about the same thing as {alias} (no word in common but names); choose the entry {alias} changes, or NEW"
        ));
    }
    if let Some(closer) = closer_entry(text, e, cluster) {
        return Err(format!(
            "{alias} UPDATE {target}: {closer} shares much more with {alias} than {target} does; an update changes one value of the entry it updates: UPDATE {closer}, or NEW"
        ));
    }
    Ok(())
}

/// Whether `fact` can update `entry`: they share a content word (a final
/// "s" aside) that most entries of the cluster do not have. The facts of
/// one person all share the name; a 1.5B model "updated" "Laurent could be
/// active on social media" with "Laurent was born in Japan and only speaks
/// Japanese", whose entry was "Laurent might speak French and English"
/// (EVALUATION.md).
fn about_same(fact: &str, entry: &str, cluster: &Cluster) -> bool {
    let n = cluster.entries.len();
    let mut seen: std::collections::HashMap<String, usize> = Default::default();
    for e in &cluster.entries {
        for w in stemmed(&e.text) {
            *seen.entry(w).or_default() += 1;
        }
    }
    let common = |w: &String| n >= 3 && seen.get(w).copied().unwrap_or(0) * 2 > n;
    let in_entry = stemmed(entry);
    stemmed(fact)
        .iter()
        .any(|w| in_entry.contains(w) && !common(w))
}

/// An entry (alias) that shares at least [`CLOSER_BY`] more of `fact`'s
/// words (a final "s" aside) than the UPDATE's `target` does. An update
/// changes one value and keeps the rest: a 1.5B model "updated" "Tessa and
/// Devon co-founded a nonprofit" with "Tessa and Devon collaborated on a
/// documentary about ocean conservation", whose entry was "Tessa and
/// Ainsley collaborated on a documentary about ocean conservation".
fn closer_entry(fact: &str, target: usize, cluster: &Cluster) -> Option<String> {
    let mine = stemmed(fact);
    let shared = |t: &str| stemmed(t).intersection(&mine).count();
    let theirs = shared(&cluster.entries[target].text);
    cluster
        .entries
        .iter()
        .enumerate()
        .map(|(i, e)| (shared(&e.text), format!("E{}", i + 1)))
        .filter(|(n, _)| *n >= theirs + CLOSER_BY)
        .max_by_key(|(n, _)| *n)
        .map(|(_, alias)| alias)
}

/// How many more shared words make another entry the one an UPDATE is
/// about: 2 (one is the value that changed; a second is more than that).
const CLOSER_BY: usize = 2;

/// Content words with a final "s" dropped ([`crate::same::stem`]).
fn stemmed(text: &str) -> HashSet<String> {
    content_words(text)
        .iter()
        .map(|w| crate::same::stem(w).to_string())
        .collect()
}

fn op(kind: &str, target: Option<&str>, text: Option<&str>) -> Map<String, Value> {
    let mut o = Map::new();
    o.insert("op".into(), kind.into());
    if let Some(t) = target {
        o.insert("target".into(), t.into());
    }
    if let Some(t) = text {
        o.insert("text".into(), t.into());
    }
    o.insert("from".into(), json!([]));
    o
}

fn push_from(op: &mut Map<String, Value>, fact: &str) {
    if let Some(Value::Array(from)) = op.get_mut("from") {
        from.push(fact.into());
    }
}

/// The op already on `entry`, or a new KEEP of it.
fn keep_or_join(
    ops: &mut Vec<Map<String, Value>>,
    placed: &mut std::collections::HashMap<String, usize>,
    entry: &str,
) -> usize {
    *placed.entry(entry.to_string()).or_insert_with(|| {
        ops.push(op("KEEP", Some(entry), None));
        ops.len() - 1
    })
}

/// The REPLACE already on `entry` (a KEEP there becomes one), or a new one.
fn replace_or_join(
    ops: &mut Vec<Map<String, Value>>,
    placed: &mut std::collections::HashMap<String, usize>,
    entry: &str,
    text: &str,
) -> usize {
    let at = keep_or_join(ops, placed, entry);
    if ops[at].get("op").and_then(Value::as_str) == Some("KEEP") {
        ops[at].insert("op".into(), "REPLACE".into());
        ops[at].insert("text".into(), text.into());
    }
    at
}
