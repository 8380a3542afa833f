//! The two-copy mode of the random test (`memd sync`): two copies of one
//! memory, each with its own processes, scripted LLM and ledger, synced
//! through a bare git repository on this machine, with random actions on
//! either copy and syncs in between. After every step the copy acted on
//! passes the oracle with what it knows (its own ledger, and the other
//! copy's as of that copy's last push, merged in at each sync). At the
//! end both sync twice, and then:
//! - their files are byte-identical, `.memd/` and `.git/` aside;
//! - `memd check` is clean on both;
//! - every acknowledged fact is pending, held or forgotten by a user
//!   action, and nothing forgotten came back (the oracle, with both
//!   ledgers merged).
//!
//! A stranger who can push to the remote is a hostile actor
//! ([`PairAction::Stranger`]): between syncs it commits a configuration
//! that names its own LLM address and a secret, git files that switch
//! memd's merges off, links to a file outside both copies, deletions of
//! the archive or of memd's logs, or a redaction without its erasure
//! receipt. After every sync, besides the
//! oracle: each copy's `memd.toml` is its own, no file of a copy is a
//! link, and the outside file is as it was.

use std::collections::BTreeSet;
use std::path::Path;

use proptest::prelude::*;
use proptest_state_machine::{ReferenceStateMachine, StateMachineTest};

use super::actions::{self, Action};
use super::oracle::Ledger;
use super::world::World;
use crate::sync::tree;

mod found;

/// The seed, sequences and steps of `cargo test`'s run of this mode.
const CI_SEED: u64 = 11;
const CI_CASES: u32 = 8;
const CI_STEPS: usize = 30;

#[derive(Debug, Clone)]
pub enum PairAction {
    /// An action of the one-copy test, on copy 0 or 1.
    On(usize, Action),
    /// `memd sync` on a copy.
    Sync(usize),
    /// A stranger's commit pushed to the remote: what it changes (`how`)
    /// and what it picks (a file, a fact).
    Stranger { how: u8, pick: u8 },
}

#[derive(Debug, Clone, Default)]
pub struct PairShape {
    daemon: [bool; 2],
}

pub struct PairModel;

impl ReferenceStateMachine for PairModel {
    type State = PairShape;
    type Transition = PairAction;

    fn init_state() -> BoxedStrategy<PairShape> {
        Just(PairShape::default()).boxed()
    }

    fn transitions(state: &PairShape) -> BoxedStrategy<PairAction> {
        let (d0, d1) = (state.daemon[0], state.daemon[1]);
        prop_oneof![
            4 => actions::strategy(d0).prop_map(|a| PairAction::On(0, a)),
            4 => actions::strategy(d1).prop_map(|a| PairAction::On(1, a)),
            3 => (0..2usize).prop_map(PairAction::Sync),
            1 => (any::<u8>(), any::<u8>()).prop_map(|(how, pick)| PairAction::Stranger { how, pick }),
        ]
        .boxed()
    }

    fn preconditions(state: &PairShape, action: &PairAction) -> bool {
        match action {
            PairAction::On(i, a) => super::allowed(state.daemon[*i], a),
            PairAction::Sync(_) | PairAction::Stranger { .. } => true,
        }
    }

    fn apply(mut state: PairShape, action: &PairAction) -> PairShape {
        if let PairAction::On(i, a) = action {
            match a {
                Action::DaemonStart => state.daemon[*i] = true,
                Action::DaemonStop { .. } => state.daemon[*i] = false,
                _ => {}
            }
        }
        state
    }
}

pub struct Pair {
    sides: [World; 2],
    _remote: tempfile::TempDir,
    url: String,
    /// A directory outside both copies: the stranger's links point into
    /// it, and nothing may write there.
    outside: tempfile::TempDir,
    /// Each copy's `memd.toml` as its user wrote it.
    configs: [Vec<u8>; 2],
    /// Whether the remote's tip may lack what each copy published: a
    /// stranger committed after that copy's last push (a remote can
    /// always withhold, as a history rewritten can; what it cannot do is
    /// take a fact from a copy that has it). The other copy is held to a
    /// copy's ledger once that copy has pushed again.
    withheld: [bool; 2],
    /// Each copy's ledger as of its last push.
    published: [Ledger; 2],
}

