//! Bugs the random test (`random/`) found, each as a test of its own with
//! the minimal sequence it shrank to. Each failed on the build before its
//! fix (run them against any build with `MEMD_TEST_BIN=/path/to/memd`).

use std::path::Path;

use crate::support::memd;
use crate::trust::{add, check, consolidate, entries, found, fresh, ok};

/// An add in process, as the API applies it: text `text` of the pool.
fn add_here(text: u8, batch: bool) -> crate::random::Action {
    use crate::random::{Action, Via};
    let (key, via) = (None, Via::Here);
    Action::Add {
        text,
        key,
        via,
        batch,
    }
}

/// A consolidation the gate lets through, with the built-in judge.
fn run_built_in() -> crate::random::Action {
    use crate::random::{Action, Judge};
    let judge = Judge::BuiltIn;
    Action::Consolidate {
        judge,
        force: false,
    }
}

/// Put a directory where `MEMORY.md` is, so that it cannot be written;
/// the returned closure puts the file back.
fn block_memory_md(dir: &Path) -> impl FnOnce() {
    let core = dir.join("MEMORY.md");
    let aside = dir.join("MEMORY.aside");
    std::fs::rename(&core, &aside).unwrap();
    std::fs::create_dir(&core).unwrap();
    move || {
        std::fs::remove_dir(&core).unwrap();
        std::fs::rename(&aside, &core).unwrap();
    }
}

/// Minimal sequence (seed 12837426703752812047): HandWriteEntry,
/// Kill(Consolidate), Add, HandDeleteEntry, Unwritable(CoreMd,
/// Consolidate). The run recorded the hand deletion and then could not
/// refresh MEMORY.md: a warning, and a line naming an entry the file no
/// longer had, kept until some later run promoted again.
#[test]
fn a_hand_deletion_recorded_while_memory_md_cannot_be_written_leaves_no_line_naming_it() {
    let t = fresh();
    let dir = t.path();
    let file = dir.join("consolidated/memory.md");
    let mut text = std::fs::read_to_string(&file).unwrap();
    text.push_str("\n\nHas a dog called Rex (written by hand)\n");
    std::fs::write(&file, &text).unwrap();
    consolidate(dir);
    let [(id, ..)] = entries(dir).try_into().unwrap();
    let core = || std::fs::read_to_string(dir.join("MEMORY.md")).unwrap();
    assert!(core().contains(&id), "promoted: {}", core());
    add(dir, "Drinks black coffee every morning");
    crate::support::delete_entry_by_hand(&file, &id).unwrap();
    let put_back = block_memory_md(dir);
    let _ = memd(dir, &["consolidate", "--force"]);
    put_back();
    let (passed, kinds, v) = check(dir);
    assert!(
        passed && !kinds.iter().any(|k| k == "CoreLineNotLive"),
        "{v}"
    );
    // The user runs it again: the deletion is recorded and its line gone.
    consolidate(dir);
    assert!(!core().contains(&id), "{}", core());
    let stones = std::fs::read_to_string(dir.join(".tombstones.jsonl")).unwrap();
    assert!(stones.contains("deleted by hand"), "{stones}");
    assert!(check(dir).0, "{}", check(dir).2);
}

/// Seen in the soak as a kept fact kept out: a fact that says in fewer
/// words what a forgotten pending fact said is kept out as its
/// restatement. Taking that forget back left the restatement out for
/// good: its tombstone named no forget that `forget --undo` lifts.
#[test]
fn a_restatement_of_a_forgotten_fact_comes_back_when_the_forget_is_taken_back() {
    let t = fresh();
    let dir = t.path();
    let first = add(dir, "Has a dog called Rex, a beagle");
    ok(dir, &["forget", &first]);
    let again = add(dir, "Has a dog called Rex");
    let report = ok(dir, &["consolidate", "--force", "--json"]);
    assert!(
        report.contains(&again),
        "kept out as a restatement: {report}"
    );
    ok(dir, &["forget", "--undo", &first]);
    consolidate(dir);
    let held: Vec<String> = entries(dir).into_iter().flat_map(|e| e.2).collect();
    assert!(held.contains(&first), "{:?}", entries(dir));
    assert!(held.contains(&again), "{:?}", entries(dir));
    assert!(check(dir).0, "{}", check(dir).2);
}

