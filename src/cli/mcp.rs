//! `memd mcp`: the MCP server on stdin/stdout.

use std::path::Path;

use anyhow::Result;

#[derive(clap::Args)]
pub struct Args {}

pub fn run(dir: &Path, _args: Args) -> Result<()> {
    let (layout, config) = super::open(dir)?;
    Ok(super::runtime()?.block_on(memd::mcp::serve_stdio(layout, config))?)
}
