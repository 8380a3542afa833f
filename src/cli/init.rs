//! `memd init [PATH]`

use std::path::{Path, PathBuf};

use anyhow::Result;

#[derive(clap::Args)]
pub struct Args {
    path: Option<PathBuf>,
}

pub fn run(dir: &Path, args: Args) -> Result<()> {
    let root = args.path.unwrap_or_else(|| dir.to_path_buf());
    let layout = memd::memory::init(&root)?;
    println!("initialised memory directory {}", layout.root.display());
    Ok(())
}
