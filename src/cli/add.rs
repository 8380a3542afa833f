//! `memd add TEXT` / `memd add --stdin`

use std::io::Read;
use std::path::Path;

use anyhow::{Context, Result, bail};

use memd::archive;
use memd::service::Backend;

#[derive(clap::Args)]
pub struct Args {
    /// The fact (one line). Omit with --stdin.
    text: Option<String>,
    /// Read facts from standard input, one per line (blank lines skipped).
    #[arg(long, conflicts_with = "text")]
    stdin: bool,
    #[arg(long, short)]
    category: Option<String>,
    #[arg(long, short)]
    session: Option<String>,
    /// Idempotency key: a retried append with the same key writes nothing.
    /// With --stdin, line N gets the key `KEY#N`.
    #[arg(long)]
    key: Option<String>,
    /// Print one JSON object per fact.
    #[arg(long)]
    json: bool,
    /// Do not look up similar existing entries after the write.
    #[arg(long)]
    no_similar: bool,
}

/// The facts to append: the argument, or the non-blank lines of stdin.
fn texts(args: &Args) -> Result<Vec<String>> {
    if args.stdin {
        let mut input = String::new();
        std::io::stdin()
            .read_to_string(&mut input)
            .context("reading standard input")?;
        return Ok(input
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(String::from)
            .collect());
    }
    match &args.text {
        Some(t) => Ok(vec![t.clone()]),
        None => bail!("give the fact as an argument, or use --stdin"),
    }
}

pub fn run(dir: &Path, args: Args) -> Result<()> {
    let (layout, config) = super::open(dir)?;
    let texts = texts(&args)?;
    let facts = archive::new_facts(texts, args.category, args.session, args.key, args.stdin);
    let backend = Backend::for_dir(&layout);
    let added =
        super::runtime()?.block_on(backend.add(&layout, &config, &facts, !args.no_similar))?;
    for a in added {
        if args.json {
            println!("{}", serde_json::to_value(&a)?);
            continue;
        }
        if a.fact.written {
            println!("{}", a.fact.id);
        } else {
            println!("{} (already written under this key)", a.fact.id);
        }
        for s in a.similar {
            let how = match s.same {
                true => "same as entry (consolidation will merge it)",
                false => "similar entry",
            };
            println!(
                "  {how} {} ({:.2}): {}",
                s.hit.id,
                s.hit.score,
                super::one_line(&s.hit.text)
            );
        }
    }
    Ok(())
}