/// Minimal sequence (seed 15709537066711018643): Add, Kill(Consolidate at
/// entries-written), HandDeleteEntry. The run died after writing its entry
/// and before journaling it; the run after it (the user runs it again)
/// took the fact as settled. The journal never knew the entry, so deleting
/// it by hand was not recognised: its fact was decided, held by nothing
/// and kept out by nothing (hidden), and its MEMORY.md line named nothing.
#[test]
fn an_entry_a_killed_run_wrote_is_known_as_memds_when_a_person_deletes_it() {
    use crate::random::{Action::*, Killed};
    crate::random::replay(&[
        add_here(0, false),
        Kill {
            step: 104,
            what: Killed::Consolidate,
        },
        HandDeleteEntry { pick: 0 },
    ]);
}

/// Minimal sequence (seed 7340038061517907487): the user deleted an entry
/// by hand, forgot its fact by id, took that forget back, and the next run
/// recorded the hand deletion only then: the fact was consolidated anew
/// and forgotten at once (held by a live entry and kept out).
#[test]
fn forgets_after_a_hand_deletion_apply_in_the_order_the_user_made_them() {
    use crate::random::{Action::*, Blocked};
    crate::random::replay(&[
        HandEditCore,
        add_here(66, true),
        run_built_in(),
        ForgetEntry { pick: 67 },
        HandDeleteEntry { pick: 0 },
        Unwritable {
            file: Blocked::Journal,
            then: Box::new(ForgetFact { pick: 73 }),
        },
        UndoForget { pick: 29 },
        run_built_in(),
    ]);
}

/// Minimal sequence (seed 4212805999667127235): undoing an undo that had
/// removed an entry put the entry back although the user had forgotten
/// it since: in the file, named by a tombstone, hidden from search.
#[test]
fn undoing_an_undo_never_brings_back_an_entry_forgotten_since() {
    use crate::random::Action::*;
    crate::random::replay(&[
        add_here(15, true),
        run_built_in(),
        Undo {
            pick: 0,
            keep_out: false,
        },
        add_here(111, true),
        Undo {
            pick: 161,
            keep_out: false,
        },
        ForgetFact { pick: 29 },
        add_here(242, true),
        ForgetEntry { pick: 71 },
        run_built_in(),
        ForgetMatch { text: 207 },
        Undo {
            pick: 64,
            keep_out: false,
        },
    ]);
}

/// Minimal sequence (seed 18344866510585527697): an undo put an entry
/// back whose fact the user had forgotten since (by its id, while it was
/// pending): the fact was kept out and held by a live entry at once.
#[test]
fn an_undo_never_puts_back_a_fact_forgotten_since() {
    use crate::random::{Action::*, Killed};
    crate::random::replay(&[
        add_here(146, true),
        run_built_in(),
        HandDeleteEntry { pick: 92 },
        Kill {
            step: 8,
            what: Killed::Undo,
        },
        add_here(3, false),
        ForgetFact { pick: 45 },
        Kill {
            step: 0,
            what: Killed::Consolidate,
        },
        ForgetMatch { text: 195 },
        Undo {
            pick: 79,
            keep_out: false,
        },
    ]);
}

