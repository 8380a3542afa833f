//! `memd sync [--remote URL]`: commit, fetch, merge and push this memory
//! through git; and `memd merge-driver`, the merge git runs for it.

use std::path::{Path, PathBuf};

use anyhow::Result;

use memd::request::Sync;
use memd::sync::merge::{self, Kind, Merged};

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    sync: Sync,
    /// Print the reply as JSON.
    #[arg(long)]
    json: bool,
}

/// Exits 6 when a merge left a conflict for the person (named on stderr).
pub fn run(dir: &Path, args: Args) -> Result<()> {
    let synced = super::run_at(dir, args.sync, false)?;
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&synced)?)?;
    } else {
        if let Some(c) = &synced.committed {
            outln!("committed: {c}")?;
        }
        if synced.merged {
            outln!("merged origin/{}", synced.branch)?;
        }
        for s in synced.settled.iter().chain(&synced.notes) {
            outln!("{s}")?;
        }
        for id in &synced.erased_again {
            outln!("erased again here (erased on the other side): {id}")?;
        }
        if synced.pushed {
            outln!("pushed to {} ({})", synced.remote, synced.branch)?;
        }
    }
    if synced.conflicts.is_empty() {
        return Ok(());
    }
    for c in &synced.conflicts {
        eprintln!("memd: conflict: {c}");
    }
    Err(memd::Error::Unfinished(
        "the merge is left for you to finish: nothing was committed or pushed".into(),
    )
    .into())
}

#[derive(clap::Args)]
pub struct DriverArgs {
    /// Which file's merge: archive, jsonl, entries, core, state, versions.
    kind: Kind,
    /// The common ancestor's version (git's %O).
    base: PathBuf,
    /// Ours (%A): the merge is written here.
    ours: PathBuf,
    /// Theirs (%B).
    theirs: PathBuf,
}

/// Exits 1 on a conflict, as git asks of a merge driver.
pub fn driver(args: DriverArgs) -> Result<()> {
    match merge::run(args.kind, &args.base, &args.ours, &args.theirs)? {
        Merged::Clean => Ok(()),
        Merged::Conflict(why) => {
            eprintln!("memd merge-driver {}: {why}", args.kind.name());
            std::process::exit(1)
        }
    }
}
