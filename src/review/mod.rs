//! Review mode (`[consolidation] review = "manual"`): a run proposes its
//! ops and applies none; a person accepts or rejects each one, and the
//! decisions are carried out through the same apply as any op
//! (docs/CONSOLIDATION.md, "Review").
//!
//! Two files, both owned here:
//! - `consolidated/review.jsonl`, memd's record: every proposal (the op
//!   with real ids, the judge, the text each entry it acts on had), when
//!   its item was first written to REVIEW.md (`shown`), and each decision
//!   carried out (accepted, rejected, withdrawn);
//! - `consolidated/REVIEW.md`, the person's ([`sheet`]): one task-list
//!   item per open proposal. `[x]` accepts, deleting the item rejects,
//!   `[ ]` waits.
//!
//! The facts of an open proposal stay pending (searchable as archive
//! facts), and no run plans them again until it is decided. An accepted op
//! goes through [`crate::consolidate`]'s apply, with its hand-edit check:
//! one whose entry changed since it was proposed is left open and reported,
//! never guessed. A rejected op never hides a fact: its facts still pending
//! are added word for word as entries of their own. A proposal one of whose
//! facts was forgotten since is withdrawn, and its other facts are pending
//! again, for the next run.
//!
//! Order of writes, and what a crash between them leaves:
//! - proposing: 1. the proposals (`review.jsonl`); 2. their items
//!   (REVIEW.md); 3. `shown`. A crash before 3 leaves proposals whose items
//!   the next carry-out writes if they are missing; a proposal is taken as
//!   rejected only once it was shown and its item is gone;
//! - carrying out: 1. the entries file, the journal and the state (as a
//!   run's apply and commit); 2. the decisions; 3. REVIEW.md without the
//!   items decided. A crash before 2 leaves accepted items whose facts an
//!   entry already holds: the next carry-out sees that and records them as
//!   carried out, without applying them twice; a crash before 3 leaves
//!   items of decided proposals, which the next carry-out takes out.

pub mod carried;
mod carry;
pub mod sheet;

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};

use crate::consolidate::ops::Op;
use crate::consolidate::promote;
use crate::embed::cache::Cached;
use crate::entries::{self, Document};
use crate::error::{Context, Result};
use crate::ids::{EntryId, FactId, ProposalId, RunId};
use crate::versions::Writing;
use crate::{Error, Layout, Memory, jsonl};

pub use carried::{Carried, Left, Unreadable};
pub use carry::carry_out;
pub(crate) use carry::{propose, words};
pub use sheet::Mark;

/// The judge named by the records of facts a rejection adds word for
/// word: its run is listed as a `review` ([`crate::runs`]).
pub const REVIEW_JUDGE: &str = "memd review";

/// One op a run proposed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Proposal {
    pub item: ProposalId,
    /// The run that proposed it.
    pub run: RunId,
    pub ts: String,
    /// Its cluster in the run: the accepted ops of one cluster are carried
    /// out together, in the order proposed (a merge after the rewrite of
    /// the entry it merges into).
    pub cluster: usize,
    pub op: Op,
    /// The judge that decided it.
    pub model: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_hash: Option<String>,
    /// The entries it acts on, each with its text when it was proposed:
    /// an op whose entry says otherwise now is not applied.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub entries: Vec<Seen>,
    /// The judge's replies stayed invalid: the op adds a fact word for word.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub fallback: bool,
    /// When an erasure took its texts out (it is withdrawn then).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub erased: Option<String>,
}

/// An entry as a proposal saw it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Seen {
    pub id: EntryId,
    pub text: String,
}

/// What became of a proposal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// Accepted, and applied (or found applied already).
    Accepted,
    /// Rejected: its facts kept word for word.
    Rejected,
    /// Not carried out: one of its facts was forgotten or erased since;
    /// the others are pending again.
    Withdrawn,
}

/// A decision carried out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Decided {
    pub item: ProposalId,
    pub decision: Decision,
    /// The run that carried it out (`memd undo` takes it back), when it
    /// changed the entries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<RunId>,
    pub ts: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

/// A line of `consolidated/review.jsonl`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "record", rename_all = "snake_case")]
pub(crate) enum Line {
    Proposed(Proposal),
    /// Items written to REVIEW.md.
    Shown {
        items: Vec<ProposalId>,
        ts: String,
    },
    Decided(Decided),
}

/// Every proposal and what became of it.
#[derive(Debug, Default)]
pub struct Proposals {
    pub all: Vec<Proposal>,
    shown: HashSet<ProposalId>,
    pub decided: HashMap<ProposalId, Decided>,
}

