//! A judge's reply for one cluster, from JSON to the ops that are applied.
//!
//! ```text
//!  JSON ─► parse (ops shape) ─┐
//!  JSON ─► per_fact (decisions)┴► Reply ─► validate::proposed ─► repair
//!                                 (Proposed,            ─► validate::ops ─► Op
//!                                  forgets)
//! ```
//!
//! Either request shape becomes one typed [`Reply`]: [`Proposed`] ops with
//! their aliases resolved, and the facts it keeps out as forgotten. From
//! there one path checks it ([`validate::proposed`], each op and the
//! entries it touches), rewrites it where a fact's own words must stand
//! ([`repair`], history kept) and checks what the repaired ops say
//! ([`validate::ops`]). An error names what is wrong, to be sent back to
//! the judge. [`schema`] is the JSON Schema sent with the ops request,
//! [`update`] the second look at an ADD beside entries, [`faithful`] the
//! rules of what a text says.
//!
//! A reply may also keep a fact out with `FORGET {from, target: "X1"}`
//! when the cluster showed forgotten texts; such a fact must say what the
//! forgotten text says (the same test as a KEEP's), or the reply is
//! refused.

pub(crate) mod faithful;
pub mod parse;
pub(crate) mod per_fact;
pub mod repair;
pub(crate) mod schema;
pub(crate) mod update;
pub(crate) mod validate;

use std::collections::HashSet;

use serde_json::Value;

use super::ops::{Cluster, Op};
use crate::text::coverage;
use faithful::{SAYS_MIN_COVERAGE, keeps_names, negated};
pub use parse::{Kind, Proposed};

/// A fact group the judge kept out, and the forgotten text (by index in
/// the cluster's `forgotten`) it says.
pub(crate) type Forget = (usize, usize);

/// What a reply proposes, either request shape: its ops, aliases
/// resolved, and the facts it keeps out as forgotten.
#[derive(Debug, Clone, Default)]
pub struct Reply {
    pub proposed: Vec<Proposed>,
    pub forgets: Vec<Forget>,
}

/// Parse, check, repair and check again: the ops an ops-shaped reply
/// stands for. `remove_budget` is what the run has left.
pub fn read(reply: &Value, cluster: &Cluster, remove_budget: u32) -> Result<Vec<Op>, String> {
    let parsed = parse::read(reply, cluster)?;
    check(parsed, cluster, remove_budget).map(|(ops, _)| ops)
}

/// [`read`] for a reply of one decision per fact (`request = "per-fact"`,
/// [`per_fact::read`]).
pub fn read_decisions(
    reply: &Value,
    cluster: &Cluster,
    remove_budget: u32,
) -> Result<Vec<Op>, String> {
    let parsed = per_fact::read(reply, cluster)?;
    check(parsed, cluster, remove_budget).map(|(ops, _)| ops)
}

/// Check a reply, repair it and check again: its ops, and the facts it
/// kept out as forgotten. The caller takes the REMOVEs off the run's
/// budget when the reply is accepted.
pub(crate) fn check(
    reply: Reply,
    cluster: &Cluster,
    remove_budget: u32,
) -> Result<(Vec<Op>, Vec<Forget>), String> {
    let Reply { proposed, forgets } = reply;
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

/// Fact group `g`, kept out as saying forgotten text `x` (both 0-based), if
/// it does say it; `name` and `target` are the aliases as the reply wrote
/// them, for the error.
pub(crate) fn forget(
    g: usize,
    x: usize,
    cluster: &Cluster,
    (name, target): (&str, &str),
) -> Result<Forget, String> {
    let fact = &cluster.groups[g].text;
    let forgotten = &cluster.forgotten[x].text;
    let same = coverage(fact, forgotten) >= SAYS_MIN_COVERAGE
        && keeps_names(fact, forgotten, "")
        && negated(fact) == negated(forgotten);
    match same {
        true => Ok((g, x)),
        false => Err(format!(
            "FORGET {name} as {target}: {target} does not say what {name} says; keep {name} with another operation"
        )),
    }
}

/// The forgotten text an alias (`X1`…) names, 0-based.
pub(crate) fn forgotten_alias(target: &str, cluster: &Cluster) -> Result<usize, String> {
    target
        .trim()
        .to_uppercase()
        .strip_prefix('X')
        .and_then(|n| n.parse::<usize>().ok())
        .filter(|&n| n >= 1 && n <= cluster.forgotten.len())
        .map(|n| n - 1)
        .ok_or_else(|| {
            format!(
                "FORGET needs \"target\": one of the forgotten texts shown (X1…X{})",
                cluster.forgotten.len()
            )
        })
}
