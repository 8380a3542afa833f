//! `memd status`

use std::path::Path;

use anyhow::Result;

use memd::request::Status;
use memd::status::Report;

#[derive(clap::Args)]
pub struct Args {
    /// Also print the configuration in force (every setting, defaults
    /// included), as TOML.
    #[arg(long)]
    config: bool,
    /// Print the whole report as JSON (the configuration included).
    #[arg(long)]
    json: bool,
}

pub fn run(dir: &Path, args: Args) -> Result<()> {
    let report = super::run_at(dir, Status {}, false)?;
    super::emit(args.json, &report, |r| render(r, args.config))
}

fn render(r: &Report, config: bool) -> String {
    let mut out = files(r);
    out.push_str(&processes(r));
    if !r.warnings.is_empty() {
        out.push_str("warnings\n");
        for w in &r.warnings {
            out.push_str(&format!("  {w}\n"));
        }
    }
    if !config {
        out.push_str("(memd status --config prints the configuration in force)\n");
        return out;
    }
    out.push_str("\nconfiguration in force\n");
    for line in r.config.to_toml().lines() {
        out.push_str(&format!("  {line}\n"));
    }
    out
}

/// The files: archive, entries, tombstones, pending, judge, index.
fn files(r: &Report) -> String {
    let mut out = format!("memory directory  {}\n", r.dir);
    out.push_str(&format!(
        "archive           {} facts over {} days\n",
        r.facts,
        r.days.len()
    ));
    for d in r.days.iter().rev().take(7) {
        out.push_str(&format!("  {}      {}\n", d.day, d.facts));
    }
    if r.days.len() > 7 {
        out.push_str(&format!("  … {} earlier days\n", r.days.len() - 7));
    }
    out.push_str(&format!(
        "entries           {} ({} pinned, {} unreviewed, {} edited by hand, {} hand-written awaiting metadata)\n",
        r.entries,
        r.entries_pinned,
        r.entries_unreviewed,
        r.entries_edited_by_hand,
        r.entries_unsaved_hand_written
    ));
    out.push_str(&format!(
        "tombstones        {} ({} archive facts kept out)\n",
        r.tombstones, r.facts_forgotten
    ));
    out.push_str(&format!("pending facts     {}\n", r.pending_facts));
    if r.review_open > 0 {
        out.push_str(&format!(
            "under review      {} proposals holding {} facts (consolidated/REVIEW.md; `memd review`)\n",
            r.review_open, r.facts_under_review
        ));
    }
    out.push_str(&format!(
        "last consolidated {}\n",
        r.last_consolidation.as_deref().unwrap_or("never")
    ));
    out.push_str(&format!("judge             {}\n", r.judge));
    let budget = r
        .llm_budget
        .map_or(String::new(), |b| format!(" of {b} (max_tokens_per_day)"));
    out.push_str(&format!(
        "LLM tokens today  {}{budget}\n",
        r.llm_tokens_today
    ));
    out.push_str(&format!("embedder          {}\n", embedder(&r.embedder)));
    let stale: Vec<_> = r
        .index
        .iter()
        .filter(|(_, s)| **s != memd::index::fingerprints::Freshness::Fresh)
        .collect();
    out.push_str(&format!(
        "index             {} of {} files fresh\n",
        r.index.len() - stale.len(),
        r.index.len()
    ));
    for (source, state) in stale {
        out.push_str(&format!("  {source}: {state}\n"));
    }
    out
}

/// The embedder on one line: what, where, and whether it can start.
fn embedder(m: &memd::embed::Model) -> String {
    let kind = serde_json::to_value(m.kind).unwrap_or_default();
    let mut out = kind.as_str().unwrap_or("?").to_string();
    if let Some(rt) = m.runtime {
        let rt = serde_json::to_value(rt).unwrap_or_default();
        out.push_str(&format!(" on {}", rt.as_str().unwrap_or("?")));
    }
    if let Some(name) = &m.name {
        out.push_str(&format!(" ({name})"));
    }
    if let Some(dir) = &m.dir {
        out.push_str(&format!(", model in {dir}"));
    }
    match m.missing {
        Some(_) => out.push_str(": MISSING, run `memd setup`"),
        None if m.dir.is_some() => out.push_str(": ready"),
        None => {}
    }
    out
}

/// The processes: daemon and watcher.
fn processes(r: &Report) -> String {
    let mut out = match &r.daemon {
        Some(d) => format!(
            "daemon            running (pid {}, http://{}{}, since {})\n",
            d.pid,
            d.listen,
            if d.token { ", token required" } else { "" },
            d.started
        ),
        None => "daemon            not running (memd serve)\n".to_string(),
    };
    match &r.watcher {
        Some(w) => out.push_str(&format!(
            "watcher           {} (pid {}, {} events, {} syncs, last sync {}{})\n",
            if w.alive { "running" } else { "not running" },
            w.health.pid,
            w.health.events,
            w.health.syncs,
            w.health.last_sync.as_deref().unwrap_or("never"),
            w.health
                .last_error
                .as_deref()
                .map(|e| format!(", last error: {e}"))
                .unwrap_or_default()
        )),
        None => out.push_str("watcher           never run (memd watch; search syncs on its own)\n"),
    }
    out
}
