//! `memd check [--json] [--fix] [--deep]`

use std::path::Path;

use anyhow::{Result, bail};

use memd::check::{Finding, Report};
use memd::remedy::Surface;
use memd::request::Check;

#[derive(clap::Args)]
pub struct Args {
    /// Print every finding as JSON, each with its `kind`.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    check: Check,
}

pub fn run(dir: &Path, args: Args) -> Result<()> {
    let report = super::run_at(dir, args.check, false)?;
    if report.index_rebuilt {
        eprintln!("memd: the index was rebuilt from the files");
    }
    super::emit(args.json, &report, render)?;
    match report.problems.len() {
        0 => Ok(()),
        n => bail!("{n} problems (see above)"),
    }
}

fn render(r: &Report) -> String {
    let rows = r
        .index_rows
        .map_or("no index".into(), |n| format!("{n} index rows"));
    let mut out = format!("{} facts, {} entries, {rows}\n", r.facts, r.entries);
    for (label, findings) in [("problem", &r.problems), ("note", &r.notes)] {
        for f in findings {
            let what = memd::remedy::with(&f.what, f.remedy.as_ref(), Surface::Cli);
            out.push_str(&format!("{label:<8} {}  {what}\n", place(f)));
        }
    }
    if r.problems.is_empty() {
        out.push_str("ok: no problems\n");
    }
    out
}

fn place(f: &Finding) -> String {
    match f.line {
        Some(l) => format!("{}:{l}", f.file),
        None => f.file.clone(),
    }
}
