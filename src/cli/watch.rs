//! `memd watch`

use std::path::Path;
use std::time::Duration;

use anyhow::{Result, bail};

use memd::index::Index;

#[derive(clap::Args)]
pub struct Args {
    /// Seconds between full reconciles of the index with the files (file
    /// events can be missed: network file systems, a full event queue).
    #[arg(long, default_value_t = 30)]
    reconcile_seconds: u64,
}

pub fn run(dir: &Path, args: Args) -> Result<()> {
    let memory = memd::Memory::open(dir)?;
    let layout = memory.layout.clone();
    if let Some(d) = memd::server::running(&layout) {
        bail!(
            "the daemon (pid {}, {}) already watches this directory",
            d.pid,
            d.listen
        );
    }
    let reconcile = Duration::from_secs(args.reconcile_seconds.max(1));
    let watched = super::runtime()?.block_on(async {
        let index = Index::open(&memory).await?;
        eprintln!("memd: watching {} (Ctrl-C to stop)", layout.root.display());
        let stop = async {
            let _ = tokio::signal::ctrl_c().await;
        };
        memd::watch::run(&layout, &index, reconcile, stop).await
    });
    Ok(watched?)
}
