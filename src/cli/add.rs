//! `memd add TEXT` / `memd add --stdin`

use std::io::Read;
use std::path::Path;

use anyhow::{Context, Result, bail};

use memd::request::Add;

#[derive(clap::Args)]
pub struct Args {
    /// The fact (one line). Omit with --stdin.
    text: Option<String>,
    /// Read facts from standard input, one per line (blank lines skipped).
    #[arg(long, conflicts_with = "text")]
    stdin: bool,
    /// A category for the fact (kept on its archive line; a filter, not a
    /// folder).
    #[arg(long, short)]
    category: Option<String>,
    /// The agent session the fact came from (kept on its archive line).
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
    /// What this fact makes no longer true, by any id memd shows: an
    /// entry (e-…), a MEMORY.md line (core:e-…) or a fact (DAY#…, pending
    /// or in an entry); repeat for several. The next run replaces it with
    /// the fact, keeping it as history.
    #[arg(long, value_name = "ID")]
    supersedes: Vec<String>,
}

/// The request: the argument, or the non-blank lines of stdin as a batch.
fn request(args: Args) -> Result<(Add, bool)> {
    let (text, texts) = match (args.stdin, args.text) {
        (true, _) => {
            let mut input = String::new();
            std::io::stdin()
                .read_to_string(&mut input)
                .context("reading standard input")?;
            let lines = input
                .lines()
                .filter(|l| !l.trim().is_empty())
                .map(String::from)
                .collect();
            (None, Some(lines))
        }
        (false, Some(t)) => (Some(t), None),
        (false, None) => bail!("give the fact as an argument, or use --stdin"),
    };
    let add = Add {
        text,
        texts,
        category: args.category,
        session: args.session,
        key: args.key,
        similar: !args.no_similar,
        supersedes: args.supersedes.iter().map(|s| s.as_str().into()).collect(),
    };
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