/// The class of the one below, by hand: a person takes the metadata line
/// off an entry memd wrote. Its text is still there, so it was not
/// deleted; it was reported as a hidden fact and a MEMORY.md line naming
/// nothing, and the next run adopted the text as a new entry that held
/// none of its facts. Now the next run gives the block back its id and
/// sources, and `check` notes what that run will do.
#[test]
fn an_entry_whose_metadata_a_person_took_off_gets_its_id_and_facts_back() {
    let t = fresh();
    let dir = t.path();
    let fact = add(dir, "Has a dog called Rex");
    consolidate(dir);
    let [(id, ..)] = entries(dir).try_into().unwrap();
    let core = || std::fs::read_to_string(dir.join("MEMORY.md")).unwrap();
    assert!(core().contains(&id), "promoted: {}", core());
    let file = dir.join("consolidated/memory.md");
    let text = std::fs::read_to_string(&file).unwrap();
    let bare: Vec<&str> = text.lines().filter(|l| !l.starts_with("<!--m")).collect();
    assert_ne!(bare.len(), text.lines().count(), "{text}");
    std::fs::write(&file, bare.join("\n") + "\n").unwrap();
    let (passed, kinds, v) = check(dir);
    assert!(passed, "nothing is hidden, the next run settles it: {v}");
    assert!(kinds.is_empty(), "{kinds:?}");
    consolidate(dir);
    assert_eq!(
        entries(dir),
        [(id.clone(), "Has a dog called Rex".to_string(), vec![fact])]
    );
    assert!(core().contains(&id), "{}", core());
    assert!(check(dir).0, "{}", check(dir).2);
    assert_eq!(
        found(dir, "dog called Rex").len(),
        1,
        "{:?}",
        found(dir, "dog")
    );
}

/// Minimal sequence (seed 3907034056966826035, the first 60-minute soak):
/// an entry written by hand, a run killed before it started, two forgets
/// of facts by id and a second hand-written entry, then one entry deleted
/// by hand: MEMORY.md named an entry that was no longer live.
#[test]
fn a_line_of_an_entry_deleted_by_hand_after_forgets_is_never_left_naming_it() {
    use crate::random::{Action::*, Killed};
    crate::random::replay(&[
        HandWriteEntry { text: 214 },
        Kill {
            step: 0,
            what: Killed::Consolidate,
        },
        ForgetFact { pick: 0 },
        HandWriteEntry { text: 38 },
        ForgetFact { pick: 0 },
        HandDeleteEntry { pick: 0 },
    ]);
}

/// Seen once in the soak (seed 2072882645854352907), with a daemon: an
/// add while MEMORY.md could not be read, and `memd check` reported two
/// of MEMORY.md's rows missing from the index. The daemon's sync had
/// written the table (the rows of an unreadable MEMORY.md: none) and not
/// yet recorded its fingerprints; MEMORY.md was back as at the last sync,
/// so the recorded fingerprint called the rows fresh: `check` reading in
/// between saw a problem, and a sync that died there left the rows out
/// for good. Here the sync stops at that point for good.
#[test]
fn a_sync_stopped_after_its_table_write_leaves_rows_the_next_sync_puts_right() {
    let t = fresh();
    let dir = t.path();
    add(dir, "Has a dog called Rex");
    consolidate(dir);
    ok(dir, &["search", "dog"]);
    let core = std::fs::read_to_string(dir.join("MEMORY.md")).unwrap();
    assert!(core.contains("Has a dog called Rex"), "{core}");
    assert!(check(dir).0, "{}", check(dir).2);
    let put_back = block_memory_md(dir);
    let args = ["add", "Drinks black coffee every morning"];
    let sync = crate::support::paused(dir, &args, "index-written");
    let mut sync = sync.expect("an add syncs the index");
    put_back();
    let (passed, kinds, v) = check(dir);
    assert!(passed && kinds.is_empty(), "a sync is writing: {v}");
    sync.kill().unwrap();
    sync.wait().unwrap();
    let (passed, kinds, v) = check(dir);
    assert!(passed && kinds.is_empty(), "the next sync redoes it: {v}");
    ok(dir, &["search", "dog"]);
    let (passed, _, v) = check(dir);
    assert!(passed, "{v}");
    assert!(v["notes"].as_array().unwrap().is_empty(), "{v}");
    let hits = found(dir, "dog called Rex");
    assert!(hits.len() >= 2, "the fact and its MEMORY.md line: {hits:?}");
}

