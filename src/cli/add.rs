//! `memd add TEXT` / `memd add --stdin`

use std::io::Read;
use std::path::Path;

use anyhow::{Context, Result, bail};

use memd::request::Add;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    add: Add,
    /// Read facts from standard input, one per line (blank lines skipped);
    /// with --key, line N gets the key `KEY#N`.
    #[arg(long, conflicts_with = "text")]
    stdin: bool,
    /// Print one JSON object per fact.
    #[arg(long)]
    json: bool,
}

/// The request: the argument, or the non-blank lines of stdin as a batch.
fn request(args: Args) -> Result<(Add, bool)> {
    let mut add = args.add;
    if args.stdin {
        let mut input = String::new();
        std::io::stdin()
            .read_to_string(&mut input)
            .context("reading standard input")?;
        let lines = input
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(String::from)
            .collect();
        add.texts = Some(lines);
    } else if add.text.is_none() {
        bail!("give the fact as an argument, or use --stdin");
    }
    Ok((add, args.json))
}

pub fn run(dir: &Path, args: Args) -> Result<()> {
    let (add, json) = request(args)?;
    if add.texts.as_ref().is_some_and(|t| t.is_empty()) {
        return Ok(());
    }
    let added = super::run_at(dir, add, false)?;
    for mut a in added.facts {
        if json {
            // Every fact says what was found like it, if only nothing.
            a.similar.get_or_insert_with(Vec::new);
            outln!("{}", serde_json::to_value(&a)?)?;
            continue;
        }
        match (a.fact.written, a.fact.erased) {
            (true, _) => outln!("{}", a.fact.id)?,
            (false, true) => outln!(
                "{} (not written: {})",
                a.fact.id,
                memd::erase::NOT_WRITTEN_AGAIN
            )?,
            (false, false) => outln!("{} (already written under this key)", a.fact.id)?,
        }
        for s in a.similar.into_iter().flatten() {
            let how = match s.same {
                true => "same as entry (consolidation will merge it)",
                false => "similar entry (if the fact replaces it: --supersedes ID)",
            };
            outln!(
                "  {how} {} ({:.2}): {}",
                s.hit.id,
                s.hit.score,
                super::one_line(&s.hit.text)
            )?;
        }
    }
    Ok(())
}
