//! A reader that stops early (`memd entries | head -1`): every command
//! that prints ends as the programs of a shell pipeline do, killed by
//! SIGPIPE with nothing said, never with a panic's stack trace.

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use crate::support::{memd_bin, stderr};
use crate::trust::{add, consolidate, entries, fresh, ok};

/// Commands that run until stopped, with what they print on: not run here.
const LONG_RUNNING: [&str; 3] = ["serve", "watch", "mcp"];

/// `memd ARGS` in `dir`, its standard output a pipe whose reader is
/// already gone (the first write fails as it does after `head` exits).
fn into_a_closed_pipe(dir: &Path, args: &[&str]) -> Output {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    Command::new(memd_bin())
        .arg("--dir")
        .arg(dir)
        .args(args)
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .unwrap()
}

/// The commands `memd --help` lists (less `help`).
fn commands() -> Vec<String> {
    let out = Command::new(memd_bin()).arg("--help").output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout).to_string();
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(str::to_string)
        .collect()
}

#[test]
fn every_command_whose_reader_stops_early_ends_quietly_as_a_pipe_does() {
    let dir = fresh();
    let d = dir.path();
    add(d, "The user keeps bees on the roof");
    let run = consolidate(d);
    let (entry, ..) = entries(d).remove(0);
    let other = add(d, "The user rows on Sundays");
    let blank = tempfile::tempdir().unwrap();
    let new_dir = blank.path().join("fresh");
    let new_dir = new_dir.to_str().unwrap();
    let cases: Vec<Vec<&str>> = vec![
        vec!["init", new_dir],
        vec!["add", "The user likes figs"],
        vec!["search", "bees"],
        vec!["search", "bees", "--json"],
        vec!["consolidate", "--force"],
        vec!["entries"],
        vec!["entries", &entry],
        vec!["edit", &entry, "--pin"],
        vec!["forget", "--match", "figs"],
        vec!["forget", &other],
        vec!["history", &entry],
        vec!["show"],
        vec!["runs"],
        vec!["undo", &run],
        vec!["review"],
        vec!["reindex"],
        vec!["core"],
        vec!["core", "--json"],
        vec!["setup"],
        vec!["status"],
        vec!["check"],
        vec!["sync"],
        vec!["completions", "bash"],
        vec!["man"],
        vec!["eval", "--help"],
        vec!["bench", "--help"],
        vec!["--help"],
    ];
    for c in commands() {
        assert!(
            LONG_RUNNING.contains(&c.as_str()) || cases.iter().any(|a| a[0] == c),
            "memd {c} is run by no case here"
        );
    }
    for args in &cases {
        let out = into_a_closed_pipe(d, args);
        let said = stderr(&out);
        assert!(
            !said.contains("panicked") && !said.contains("Broken pipe"),
            "memd {args:?} into a closed pipe: {said}"
        );
        let ended = out.status.signal() == Some(libc::SIGPIPE);
        // A command that printed nothing (or failed, as `sync` without a
        // remote does) was not cut short: it ends as it would anyway.
        assert!(
            ended || !out.status.success() || printed_nothing(d, args),
            "memd {args:?} printed into a closed pipe and ended with {:?}: {said}",
            out.status
        );
    }
    ok(d, &["check"]);
}

/// Whether `memd ARGS` prints nothing when its output is read (run again
/// into an open pipe: the commands above are idempotent there or say
/// something either way).
fn printed_nothing(dir: &Path, args: &[&str]) -> bool {
    crate::support::memd(dir, args).stdout.is_empty()
}
