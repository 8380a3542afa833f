//! The judge's vocabulary for one cluster: the facts and entries it sees
//! ([`Cluster`]), the operations it answers with ([`Op`]), the short
//! aliases the prompt uses for them, and a readable diff of a decision.
//!
//! The LLM sees short aliases (`F1`, `E1`) instead of ids: small models copy
//! `F3` faithfully and mangle `2026-11-20#14de240e`. How a reply becomes
//! ops is [`super::reply`]: parsed leniently, checked by
//! [`super::reply::validate`], rewritten where a fact's own words must stand by
//! [`super::reply::repair`].

use std::collections::HashMap;
use std::fmt::Write as _;

use serde::Serialize;

use crate::ids::{EntryId, FactId};

/// Pending facts with the same normalised text: one item for the judge.
#[derive(Debug, Clone, Serialize)]
pub struct Group {
    /// Fact ids, oldest first.
    pub ids: Vec<FactId>,
    pub text: String,
    /// Days of the facts, oldest first.
    pub days: Vec<String>,
}

/// An entry as it was when the run planned (what the judge saw).
#[derive(Debug, Clone, Serialize)]
pub struct Snapshot {
    pub id: EntryId,
    pub text: String,
    pub pinned: bool,
    pub unreviewed: bool,
    pub first_seen: String,
    pub updated: String,
}

/// What one judge call sees.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Cluster {
    pub groups: Vec<Group>,
    pub entries: Vec<Snapshot>,
    /// Forgotten texts near the cluster's facts (aliases `X1`…): the judge
    /// is told not to keep a fact that says the same.
    pub forgotten: Vec<Forgotten>,
}

/// A forgotten text (a tombstone's) shown to the judge.
#[derive(Debug, Clone, Serialize)]
pub struct Forgotten {
    pub text: String,
    /// The forgotten entry, when an entry was forgotten.
    pub entry: Option<EntryId>,
    /// The forgotten fact, when a pending fact was forgotten on its own.
    #[serde(skip)]
    pub fact: Option<FactId>,
}

impl Forgotten {
    /// The forget that keeps out what says this text.
    pub(crate) fn by(&self) -> ForgottenBy {
        (self.entry.clone(), self.fact.clone())
    }
}

/// The user's forget a restatement is kept out by: the entry, or the one
/// pending fact, forgotten ([`crate::tombstones::Tombstone::forgotten_by`]).
pub(crate) type ForgottenBy = (Option<EntryId>, Option<FactId>);

impl Cluster {
    /// Every fact id of the cluster.
    pub(crate) fn fact_ids(&self) -> impl Iterator<Item = &FactId> {
        self.groups.iter().flat_map(|g| g.ids.iter())
    }

    pub fn entry(&self, id: &str) -> Option<&Snapshot> {
        self.entries.iter().find(|e| e.id == id)
    }
}

/// One operation, with real ids.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(tag = "op", rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Op {
    Add {
        text: String,
        from: Vec<FactId>,
    },
    Replace {
        target: EntryId,
        text: String,
        from: Vec<FactId>,
    },
    Remove {
        target: EntryId,
        into: EntryId,
    },
    Keep {
        target: EntryId,
        from: Vec<FactId>,
    },
}

impl Op {
    /// The archive facts behind the op.
    pub fn from(&self) -> &[FactId] {
        match self {
            Op::Add { from, .. } | Op::Replace { from, .. } | Op::Keep { from, .. } => from,
            Op::Remove { .. } => &[],
        }
    }

    pub fn target(&self) -> Option<&EntryId> {
        match self {
            Op::Add { .. } => None,
            Op::Replace { target, .. } | Op::Remove { target, .. } | Op::Keep { target, .. } => {
                Some(target)
            }
        }
    }

    /// The text it writes (ADD, REPLACE).
    pub fn text(&self) -> Option<&str> {
        match self {
            Op::Add { text, .. } | Op::Replace { text, .. } => Some(text),
            Op::Remove { .. } | Op::Keep { .. } => None,
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            Op::Add { .. } => "ADD",
            Op::Replace { .. } => "REPLACE",
            Op::Remove { .. } => "REMOVE",
            Op::Keep { .. } => "KEEP",
        }
    }
}

/// The prompt's view of a cluster: aliases, the text of the two lists.
pub struct Aliases {
    facts: HashMap<String, usize>,
    entries: HashMap<String, usize>,
}

