//! `memd reindex [--clear]`

use std::path::Path;

use anyhow::Result;

use memd::request::Reindex;

#[derive(clap::Args)]
pub struct Args {
    #[arg(long)]
    clear: bool,
}

pub fn run(dir: &Path, args: Args) -> Result<()> {
    let done = super::run_at(dir, Reindex { clear: args.clear }, true)?;
    let (r, rows) = (done.report, done.rows);
    println!(
        "{} files checked, {} synced, {} rows added, {} deleted; {rows} rows in the index",
        r.files_checked, r.files_synced, r.rows_added, r.rows_deleted
    );
    Ok(())
}
