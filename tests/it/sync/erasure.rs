//! Erasures across two machines: the erased text leaves every file of both
//! copies, whatever the other copy wrote or made of it before the sync.

use std::path::Path;

use super::{
    assert_clean, assert_same, entry_saying, git, moved_to_portland, remote, sync, tree,
    two_machines,
};
use crate::trust::{add, consolidate, found, fresh, ok};

/// The files of memory `dir` ([`tree`]) whose bytes say `text`.
fn files_saying(dir: &Path, text: &str) -> Vec<String> {
    tree(dir)
        .into_iter()
        .filter(|(_, bytes)| String::from_utf8_lossy(bytes).contains(text))
        .map(|(path, _)| path)
        .collect()
}

/// B syncs, then A, then B: both hold the same files, and no file, no
/// search and no check of either says `secret`.
fn synced_without_saying(a: &Path, b: &Path, secret: &str) {
    sync(b);
    sync(a);
    sync(b);
    assert_same(a, b);
    for dir in [a, b] {
        let holding = files_saying(dir, secret);
        assert!(holding.is_empty(), "{holding:?} hold the erased text");
        assert_clean(dir);
        assert!(!found(dir, secret).iter().any(|t| t.contains(secret)));
    }
}

/// An erasure on one machine reaches the other, which had written the
/// same text again meanwhile (before the erasure reached it): that fact
/// goes too, as it would have on the first machine (an erasure takes
/// every fact of its text), and no file of either holds the text.
#[test]
fn an_erasure_takes_the_text_the_other_machine_wrote_again_before_it_arrived() {
    let (_remote, url) = remote();
    let (a, b) = two_machines(&url);
    let (a, b) = (a.path(), b.path());
    let secret = "The garage code is 4417zebra";
    add(a, secret);
    consolidate(a);
    sync(a);
    sync(b);
    add(a, secret);
    let id = entry_saying(b, "4417zebra");
    ok(b, &["forget", "--erase", &id]);
    synced_without_saying(a, b, "4417zebra");
}

/// A fact erased on one machine that the other had consolidated with a
/// second fact of the same text (written before the erasure reached it)
/// into one entry: the merge takes the entry with both facts, so neither
/// machine's files, search or MEMORY.md say the text.
#[test]
fn an_erasure_takes_the_entry_the_other_machine_made_of_its_text() {
    let (_remote, url) = remote();
    let (a, b) = two_machines(&url);
    let (a, b) = (a.path(), b.path());
    let secret = "The garage code is 4417zebra";
    let first = add(a, secret);
    sync(a);
    sync(b);
    add(a, secret);
    consolidate(a);
    ok(b, &["forget", "--erase", &first]);
    synced_without_saying(a, b, "4417zebra");
}

/// An erasure on a copy that never pushed, of a text the other copy wrote
/// and pushed as a fact of its own: after both sync, neither copy's files
/// nor the remote's tip hold the text.
#[test]
fn an_erasure_made_before_a_copy_ever_pushed_takes_the_other_copys_same_text_too() {
    const SECRET: &str = "ORCHID-7731";
    let (remote, url) = remote();
    let (a, b) = (fresh(), fresh());
    let (a, b) = (a.path(), b.path());
    add(b, &format!("The vault code is {SECRET}"));
    ok(b, &["sync", "--remote", &url]);
    let mine = add(a, &format!("The vault code is {SECRET}"));
    ok(a, &["forget", "--erase", &mine]);
    ok(a, &["sync", "--remote", &url]);
    sync(b);
    sync(a);
    for dir in [a, b] {
        let holding = files_saying(dir, SECRET);
        assert!(
            holding.is_empty(),
            "{} holds it in {holding:?}",
            dir.display()
        );
        assert_clean(dir);
    }
    let tip = git(remote.path(), &["ls-tree", "-r", "--name-only", "main"]);
    for file in tip.lines() {
        let text = git(remote.path(), &["show", &format!("main:{file}")]);
        assert!(!text.contains(SECRET), "the remote's {file} holds it");
    }
}

/// The erasure's twin of the test above: an entry erased on one machine
/// while the other declared an update of it. The erasure takes the old
/// text everywhere; the update is the user's own later word, and stays.
#[test]
fn an_entry_erased_on_one_machine_takes_its_text_but_not_the_update_the_other_declared() {
    let (_remote, url) = remote();
    let (a, b) = two_machines(&url);
    let (a, b) = (a.path(), b.path());
    let seattle = entry_saying(a, "Seattle");
    ok(a, &["forget", "--erase", &seattle]);
    moved_to_portland(b, &seattle);
    consolidate(b);
    sync(a);
    sync(b);
    sync(a);
    assert_same(a, b);
    for dir in [a, b] {
        let holding = files_saying(dir, "Seattle");
        assert!(
            holding.is_empty(),
            "{} holds it in {holding:?}",
            dir.display()
        );
        assert!(
            found(dir, "Portland")
                .iter()
                .any(|t| t.contains("Portland")),
            "the update was erased with the entry it updated"
        );
        assert_clean(dir);
    }
}
