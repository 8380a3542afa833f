//! `memd eval dedup`: the tier-2 merge rule ([`crate::duplicate`]) on labelled
//! pairs of the dev data, per variant and cosine threshold: how many pairs
//! that say the same thing it merges, and how many that do not it merges
//! anyway (false merges).
//!
//! Pairs that say the same thing: SICK pairs that entail each other both
//! ways; MRPC paraphrases. Pairs that do not: SICK contradictions and
//! neutral pairs of relatedness ≥ 3.5 (close in topic, not in meaning);
//! MRPC non-paraphrases; every two facts of a Letta set (related but
//! distinct, sharing names); each Letta update and the fact it supersedes.
//! Pairs whose texts are equal once normalised are left out (tier 1's).

use std::collections::{BTreeSet, HashMap};
use std::path::Path;

use anyhow::Result;
use serde::Serialize;

use crate::duplicate::{PART_MIN_COSINE, Rule, Words};
use crate::embed::{self, Embedder, cache::Cached};
use crate::index::reader::SIMILAR_MIN_COSINE;
use crate::text::normalize;

/// Cosine thresholds the report covers.
pub const THRESHOLDS: [f32; 6] = [0.0, 0.8, 0.85, 0.9, 0.95, 0.98];

/// One labelled source of pairs.
#[derive(Debug, Serialize)]
pub struct Source {
    pub name: String,
    /// Whether its pairs say the same thing (merging them is right).
    pub same: bool,
    pub pairs: usize,
    /// Cosine similarity of its pairs: 25th, 50th, 75th percentile.
    pub cosine_quartiles: [f32; 3],
}

/// Thresholds measured for what `memd add` shows as a similar entry.
pub const SHOWN: [f32; 5] = [0.6, 0.7, 0.75, 0.8, 0.85];

/// The share of each source's pairs at or above a cosine threshold: for
/// the same pairs, what `memd add` would show; for the others, its noise.
#[derive(Debug, Serialize)]
pub struct Shown {
    pub min_cosine: f32,
    pub share: Vec<f64>,
}

/// One rule setting and how many pairs of each source it merges.
#[derive(Debug, Serialize)]
pub struct Row {
    pub rule: Rule,
    /// Per source, in [`DedupReport::sources`] order.
    pub merged: Vec<usize>,
    pub false_merges: usize,
    pub merges_of_same: usize,
}

/// Thresholds measured for leading-clause merges ([`Rule::part_of`]).
pub const PART_THRESHOLDS: [f32; 5] = [0.0, 0.6, 0.7, 0.8, 0.85];

/// Leading-clause merges at one threshold: a text folded into one that says
/// it and more. Pairs are taken both ways round.
#[derive(Debug, Serialize)]
pub struct PartRow {
    pub min_cosine: f32,
    /// SICK pairs whose whole entails the part (its directional label):
    /// right merges.
    pub sick_entailed: usize,
    /// SICK pairs whose whole does not entail the part: wrong merges.
    pub sick_not_entailed: usize,
    /// Letta facts of one set, and an update against what it supersedes:
    /// wrong merges.
    pub letta: usize,
    /// MRPC pairs (labelled paraphrase or not, never entailment), with
    /// the merged pairs themselves to read.
    pub mrpc: usize,
    pub mrpc_merged: Vec<(String, String)>,
}

#[derive(Debug, Serialize)]
pub struct DedupReport {
    pub embedder: String,
    pub sources: Vec<Source>,
    pub rows: Vec<Row>,
    pub shipped: Rule,
    pub shown: Vec<Shown>,
    /// What `memd add` ships: [`crate::index::reader::SIMILAR_MIN_COSINE`].
    pub similar_min: f32,
    pub parts: Vec<PartRow>,
    /// The threshold consolidation ships for leading-clause merges.
    pub part_shipped: f32,
}

/// Where a (whole, part) pair comes from, and so whether a merge is right.
#[derive(Clone, Copy, PartialEq)]
enum PartClass {
    SickEntailed,
    SickNot,
    Letta,
    Mrpc,
}

/// Every (whole, part, class) pair, both ways round, whose part is a
/// leading clause of its whole by words alone.
fn part_pairs(dir: &Path, sources: &[Labelled]) -> Result<Vec<(String, String, PartClass)>> {
    let rule = Rule::SHIPPED;
    let mut out = Vec::new();
    let text = super::read(&dir.join("sick_dev.tsv"))?;
    for f in super::tsv(&text, 6) {
        let (a, b) = (f[1].trim(), f[2].trim());
        for (whole, part, label) in [(a, b, f[4]), (b, a, f[5])] {
            let class = match label.contains("entails") {
                true => PartClass::SickEntailed,
                false => PartClass::SickNot,
            };
            out.push((whole.to_string(), part.to_string(), class));
        }
    }
    for s in sources {
        let class = match s.name {
            n if n.starts_with("letta") => PartClass::Letta,
            n if n.starts_with("mrpc") => PartClass::Mrpc,
            _ => continue,
        };
        for (a, b) in &s.pairs {
            out.push((a.clone(), b.clone(), class));
            out.push((b.clone(), a.clone(), class));
        }
    }
    out.retain(|(whole, part, _)| rule.part_of(part, whole, 1.0, 0.0));
    Ok(out)
}

