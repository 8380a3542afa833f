//! A judge's reply for one cluster, from JSON to the ops that are applied:
//! [`super::proposed::parse`] → [`super::validate::proposed`] (each op and
//! the entries it touches) → [`super::repair`] (a fact's own words where a
//! text invents or drops a name, history kept) → [`super::validate::ops`]
//! (what the repaired ops say). An error names what is wrong, to be sent
//! back to the judge.

use serde_json::Value;

use super::ops::{Cluster, Op};
use super::{proposed, repair, validate};

/// Parse, check, repair and check again: the ops a reply stands for.
/// `remove_budget` is what the run has left; the caller takes the REMOVEs
/// off it when the reply is accepted.
pub fn read(reply: &Value, cluster: &Cluster, remove_budget: u32) -> Result<Vec<Op>, String> {
    let proposed = proposed::parse(reply, cluster)?;
    validate::proposed(&proposed, cluster)?;
    let ops = repair::repair(&proposed, cluster);
    validate::ops(&proposed, &ops, cluster, remove_budget)?;
    Ok(ops)
}