impl Pair {
    fn new() -> Pair {
        let remote = tempfile::tempdir().unwrap();
        let git = std::process::Command::new("git")
            .arg("-C")
            .arg(remote.path())
            .args(["init", "--quiet", "--bare", "--initial-branch=main"])
            .status()
            .unwrap();
        assert!(git.success());
        let url = format!("file://{}", remote.path().display());
        let mut sides = [World::new(), World::new()];
        for w in &mut sides {
            w.paired = true;
            let out = crate::support::memd(&w.layout.root, &["sync", "--remote", &url]);
            assert!(out.status.success(), "{}", crate::support::stderr(&out));
        }
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join(CANARY), CANARY_TEXT).unwrap();
        let configs = sides
            .each_ref()
            .map(|w| std::fs::read(w.layout.config_file()).unwrap());
        let mut pair = Pair {
            sides,
            _remote: remote,
            url,
            outside,
            configs,
            withheld: [false; 2],
            published: [Ledger::default(), Ledger::default()],
        };
        pair.sync(0);
        pair
    }

    /// `memd sync` on copy `i` (the binary: git runs it as the merge
    /// driver). A conflict (the person's text of MEMORY.md, changed on
    /// both) is resolved as a person keeping both sides would, and synced
    /// again. A sync that fails (busy) is logged: the next one retries.
    fn sync(&mut self, i: usize) {
        let root = self.sides[i].layout.root.clone();
        let mut out = crate::support::memd(&root, &["sync"]);
        if out.status.code() == Some(6) {
            resolve(&root);
            out = crate::support::memd(&root, &["sync"]);
        }
        let w = &mut self.sides[i];
        if !out.status.success() {
            // Busy (a run or a forget holds the entries lock): the next
            // sync retries. Anything else is a failure of the sync.
            let said = crate::support::stderr(&out);
            let log = w.log.join("\n");
            assert!(
                out.status.code() == Some(3),
                "sync of copy {i} failed: {said}\n{log}"
            );
            w.log.push(format!("  -> sync busy: {said}"));
            return;
        }
        if self.withheld[1 - i] {
            w.ledger.may_hear(&self.published[1 - i]);
        } else {
            w.ledger.merge(&self.published[1 - i]);
        }
        self.published[i] = w.ledger.clone();
        self.withheld[i] = false;
        self.trusted_nothing(i);
    }

    /// What a stranger's commits must never have made of copy `i`: its
    /// configuration another's, a link among its files, a write outside.
    fn trusted_nothing(&self, i: usize) {
        let root = &self.sides[i].layout.root;
        let log = || self.sides[i].log.join("\n");
        let config = std::fs::read(self.sides[i].layout.config_file()).unwrap_or_default();
        assert!(
            config == self.configs[i],
            "copy {i}'s memd.toml was taken from the remote\n{}",
            log()
        );
        let canary = std::fs::read_to_string(self.outside.path().join(CANARY)).unwrap_or_default();
        assert_eq!(
            canary,
            CANARY_TEXT,
            "a file outside the copies was written\n{}",
            log()
        );
        let mut todo = vec![root.clone()];
        while let Some(d) = todo.pop() {
            for e in std::fs::read_dir(&d).unwrap().flatten() {
                let t = e.file_type().unwrap();
                assert!(
                    !t.is_symlink(),
                    "{} is a link after a sync\n{}",
                    e.path().display(),
                    log()
                );
                if t.is_dir() && e.file_name() != ".git" {
                    todo.push(e.path());
                }
            }
        }
    }

    /// A stranger's commit to the remote (see the module doc): `how`
    /// chooses what it changes, `pick` which file or fact.
    fn stranger(&mut self, how: u8, pick: u8) -> String {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path();
        let git = |args: &[&str]| {
            crate::sync::git(dir, args);
        };
        git(&["clone", "--quiet", &self.url, "."]);
        git(&["config", "user.email", "stranger@example.com"]);
        git(&["config", "user.name", "stranger"]);
        let canary = self.outside.path().join(CANARY);
        let what = match how % 6 {
            0 => {
                let config = "[llm]\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"stolen\"\napi_key_env = \"HOME\"\n";
                std::fs::write(dir.join("memd.toml"), config).unwrap();
                "memd.toml naming its own LLM and a secret".to_string()
            }
            1 => {
                let off = "archive/*.md merge=binary\n*.jsonl -merge\nMEMORY.md merge=binary\n";
                std::fs::write(dir.join(".gitattributes"), off).unwrap();
                std::fs::write(dir.join(".gitignore"), "archive/\n*.jsonl\n").unwrap();
                "git files switching memd's merges off".to_string()
            }
            2 => {
                let files = data_files(dir);
                let file = &files[pick as usize % files.len()];
                std::fs::remove_file(dir.join(file)).unwrap();
                std::os::unix::fs::symlink(&canary, dir.join(file)).unwrap();
                format!("{file} a link outside")
            }
            3 => {
                std::fs::create_dir_all(dir.join("archive")).unwrap();
                std::fs::write(dir.join("archive/.gitattributes"), "*.md merge=binary\n").unwrap();
                // A name git quotes, with a space first and a tab in it.
                let odd = dir.join(" notes\tof.md");
                let _ = std::fs::remove_file(&odd);
                std::os::unix::fs::symlink(&canary, &odd).unwrap();
                "a nested .gitattributes and a new link".to_string()
            }
            4 => {
                if pick % 4 == 3 {
                    return self.take_a_line(dir, pick);
                }
                let gone = match pick % 3 {
                    0 => vec!["archive".to_string()],
                    1 => data_files(dir)
                        .into_iter()
                        .filter(|f| f.starts_with("archive/"))
                        .take(1)
                        .collect(),
                    _ => vec![
                        ".tombstones.jsonl".into(),
                        "consolidated/journal.jsonl".into(),
                    ],
                };
                for g in &gone {
                    let _ = std::process::Command::new("git")
                        .arg("-C")
                        .arg(dir)
                        .args(["rm", "--quiet", "-r", "--ignore-unmatch", g])
                        .status();
                }
                format!("{gone:?} deleted")
            }
            _ => match self.redact_on(dir, pick) {
                Some(id) => format!("a redaction of {id} without its receipt"),
                None => return "nothing to redact".into(),
            },
        };
        git(&["add", "--all", "."]);
        let mut same = std::process::Command::new("git");
        same.arg("-C")
            .arg(dir)
            .args(["diff", "--cached", "--quiet"]);
        if same.status().unwrap().success() {
            return format!("{what} (the remote had it already)");
        }
        git(&["commit", "--quiet", "--no-verify", "-m", "stranger"]);
        git(&["push", "--quiet", "origin", "HEAD:main"]);
        what
    }

    /// Take a fact's line out of a day file in clone `dir` (no redaction:
    /// just gone), committed and pushed.
    fn take_a_line(&self, dir: &Path, pick: u8) -> String {
        let days: Vec<String> = data_files(dir)
            .into_iter()
            .filter(|f| f.starts_with("archive/"))
            .collect();
        let Some(day) = days.get(pick as usize % days.len().max(1)) else {
            return "no day file to take a line from".into();
        };
        let text = std::fs::read_to_string(dir.join(day)).unwrap_or_default();
        let items: Vec<&str> = text.split_inclusive('\n').collect();
        let facts: Vec<usize> = (0..items.len())
            .filter(|i| items[*i].starts_with("- "))
            .collect();
        let Some(&at) = facts.get(pick as usize % facts.len().max(1)) else {
            return format!("no fact in {day} to take out");
        };
        let kept: String = (0..items.len())
            .filter(|i| *i != at)
            .map(|i| items[i])
            .collect();
        std::fs::write(dir.join(day), kept).unwrap();
        crate::sync::git(
            dir,
            &["commit", "--quiet", "--no-verify", "-am", "stranger"],
        );
        crate::sync::git(dir, &["push", "--quiet", "origin", "HEAD:main"]);
        format!("a fact's line taken out of {day}")
    }

    /// Turn the line of a fact both copies hold live (so the one that syncs
    /// first has it to put back) into a redaction line, in clone `dir`.
    fn redact_on(&self, dir: &Path, pick: u8) -> Option<String> {
        let live = |root: &Path| -> Vec<memd::archive::Fact> {
            let layout = memd::Layout::new(root);
            memd::archive::read_all(&layout)
                .map(|(f, _)| f)
                .unwrap_or_default()
        };
        let theirs = live(dir);
        let (a, b) = (
            live(&self.sides[0].layout.root),
            live(&self.sides[1].layout.root),
        );
        let both: Vec<&memd::archive::Fact> = theirs
            .iter()
            .filter(|f| a.iter().any(|x| x.id == f.id) && b.iter().any(|x| x.id == f.id))
            .collect();
        let f = both.get(pick as usize % both.len().max(1))?;
        let path = dir.join(format!("archive/{}.md", f.day));
        let text = std::fs::read_to_string(&path).ok()?;
        let line = text.lines().nth(f.line - 1)?;
        let indent = &line[..line.len() - line.trim_start().len()];
        let redacted = format!("{indent}- <!-- erased:{} 2026-11-29T00:00:00Z -->", f.id);
        let mut lines: Vec<&str> = text.lines().collect();
        lines[f.line - 1] = &redacted;
        std::fs::write(&path, lines.join("\n") + "\n").ok()?;
        Some(f.id.to_string())
    }
}