impl Proposals {
    pub fn load(layout: &Layout) -> Result<Proposals> {
        let path = layout.proposals_file();
        let (lines, _) =
            jsonl::read::<Line>(&path).with_context(|| format!("reading {}", path.display()))?;
        let mut out = Proposals::default();
        for line in lines {
            match line {
                Line::Proposed(p) => out.all.push(p),
                Line::Shown { items, .. } => out.shown.extend(items),
                Line::Decided(d) => {
                    out.decided.insert(d.item.clone(), d);
                }
            }
        }
        Ok(out)
    }

    /// The proposals not decided yet, oldest first.
    pub fn open(&self) -> impl Iterator<Item = &Proposal> {
        self.all
            .iter()
            .filter(|p| !self.decided.contains_key(&p.item))
    }

    pub fn get(&self, id: &str) -> Option<&Proposal> {
        self.all.iter().find(|p| p.item == id)
    }

    /// Whether its item was written to REVIEW.md.
    pub fn shown(&self, id: &ProposalId) -> bool {
        self.shown.contains(id)
    }

    /// The facts of open proposals: no run plans them until they are
    /// decided.
    pub fn held(&self) -> HashSet<FactId> {
        self.open()
            .flat_map(|p| p.op.from().iter().cloned())
            .collect()
    }

    /// The runs that carried out decisions.
    pub fn runs(&self) -> HashSet<&RunId> {
        self.decided
            .values()
            .filter_map(|d| d.run.as_ref())
            .collect()
    }
}

/// The facts open proposals hold back from planning (none when the memory
/// never reviewed).
pub fn held(layout: &Layout) -> Result<HashSet<FactId>> {
    if !layout.proposals_file().exists() {
        return Ok(HashSet::new());
    }
    Ok(Proposals::load(layout)?.held())
}

pub(crate) fn append(layout: &Layout, lines: &[Line]) -> Result<()> {
    let path = layout.proposals_file();
    jsonl::append(&path, lines).with_context(|| format!("appending to {}", path.display()))
}

/// An open item as `memd review` lists it.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Open {
    pub item: ProposalId,
    /// `open`, `accepted` (carried out by the next apply), or `gone` (its
    /// item is not in REVIEW.md: rejected at the next apply, unless the
    /// file has unreadable lines).
    pub state: String,
    /// The op in words.
    pub says: String,
    pub op: Op,
    pub run: RunId,
    pub model: String,
}

/// The open proposals, oldest first, each with what REVIEW.md says of it,
/// and the lines of the file memd cannot read.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Items {
    pub open: Vec<Open>,
    /// Lines of REVIEW.md that look like items and are not (while there
    /// are any, no gone item is taken as rejected).
    pub unreadable: Vec<Unreadable>,
}

/// What [`Items`] says now.
pub fn list(layout: &Layout) -> Result<Items> {
    let props = Proposals::load(layout)?;
    let sheet = sheet::Sheet::read(&layout.review_md())?;
    let open = props
        .open()
        .map(|p| {
            let marks = sheet.marks(&p.item);
            let state = match () {
                _ if marks.contains(&Mark::Accepted) => "accepted",
                _ if !marks.is_empty() || !props.shown(&p.item) => "open",
                _ => "gone",
            };
            Open {
                item: p.item.clone(),
                state: state.into(),
                says: carry::words(p),
                op: p.op.clone(),
                run: p.run.clone(),
                model: p.model.clone(),
            }
        })
        .collect();
    let unreadable = sheet
        .unreadable
        .into_iter()
        .map(|(line, text)| Unreadable { line, text })
        .collect();
    Ok(Items { open, unreadable })
}

