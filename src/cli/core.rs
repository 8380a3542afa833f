//! `memd core`: MEMORY.md, the core memory, as the agent sees it.

use std::io::Write;
use std::path::Path;

use anyhow::Result;

use memd::request::Core;

#[derive(clap::Args)]
pub struct Args {}

pub fn run(dir: &Path, _args: Args) -> Result<()> {
    let text = super::run_at(dir, Core {}, false)?;
    // Byte for byte: a byte that is not UTF-8 is the user's, not ours to
    // replace.
    std::io::stdout().write_all(&text.0)?;
    Ok(())
}
