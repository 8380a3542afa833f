//! `memd init [PATH]`

use std::path::{Path, PathBuf};

use anyhow::Result;

#[derive(clap::Args)]
pub struct Args {
    /// Where (default: --dir, else the current directory).
    path: Option<PathBuf>,
    /// Print the directory made as JSON (`{"root": PATH}`).
    #[arg(long)]
    json: bool,
}

pub fn run(dir: &Path, args: Args) -> Result<()> {
    let root = args.path.unwrap_or_else(|| dir.to_path_buf());
    let layout = memd::memory::init(&root)?;
    let made = serde_json::json!({ "root": layout.root });
    super::emit(args.json, &made, |_| {
        format!("initialised memory directory {}\n", layout.root.display())
    })
}
