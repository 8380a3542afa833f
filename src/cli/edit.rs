//! `memd edit ID`

use std::path::Path;

use anyhow::Result;

use memd::request::EditEntry;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    edit: EditEntry,
    /// Protect it from consolidation's REPLACE and REMOVE.
    #[arg(long, conflicts_with = "unpin")]
    pin: bool,
    /// Stop protecting it.
    #[arg(long)]
    unpin: bool,
    /// Print the entry after the edit as JSON (the shape of PATCH
    /// /v1/entries/{id}).
    #[arg(long)]
    json: bool,
}

pub fn run(dir: &Path, args: Args) -> Result<()> {
    let pinned = match (args.pin, args.unpin) {
        (true, _) => Some(true),
        (_, true) => Some(false),
        _ => None,
    };
    let req = EditEntry {
        pinned,
        ..args.edit
    };
    if req.text.is_none() && req.pinned.is_none() && req.category.is_none() {
        anyhow::bail!(memd::Error::Invalid(
            "nothing to change: give --text, --pin, --unpin or --category".into()
        ));
    }
    let edited = super::run_at(dir, req, false)?;
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&edited)?)?;
        return Ok(());
    }
    match &edited.run {
        Some(run) => outln!(
            "{}: {} (run {run}; `memd undo {run}` takes it back)",
            edited.entry.id,
            super::one_line(&edited.entry.text)
        )?,
        None => outln!("{}: already as asked, nothing changed", edited.entry.id)?,
    }
    Ok(())
}
