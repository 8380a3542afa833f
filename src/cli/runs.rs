//! `memd runs`

use std::path::Path;

use anyhow::Result;

use memd::request::Runs;
use memd::runs::Run;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    runs: Runs,
    /// Print the runs as JSON, in the shape the API answers with.
    #[arg(long)]
    json: bool,
}

pub fn run(dir: &Path, args: Args) -> Result<()> {
    let shown = super::run_at(dir, args.runs, false)?;
    super::emit(args.json, &shown, |runs| {
        if runs.is_empty() {
            return "no runs in the journal yet\n".into();
        }
        runs.iter().map(render).collect()
    })
}

/// A run on one line: id, time, kind and judge, ops by kind, facts.
fn render(r: &Run) -> String {
    let ops: Vec<String> = r.ops.iter().map(|(op, n)| format!("{op} {n}")).collect();
    let judge = match r.judges.is_empty() {
        true => String::new(),
        false => format!(" ({})", r.judges.join(", ")),
    };
    let mut line = format!(
        "{}  {}  {}{judge}  {}  facts {}",
        r.id,
        r.started,
        r.kind,
        ops.join(", "),
        r.facts
    );
    if r.tokens > 0 {
        line.push_str(&format!("  tokens {}", r.tokens));
    }
    if let Some(u) = &r.undoes {
        line.push_str(&format!("  undoes {u}"));
    }
    if !r.undone_by.is_empty() {
        line.push_str(&format!("  undone by {}", r.undone_by.join(", ")));
    }
    line + "\n"
}
