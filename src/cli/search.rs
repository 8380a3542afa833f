//! `memd search QUERY`

use std::path::Path;

use anyhow::Result;

use memd::service::Backend;

#[derive(clap::Args)]
pub struct Args {
    query: String,
    #[arg(short, long)]
    k: Option<usize>,
    #[arg(long)]
    json: bool,
}

pub fn run(dir: &Path, args: Args) -> Result<()> {
    let (layout, config) = super::open(dir)?;
    let k = args.k.unwrap_or(config.search.default_k as usize);
    let backend = Backend::for_dir(&layout);
    let hits = super::runtime()?.block_on(backend.search(&layout, &config, &args.query, k))?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&hits)?);
    } else if hits.is_empty() {
        println!("no results");
    } else {
        for h in hits {
            let text = super::one_line(&h.text);
            println!("{:.4}  {:<5}  {}  {text}", h.score, h.kind, h.id);
        }
    }
    Ok(())
}
