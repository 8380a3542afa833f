//! `memd review [accept|reject ID…|--all] [--apply] | apply`

use std::path::Path;

use anyhow::Result;

use memd::request::{Review, ReviewAction, ReviewItems, ReviewList, Reviewed};
use memd::review::Carried;

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    what: Option<What>,
    /// Print the reply as JSON, in the shape the API answers with.
    #[arg(long, global = true)]
    json: bool,
}

// Accept and reject take the request's ids, `--all` and `--apply`; the
// subcommand is its action.
#[derive(clap::Subcommand)]
enum What {
    /// Mark proposals `[x]` in consolidated/REVIEW.md.
    Accept(Review),
    /// Take proposals out of consolidated/REVIEW.md: their facts are kept
    /// word for word when the decisions are carried out.
    Reject(Review),
    /// Carry out what REVIEW.md says now (what the next run would do first).
    Apply,
}

pub fn run(dir: &Path, args: Args) -> Result<()> {
    let req = match args.what {
        None => {
            let items = super::run_at(dir, ReviewItems {}, false)?;
            return super::emit(args.json, &items, render_items);
        }
        Some(What::Apply) => Review {
            action: ReviewAction::Apply,
            ..Review::default()
        },
        Some(What::Accept(r)) => Review {
            action: ReviewAction::Accept,
            ..r
        },
        Some(What::Reject(r)) => Review {
            action: ReviewAction::Reject,
            ..r
        },
    };
    let reviewed = super::run_at(dir, req, false)?;
    super::emit(args.json, &reviewed, render)
}

fn render_items(items: &ReviewList) -> String {
    let mut out = String::new();
    if items.open.is_empty() {
        out.push_str("nothing to review\n");
    }
    for o in &items.open {
        out.push_str(&format!(
            "{}  [{}]  {}\n",
            o.item,
            o.state,
            super::one_line(&o.says)
        ));
    }
    for u in &items.unreadable {
        out.push_str(&format!(
            "consolidated/REVIEW.md:{}: not an item memd can read (`- [ ] p-…` or `- [x] p-…`): {}\n",
            u.line, u.text
        ));
    }
    out
}

fn render(r: &Reviewed) -> String {
    let mut out = String::new();
    if !r.changed.is_empty() {
        let ids: Vec<&str> = r.changed.iter().map(|i| i.as_str()).collect();
        out.push_str(&format!("REVIEW.md changed for {}\n", ids.join(", ")));
    }
    if let Some(c) = &r.carried {
        out.push_str(&carried(c));
    }
    out
}

/// What carrying out did, a line each.
pub(super) fn carried(c: &Carried) -> String {
    let mut out = String::new();
    let list = |ids: &[memd::ids::ProposalId]| {
        ids.iter()
            .map(|i| i.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    if let Some(run) = &c.run {
        out.push_str(&format!(
            "carried out as run {run} (`memd undo {run}` takes it back)\n"
        ));
    }
    if !c.accepted.is_empty() {
        out.push_str(&format!("accepted: {}\n", list(&c.accepted)));
    }
    if !c.rejected.is_empty() {
        out.push_str(&format!("rejected: {}\n", list(&c.rejected)));
    }
    if !c.kept_verbatim.is_empty() {
        let facts: Vec<&str> = c.kept_verbatim.iter().map(|f| f.as_str()).collect();
        out.push_str(&format!("kept word for word: {}\n", facts.join(", ")));
    }
    for l in c.withdrawn.iter().chain(&c.left) {
        out.push_str(&format!("left {}: {}\n", l.item, l.why));
    }
    if !c.repeated.is_empty() {
        out.push_str(&format!(
            "carried out before, taken out of REVIEW.md again (nothing applied twice): {}\n",
            list(&c.repeated)
        ));
    }
    for u in &c.unreadable {
        out.push_str(&format!(
            "consolidated/REVIEW.md:{}: not an item memd can read: {}\n",
            u.line, u.text
        ));
    }
    out.push_str(&format!("{} proposals still open\n", c.open));
    out
}