/// Minimal sequence (seed 7052329459615172236, the second 60-minute
/// soak): two entries written by hand that say the same, both adopted and
/// promoted, then one deleted by hand. Its text was still in the file, so
/// it was not a deletion, and MEMORY.md's line named an entry that was
/// gone. Now `check` notes it and the next run merges it (and any facts it
/// held) into the entry that says the same.
#[test]
fn deleting_one_of_two_entries_that_say_the_same_merges_it_into_the_other() {
    use crate::random::{Action::*, Judge};
    crate::random::replay(&[
        HandWriteEntry { text: 91 },
        HandWriteEntry { text: 11 },
        add_here(0, false),
        Consolidate {
            judge: Judge::BuiltIn,
            force: false,
        },
        HandDeleteEntry { pick: 15 },
        Consolidate {
            judge: Judge::BuiltIn,
            force: true,
        },
    ]);
}

/// Minimal sequence (seed 18316819449574777412, the third soak): two
/// entries, then the same fact said twice, each time declared to
/// supersede a different one of them. The second joined the first's
/// update and its own target was left live beside it; now facts that say
/// the same are one update whose targets are all of theirs.
#[test]
fn the_same_update_declared_twice_against_two_entries_supersedes_both() {
    use crate::random::Action::*;
    crate::random::replay(&[
        add_here(0, true),
        run_built_in(),
        AddUpdate {
            text: 146,
            pick: 74,
        },
        AddUpdate {
            text: 162,
            pick: 19,
        },
        run_built_in(),
    ]);
}

/// Minimal sequence (seed 9811692825851835485, the third soak): two
/// entries written by hand that say the same, one deleted by hand, and
/// the run that merges it into the other unable to write MEMORY.md. The
/// run merged the entry anyway and left its line naming an entry that
/// was gone; now its line goes first, and a run that cannot drop it
/// merges nothing.
#[test]
fn a_copy_merged_while_memory_md_cannot_be_written_leaves_no_line_naming_it() {
    use crate::random::{Action::*, Blocked};
    crate::random::replay(&[
        add_here(5, true),
        add_here(38, false),
        HandWriteEntry { text: 51 },
        add_here(80, true),
        HandWriteEntry { text: 227 },
        run_built_in(),
        HandDeleteEntry { pick: 112 },
        add_here(0, false),
        Unwritable {
            file: Blocked::CoreMd,
            then: Box::new(run_built_in()),
        },
    ]);
}

/// Minimal sequence (seed 3001465240296135103, the third soak): facts
/// kept out because they say what a forgotten entry said, one of them then
/// forgotten by its id, and the entry's forget taken back. The fact's
/// forget wrote nothing (it was already kept out), so taking the entry's
/// back brought it back too; now it gets a forget of its own.
#[test]
fn a_fact_forgotten_while_kept_out_for_an_entry_stays_out_when_the_entry_comes_back() {
    use crate::random::{Action::*, Blocked};
    crate::random::replay(&[
        HandWriteEntry { text: 39 },
        add_here(40, false),
        run_built_in(),
        ForgetEntry { pick: 188 },
        Clock {
            hours: -13,
            offset: 0,
        },
        add_here(0, false),
        AddUpdate { text: 4, pick: 0 },
        Unwritable {
            file: Blocked::Journal,
            then: Box::new(add_here(0, true)),
        },
        HandAppendFact { text: 50 },
        add_here(135, false),
        HandEditEntry { pick: 11 },
        AddUpdate {
            text: 162,
            pick: 249,
        },
        Add {
            text: 155,
            key: Some(1),
            via: crate::random::Via::Here,
            batch: true,
        },
        HandAppendFact { text: 183 },
        Unwritable {
            file: Blocked::CoreMd,
            then: Box::new(add_here(86, true)),
        },
        run_built_in(),
        Add {
            text: 52,
            key: Some(2),
            via: crate::random::Via::Cli,
            batch: false,
        },
        AddUpdate { text: 20, pick: 86 },
        ForgetFact { pick: 237 },
        UndoForget { pick: 216 },
    ]);
}