/// The lines of file `name` only one copy has, for a failure's message.
fn apart(name: &str, a: Option<&Vec<u8>>, b: Option<&Vec<u8>>) -> String {
    let lines = |f: Option<&Vec<u8>>| -> Vec<String> {
        String::from_utf8_lossy(f.map_or(&[][..], |v| v))
            .lines()
            .map(str::to_string)
            .collect()
    };
    if std::env::var_os("MEMD_RANDOM_DUMP").is_some() {
        let whole =
            |f: Option<&Vec<u8>>| String::from_utf8_lossy(f.map_or(&[][..], |v| v)).to_string();
        return format!("{name}: copy 0\n{}\ncopy 1\n{}\n", whole(a), whole(b));
    }
    let (a, b) = (lines(a), lines(b));
    let only = |x: &[String], y: &[String]| -> String {
        x.iter()
            .filter(|l| !y.contains(l))
            .map(|l| format!("  {l}\n"))
            .collect()
    };
    format!(
        "{name}: only copy 0 has\n{}only copy 1 has\n{}",
        only(&a, &b),
        only(&b, &a)
    )
}

/// Whether the stranger's commit of kind `how` may leave the remote
/// without what a copy published: a data file linked or deleted (each copy
/// puts back its own), a fact's line taken out. The other kinds touch
/// only what steers memd, or a redaction the first copy to sync undoes.
fn withholds(how: u8) -> bool {
    matches!(how % 6, 2 | 4)
}

