//! `memd consolidate [--force] [--dry-run]`

use std::path::Path;

use anyhow::Result;

use memd::consolidate::Report;
use memd::request::Consolidate;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    run: Consolidate,
    /// Print the run's report as JSON, in the shape the API answers with.
    #[arg(long)]
    json: bool,
}

pub fn run(dir: &Path, args: Args) -> Result<()> {
    let report = super::run_at(dir, args.run, true)?;
    super::emit(args.json, &report, render)?;
    unfinished(&report)
}

/// A run that left facts pending because the judge failed is not a
/// success: exit 6, naming the facts (the report says the same).
fn unfinished(r: &Report) -> Result<()> {
    if r.failed_facts.is_empty() {
        return Ok(());
    }
    let facts: Vec<&str> = r.failed_facts.iter().map(|f| f.as_str()).collect();
    Err(memd::Error::Unfinished(format!(
        "{} clusters got no usable reply from the judge; these facts stay pending and the next run tries them again: {}",
        r.failed_clusters,
        facts.join(", ")
    ))
    .into())
}

/// The report as the command line shows it: for a dry run each cluster's
/// planned ops as a diff, then what the run did.
fn render(r: &Report) -> String {
    if let Some(why) = &r.skipped {
        return format!("consolidation skipped: {why} (--force runs it anyway)\n");
    }
    let mut out = String::new();
    if let Some(c) = &r.review {
        out.push_str("review: ");
        out.push_str(&super::review::carried(c));
    }
    if r.dry_run {
        out.push_str("dry run: nothing was written\n\n");
        for (i, c) in r.cluster_reports.iter().enumerate() {
            out.push_str(&format!(
                "cluster {} ({}; {} facts, {} entries)\n",
                i + 1,
                c.decision,
                c.facts.len(),
                c.entries.len()
            ));
            out.push_str(&c.diff);
            if let Some(e) = &c.error {
                out.push_str(&format!("  ! {e}\n"));
            }
        }
        out.push('\n');
    }
    out.push_str(&format!(
        "run {} ({}): {} pending facts, {} restatements, {} near-duplicates, {} clusters, {} LLM calls\n",
        r.run_id,
        r.judge,
        r.pending_facts,
        r.restatements,
        r.near_duplicates,
        r.clusters,
        r.llm_calls
    ));
    let a = &r.applied;
    let done = if r.dry_run { "planned" } else { "applied" };
    out.push_str(&format!(
        "{} ADD, {} REPLACE, {} REMOVE, {} KEEP {done}\n",
        a.add, a.replace, a.remove, a.keep
    ));
    if !r.proposed.is_empty() {
        let n = r.proposed.len();
        out.push_str(&format!(
            "{n} op{} proposed in consolidated/REVIEW.md, waiting for your decision (not applied): mark one [x] to accept it, delete it to reject it, then `memd review apply`\n",
            super::plural(n)
        ));
    }
    if r.under_review > 0 {
        out.push_str(&format!(
            "{} pending facts wait for review (consolidated/REVIEW.md)\n",
            r.under_review
        ));
    }
    out.push_str(&held_back(r));
    if !r.dry_run {
        out.push_str(&format!("{} lines in MEMORY.md\n", r.promoted_lines));
    }
    for w in &r.warnings {
        out.push_str(&format!("warning: {w}\n"));
    }
    out
}

/// What the run could not do, and what became of those facts.
fn held_back(r: &Report) -> String {
    let mut out = String::new();
    for s in &r.suppressed {
        let of = s
            .forgotten
            .as_deref()
            .map(|e| format!(" (forgotten entry {e})"))
            .unwrap_or_default();
        out.push_str(&format!(
            "not kept, it restates something forgotten{of}: {} {:?}\n",
            s.fact, s.text
        ));
    }
    // (count, the noun for one, for more, what became of them)
    let counted = [
        (
            r.deleted_by_hand,
            ("entry", "entries"),
            "deleted by hand: recorded as forgotten (tombstoned with their facts)",
        ),
        (
            r.skipped_hand_edited,
            ("op", "ops"),
            "skipped: their entry was edited by hand during the run (facts stay pending)",
        ),
        (
            r.declared_updates,
            ("fact", "facts"),
            "applied as a declared update (supersedes), the old text kept as history",
        ),
        (
            r.judged_updates,
            ("fact", "facts"),
            "the built-in judge read as an update, the old text kept as history",
        ),
        (
            r.failed_clusters,
            ("cluster", "clusters"),
            "got no usable reply (facts stay pending)",
        ),
        (
            r.fallback_facts,
            ("fact", "facts"),
            "added verbatim and marked unreviewed",
        ),
    ];
    for (n, (one, many), what) in counted.into_iter().filter(|(n, ..)| *n > 0) {
        let noun = if n == 1 { one } else { many };
        out.push_str(&format!("{n} {noun} {what}\n"));
    }
    out
}