/// Minimal sequence (seed 17397989757152057482, the third soak): an
/// entry written by hand and promoted, deleted by hand and written again
/// (the same text, without its metadata), then a forget taken back. The
/// undo's save gave the block a new id while MEMORY.md named the old one;
/// now whatever saves the file gives it its old id back first, as a run
/// does.
#[test]
fn an_entry_written_again_by_hand_keeps_its_id_when_an_undo_saves_the_file() {
    use crate::random::{Action::*, Blocked};
    crate::random::replay(&[
        HandWriteEntry { text: 183 },
        add_here(12, false),
        Unwritable {
            file: Blocked::Journal,
            then: Box::new(add_here(97, true)),
        },
        run_built_in(),
        ForgetEntry { pick: 1 },
        HandDeleteEntry { pick: 108 },
        HandWriteEntry { text: 135 },
        UndoForget { pick: 0 },
    ]);
}

/// Minimal sequence (seed 9355657316450026352, the fourth soak): a run
/// undone (its fact pending again) and decided by a later run, that run
/// undone with --keep-out, then the first undo undone. Undoing it put the
/// fact back into its old entry and lifted every keep-out of the fact,
/// the later undo's included, while a copy of the fact kept out by that
/// later undo still kept its text out: a fact held by a live entry and
/// kept out. A keep-out now names the run its undo took back, and undoing
/// an undo lifts only its own (another undo's keep-out is the user's
/// forget, which an undo never takes back).
#[test]
fn undoing_an_undo_never_takes_back_the_keep_out_of_a_later_undo() {
    use crate::random::{Action::*, Killed};
    crate::random::replay(&[
        add_here(79, true),
        run_built_in(),
        ForgetEntry { pick: 29 },
        Undo {
            pick: 30,
            keep_out: false,
        },
        UndoForget { pick: 0 },
        add_here(88, true),
        Kill {
            step: 20,
            what: Killed::Undo,
        },
        run_built_in(),
        ForgetEntry { pick: 1 },
        Undo {
            pick: 246,
            keep_out: true,
        },
        add_here(0, false),
        Consolidate {
            judge: crate::random::Judge::BuiltIn,
            force: true,
        },
        Undo {
            pick: 232,
            keep_out: false,
        },
    ]);
}

/// Minimal sequence (seed 6150856304366757940, the soak at c4f2d92): an
/// entry written by hand and adopted, forgotten and brought back, written
/// again by hand with the same text, then deleted by hand. The core line
/// named the deleted entry while a twin block with the same text lived on:
/// `memd check` reported a line of MEMORY.md that names no live entry.
#[test]
fn a_hand_deleted_entry_with_a_live_twin_leaves_no_dead_line_in_memory_md() {
    use crate::random::{Action::*, Killed};
    crate::random::replay(&[
        Kill {
            step: 0,
            what: Killed::Add,
        },
        add_here(2, false),
        add_here(47, false),
        HandDeleteEntry { pick: 0 },
        run_built_in(),
        ForgetEntry { pick: 0 },
        HandWriteEntry { text: 111 },
        Consolidate {
            judge: crate::random::Judge::BuiltIn,
            force: true,
        },
        UndoForget { pick: 0 },
        HandWriteEntry { text: 15 },
        ForgetEntry { pick: 2 },
        HandDeleteEntry { pick: 67 },
    ]);
}

