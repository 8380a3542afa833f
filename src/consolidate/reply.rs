//! A judge's reply for one cluster, from JSON to the ops that are applied:
//! [`super::proposed::parse`] → [`super::validate::proposed`] (each op and
//! the entries it touches) → [`super::repair`] (a fact's own words where a
//! text invents or drops a name, history kept) → [`super::validate::ops`]
//! (what the repaired ops say). An error names what is wrong, to be sent
//! back to the judge.
//!
//! A reply may also keep a fact out with `FORGET {from, target: "X1"}`
//! when the cluster showed forgotten texts; such a fact must say what the
//! forgotten text says (the same test as a KEEP's), or the reply is
//! refused.

use std::collections::HashSet;

use serde_json::Value;

use super::faithful::{SAYS_MIN_COVERAGE, keeps_names, negated};
use super::ops::{Aliases, Cluster, Op};
use super::proposed::field;
use super::{proposed, repair, validate};
use crate::text::coverage;

/// A fact group the judge kept out, and the forgotten text (by index in
/// the cluster's `forgotten`) it says.
pub(crate) type Forget = (usize, usize);

/// Parse, check, repair and check again: the ops a reply stands for.
/// `remove_budget` is what the run has left; the caller takes the REMOVEs
/// off it when the reply is accepted.
pub fn read(reply: &Value, cluster: &Cluster, remove_budget: u32) -> Result<Vec<Op>, String> {
    read_all(reply, cluster, remove_budget).map(|(ops, _)| ops)
}

/// [`read`], with the facts the reply kept out as forgotten.
pub(crate) fn read_all(
    reply: &Value,
    cluster: &Cluster,
    remove_budget: u32,
) -> Result<(Vec<Op>, Vec<Forget>), String> {
    let (forgets, rest) = split_forgets(reply, cluster)?;
    let proposed = proposed::parse(&rest, cluster)?;
    validate::proposed(&proposed, cluster)?;
    let kept_out: HashSet<usize> = forgets.iter().map(|f| f.0).collect();
    if let Some(p) = proposed
        .iter()
        .find(|p| p.from.iter().any(|g| kept_out.contains(g)))
    {
        return Err(format!(
            "{} names a fact that a FORGET keeps out; a fact is either kept or forgotten",
            p.at
        ));
    }
    let ops = repair::repair(&proposed, cluster);
    validate::ops(&proposed, &ops, cluster, remove_budget, &kept_out)?;
    Ok((ops, forgets))
}

/// The reply's FORGET ops, checked, and the reply without them.
fn split_forgets(reply: &Value, cluster: &Cluster) -> Result<(Vec<Forget>, Value), String> {
    // A reply of another shape is left to the parser, which names it.
    let Ok(list) = proposed::op_list(reply) else {
        return Ok((Vec::new(), reply.clone()));
    };
    let is_forget = |op: &Value| proposed::kind_name(op).as_deref() == Some("FORGET");
    let mut forgets = Vec::new();
    for op in list.iter().filter(|op| is_forget(op)) {
        forgets.extend(forget(op, cluster)?);
    }
    let rest: Vec<Value> = list.iter().filter(|op| !is_forget(op)).cloned().collect();
    Ok((forgets, serde_json::json!({ "ops": rest })))
}

/// One FORGET op: each fact it names, if the forgotten text says it.
fn forget(op: &Value, cluster: &Cluster) -> Result<Vec<Forget>, String> {
    let target = field(op, &["target", "forgotten"])
        .and_then(Value::as_str)
        .unwrap_or("")
        .trim()
        .to_uppercase();
    let x = target
        .strip_prefix('X')
        .and_then(|n| n.parse::<usize>().ok())
        .filter(|&n| n >= 1 && n <= cluster.forgotten.len())
        .ok_or_else(|| {
            format!(
                "FORGET needs \"target\": one of the forgotten texts shown (X1…X{})",
                cluster.forgotten.len()
            )
        })?;
    let forgotten = &cluster.forgotten[x - 1].text;
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
        let fact = &cluster.groups[g].text;
        let same = coverage(fact, forgotten) >= SAYS_MIN_COVERAGE
            && keeps_names(fact, forgotten, "")
            && negated(fact) == negated(forgotten);
        if !same {
            return Err(format!(
                "FORGET {name} as {target}: {target} does not say what {name} says; keep {name} with another operation"
            ));
        }
        out.push((g, x - 1));
    }
    if out.is_empty() {
        return Err("FORGET needs \"from\": the new facts it keeps out".into());
    }
    Ok(out)
}
