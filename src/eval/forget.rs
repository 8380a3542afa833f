//! `memd eval forget`: whether what was forgotten stays out when it comes
//! back in other words. Each case is a fresh memory directory: a fact is
//! added and consolidated, its entry forgotten (`memd forget`), then a
//! rewording of it is added and consolidated. The rewording is kept out
//! when no entry holds it afterwards. Rewordings, by kind:
//! - `letta-leading-clause`: each fact of the dev Letta sets that goes on
//!   past a leading clause is forgotten, and the clause comes back alone
//!   ("Hanna Berglund is an accomplished violinist who has performed in
//!   orchestras across Europe." → "Hanna Berglund is an accomplished
//!   violinist": the longest such clause that ends at a comma or before
//!   "which", "who", "and", …);
//! - `sick-mutual-entailment`, `mrpc-paraphrase`: the first sentence of a
//!   pair that says the same thing is forgotten and the second comes back
//!   (real paraphrases: the built-in judge is not expected to catch most,
//!   an LLM judge is shown what was forgotten).

use std::path::Path;
use std::sync::Arc;

use anyhow::Result;
use serde::Serialize;

use crate::archive::{self, NewFact};
use crate::config::Config;
use crate::consolidate::judge::Judge;
use crate::consolidate::{self, Options};
use crate::duplicate::Rule;
use crate::embed::{self, Embedder};
use crate::entries::Document;
use crate::memory::init;
use crate::progress::Progress;
use crate::{Memory, forget};

/// One kind of rewording and how often it stayed out.
#[derive(Debug, Serialize)]
pub struct Kind {
    pub kind: String,
    pub cases: usize,
    pub kept_out: usize,
    /// Some rewordings that came back: (forgotten, reworded).
    pub came_back: Vec<(String, String)>,
}

#[derive(Debug, Serialize)]
pub struct ForgetReport {
    pub judge: String,
    pub kinds: Vec<Kind>,
}

/// Words that start a clause of their own: where a person restating a
/// fact in fewer words would stop.
const CLAUSE_WORDS: &[&str] = &["which", "who", "and", "where", "while", "because", "since"];

/// The longest leading clause of `text` that ends at a comma or before a
/// word that starts a clause of its own, and that the rule says `text`
/// says ([`Rule::part_of`]); `None` when it has none.
fn leading_clause(text: &str) -> Option<String> {
    let words: Vec<&str> = text.split_whitespace().collect();
    (3..words.len()).rev().find_map(|n| {
        let next = words[n].to_lowercase();
        let at_comma = words[n - 1].ends_with(',');
        if !at_comma && !CLAUSE_WORDS.contains(&next.as_str()) {
            return None;
        }
        let cut = words[..n].join(" ").trim_end_matches(',').to_string();
        Rule::SHIPPED.part_of(&cut, text, 1.0, 0.0).then_some(cut)
    })
}

/// Whether `reworded` stays out after `original` is forgotten.
async fn kept_out(
    config: &Config,
    embedder: &Arc<dyn Embedder>,
    (original, reworded): (&str, &str),
) -> Result<bool> {
    let tmp = tempfile::tempdir()?;
    let layout = init(tmp.path())?;
    let memory = Memory::new(layout.clone(), config.clone()).with_embedder(embedder.clone());
    let cached = memory.cached_embedder()?;
    let force = Options {
        force: true,
        dry_run: false,
    };
    let add = |day: &str, text: &str| {
        let fact = NewFact {
            text: text.to_string(),
            ..Default::default()
        };
        archive::append(&layout, day, "10:00:00", &[fact])
    };
    add("2026-11-18", original)?;
    consolidate::run_with(&memory, force, Some(&cached)).await?;
    let doc = Document::read(&layout.entries_file())?;
    for id in doc.entries().filter_map(|e| e.id()) {
        forget::forget(&memory, id)?;
    }
    let back = add("2026-11-19", reworded)?;
    consolidate::run_with(&memory, force, Some(&cached)).await?;
    let doc = Document::read(&layout.entries_file())?;
    let held = doc
        .entries()
        .filter_map(|e| e.meta.as_ref())
        .any(|m| m.sources.contains(&back[0].id));
    Ok(!held)
}

async fn measure(
    kind: &str,
    cases: &[(String, String)],
    config: &Config,
    embedder: &Arc<dyn Embedder>,
) -> Result<Kind> {
    let mut out = Kind {
        kind: kind.to_string(),
        cases: cases.len(),
        kept_out: 0,
        came_back: Vec::new(),
    };
    let mut progress = Progress::steps("cases evaluated", cases.len() as u64);
    for (original, reworded) in cases {
        match kept_out(config, embedder, (original, reworded)).await? {
            true => out.kept_out += 1,
            false if out.came_back.len() < 5 => {
                out.came_back.push((original.clone(), reworded.clone()))
            }
            false => {}
        }
        progress.inc(1);
    }
    Ok(out)
}

/// Run every kind, at most `cases` cases of each (the first ones).
pub async fn run(dir: &Path, config: Config, cases: usize) -> Result<ForgetReport> {
    let embedder = embed::from_config(&config.embedder)?;
    let mut clauses: Vec<(String, String)> = Vec::new();
    for row in super::letta::rows(dir)? {
        for f in row.facts {
            if let Some(cut) = leading_clause(&f)
                && !clauses.iter().any(|(o, _)| *o == f)
            {
                clauses.push((f, cut));
            }
        }
    }
    clauses.truncate(cases);
    let mut kinds = vec![measure("letta-leading-clause", &clauses, &config, &embedder).await?];
    let mut sources = super::dedup::sick(dir)?;
    sources.extend(super::dedup::mrpc(dir)?);
    for s in sources.iter().filter(|s| s.same) {
        let some: Vec<(String, String)> = s.pairs.iter().take(cases).cloned().collect();
        kinds.push(measure(s.name, &some, &config, &embedder).await?);
    }
    Ok(ForgetReport {
        judge: Judge::label(&config),
        kinds,
    })
}