/// Soak seed 8346339467203851633 (25 minutes at 6ac2a0d; it fails at
/// 75c2b4e too): two entries, each superseded by a fact with the first
/// one's text, and the run that folds them killed once the entries file
/// is saved, before its journal. The second entry had been merged into the
/// first, which holds its fact; the next run took its absence for a hand
/// deletion and tombstoned that fact, which `memd check` reported as
/// forgotten but held.
#[test]
fn an_entry_merged_away_by_a_killed_run_is_not_taken_for_a_hand_deletion() {
    use crate::random::{Action::*, Killed, Via};
    crate::random::replay(&[
        Add {
            text: 0,
            key: None,
            via: Via::Here,
            batch: true,
        },
        run_built_in(),
        AddUpdate { text: 15, pick: 2 },
        AddUpdate {
            text: 47,
            pick: 115,
        },
        Kill {
            step: 230,
            what: Killed::Consolidate,
        },
    ]);
}

/// Soak seed 33 (the as-of change, before it landed): an entry written by
/// hand and adopted, erased, then written by hand again word for word; the
/// next writer recorded the file as it found it, and `memd check` took
/// the person's new block in that version for what the erasure had left.
/// A version is checked by the ids the erasure took, as the journal is.
#[test]
fn an_erased_text_a_person_writes_again_is_not_taken_for_an_unfinished_erasure() {
    use crate::random::{Action::*, Via};
    crate::random::replay(&[
        Add {
            text: 0,
            key: None,
            via: Via::Here,
            batch: false,
        },
        HandWriteEntry { text: 99 },
        run_built_in(),
        Erase {
            pick: 240,
            entry: true,
        },
        HandWriteEntry { text: 19 },
        Undo {
            pick: 102,
            keep_out: false,
        },
    ]);
}

/// Soak seed 15385603192611465408: a person's broken line ("caf\xe9 au
/// lait") consolidated into an entry, the entry erased, then the same
/// broken line written again. `memd check` rightly reported the second
/// line as an erased text said again (kept out); the oracle had not known
/// that a hand-written broken line can say an erased text again.
#[test]
fn a_broken_line_written_again_after_its_erasure_is_reported_as_said_again() {
    use crate::random::{Action::*, Killed, Via};
    crate::random::replay(&[
        HandGarbage,
        Kill {
            step: 0,
            what: Killed::Consolidate,
        },
        Add {
            text: 0,
            key: None,
            via: Via::Here,
            batch: false,
        },
        Undo {
            pick: 0,
            keep_out: false,
        },
        Undo {
            pick: 103,
            keep_out: false,
        },
        Erase {
            pick: 0,
            entry: true,
        },
        HandGarbage,
    ]);
}

/// Minimal sequence (seed 7182746870018242591, a soak of the deleted
/// `consolidated/` rule): two facts consolidated, one entry edited and
/// forgotten, `consolidated/` deleted by hand, a take-back of the forget
/// that failed (the tombstones unwritable), the other entry forgotten,
/// then a run: an entry in the file that a tombstone names.
#[test]
fn facts_decided_again_after_consolidated_is_deleted_come_back_in_no_forgotten_entry() {
    use crate::random::{Action::*, Blocked, Via};
    crate::random::replay(&[
        add_here(0, false),
        add_here(19, false),
        ForgetMatch { text: 3 },
        run_built_in(),
        EditEntry {
            via: Via::Here,
            pick: 12,
            text: 2,
            pin: false,
        },
        ForgetEntry { pick: 14 },
        HandDeleteConsolidated,
        Unwritable {
            file: Blocked::Tombstones,
            then: Box::new(UndoForget { pick: 0 }),
        },
        ForgetEntry { pick: 0 },
        run_built_in(),
    ]);
}

/// Minimal sequence (seed 11387368768937667941): facts remembered through
/// MCP and the server SIGKILLed, a run that failed on an unwritable
/// journal and then ran, an undo and a run each SIGKILLed, then an entry
/// deleted by hand: a MEMORY.md line naming an entry that is not live.
#[test]
fn an_entry_deleted_by_hand_after_killed_runs_leaves_no_memory_md_line_a_problem() {
    use crate::random::{Action::*, Blocked, Killed};
    crate::random::replay(&[
        AddMcpKilled { text: 0 },
        Unwritable {
            file: Blocked::Journal,
            then: Box::new(run_built_in()),
        },
        Kill {
            step: 0,
            what: Killed::Undo,
        },
        Kill {
            step: 94,
            what: Killed::Consolidate,
        },
        HandDeleteEntry { pick: 0 },
    ]);
}

