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
        None => {
            let memory = memd::Memory::open(dir)?;
            // A session's searches run on the embedder's fastest steady
            // state (an embedder that cannot load says so at first use).
            if let Ok(e) = memory.embedder() {
                e.warm();
            }
            Scope::one(memory)
        }
    };
    Ok(super::runtime()?.block_on(memd::mcp::serve_stdio(scope))?)
}