/// Leading-clause merges at each of [`PART_THRESHOLDS`].
async fn parts(cached: &Cached, dir: &Path, sources: &[Labelled]) -> Result<Vec<PartRow>> {
    let pairs = part_pairs(dir, sources)?;
    let texts = pairs
        .iter()
        .flat_map(|(w, p, _)| [Rule::compared(w), Rule::compared(p)]);
    let at = embedded(cached, texts).await?;
    let cosine = |w: &str, p: &str| embed::cosine(&at[&Rule::compared(w)], &at[&Rule::compared(p)]);
    let rows = PART_THRESHOLDS.iter().map(|&t| {
        let merged: Vec<&(String, String, PartClass)> =
            pairs.iter().filter(|(w, p, _)| cosine(w, p) >= t).collect();
        let count = |c: PartClass| merged.iter().filter(|m| m.2 == c).count();
        PartRow {
            min_cosine: t,
            sick_entailed: count(PartClass::SickEntailed),
            sick_not_entailed: count(PartClass::SickNot),
            letta: count(PartClass::Letta),
            mrpc: count(PartClass::Mrpc),
            mrpc_merged: merged
                .iter()
                .filter(|m| m.2 == PartClass::Mrpc)
                .map(|(w, p, _)| (w.clone(), p.clone()))
                .collect(),
        }
    });
    Ok(rows.collect())
}

pub(crate) struct Labelled {
    pub(crate) name: &'static str,
    pub(crate) same: bool,
    pub(crate) pairs: Vec<(String, String)>,
}

pub(crate) fn sick(dir: &Path) -> Result<Vec<Labelled>> {
    let text = super::read(&dir.join("sick_dev.tsv"))?;
    let (mut same, mut contra, mut neutral) = (Vec::new(), Vec::new(), Vec::new());
    for f in super::tsv(&text, 6) {
        let pair = (f[1].trim().to_string(), f[2].trim().to_string());
        let related: f32 = f[3].parse().unwrap_or(0.0);
        match (f[4], f[5]) {
            ("A_entails_B", "B_entails_A") => same.push(pair),
            (a, b) if a.contains("contradicts") || b.contains("contradicts") => contra.push(pair),
            ("A_neutral_B", "B_neutral_A") if related >= 3.5 => neutral.push(pair),
            _ => {}
        }
    }
    Ok(vec![
        Labelled {
            name: "sick-mutual-entailment",
            same: true,
            pairs: same,
        },
        Labelled {
            name: "sick-contradiction",
            same: false,
            pairs: contra,
        },
        Labelled {
            name: "sick-neutral-related",
            same: false,
            pairs: neutral,
        },
    ])
}

pub(crate) fn mrpc(dir: &Path) -> Result<Vec<Labelled>> {
    let (mut yes, mut no) = (Vec::new(), Vec::new());
    for file in ["msr-para-train.tsv", "msr-para-val.tsv"] {
        let text = super::read(&dir.join(file))?;
        for f in super::tsv(&text, 5) {
            let pair = (f[3].trim().to_string(), f[4].trim().to_string());
            match f[0] {
                "1" => yes.push(pair),
                _ => no.push(pair),
            }
        }
    }
    Ok(vec![
        Labelled {
            name: "mrpc-paraphrase",
            same: true,
            pairs: yes,
        },
        Labelled {
            name: "mrpc-non-paraphrase",
            same: false,
            pairs: no,
        },
    ])
}

fn letta(dir: &Path) -> Result<Vec<Labelled>> {
    let mut distinct = BTreeSet::new();
    let mut updates = BTreeSet::new();
    for row in super::letta::rows(dir)? {
        for (i, a) in row.facts.iter().enumerate() {
            for b in &row.facts[i + 1..] {
                distinct.insert((a.clone(), b.clone()));
            }
        }
        for &s in &row.supersedes {
            if let Some(old) = row.facts.get(s) {
                updates.insert((row.new_fact.clone(), old.clone()));
            }
        }
    }
    Ok(vec![
        Labelled {
            name: "letta-facts-of-a-set",
            same: false,
            pairs: distinct.into_iter().collect(),
        },
        Labelled {
            name: "letta-update-vs-superseded",
            same: false,
            pairs: updates.into_iter().collect(),
        },
    ])
}

/// The variants measured, each at every threshold of [`THRESHOLDS`].
fn rules() -> Vec<Rule> {
    let mut out = Vec::new();
    for words in [Words::Set, Words::Sequence, Words::OneSwap] {
        for stem in [false, true] {
            for min_cosine in THRESHOLDS {
                out.push(Rule {
                    words,
                    stem,
                    min_cosine,
                });
            }
        }
    }
    out
}