impl Aliases {
    pub fn new(cluster: &Cluster) -> Aliases {
        let mut facts = HashMap::new();
        for (i, g) in cluster.groups.iter().enumerate() {
            facts.insert(format!("F{}", i + 1), i);
            for id in &g.ids {
                facts.insert(id.to_lowercase(), i);
            }
        }
        let mut entries = HashMap::new();
        for (i, e) in cluster.entries.iter().enumerate() {
            entries.insert(format!("E{}", i + 1), i);
            entries.insert(e.id.to_lowercase(), i);
        }
        Aliases { facts, entries }
    }

    pub(crate) fn fact(&self, s: &str) -> Option<usize> {
        lookup(&self.facts, s)
    }

    pub(crate) fn entry(&self, s: &str) -> Option<usize> {
        lookup(&self.entries, s)
    }
}

/// An alias (`F1`, `f1`) or an id (any case) in `map`.
fn lookup(map: &HashMap<String, usize>, s: &str) -> Option<usize> {
    let s = s.trim();
    map.get(&s.to_uppercase())
        .or_else(|| map.get(&s.to_lowercase()))
        .copied()
}

/// The entries and facts as the prompt lists them.
pub(crate) fn prompt_lists(cluster: &Cluster) -> (String, String) {
    let mut entries = String::new();
    for (i, e) in cluster.entries.iter().enumerate() {
        let mut flags = Vec::new();
        if e.pinned {
            flags.push("pinned");
        }
        if e.unreviewed {
            flags.push("unreviewed");
        }
        let flags = if flags.is_empty() {
            String::new()
        } else {
            format!(" ({})", flags.join(", "))
        };
        let _ = writeln!(
            entries,
            "E{} [since {}, updated {}]{flags}: {}",
            i + 1,
            e.first_seen,
            e.updated,
            e.text.replace('\n', " ")
        );
    }
    if entries.is_empty() {
        entries.push_str("(none)\n");
    }
    let mut facts = String::new();
    for (i, g) in cluster.groups.iter().enumerate() {
        let said = if g.ids.len() > 1 {
            format!(", noted {} times", g.ids.len())
        } else {
            String::new()
        };
        let _ = writeln!(
            facts,
            "F{} [{}{said}]: {}",
            i + 1,
            g.days.last().map(String::as_str).unwrap_or(""),
            g.text.replace('\n', " ")
        );
    }
    if facts.is_empty() {
        facts.push_str("(none)\n");
    }
    (entries, facts)
}

/// The prompt's section of forgotten texts (`{{forgotten}}`), empty when
/// the cluster has none.
pub(crate) fn forgotten_list(cluster: &Cluster) -> String {
    if cluster.forgotten.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "\nFORGOTTEN (the user asked to forget these; do not keep a new fact that says the same):\n",
    );
    for (i, f) in cluster.forgotten.iter().enumerate() {
        let _ = writeln!(out, "X{}: {}", i + 1, f.text.replace('\n', " "));
    }
    out
}

/// The ops of one cluster as a readable diff (for `--dry-run`).
pub(crate) fn render_diff(ops: &[Op], cluster: &Cluster) -> String {
    let text_of = |id: &str| {
        cluster
            .entry(id)
            .map(|e| e.text.replace('\n', " "))
            .unwrap_or_default()
    };
    let mut out = String::new();
    for op in ops {
        match op {
            Op::Add { text, from } => {
                let _ = writeln!(out, "  + ADD      {}", text.replace('\n', " "));
                let _ = writeln!(out, "             from {}", from.join(", "));
            }
            Op::Replace { target, text, from } => {
                let _ = writeln!(out, "  ~ REPLACE  {target}");
                let _ = writeln!(out, "    -        {}", text_of(target));
                let _ = writeln!(out, "    +        {}", text.replace('\n', " "));
                if !from.is_empty() {
                    let _ = writeln!(out, "             from {}", from.join(", "));
                }
            }
            Op::Remove { target, into } => {
                let _ = writeln!(out, "  - REMOVE   {target} (merged into {into})");
                let _ = writeln!(out, "    -        {}", text_of(target));
            }
            Op::Keep { target, from } => {
                let _ = writeln!(out, "  = KEEP     {target}: {}", text_of(target));
                let _ = writeln!(out, "             +sources {}", from.join(", "));
            }
        }
    }
    out
}