/// Accept (`[x]`) or reject (take out) the items of `ids` (or, with
/// `all`, of every open proposal) in REVIEW.md, as a person would; the ids
/// changed. An id that names no proposal, or one decided the other way
/// (or withdrawn), is an error, and nothing is changed; one decided the
/// same way already is left as it is.
pub fn decide(
    memory: &Memory,
    ids: &[ProposalId],
    all: bool,
    accept: bool,
) -> Result<Vec<ProposalId>> {
    let layout = &memory.layout;
    let _lock = entries::lock(layout)?;
    let props = Proposals::load(layout)?;
    let open: HashSet<&ProposalId> = props.open().map(|p| &p.item).collect();
    let mut chosen: Vec<ProposalId> = match all {
        true => props.open().map(|p| p.item.clone()).collect(),
        false => ids.to_vec(),
    };
    for bad in chosen.iter().filter(|id| !open.contains(id)) {
        let Some(d) = props.decided.get(bad) else {
            let what = format!("open proposal {bad} (the review lists the open ones)");
            return Err(Error::NoSuch { what });
        };
        let said = match d.decision {
            Decision::Accepted if accept => continue,
            Decision::Rejected if !accept => continue,
            Decision::Accepted => "accepted and applied already",
            Decision::Rejected => "rejected already (its facts were kept word for word)",
            Decision::Withdrawn => {
                "withdrawn (one of its facts was forgotten or erased since, the others are pending again)"
            }
        };
        return Err(Error::Invalid(format!(
            "proposal {bad} was {said}: a decision is carried out once, and nothing was changed"
        )));
    }
    // The same decision again (a retried request) changes nothing.
    chosen.retain(|id| open.contains(id));
    let path = layout.review_md();
    sheet::edit(&path, |sheet| {
        for id in &chosen {
            match accept {
                true => {
                    if !sheet.set_mark(id, Mark::Accepted) {
                        let p = props.get(id).expect("an open proposal");
                        sheet.append(&carry::block(&[p], &HashMap::new()));
                        sheet.set_mark(id, Mark::Accepted);
                    }
                }
                false => sheet.remove(&HashSet::from([id.as_str()])),
            }
        }
        Ok(())
    })?;
    // An item rejected before it was ever shown is taken as rejected all
    // the same.
    let unshown: Vec<ProposalId> = chosen
        .iter()
        .filter(|id| !props.shown(id))
        .cloned()
        .collect();
    if !unshown.is_empty() {
        let ts = memory.clock.timestamp();
        append(layout, &[Line::Shown { items: unshown, ts }])?;
    }
    Ok(chosen)
}

/// `memd review apply`: carry out what REVIEW.md says now, under the
/// entries lock, then refresh MEMORY.md (ranked without the LLM) when the
/// entries changed. The caller brings the index in step.
pub async fn apply(memory: &Memory, embedder: Option<&Cached>) -> Result<Carried> {
    let _lock = Writing::start(memory)?;
    let carried = carry_out(memory)?;
    if carried.run.is_some() {
        let doc = Document::read(&memory.layout.entries_file())?;
        if let Err(e) = promote::run(memory, &doc, None, embedder).await {
            tracing::warn!(
                "MEMORY.md not refreshed after the review: {e:#}; the next run refreshes it"
            );
        }
    }
    Ok(carried)
}

/// An erasure's part here ([`crate::erase`]): every proposal `touches`
/// (its facts, entries or texts are erased) loses its texts, is withdrawn
/// if it was open, and its item leaves REVIEW.md. Returns how many
/// proposals lost texts. Run again after a crash, it finishes: the
/// proposals file first, then REVIEW.md.
pub(crate) fn erase(
    layout: &Layout,
    touches: impl Fn(&Proposal) -> bool,
    ts: &str,
) -> Result<usize> {
    let path = layout.proposals_file();
    if !path.exists() {
        return Ok(0);
    }
    let props = Proposals::load(layout)?;
    let gone: Vec<&Proposal> = props.all.iter().filter(|p| touches(p)).collect();
    let withdrawn: Vec<Line> = gone
        .iter()
        .filter(|p| !props.decided.contains_key(&p.item))
        .map(|p| {
            Line::Decided(Decided {
                item: p.item.clone(),
                decision: Decision::Withdrawn,
                run: None,
                ts: ts.to_string(),
                why: Some("its text was erased".into()),
            })
        })
        .collect();
    let ids: HashSet<&str> = gone.iter().map(|p| p.item.as_str()).collect();
    let changed = jsonl::rewrite(
        &path,
        |l: &Line| match l {
            Line::Proposed(p) if ids.contains(p.item.as_str()) && p.erased.is_none() => {
                Some(Some(Line::Proposed(without_texts(p, ts))))
            }
            _ => None,
        },
        &withdrawn,
    )
    .with_context(|| format!("rewriting {}", path.display()))?;
    sheet::edit(&layout.review_md(), |s| {
        s.remove(&ids);
        Ok(())
    })?;
    Ok(changed)
}

/// A proposal without any text: the op's, the entries'.
fn without_texts(p: &Proposal, ts: &str) -> Proposal {
    let mut p = p.clone();
    match &mut p.op {
        Op::Add { text, .. } | Op::Replace { text, .. } => text.clear(),
        Op::Remove { .. } | Op::Keep { .. } => {}
    }
    for s in &mut p.entries {
        s.text.clear();
    }
    p.erased = Some(ts.to_string());
    p
}
