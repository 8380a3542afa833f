//! The run report: what a consolidation run did, for the command line,
//! the API and MCP (which all show the same text, [`Report::render`]).

use serde::{Deserialize, Serialize};

use super::ops::Op;

/// One cluster in the run report.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ClusterReport {
    pub facts: Vec<String>,
    pub entries: Vec<String>,
    /// `ops`, `restatement`, `fallback` or `failed`.
    pub decision: String,
    pub ops: Vec<Op>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Readable diff of the planned ops.
    pub diff: String,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Counts {
    pub add: usize,
    pub replace: usize,
    pub remove: usize,
    pub keep: usize,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Report {
    pub run_id: String,
    pub dry_run: bool,
    pub judge: String,
    /// Why the gate skipped the run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
    pub pending_facts: usize,
    /// Facts that restate an entry word for word: merged without a judge.
    pub restatements: usize,
    /// Clusters sent to the judge (restatements not counted).
    pub clusters: usize,
    pub llm_calls: usize,
    pub prompt_tokens: u64,
    /// As the server reports them (0 when it does not).
    pub completion_tokens: u64,
    pub applied: Counts,
    /// Ops not applied because their target was edited by hand meanwhile.
    pub skipped_hand_edited: usize,
    /// Clusters with no usable reply this run (facts stay pending).
    pub failed_clusters: usize,
    /// Facts added verbatim and marked unreviewed.
    pub fallback_facts: usize,
    /// Facts behind the watermark after this run.
    pub facts_done: usize,
    pub promoted_lines: usize,
    pub cluster_reports: Vec<ClusterReport>,
    pub warnings: Vec<String>,
    pub total_ms: f64,
    /// Summed time of the LLM calls (they overlap with `concurrency` > 1).
    pub llm_ms: f64,
}

impl Report {
    pub fn render(&self) -> String {
        let mut out = String::new();
        if let Some(why) = &self.skipped {
            return format!("consolidation skipped: {why} (--force runs it anyway)\n");
        }
        if self.dry_run {
            out.push_str("dry run: nothing was written\n\n");
            for (i, c) in self.cluster_reports.iter().enumerate() {
                out.push_str(&format!(
                    "cluster {} ({}; {} facts, {} entries)\n",
                    i + 1,
                    c.decision,
                    c.facts.len(),
                    c.entries.len()
                ));
                out.push_str(&c.diff);
                if let Some(e) = &c.error {
                    out.push_str(&format!("  ! {e}\n"));
                }
            }
            out.push('\n');
        }
        out.push_str(&format!(
            "run {} ({}): {} pending facts, {} restatements, {} clusters, {} LLM calls\n",
            self.run_id,
            self.judge,
            self.pending_facts,
            self.restatements,
            self.clusters,
            self.llm_calls
        ));
        let a = &self.applied;
        out.push_str(&format!(
            "{} ADD, {} REPLACE, {} REMOVE, {} KEEP{}\n",
            a.add,
            a.replace,
            a.remove,
            a.keep,
            if self.dry_run { " planned" } else { " applied" }
        ));
        if self.skipped_hand_edited > 0 {
            out.push_str(&format!(
                "{} ops skipped: their entry was edited by hand during the run (facts stay pending)\n",
                self.skipped_hand_edited
            ));
        }
        if self.failed_clusters > 0 {
            out.push_str(&format!(
                "{} clusters got no usable reply (facts stay pending)\n",
                self.failed_clusters
            ));
        }
        if self.fallback_facts > 0 {
            out.push_str(&format!(
                "{} facts added verbatim and marked unreviewed\n",
                self.fallback_facts
            ));
        }
        if !self.dry_run {
            out.push_str(&format!("{} lines in MEMORY.md\n", self.promoted_lines));
        }
        for w in &self.warnings {
            out.push_str(&format!("warning: {w}\n"));
        }
        out
    }
}

pub(crate) fn count(c: &mut Counts, ops: &[Op]) {
    for op in ops {
        match op {
            Op::Add { .. } => c.add += 1,
            Op::Replace { .. } => c.replace += 1,
            Op::Remove { .. } => c.remove += 1,
            Op::Keep { .. } => c.keep += 1,
        }
    }
}
