//! `memd search QUERY`

use std::path::Path;

use anyhow::Result;

use memd::request::Search;

#[derive(clap::Args)]
pub struct Args {
    /// What to look for, in words.
    query: String,
    /// How many hits, 1 to 100 (default: [search] default_k).
    #[arg(short, long)]
    k: Option<usize>,
    /// Leave out what MEMORY.md already holds (its lines and the entries
    /// it has a line for): for an agent that keeps it in its prompt.
    #[arg(long)]
    exclude_core: bool,
    /// Leave out hits scoring less, 0 to 1 (default: [search] min_score;
    /// 0 keeps every hit).
    #[arg(long)]
    min_score: Option<f32>,
    /// Only facts of this category, and entries holding one.
    #[arg(long)]
    category: Option<String>,
    /// Only facts of this session, and entries holding one.
    #[arg(long)]
    session: Option<String>,
    /// Only facts stated on this day (YYYY-MM-DD) or later, and entries
    /// updated then or later.
    #[arg(long)]
    since: Option<String>,
    /// Search the memory as it was then: the facts written by then, the
    /// entries and MEMORY.md lines as they were (RFC 3339, a local time
    /// 2026-11-24T14:03, or a day: its end). Forgotten stays forgotten.
    #[arg(long, conflicts_with_all = ["category", "session", "since", "exclude_core"])]
    as_of: Option<String>,
    /// Print the hits as JSON, in the shape the API answers with.
    #[arg(long)]
    json: bool,
}

pub fn run(dir: &Path, args: Args) -> Result<()> {
    let search = Search {
        query: Some(args.query),
        k: args.k,
        wait: None,
        exclude_core: args.exclude_core.then_some(true),
        min_score: args.min_score,
        category: args.category,
        session: args.session,
        since: args.since,
        as_of: args.as_of,
    };
    let hits = super::run_at(dir, search, false)?.hits();
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&hits)?)?;
    } else if hits.is_empty() {
        outln!("no results")?;
    } else {
        for h in hits {
            let text = super::one_line(&h.text);
            let day = h.day.as_deref().unwrap_or("");
            outln!("{:.2}  {:<5}  {day:<10}  {}  {text}", h.score, h.kind, h.id)?;
        }
    }
    Ok(())
}
