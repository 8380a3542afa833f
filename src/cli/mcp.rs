//! `memd mcp [--memory NAME]`: the MCP server on stdin/stdout.

use std::path::Path;

use anyhow::Result;

use memd::mcp::Scope;

#[derive(clap::Args)]
pub struct Args {
    /// Serve the memories under --dir (as `memd serve --root` does), NAME
    /// unless a tool's `memory` argument names another.
    #[arg(long, value_name = "NAME")]
    memory: Option<String>,
}

pub fn run(dir: &Path, args: Args) -> Result<()> {
    let scope = match args.memory {
        Some(name) => Scope::many(dir, &name)?,
        None => Scope::one(memd::Memory::open(dir)?),
    };
    Ok(super::runtime()?.block_on(memd::mcp::serve_stdio(scope))?)
}