/// The file outside both copies the stranger's links point at.
const CANARY: &str = "canary.md";
const CANARY_TEXT: &str = "- a fact of someone else's\n";

/// The data files of a clone a stranger may turn into links.
fn data_files(dir: &Path) -> Vec<String> {
    let mut out: Vec<String> = ["MEMORY.md", "consolidated/memory.md", ".tombstones.jsonl"]
        .iter()
        .filter(|f| dir.join(f).is_file())
        .map(|f| f.to_string())
        .collect();
    for e in std::fs::read_dir(dir.join("archive"))
        .into_iter()
        .flatten()
        .flatten()
    {
        if e.file_name().to_string_lossy().ends_with(".md") {
            out.push(format!("archive/{}", e.file_name().to_string_lossy()));
        }
    }
    out.sort();
    out
}

/// Each file a merge left in conflict, with both sides' lines kept and
/// git's markers taken out.
fn resolve(root: &Path) {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["diff", "--name-only", "--diff-filter=U"])
        .output()
        .unwrap();
    for file in String::from_utf8_lossy(&out.stdout).lines() {
        let path = root.join(file);
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let kept: String = text
            .split_inclusive('\n')
            .filter(|l| {
                !["<<<<<<< ", "=======", ">>>>>>> ", "||||||| "]
                    .iter()
                    .any(|m| l.starts_with(m))
            })
            .collect();
        std::fs::write(&path, kept).unwrap();
    }
}

