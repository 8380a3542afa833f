//! `memd consolidate [--force] [--dry-run]`

use std::path::Path;

use anyhow::Result;

use memd::consolidate::Options;
use memd::service::Backend;

#[derive(clap::Args)]
pub struct Args {
    /// Run even if min_hours or min_facts say not yet (never while
    /// another run holds the lock).
    #[arg(long)]
    force: bool,
    /// Print the planned operations as a diff; write nothing.
    #[arg(long)]
    dry_run: bool,
    #[arg(long)]
    json: bool,
}

pub fn run(dir: &Path, args: Args) -> Result<()> {
    let (layout, config) = super::open(dir)?;
    let backend = Backend::for_dir(&layout);
    if let Some(via) = backend.describe() {
        eprintln!("memd: {via}");
    }
    let opts = Options {
        force: args.force,
        dry_run: args.dry_run,
    };
    let report = super::runtime()?.block_on(backend.consolidate(&layout, &config, opts))?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", report.render());
    }
    Ok(())
}
