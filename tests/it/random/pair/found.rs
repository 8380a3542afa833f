//! Bugs the two-copy mode found, each a test of its own with the minimal
//! sequence it shrank to.

use super::PairAction::{On, Sync};
use super::replay;
use crate::random::actions::{self, Action, Judge};

/// Found by the two-copy mode: both copies add the same fact (one id)
/// and consolidate it, one forgets its entry after the sync.
#[test]
fn a_fact_both_copies_consolidated_and_one_forgot_stays_forgotten_on_both() {
    let add = Action::Add {
        text: 0,
        key: None,
        via: actions::Via::Here,
        batch: false,
    };
    let run = Action::Consolidate {
        judge: Judge::BuiltIn,
        force: false,
    };
    replay(&[
        On(0, add.clone()),
        On(1, add),
        On(0, run.clone()),
        On(1, run),
        Sync(1),
        On(1, Action::ForgetEntry { pick: 0 }),
    ]);
}

/// Found by the two-copy mode: a day file one copy created by hand (no
/// title, a comment left open) and the other by an append: the merge
/// kept the append's fact where the open comment swallowed it.
#[test]
fn a_day_one_copy_began_by_hand_with_a_block_left_open_loses_no_fact_of_the_other() {
    let add = Action::Add {
        text: 0,
        key: Some(0),
        via: actions::Via::Cli,
        batch: true,
    };
    replay(&[On(1, Action::HandGarbage), On(0, add)]);
}

/// Found by the two-copy mode's soak: a fact one copy forgot while the
/// other consolidated it, and then took the forget back: the fact is the
/// user's again (pending), not kept out by the entry the sync took out.
#[test]
fn a_forget_taken_back_after_a_sync_made_it_win_brings_the_fact_back() {
    let add = Action::Add {
        text: 0,
        key: None,
        via: actions::Via::Here,
        batch: false,
    };
    replay(&[
        On(1, add),
        Sync(1),
        On(
            1,
            Action::Consolidate {
                judge: Judge::BuiltIn,
                force: false,
            },
        ),
        Sync(0),
        Sync(1),
        On(0, Action::ForgetFact { pick: 0 }),
        Sync(0),
        On(0, Action::UndoForget { pick: 237 }),
    ]);
}

/// Found by the two-copy mode's soak: a run killed on one copy, synced,
/// and an undo killed on the other.
#[test]
fn runs_and_undos_killed_on_either_copy_still_converge() {
    let add = Action::Add {
        text: 0,
        key: None,
        via: actions::Via::Here,
        batch: false,
    };
    let blocked = Action::Unwritable {
        file: actions::Blocked::Journal,
        then: Box::new(add),
    };
    replay(&[
        On(0, blocked),
        On(
            0,
            Action::Kill {
                step: 147,
                what: actions::Killed::Consolidate,
            },
        ),
        Sync(0),
        Sync(1),
        On(
            1,
            Action::Kill {
                step: 34,
                what: actions::Killed::Undo,
            },
        ),
    ]);
}

/// Found by the two-copy mode's soak: a version of MEMORY.md that could
/// not be read (a directory stood in its place) on one copy, merged with
/// the other copy's versions: the version after it was encoded against
/// the one before it, and could not be rebuilt.
#[test]
fn a_version_that_could_not_be_read_on_one_copy_still_rebuilds_after_a_merge() {
    let here = actions::Via::Here;
    replay(&[
        On(0, Action::HandWriteEntry { text: 0 }),
        On(
            1,
            Action::Add {
                text: 0,
                key: None,
                via: here,
                batch: true,
            },
        ),
        On(
            1,
            Action::Consolidate {
                judge: Judge::BuiltIn,
                force: false,
            },
        ),
        On(
            1,
            Action::EditEntry {
                via: here,
                pick: 10,
                text: 134,
                pin: true,
            },
        ),
        On(
            1,
            Action::Unwritable {
                file: actions::Blocked::CoreMd,
                then: Box::new(Action::Undo {
                    pick: 181,
                    keep_out: false,
                }),
            },
        ),
    ]);
}