impl StateMachineTest for Pair {
    type SystemUnderTest = Pair;
    type Reference = PairModel;

    fn init_test(_: &PairShape) -> Pair {
        Pair::new()
    }

    fn apply(mut pair: Pair, _: &PairShape, action: PairAction) -> Pair {
        match action {
            PairAction::On(i, a) => {
                super::covered(a.kind());
                pair.sides[i].apply(&a);
                pair.sides[i].check(false);
            }
            PairAction::Sync(i) => {
                super::covered("sync");
                pair.sides[i].log.push("Sync".into());
                pair.sync(i);
                pair.sides[i].check(false);
            }
            PairAction::Stranger { how, pick } => {
                super::covered("stranger");
                let what = pair.stranger(how, pick);
                if withholds(how) {
                    pair.withheld = [true, true];
                }
                for w in &mut pair.sides {
                    w.log.push(format!("Stranger: {what}"));
                }
            }
        }
        pair
    }

    fn teardown(mut pair: Pair) {
        for i in [0, 1, 0, 1] {
            pair.sync(i);
        }
        let (a, b) = (
            tree(&pair.sides[0].layout.root),
            tree(&pair.sides[1].layout.root),
        );
        let differ: BTreeSet<&String> = a
            .keys()
            .chain(b.keys())
            .filter(|k| a.get(*k) != b.get(*k))
            .collect();
        let log = |w: &World| w.log.join("\n");
        assert!(
            differ.is_empty(),
            "after both synced twice, these files differ: {differ:?}\ncopy 0:\n{}\ncopy 1:\n{}\n{}",
            log(&pair.sides[0]),
            log(&pair.sides[1]),
            differ
                .iter()
                .map(|k| apart(k, a.get(*k), b.get(*k)))
                .collect::<String>()
        );
        let (l0, l1) = (pair.sides[0].ledger.clone(), pair.sides[1].ledger.clone());
        pair.sides[0].ledger.merge(&l1);
        pair.sides[1].ledger.merge(&l0);
        for w in &pair.sides {
            w.check(true);
        }
    }
}

/// Two copies of a memory, changed apart in random sequences and synced
/// in between, hold the same files after both sync twice, and lose or
/// bring back nothing.
#[test]
fn two_copies_synced_through_git_converge_and_never_lose_or_bring_back_a_fact() {
    super::soaked((CI_SEED, CI_CASES, CI_STEPS), run);
}

/// One proptest run of `cases` two-copy sequences from `seed`.
fn run(seed: u64, cases: u32, steps: usize) -> Result<u32, String> {
    super::run_machine::<Pair>((seed, cases, steps), 100)
}

/// Run one two-copy sequence as the random test does (how a minimal
/// sequence it found becomes a regression test).
fn replay(actions: &[PairAction]) {
    let mut pair = Pair::new();
    for a in actions {
        pair = <Pair as StateMachineTest>::apply(pair, &PairShape::default(), a.clone());
    }
    <Pair as StateMachineTest>::teardown(pair);
}
