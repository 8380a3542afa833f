//! `memd reindex [--clear]`

use std::path::Path;

use anyhow::Result;

use memd::request::Reindex;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    reindex: Reindex,
    /// Print what the reindex did as JSON, in the shape the API answers with.
    #[arg(long)]
    json: bool,
}

pub fn run(dir: &Path, args: Args) -> Result<()> {
    let done = super::run_at(dir, args.reindex, true)?;
    super::emit(args.json, &done, |done| {
        let (r, rows) = (&done.report, done.rows);
        format!(
            "{} files checked, {} synced, {} rows added, {} deleted; {rows} rows in the index\n",
            r.files_checked, r.files_synced, r.rows_added, r.rows_deleted
        )
    })
}
