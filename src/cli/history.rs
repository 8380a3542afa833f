//! `memd history ID`

use std::path::Path;

use anyhow::Result;

use memd::journal::Record;
use memd::request::History;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    history: History,
    /// Print the journal records as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(dir: &Path, args: Args) -> Result<()> {
    let id = args.history.id.clone();
    let records = super::run_at(dir, args.history, false)?;
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&records)?)?;
    } else if records.is_empty() {
        outln!("no journal records for {id}")?;
    } else {
        for r in &records {
            out!("{}", render(r))?;
        }
    }
    Ok(())
}

/// A record as one readable paragraph.
fn render(r: &Record) -> String {
    let op = serde_json::to_value(r.op)
        .ok()
        .and_then(|v| v.as_str().map(String::from))
        .unwrap_or_default();
    let mut out = format!("{}  {:<11} {}", r.ts, op, r.entry);
    if let Some(into) = &r.into {
        out.push_str(&format!(" → merged into {into}"));
    }
    out.push_str(&format!("  (run {}", r.run));
    if let Some(m) = &r.model {
        out.push_str(&format!(", {m}"));
    }
    out.push_str(")\n");
    if let Some(b) = &r.before {
        out.push_str(&format!("    before: {}\n", super::one_line(b)));
    }
    if let Some(a) = &r.after {
        out.push_str(&format!("    after:  {}\n", super::one_line(a)));
    }
    if !r.sources.is_empty() {
        out.push_str(&format!("    facts:  {}\n", r.sources.join(", ")));
    }
    out
}
