//! `memd entries [ID]`

use std::path::Path;

use anyhow::Result;

use memd::ids::ItemId;
use memd::request::{Entries, EntryView, GetEntry};

#[derive(clap::Args)]
pub struct Args {
    /// Print this one entry (e-…, or core:e-… as search shows a MEMORY.md
    /// line), with its categories, sessions and facts.
    id: Option<ItemId>,
    #[command(flatten)]
    entries: Entries,
    /// Only entries added word for word after the judge failed.
    #[arg(long)]
    unreviewed: bool,
    /// Only entries a person edited by hand.
    #[arg(long)]
    edited: bool,
    /// Print the entries as JSON (the shape of GET /v1/entries).
    #[arg(long)]
    json: bool,
}

pub fn run(dir: &Path, args: Args) -> Result<()> {
    if let Some(id) = args.id {
        let e = super::run_at(dir, GetEntry { id }, false)?;
        match args.json {
            true => outln!("{}", serde_json::to_string_pretty(&e)?)?,
            false => out!("{}", whole(&e))?,
        }
        return Ok(());
    }
    // `--unreviewed` and `--edited` ask for the marked entries only; the
    // request's `false` (only the others) has no flag.
    let req = Entries {
        unreviewed: args.unreviewed.then_some(true),
        edited: args.edited.then_some(true),
        ..args.entries
    };
    let filtered = req.category.is_some()
        || req.session.is_some()
        || req.since.is_some()
        || req.unreviewed.is_some()
        || req.edited.is_some();
    let all = super::run_at(dir, req, false)?;
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&all)?)?;
        return Ok(());
    }
    // Said, as `memd search` says "no results": an empty answer is not
    // a command that did nothing.
    if all.is_empty() {
        return match filtered {
            true => outln!("no entries match"),
            false => outln!(
                "no entries yet: facts become entries when consolidation runs (`memd consolidate --force` runs it now)"
            ),
        };
    }
    for e in &all {
        outln!("{}  {}  {}", e.id, e.updated, super::one_line(&e.text))?;
    }
    Ok(())
}

/// One entry, whole: its id and dates, its text, what it holds.
fn whole(e: &EntryView) -> String {
    let mut out = format!(
        "{}  first seen {}, updated {}\n",
        e.id, e.first_seen, e.updated
    );
    for (on, mark) in [
        (e.pinned, "pinned"),
        (e.unreviewed, "unreviewed"),
        (e.edited, "edited by hand"),
    ] {
        if on {
            out.push_str(&format!("  {mark}\n"));
        }
    }
    out.push_str(&format!("{}\n", e.text));
    if !e.categories.is_empty() {
        out.push_str(&format!("categories: {}\n", e.categories.join(", ")));
    }
    if !e.sessions.is_empty() {
        out.push_str(&format!("sessions: {}\n", e.sessions.join(", ")));
    }
    let facts: Vec<&str> = e.sources.iter().map(|f| f.as_str()).collect();
    out.push_str(&format!("facts: {}\n", facts.join(", ")));
    out
}