/// Found by the two-copy mode's soak: a fact one copy erased that the
/// other had consolidated meanwhile: the merged versions still held it in
/// the other copy's chunks, until the sync ran the erasure again there.
#[test]
fn an_erasure_on_one_copy_takes_the_text_out_of_the_other_copys_versions_too() {
    use actions::Via::{Cli, Here};
    let add = |text, via, key| Action::Add {
        text,
        key,
        via,
        batch: false,
    };
    let run = |force| Action::Consolidate {
        judge: Judge::BuiltIn,
        force,
    };
    replay(&[
        On(0, Action::HandAppendFact { text: 4 }),
        On(
            0,
            Action::Add {
                text: 68,
                key: None,
                via: Here,
                batch: true,
            },
        ),
        Sync(0),
        On(0, run(true)),
        On(0, add(51, Cli, None)),
        On(0, add(59, Here, Some(5))),
        Sync(0),
        Sync(1),
        On(0, Action::ForgetEntry { pick: 134 }),
        On(1, run(false)),
        On(0, Action::HandDeleteEntry { pick: 62 }),
        On(
            0,
            Action::Erase {
                pick: 110,
                entry: false,
            },
        ),
        Sync(0),
    ]);
}

/// Found by the two-copy mode's soak: an entry deleted by hand, then a
/// sync that merged: the merge took its facts for hidden and made them
/// pending, and the next run consolidated what the deletion forgets.
#[test]
fn an_entry_deleted_by_hand_before_a_sync_stays_forgotten_with_its_facts() {
    replay(&[
        On(1, Action::HandAppendFact { text: 0 }),
        On(1, Action::ForgetMatch { text: 7 }),
        On(
            1,
            Action::Consolidate {
                judge: Judge::Good,
                force: false,
            },
        ),
        On(1, Action::HandDeleteEntry { pick: 175 }),
        Sync(1),
        On(
            1,
            Action::Consolidate {
                judge: Judge::Hostile,
                force: true,
            },
        ),
    ]);
}

/// Found by the two-copy mode's soak: a fact one copy erased while the
/// other consolidated it, with an entry a person wrote on the first copy
/// saying the erased text again: the erasure run again on the merge was
/// refused for that entry, and the other copy's journal record and
/// versions kept the text.
#[test]
fn an_erasure_finishes_on_the_merge_though_a_person_wrote_its_text_again() {
    use actions::Via::{Cli, Here};
    let add = |text, via| Action::Add {
        text,
        key: None,
        via,
        batch: true,
    };
    replay(&[
        On(1, add(213, Cli)),
        On(
            1,
            Action::Erase {
                pick: 10,
                entry: false,
            },
        ),
        On(0, add(197, Here)),
        On(1, Action::HandWriteEntry { text: 133 }),
        On(
            0,
            Action::Consolidate {
                judge: Judge::BuiltIn,
                force: false,
            },
        ),
        Sync(0),
    ]);
}

/// Found by the two-copy soak (seed 73): both copies hold the same text
/// (the second copy's fact gets a `.2` id on the merge), and one erases
/// it.
#[test]
fn an_erasure_of_a_text_both_copies_hold_is_kept_by_both() {
    use actions::Via::{Cli, Here};
    replay(&[
        On(1, Action::ForgetFact { pick: 1 }),
        On(
            1,
            Action::Unwritable {
                file: actions::Blocked::State,
                then: Box::new(Action::Add {
                    text: 116,
                    key: Some(1),
                    via: Here,
                    batch: false,
                }),
            },
        ),
        On(
            1,
            Action::Consolidate {
                judge: Judge::BuiltIn,
                force: false,
            },
        ),
        Sync(1),
        Sync(0),
        On(
            0,
            Action::Add {
                text: 180,
                key: None,
                via: Cli,
                batch: false,
            },
        ),
        On(
            1,
            Action::Erase {
                pick: 217,
                entry: true,
            },
        ),
        Sync(1),
    ]);
}

/// Found by the two-copy soak (seed 72): one copy forgets an entry,
/// takes the forget back and forgets it again, while the other wrote the
/// entry's fact again: the last forget is in force on both.
#[test]
fn an_entry_forgotten_again_after_its_forget_was_taken_back_stays_forgotten_on_both() {
    use actions::Via::Here;
    let add = |text| Action::Add {
        text,
        key: None,
        via: Here,
        batch: false,
    };
    let consolidate = Action::Consolidate {
        judge: Judge::BuiltIn,
        force: true,
    };
    replay(&[
        On(0, add(18)),
        Sync(0),
        Sync(1),
        On(1, consolidate.clone()),
        On(1, Action::ForgetEntry { pick: 0 }),
        On(1, Action::UndoForget { pick: 0 }),
        On(0, add(18)),
        On(1, Action::ForgetEntry { pick: 0 }),
    ]);
}

