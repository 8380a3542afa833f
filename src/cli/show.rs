//! `memd show [--as-of TIME]`: the entries file and MEMORY.md's generated
//! lines, now or as they were then.

use std::io::Write;
use std::path::Path;

use anyhow::Result;

use memd::request::Show;
use memd::versions::Then;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    show: Show,
    /// Print only this file, byte for byte: `memory` (consolidated/memory.md)
    /// or `core` (MEMORY.md's generated lines).
    #[arg(long, value_parser = ["memory", "core"])]
    file: Option<String>,
    /// Print {"as_of", "memory", "core"}, each {"state": "known", "since",
    /// "text"} or {"state": "unknowable", "why", "known_until", "known_from"}.
    #[arg(long, conflicts_with = "file")]
    json: bool,
}

/// Exits 2 when memd cannot know what was asked (it says why).
pub fn run(dir: &Path, args: Args) -> Result<()> {
    let shown = super::run_at(dir, args.show, false)?;
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&shown)?)?;
        return Ok(());
    }
    let parts = match args.file.as_deref() {
        Some("memory") => vec![("", &shown.memory)],
        Some(_) => vec![("", &shown.core)],
        None => vec![
            ("consolidated/memory.md", &shown.memory),
            ("MEMORY.md, generated lines", &shown.core),
        ],
    };
    let mut out = Vec::new();
    let mut unknowable = Vec::new();
    for (title, then) in parts {
        if !title.is_empty() {
            writeln!(out, "==> {title} as of {} <==", shown.as_of)?;
        }
        match then {
            Then::Known { text: Some(t), .. } => out.write_all(t.as_bytes())?,
            Then::Known { text: None, .. } => {
                eprintln!("memd: {title} could not be read as text then (missing or broken)")
            }
            Then::Unknowable { why, .. } => unknowable.push(why.clone()),
        }
    }
    super::out::write(&out)?;
    if !shown.forgotten_since.is_empty() && args.file.as_deref() != Some("core") {
        let ids: Vec<&str> = shown.forgotten_since.iter().map(|e| e.as_str()).collect();
        eprintln!(
            "memd: forgotten since (shown as the file was; search and MEMORY.md leave them out): {}",
            ids.join(", ")
        );
    }
    if unknowable.is_empty() {
        return Ok(());
    }
    Err(memd::Error::Invalid(unknowable.join("; ")).into())
}
