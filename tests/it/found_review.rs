//! What the random test (`random/`) found in review mode, each as a test
//! of its own with the minimal sequence it shrank to (`found.rs` holds the
//! others). Each failed before its fix, in memd or in the test's oracle
//! (run them against any build with `MEMD_TEST_BIN=/path/to/memd`).

/// A fact whose ADD the person rejected is kept word for word; a
/// correction the agent had declared of it, pending beside the decision,
/// then updates that entry in the same run, the fact kept word for word
/// as its history. The oracle wanted the fact as the entry's text and
/// failed here (a 30-minute soak, 1 of 4,020 sequences); it now also
/// takes the fact kept as the history of the run's update.
#[test]
fn a_fact_kept_after_a_rejection_may_be_updated_by_a_correction_pending_beside_it() {
    use crate::random::{Action::*, Blocked, Judge, Via};
    let run = || Consolidate {
        judge: Judge::BuiltIn,
        force: false,
    };
    crate::random::replay(&[
        HandAppendFact { text: 0 },
        ReviewMode { manual: true },
        run(),
        AddCorrection {
            text: 2,
            pick: 0,
            how: 1,
        },
        ReviewDecide {
            via: Via::Here,
            pick: 0,
            accept: false,
            apply: false,
        },
        ReviewMode { manual: false },
        Unwritable {
            file: Blocked::Tombstones,
            then: Box::new(run()),
        },
    ]);
}
