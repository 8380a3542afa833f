//! `memd core`: MEMORY.md, the core memory, as the agent sees it.

use std::path::Path;

use anyhow::Result;

use memd::request::Core;

#[derive(clap::Args)]
pub struct Args {
    /// Print {"markdown": the file, "lines": [{"id", "text", "day"}]} (the
    /// generated lines, one per entry) instead of the file.
    #[arg(long, conflicts_with = "compact")]
    json: bool,
    #[command(flatten)]
    core: Core,
}

pub fn run(dir: &Path, args: Args) -> Result<()> {
    let text = super::run_at(dir, args.core, false)?;
    if !args.json {
        // Byte for byte: a byte that is not UTF-8 is the user's, not ours
        // to replace.
        super::out::write(&text.0)?;
        return Ok(());
    }
    let layout = memd::Layout::open(dir)?;
    let markdown = text.text(&layout)?;
    let md = memd::core_md::CoreMd::parse(markdown.as_bytes())?;
    let lines: Vec<serde_json::Value> = md
        .lines()
        .iter()
        .map(|l| serde_json::json!({"id": l.entry_id, "text": l.text, "day": l.date}))
        .collect();
    let out = serde_json::json!({"markdown": markdown, "lines": lines});
    outln!("{}", serde_json::to_string_pretty(&out)?)?;
    Ok(())
}
