//! Commit: after the entries file, the journal and then the state. A crash
//! between them loses a lineage record at worst, never a fact: the entries
//! already name their facts in `sources`, so no run decides them again.

use super::apply::Applied;
use super::pause_point;
use super::planned::{Decision, Planned};
use crate::Layout;
use crate::Result;
use crate::ids::FactId;
use crate::journal::{self, Stamp};
use crate::pause::Step;
use crate::state::State;

/// Journal the applied ops, then save the state: the facts done (applied
/// or `settled` without a decision), retry counts of clusters whose replies
/// stayed invalid, and the run. Returns the state as saved.
pub(crate) fn commit(
    layout: &Layout,
    applied: &Applied,
    planned: &[Planned],
    settled: &[FactId],
    mut state: State,
    stamp: &Stamp,
) -> Result<State> {
    journal::append(&layout.journal_file(), &applied.records)?;
    pause_point(layout, Step::JournalWritten);
    for p in planned {
        if let Decision::Failed {
            counted: true,
            error,
            ..
        } = &p.decision
        {
            for id in p.cluster.fact_ids() {
                state.retries.insert(id.clone(), p.failures);
            }
            tracing::warn!(error = %error, "cluster held back: its facts stay pending");
        }
    }
    state.mark_done(settled.iter().chain(&applied.done));
    state.last_run = Some(stamp.clock.timestamp());
    state.last_run_id = Some(stamp.run.clone());
    state.save(&layout.state_file())?;
    pause_point(layout, Step::StateWritten);
    Ok(state)
}