/// Run the evaluation on the data in `dir`; embeddings are cached in
/// `cache_dir`.
pub async fn run(
    dir: &Path,
    embedder: std::sync::Arc<dyn Embedder>,
    cache_dir: &Path,
) -> Result<DedupReport> {
    let name = embedder.id();
    let cached = Cached::open(embedder, cache_dir)?;
    let mut sources = sick(dir)?;
    sources.extend(mrpc(dir)?);
    sources.extend(letta(dir)?);
    // Texts equal once normalised are the same fact whatever a label says
    // (one Letta "update" repeats the fact it supersedes word for word);
    // tier 1 merges them, and they are not what this measures.
    for s in &mut sources {
        s.pairs.retain(|(a, b)| normalize(a) != normalize(b));
    }
    let texts = sources
        .iter()
        .flat_map(|s| &s.pairs)
        .flat_map(|(a, b)| [a.clone(), b.clone()]);
    let at = embedded(&cached, texts).await?;
    let cosines: Vec<Vec<f32>> = sources
        .iter()
        .map(|s| {
            s.pairs
                .iter()
                .map(|(a, b)| embed::cosine(&at[a], &at[b]))
                .collect()
        })
        .collect();
    let compared = compared_cosines(&cached, &sources).await?;
    Ok(DedupReport {
        embedder: name,
        rows: rules()
            .into_iter()
            .map(|r| row(r, &sources, &compared))
            .collect(),
        shown: SHOWN
            .iter()
            .map(|&t| Shown {
                min_cosine: t,
                share: cosines.iter().map(|c| share_at_least(c, t)).collect(),
            })
            .collect(),
        sources: sources
            .iter()
            .zip(&cosines)
            .map(|(s, c)| Source {
                name: s.name.into(),
                same: s.same,
                pairs: s.pairs.len(),
                cosine_quartiles: quartiles(c),
            })
            .collect(),
        shipped: Rule::SHIPPED,
        similar_min: SIMILAR_MIN_COSINE,
        parts: parts(&cached, dir, &sources).await?,
        part_shipped: PART_MIN_COSINE,
    })
}

/// Each distinct text of `texts` with its embedding.
async fn embedded(
    cached: &Cached,
    texts: impl Iterator<Item = String>,
) -> Result<HashMap<String, Vec<f32>>> {
    let texts: Vec<String> = texts.collect::<BTreeSet<_>>().into_iter().collect();
    let vectors = cached.embed(&texts).await?;
    Ok(texts.into_iter().zip(vectors).collect())
}

/// The cosine of each pair's [`Rule::compared`] forms when the words of
/// the pair agree under some variant measured (0 otherwise: no rule
/// merges it).
async fn compared_cosines(cached: &Cached, sources: &[Labelled]) -> Result<Vec<Vec<f32>>> {
    let loose = [Words::Set, Words::OneSwap].map(|words| Rule {
        words,
        stem: true,
        min_cosine: 0.0,
    });
    let agree = |a: &str, b: &str| loose.iter().any(|r| r.words_agree(a, b));
    let texts = sources
        .iter()
        .flat_map(|s| &s.pairs)
        .filter(|(a, b)| agree(a, b))
        .flat_map(|(a, b)| [Rule::compared(a), Rule::compared(b)]);
    let at = embedded(cached, texts).await?;
    let cosine = |a: &str, b: &str| {
        let (x, y) = (&at[&Rule::compared(a)], &at[&Rule::compared(b)]);
        embed::cosine(x, y)
    };
    Ok(sources
        .iter()
        .map(|s| {
            let pair = |(a, b): &(String, String)| match agree(a, b) {
                true => cosine(a, b),
                false => 0.0,
            };
            s.pairs.iter().map(pair).collect()
        })
        .collect())
}

/// How many pairs of each source `rule` merges.
fn row(rule: Rule, sources: &[Labelled], cosines: &[Vec<f32>]) -> Row {
    let merged: Vec<usize> = sources
        .iter()
        .zip(cosines)
        .map(|(s, c)| {
            s.pairs
                .iter()
                .zip(c)
                .filter(|((a, b), cos)| rule.same(a, b, **cos))
                .count()
        })
        .collect();
    let sum = |same: bool| {
        merged
            .iter()
            .zip(sources)
            .filter(|(_, s)| s.same == same)
            .map(|(n, _)| n)
            .sum()
    };
    Row {
        rule,
        false_merges: sum(false),
        merges_of_same: sum(true),
        merged,
    }
}

fn share_at_least(cosines: &[f32], t: f32) -> f64 {
    cosines.iter().filter(|&&c| c >= t).count() as f64 / cosines.len().max(1) as f64
}

/// The 25th, 50th and 75th percentile.
fn quartiles(cosines: &[f32]) -> [f32; 3] {
    let mut c = cosines.to_vec();
    c.sort_by(f32::total_cmp);
    let at = |q: f64| {
        c.get(((c.len() as f64 - 1.0) * q).round() as usize)
            .copied()
    };
    [0.25, 0.5, 0.75].map(|q| at(q).unwrap_or(0.0))
}