/// Minimal sequence (seed 7930826158646160439, a 30-minute soak): a fact
/// said several times the same day (`X`, `X.2`, …), the first ones in an
/// entry, the later ones pending; then a correction that supersedes one
/// of the held ones, and a run of the built-in judge. No entry may list a
/// fact twice among its sources (`memd check`: HeldTwice).
#[test]
fn a_correction_of_a_held_fact_said_again_leaves_each_fact_in_one_entry_once() {
    use crate::random::{Action::*, Blocked, Judge};
    crate::random::replay(&[
        AddUpdate { text: 0, pick: 0 },
        AddMcpKilled { text: 0 },
        Unwritable {
            file: Blocked::Journal,
            then: Box::new(run_built_in()),
        },
        add_here(247, false),
        add_here(0, false),
        AddCorrection {
            text: 199,
            pick: 56,
            how: 1,
        },
        HandAppendFact { text: 0 },
        add_here(53, true),
        AddCorrection {
            text: 29,
            pick: 8,
            how: 2,
        },
        Consolidate {
            judge: Judge::BuiltIn,
            force: false,
        },
    ]);
}

/// Minimal sequence (seed of a 30-minute soak, 2026-12-01): a line of
/// invalid UTF-8 written by hand, folded into an entry with a fact; the
/// entry's text edited and the entry erased, which takes its facts' texts
/// out too, the hand-written one included; the same line written again is
/// an erased text said again, which `memd check` reports and the oracle
/// expects (it knew only the entry's own text as erased).
#[test]
fn a_hand_written_fact_erased_with_its_entry_and_written_again_is_said_again() {
    use crate::random::{Action::*, Via};
    crate::random::replay(&[
        HandGarbage,
        add_here(0, false),
        run_built_in(),
        HandDeleteEntry { pick: 11 },
        EditEntry {
            via: Via::Here,
            pick: 0,
            text: 0,
            pin: false,
        },
        Erase {
            pick: 0,
            entry: true,
        },
        HandGarbage,
    ]);
}

/// A proposal of review mode whose fact was forgotten since, and then
/// passed by a run (behind the watermark), is withdrawn when review is
/// carried out, not carried out with the forgotten fact as a source (a
/// 25-minute soak, seed 7967720339223052249).
#[test]
fn a_proposal_whose_fact_was_forgotten_and_then_passed_by_a_run_is_withdrawn() {
    use crate::random::{Action::*, Judge, Killed};
    crate::random::replay(&[
        AddMcpKilled { text: 10 },
        HandAppendFact { text: 0 },
        AddCorrection {
            text: 0,
            pick: 0,
            how: 1,
        },
        ReviewMode { manual: true },
        run_built_in(),
        HandGarbage,
        ForgetFact { pick: 45 },
        Consolidate {
            judge: Judge::BuiltIn,
            force: false,
        },
        Kill {
            step: 0,
            what: Killed::Review,
        },
    ]);
}

/// An undo right after the run it takes back leaves the memory's past as
/// it was: MEMORY.md as of the moment between the run and the undo is
/// the run's (found by a 30-minute soak, seed 7705025186787616760).
#[test]
fn memory_md_as_of_the_moment_between_a_run_and_its_undo_is_the_runs() {
    use crate::random::Action::*;
    crate::random::replay(&[
        HandAppendFact { text: 0 },
        run_built_in(),
        Undo {
            pick: 21,
            keep_out: false,
        },
        HandDeleteConsolidated,
        HandDeleteConsolidated,
        Reindex { clear: true },
        Undo {
            pick: 152,
            keep_out: true,
        },
    ]);
}
