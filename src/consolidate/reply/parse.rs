//! The first step of reading a reply in the ops shape: [`read`] turns the
//! JSON into a [`Reply`]: [`Proposed`] ops with their aliases resolved,
//! and the facts its FORGET ops keep out. It is lenient about shape (a
//! bare array, `type` for `op`, a single id for a list, any case), because
//! shape is not where the danger is; [`super::validate`] is strict about
//! meaning.

use std::collections::HashSet;

use serde_json::Value;

use super::{Forget, Reply};
use crate::consolidate::ops::{Aliases, Cluster};
use crate::entries::sanitize_text;
use crate::ids::FactId;

/// What an op asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Add,
    Replace,
    Keep,
    Remove,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Add => "ADD",
            Kind::Replace => "REPLACE",
            Kind::Keep => "KEEP",
            Kind::Remove => "REMOVE",
        }
    }
}

/// One op of a reply as the judge wrote it, its aliases resolved.
#[derive(Debug, Clone)]
pub struct Proposed {
    /// "operation N", for messages.
    pub at: String,
    pub kind: Kind,
    /// Fact groups named in `from`, in the order named (repeats kept).
    pub from: Vec<usize>,
    /// Sanitised text; empty when none was given.
    pub text: String,
    /// The entry changed (REPLACE, KEEP, REMOVE).
    pub target: Option<usize>,
    /// The entry a REMOVE merges into.
    pub into: Option<usize>,
}

impl Proposed {
    /// The archive fact ids behind the op, each once.
    pub(crate) fn fact_ids(&self, cluster: &Cluster) -> Vec<FactId> {
        let mut seen = HashSet::new();
        self.from
            .iter()
            .filter(|g| seen.insert(**g))
            .flat_map(|&g| cluster.groups[g].ids.iter().cloned())
            .collect()
    }
}

pub(crate) fn field<'a>(op: &'a Value, names: &[&str]) -> Option<&'a Value> {
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

/// The kind an op names (`"op"`, or `"type"`, … as small models write
/// it), uppercased.
pub(crate) fn kind_name(op: &Value) -> Option<String> {
    field(op, &["op", "type", "action", "operation"])
        .and_then(Value::as_str)
        .map(|s| s.trim().to_uppercase())
}

/// The reply's list of ops.
pub(crate) fn op_list(reply: &Value) -> Result<&Vec<Value>, String> {
    let shape = || "the reply must be an object with an \"ops\" array".to_string();
    match reply {
        Value::Array(a) => Ok(a),
        Value::Object(o) => match ["ops", "operations", "actions"]
            .iter()
            .find_map(|k| o.get(*k))
        {
            Some(Value::Array(a)) => Ok(a),
            _ => Err(shape()),
        },
        _ => Err(shape()),
    }
}

/// The reply's ops with their aliases resolved, and its FORGETs checked.
/// Refuses ops it cannot read: no kind, an unknown kind, a fact or entry
/// that was not shown, a missing target.
pub fn read(reply: &Value, cluster: &Cluster) -> Result<Reply, String> {
    let list = op_list(reply)?;
    let is_forget = |op: &&Value| kind_name(op).as_deref() == Some("FORGET");
    let mut forgets = Vec::new();
    for op in list.iter().filter(is_forget) {
        forgets.extend(forget(op, cluster)?);
    }
    let aliases = Aliases::new(cluster);
    let proposed = list
        .iter()
        .filter(|op| !is_forget(op))
        .enumerate()
        .map(|(n, raw)| parse_op(raw, &format!("operation {}", n + 1), &aliases, cluster))
        .collect::<Result<_, _>>()?;
    Ok(Reply { proposed, forgets })
}

/// One FORGET op: each fact it names, if the forgotten text says it.
fn forget(op: &Value, cluster: &Cluster) -> Result<Vec<Forget>, String> {
    let target = field(op, &["target", "forgotten"])
        .and_then(Value::as_str)
        .unwrap_or("")
        .trim()
        .to_uppercase();
    let x = super::forgotten_alias(&target, cluster)?;
    let aliases = Aliases::new(cluster);
    let names: Vec<String> = match field(op, &["from", "facts"]) {
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(Value::as_str)
            .map(String::from)
            .collect(),
        Some(Value::String(s)) => vec![s.clone()],
        _ => Vec::new(),
    };
    let mut out = Vec::new();
    for name in names {
        let g = aliases
            .fact(&name)
            .ok_or_else(|| format!("FORGET: {name:?} is not one of the new facts"))?;
        out.push(super::forget(g, x, cluster, (&name, &target))?);
    }
    if out.is_empty() {
        return Err("FORGET needs \"from\": the new facts it keeps out".into());
    }
    Ok(out)
}

fn parse_op(
    raw: &Value,
    at: &str,
    aliases: &Aliases,
    cluster: &Cluster,
) -> Result<Proposed, String> {
    let kind_name = kind_name(raw).ok_or_else(|| format!("{at} has no \"op\""))?;
    let mut from = Vec::new();
    for f in string_list(field(raw, &["from", "facts", "sources"])) {
        from.push(aliases.fact(&f).ok_or_else(|| {
            format!(
                "{at}: {f:?} is not one of the new facts (F1…F{})",
                cluster.groups.len()
            )
        })?);
    }
    let text = field(raw, &["text", "content", "new_text"])
        .and_then(Value::as_str)
        .map(sanitize_text)
        .unwrap_or_default();
    let target = |name: &str| -> Result<usize, String> {
        let t = field(raw, &[name])
            .and_then(|v| v.as_str().map(String::from).or_else(|| Some(v.to_string())))
            .ok_or_else(|| format!("{at} ({kind_name}) needs \"{name}\""))?;
        aliases.entry(&t).ok_or_else(|| {
            format!(
                "{at} ({kind_name}): {t:?} is not one of the entries shown (E1…E{}); only those may be changed",
                cluster.entries.len()
            )
        })
    };
    let (kind, target, into) = match kind_name.as_str() {
        "ADD" => (Kind::Add, None, None),
        "REPLACE" | "UPDATE" => (Kind::Replace, Some(target("target")?), None),
        "KEEP" | "NOOP" | "NONE" => (Kind::Keep, Some(target("target")?), None),
        "REMOVE" | "DELETE" | "MERGE" => {
            let t = target("target")?;
            (Kind::Remove, Some(t), Some(target("into")?))
        }
        other => {
            return Err(format!(
                "{at}: unknown op {other:?} (use ADD, REPLACE, REMOVE or KEEP)"
            ));
        }
    };
    Ok(Proposed {
        at: at.to_string(),
        kind,
        from,
        text,
        target,
        into,
    })
}
