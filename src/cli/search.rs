//! `memd search QUERY`

use std::path::Path;

use anyhow::Result;

use memd::request::Search;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    search: Search,
    /// Print the hits as JSON, in the shape the API answers with.
    #[arg(long)]
    json: bool,
}

pub fn run(dir: &Path, args: Args) -> Result<()> {
    let hits = super::run_at(dir, args.search, false)?.hits();
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
