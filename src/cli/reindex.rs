//! `memd reindex [--clear]`

use std::path::Path;

use anyhow::Result;

use memd::service::Backend;

#[derive(clap::Args)]
pub struct Args {
    #[arg(long)]
    clear: bool,
}

pub fn run(dir: &Path, args: Args) -> Result<()> {
    let (layout, config) = super::open(dir)?;
    let backend = Backend::for_dir(&layout);
    if let Some(via) = backend.describe() {
        eprintln!("memd: {via}");
    }
    let (r, rows) = super::runtime()?.block_on(backend.reindex(&layout, &config, args.clear))?;
    println!(
        "{} files checked, {} synced, {} rows added, {} deleted; {rows} rows in the index",
        r.files_checked, r.files_synced, r.rows_added, r.rows_deleted
    );
    Ok(())
}
