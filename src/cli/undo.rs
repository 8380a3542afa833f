//! `memd undo RUN [--dry-run] [--keep-out]`

use std::path::Path;

use anyhow::Result;

use memd::remedy::Surface;
use memd::request::Undo;
use memd::runs::{Change, Outcome};

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    undo: Undo,
    /// Print what the undo did as JSON, in the shape the API answers with.
    #[arg(long)]
    json: bool,
}

pub fn run(dir: &Path, args: Args) -> Result<()> {
    let outcome = super::run_at(dir, args.undo, false)?;
    super::emit(args.json, &outcome, render)
}

/// The diff: each entry's text before (`-`) and after (`+`).
fn change(c: &Change) -> String {
    let what = match (&c.before, &c.after) {
        (None, _) => "restored",
        (_, None) => "removed",
        (Some(b), Some(a)) if b == a => "its facts changed",
        _ => "reverted",
    };
    let mut out = format!("  {}  {what}\n", c.entry);
    match (&c.before, &c.after) {
        (Some(b), Some(a)) if b == a => {}
        (b, a) => {
            if let Some(b) = b {
                out.push_str(&format!("    - {}\n", super::one_line(b)));
            }
            if let Some(a) = a {
                out.push_str(&format!("    + {}\n", super::one_line(a)));
            }
        }
    }
    out
}

fn render(o: &Outcome) -> String {
    let mut out = match (&o.run, o.dry_run) {
        (_, true) => format!("undo of {} (dry run: nothing written)\n", o.undoes),
        (Some(run), false) => format!(
            "undid {} as run {run} (`memd undo {run}` brings it back)\n",
            o.undoes
        ),
        (None, false) => format!("nothing to undo in {}: it is undone already\n", o.undoes),
    };
    out.extend(o.changes.iter().map(change));
    if !o.left.is_empty() {
        out.push_str("left as it is:\n");
        for l in &o.left {
            let why = memd::remedy::with(&l.why, l.remedy.as_ref(), Surface::Cli);
            out.push_str(&format!("  {}  {why}\n", l.entry));
        }
    }
    if !o.pending_again.is_empty() {
        out.push_str(&format!(
            "facts pending again: {}\n",
            o.pending_again.join(", ")
        ));
    }
    if !o.kept_out.is_empty() {
        out.push_str(&format!(
            "facts kept out (forgotten): {}\n",
            o.kept_out.join(", ")
        ));
    }
    out
}
