//! `memd eval updates`: the update decision measured both ways, through
//! the real pipeline with the configured judge.
//!
//! Each pair is two facts, A then B, said a day apart in a fresh memory
//! directory, with a consolidation after each. What the second run made of
//! them, read from the files:
//! - `apart`: two entries, one holding A and one holding B;
//! - `merged`: one entry holds both and says no "previously";
//! - `superseded`: one entry holds both and keeps A as history (its text
//!   says "previously");
//! - `failed`: B is still pending (the judge gave no usable reply);
//! - `lost`: a fact the runs decided is held by no entry.
//!
//! Sources and what is right for each:
//! - Letta updates (a `new_fact` after the fact it supersedes): superseded;
//! - two facts of one Letta set (one person, different attributes): apart;
//! - SICK pairs neutral both ways with relatedness ≥ 3.5 (close in topic,
//!   both true): apart;
//! - SICK pairs that entail each other both ways (the same fact): merged;
//! - SICK contradictions: superseded (the later one is current).
//!
//! A related-but-different pair marked superseded is a false
//! supersession, counted apart: the older fact still true, now reading as
//! stale. Pairs whose texts are equal once normalised are left out (tier 1
//! merges those without a judge).

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Instant;

use anyhow::Result;
use serde::Serialize;

use crate::Memory;
use crate::archive::{self, NewFact};
use crate::config::Config;
use crate::consolidate::reply::per_fact::{self, accepts_update_among};
use crate::consolidate::{Judge, Options};
use crate::entries::Document;
use crate::ids::FactId;
use crate::memory::init;
use crate::progress::Progress;
use crate::request::Target;
use crate::state::State;
use crate::text::normalize;

/// What the second run made of a pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Apart,
    Merged,
    Superseded,
    Failed,
    Lost,
}

/// One source's pairs and what became of them.
#[derive(Debug, Serialize)]
pub struct SourceCounts {
    pub name: &'static str,
    /// The outcome that is right for its pairs.
    pub expect: Outcome,
    pub pairs: usize,
    pub apart: usize,
    pub merged: usize,
    pub superseded: usize,
    pub failed: usize,
    pub lost: usize,
}

#[derive(Debug, Serialize)]
pub struct PairsReport {
    pub judge: String,
    pub seed: u64,
    pub sources: Vec<SourceCounts>,
    /// Related-but-different pairs (the sources whose right outcome is
    /// `apart`) marked superseded, and how many such pairs there were.
    pub false_supersessions: usize,
    pub different_pairs: usize,
    /// Each wrong outcome: source, outcome, A, B.
    pub wrong: Vec<(String, Outcome, String, String)>,
    pub wall_seconds: f64,
}

const FIRST_DAY: &str = "2026-01-05";
const SECOND_DAY: &str = "2026-01-06";

const FORCE: Options = Options {
    force: true,
    dry_run: false,
};

/// Run `per_source` pairs of each source, chosen by `seed`, with
/// `config`'s judge and embedder (promotion off: not what is measured).
pub async fn run(
    data: &Path,
    mut config: Config,
    per_source: usize,
    seed: u64,
) -> Result<PairsReport> {
    let started = Instant::now();
    config.promotion.max_lines = 0;
    let mut report = PairsReport {
        judge: Judge::label(&config),
        seed,
        sources: Vec::new(),
        false_supersessions: 0,
        different_pairs: 0,
        wrong: Vec::new(),
        wall_seconds: 0.0,
    };
    let sources = sources(data)?;
    let total = (sources.len() * per_source) as u64;
    let mut progress = Progress::steps("pairs evaluated", total);
    for (name, expect, pairs) in sources {
        let mut counts = SourceCounts {
            name,
            expect,
            pairs: 0,
            apart: 0,
            merged: 0,
            superseded: 0,
            failed: 0,
            lost: 0,
        };
        for (a, b) in pick(pairs, per_source, seed) {
            let outcome = one(&config, &a, &b).await?;
            counts.pairs += 1;
            *match outcome {
                Outcome::Apart => &mut counts.apart,
                Outcome::Merged => &mut counts.merged,
                Outcome::Superseded => &mut counts.superseded,
                Outcome::Failed => &mut counts.failed,
                Outcome::Lost => &mut counts.lost,
            } += 1;
            if outcome != expect {
                report.wrong.push((name.to_string(), outcome, a, b));
            }
            progress.inc(1);
        }
        if expect == Outcome::Apart {
            report.false_supersessions += counts.superseded;
            report.different_pairs += counts.pairs;
        }
        report.sources.push(counts);
    }
    report.wall_seconds = started.elapsed().as_secs_f64();
    Ok(report)
}

/// memd's own share of the update decision, per source: of every pair
/// (not a sample), how many memd would keep as an update (B replacing A,
/// A kept as history) if the judge said so. A judge that says UPDATE too
/// often is held back by this; one that never says it is not helped.
#[derive(Debug, Serialize)]
pub struct GateReport {
    /// Source, pairs, pairs accepted as an update.
    pub sources: Vec<(String, usize, usize)>,
    /// The same in a Letta set's cluster: what, cases, cases counted.
    pub in_sets: Vec<(String, usize, usize)>,
}

/// [`GateReport`] over the dev pairs in `data`.
pub fn gate(data: &Path) -> Result<GateReport> {
    let mut out = GateReport {
        sources: Vec::new(),
        in_sets: in_sets(data)?,
    };
    for (name, _, pairs) in sources(data)? {
        let pairs: Vec<_> = pairs
            .into_iter()
            .filter(|(a, b)| normalize(a) != normalize(b))
            .collect();
        let accepted = pairs
            .iter()
            .filter(|(a, b)| per_fact::accepts_update(b, a))
            .count();
        out.sources.push((name.to_string(), pairs.len(), accepted));
    }
    Ok(out)
}