/// Found by the two-copy soak (seed 86): one copy erases a text the other
/// wrote again before the erasure reached it, and the erasure is killed
/// before it finished: the merge finishes it, taking that fact too (an
/// erasure takes every fact of its text).
#[test]
fn an_unfinished_erasure_takes_the_same_text_the_other_copy_wrote_before_it_arrived() {
    use actions::Via::Here;
    let add = |text, batch| Action::Add {
        text,
        key: None,
        via: Here,
        batch,
    };
    let consolidate = Action::Consolidate {
        judge: Judge::BuiltIn,
        force: false,
    };
    replay(&[
        On(0, add(113, true)),
        On(
            0,
            Action::Unwritable {
                file: actions::Blocked::Journal,
                then: Box::new(consolidate),
            },
        ),
        Sync(0),
        On(0, Action::HandWriteEntry { text: 43 }),
        On(0, add(104, false)),
        Sync(1),
        On(1, Action::ForgetEntry { pick: 159 }),
        On(
            1,
            Action::Kill {
                step: 185,
                what: actions::Killed::Erase,
            },
        ),
        Sync(0),
    ]);
}

/// Found by the two-copy soak (seed 94): an erasure finished on a merge
/// where the other copy's entry held a fact of its text (written before
/// the erasure reached it): the sync's purge of the index ran the erasure
/// again, which refused it as a new one and failed the sync.
#[test]
fn a_sync_that_finished_an_erasure_purges_the_index_though_an_entry_held_its_text() {
    use actions::Via::{Cli, Here};
    let add = |text, via| Action::Add {
        text,
        key: None,
        via,
        batch: false,
    };
    let consolidate = |judge, force| Action::Consolidate { judge, force };
    replay(&[
        On(0, add(34, Here)),
        Sync(0),
        On(
            0,
            Action::Unwritable {
                file: actions::Blocked::Tombstones,
                then: Box::new(add(194, Cli)),
            },
        ),
        On(0, consolidate(Judge::Bad, true)),
        Sync(1),
        On(1, consolidate(Judge::Hostile, false)),
        On(1, Action::HandDeleteEntry { pick: 93 }),
        On(
            1,
            Action::AddUpdate {
                text: 199,
                pick: 245,
            },
        ),
        On(
            1,
            Action::Erase {
                pick: 163,
                entry: false,
            },
        ),
    ]);
}

/// Found by the two-copy soak (seed 95): one copy forgot an entry while
/// the other had put a new fact into it (an update the agent declared):
/// the forget wins and takes that fact with the entry, on both copies.
#[test]
fn a_fact_the_other_copy_put_into_an_entry_this_one_forgot_is_forgotten_with_it() {
    use actions::Blocked::{Journal, Tombstones};
    use actions::Via::{Cli, Here};
    let add = |text, key, via, batch| Action::Add {
        text,
        key,
        via,
        batch,
    };
    let consolidate = |judge, force| Action::Consolidate { judge, force };
    let update = |text, pick| Action::AddUpdate { text, pick };
    let erase = |pick, entry| Action::Erase { pick, entry };
    let unwritable = |file, then| Action::Unwritable {
        file,
        then: Box::new(then),
    };
    let edit = |via, pick, text, pin| Action::EditEntry {
        via,
        pick,
        text,
        pin,
    };
    replay(&[
        Sync(1),
        On(1, unwritable(Tombstones, Action::ForgetFact { pick: 146 })),
        On(0, Action::HandGarbage),
        On(1, Action::ForgetFact { pick: 105 }),
        Sync(1),
        On(1, add(254, Some(0), Cli, false)),
        On(1, consolidate(Judge::Good, false)),
        Sync(0),
        Sync(0),
        Sync(1),
        On(1, Action::HandWriteEntry { text: 218 }),
        Sync(0),
        On(0, edit(Here, 158, 81, false)),
        On(1, add(40, None, Here, false)),
        On(0, Action::UndoForget { pick: 91 }),
        On(1, erase(165, false)),
        On(1, update(63, 128)),
        Sync(1),
        Sync(1),
        On(1, update(138, 94)),
        On(1, consolidate(Judge::BuiltIn, true)),
        On(0, add(178, Some(1), Here, true)),
        On(0, Action::UndoForget { pick: 142 }),
        On(0, unwritable(Journal, Action::ForgetEntry { pick: 107 })),
        Sync(0),
        Sync(1),
        On(0, consolidate(Judge::Good, true)),
    ]);
}
