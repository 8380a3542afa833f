//! `memd forget ID` / `memd forget --match TEXT [--yes]` /
//! `memd forget --undo ID` / `memd forget --erase ID | --match TEXT --yes`

use std::path::Path;

use anyhow::{Result, bail};

use memd::ids::ItemId;
use memd::request::{Candidates, Erase, Forget, Target, Unforget};

// One command for several requests (forget, unforget, erase, the
// candidates of a match): its flags choose which, so it keeps its own
// arguments rather than one request's.
#[derive(clap::Args)]
pub struct Args {
    /// Entry id (e-…) or archive fact id (DAY#HASH).
    id: Option<ItemId>,
    /// List entries and pending facts containing TEXT instead.
    #[arg(long, value_name = "TEXT", conflicts_with = "id")]
    r#match: Option<String>,
    /// With --match: forget everything listed.
    #[arg(long, requires = "match")]
    yes: bool,
    /// Undo the forgetting of ID (an entry or a fact): its tombstones are
    /// lifted and a forgotten entry is restored.
    #[arg(long, requires = "id", conflicts_with = "match")]
    undo: bool,
    /// Erase, not only forget: the text is taken out of every file memd
    /// keeps (the day file's line becomes a redaction line, the journal,
    /// the index and its old versions). Cannot be undone. Also for an
    /// entry or a fact forgotten before.
    #[arg(long, conflicts_with = "undo")]
    erase: bool,
    /// Print what was forgotten (or listed, or brought back) as JSON, in
    /// the shape the API answers with.
    #[arg(long)]
    json: bool,
}

/// The ids to forget: the one given, or (with `--yes`) every candidate
/// matching the text. `None` when there is nothing to do.
fn chosen(target: &Target, args: Args) -> Result<Option<Vec<ItemId>>> {
    let text = match (args.id, args.r#match) {
        (Some(id), _) => return Ok(Some(vec![id])),
        (None, Some(text)) => text,
        (None, None) => bail!("give an id to forget, or --match TEXT to list candidates"),
    };
    let ask = Candidates { text: text.clone() };
    let found = super::runtime()?.block_on(target.run(ask))?;
    if args.json && !args.yes {
        outln!("{}", serde_json::to_string_pretty(&found)?)?;
        return Ok(None);
    }
    if args.json {
        return Ok(Some(found.iter().map(|c| ItemId::given(&c.id)).collect()));
    }
    if found.is_empty() {
        outln!("nothing matches {text:?}")?;
        return Ok(None);
    }
    for c in &found {
        outln!("{:<5}  {}  {}", c.kind, c.id, super::one_line(&c.text))?;
    }
    if !args.yes {
        outln!(
            "\nnothing forgotten yet: `memd forget ID` forgets one, `--match {text:?} --yes` all of these"
        )?;
        return Ok(None);
    }
    Ok(Some(found.iter().map(|c| ItemId::given(&c.id)).collect()))
}

/// With `--json`: `forget ID` and `--undo` print the one candidate, a
/// listing (`--match`) or `--match --yes` an array.
pub fn run(dir: &Path, args: Args) -> Result<()> {
    let target = Target::open(dir)?;
    let rt = super::runtime()?;
    let (json, one) = (args.json, args.id.is_some());
    if args.undo {
        let id = args.id.unwrap_or_default();
        let back = rt.block_on(target.run(Unforget { id }))?;
        return super::emit(json, &back, |b| {
            let text = super::one_line(&b.text);
            format!("no longer forgotten: {} {}: {text}\n", b.kind, b.id)
        });
    }
    let erase = args.erase;
    let Some(ids) = chosen(&target, args)? else {
        return Ok(());
    };
    if erase {
        return erase_all(&target, ids, json, one);
    }
    let mut gone = Vec::new();
    for id in ids {
        let g = rt.block_on(target.run(Forget { id }))?;
        if !json {
            outln!("forgot {} {}: {}", g.kind, g.id, super::one_line(&g.text))?;
        }
        gone.push(g);
    }
    match (json, one) {
        (false, _) => Ok(()),
        (true, true) => super::emit(true, &gone[0], |_| String::new()),
        (true, false) => super::emit(true, &gone, |_| String::new()),
    }
}

/// What git still holds of an erasure, in words.
fn git_said(g: &memd::git::GitHistory) -> String {
    let held = match (g.commits.len(), g.searched) {
        (0, true) => "no commit holds its text".to_string(),
        (n, true) => format!(
            "{n} commit{} add or remove its text: {}",
            super::plural(n),
            g.commits
                .iter()
                .map(|c| &c[..c.len().min(12)])
                .collect::<Vec<_>>()
                .join(" ")
        ),
        (n, false) => format!(
            "memd could not search its history for the text (git missing or failed, or the text already gone from the files); {n} commit{} found",
            super::plural(n)
        ),
    };
    format!(
        "  this memory is in the git repository {}: {held}.\n  {}\n",
        g.repo, g.purge
    )
}

/// `--erase`: each id erased; what each took out.
fn erase_all(target: &Target, ids: Vec<ItemId>, json: bool, one: bool) -> Result<()> {
    let rt = super::runtime()?;
    let mut gone = Vec::new();
    for id in ids {
        let e = rt.block_on(target.run(Erase { id }))?;
        if !json {
            outln!(
                "erased {}: {} entr{}, {} fact line{} redacted, {} journal record{} and {} recall{} without its text",
                e.id,
                e.entries.len(),
                if e.entries.len() == 1 { "y" } else { "ies" },
                e.facts.len(),
                super::plural(e.facts.len()),
                e.journal_records,
                super::plural(e.journal_records),
                e.recalls,
                super::plural(e.recalls),
            )?;
            if let Some(g) = &e.git {
                out!("{}", git_said(g))?;
            }
        }
        gone.push(e);
    }
    match (json, one) {
        (false, _) => Ok(()),
        (true, true) => super::emit(true, &gone[0], |_| String::new()),
        (true, false) => super::emit(true, &gone, |_| String::new()),
    }
}