/// The update rule in a Letta set's cluster, the set's 10 facts shown as
/// entries: each update, with a judge naming each entry in turn, lands on
/// the entry it supersedes, on another, or on none; and each fact of a
/// set, shown the other 9, updates one of them (a false supersession) for
/// some entry a judge could name.
fn in_sets(data: &Path) -> Result<Vec<(String, usize, usize)>> {
    let (mut right, mut other, mut wrong) = ((0, 0), (0, 0), (0, 0));
    let mut sets = std::collections::BTreeMap::new();
    for row in super::letta::rows(data)? {
        for named in 0..row.facts.len() {
            let landed = accepts_update_among(&row.new_fact, &row.facts, named).ok();
            let tally = match row.supersedes.contains(&named) {
                true => &mut right,
                false => &mut other,
            };
            tally.0 += 1;
            tally.1 += usize::from(landed.is_some_and(|t| row.supersedes.contains(&t)));
            wrong.0 += 1;
            wrong.1 += usize::from(landed.is_some_and(|t| !row.supersedes.contains(&t)));
        }
        sets.insert(row.set, row.facts);
    }
    let mut false_updates = (0, 0);
    for facts in sets.values() {
        for (j, fact) in facts.iter().enumerate() {
            let mut rest = facts.clone();
            rest.remove(j);
            false_updates.0 += 1;
            false_updates.1 +=
                usize::from((0..rest.len()).any(|i| accepts_update_among(fact, &rest, i).is_ok()));
        }
    }
    let row = |name: &str, (n, k): (usize, usize)| (name.to_string(), n, k);
    Ok(vec![
        row(
            "update, judge names the superseded entry: lands there",
            right,
        ),
        row(
            "update, judge names another entry: lands on the superseded",
            other,
        ),
        row("update, judge names any entry: lands on a wrong one", wrong),
        row(
            "fact of a set, judge names any other: some entry updated",
            false_updates,
        ),
    ])
}

/// A then B in a fresh memory, a run after each; what became of them.
async fn one(config: &Config, a: &str, b: &str) -> Result<Outcome> {
    let tmp = tempfile::tempdir()?;
    let layout = init(tmp.path())?;
    let memory = Memory::new(layout.clone(), config.clone());
    let target = Target::local(memory);
    let said = |day: &str, text: &str| -> Result<FactId> {
        let fact = NewFact {
            text: text.to_string(),
            ..Default::default()
        };
        let written = archive::append(&layout, day, "09:00:00", &[fact])?;
        Ok(written[0].id.clone())
    };
    let first = said(FIRST_DAY, a)?;
    target.run(FORCE).await?;
    let second = said(SECOND_DAY, b)?;
    target.run(FORCE).await?;
    let doc = Document::read(&layout.entries_file())?;
    let holder = |id: &FactId| {
        doc.entries()
            .find(|e| e.meta.as_ref().is_some_and(|m| m.sources.contains(id)))
    };
    let state = State::load(&layout.state_file())?;
    Ok(match (holder(&first), holder(&second)) {
        (_, None) if !state.watermark.done.contains(&second) => Outcome::Failed,
        (Some(x), Some(y)) if x.id() == y.id() => {
            match x.text.to_lowercase().contains("previously") {
                true => Outcome::Superseded,
                false => Outcome::Merged,
            }
        }
        (Some(_), Some(_)) => Outcome::Apart,
        _ => Outcome::Lost,
    })
}

type Source = (&'static str, Outcome, Vec<(String, String)>);

/// The labelled pairs, (A, B) in the order they are said.
fn sources(data: &Path) -> Result<Vec<Source>> {
    let (mut updates, mut attributes) = (BTreeSet::new(), BTreeSet::new());
    for row in super::letta::rows(data)? {
        for &s in &row.supersedes {
            if let Some(old) = row.facts.get(s) {
                updates.insert((old.clone(), row.new_fact.clone()));
            }
        }
        for (i, a) in row.facts.iter().enumerate() {
            for b in &row.facts[i + 1..] {
                attributes.insert((a.clone(), b.clone()));
            }
        }
    }
    let sick = super::dedup::sick(data)?;
    let of = |name: &str| {
        sick.iter()
            .find(|l| l.name == name)
            .map(|l| l.pairs.clone())
            .unwrap_or_default()
    };
    Ok(vec![
        (
            "letta-update",
            Outcome::Superseded,
            updates.into_iter().collect(),
        ),
        (
            "letta-two-facts-of-one-person",
            Outcome::Apart,
            attributes.into_iter().collect(),
        ),
        (
            "sick-neutral-related",
            Outcome::Apart,
            of("sick-neutral-related"),
        ),
        (
            "sick-mutual-entailment",
            Outcome::Merged,
            of("sick-mutual-entailment"),
        ),
        (
            "sick-contradiction",
            Outcome::Superseded,
            of("sick-contradiction"),
        ),
    ])
}

/// `n` pairs, the same ones for the same seed: ordered by a hash of the
/// seed and the texts. Pairs equal once normalised are left out.
fn pick(pairs: Vec<(String, String)>, n: usize, seed: u64) -> Vec<(String, String)> {
    let mut keyed: Vec<(u64, (String, String))> = pairs
        .into_iter()
        .filter(|(a, b)| normalize(a) != normalize(b))
        .map(|p| {
            let h = fnv(seed, &p.0) ^ fnv(seed.rotate_left(17), &p.1);
            (h, p)
        })
        .collect();
    keyed.sort();
    keyed.into_iter().take(n).map(|(_, p)| p).collect()
}

fn fnv(seed: u64, s: &str) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64 ^ seed;
    for b in s.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}
