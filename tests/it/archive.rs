//! The daily log: parsing, stable ids, the locked append path.

use memd::archive::{self, InvalidFact, NewFact};

use crate::support::memory_dir;

fn fact(text: &str) -> NewFact {
    NewFact {
        text: text.into(),
        ..Default::default()
    }
}

#[test]
fn parses_the_documented_format() {
    let src = "# 2026-11-22\n\n## 14:05:12 · session 7f3a\n- [preference] User prefers compact dashboards\n- User now works at Microsoft <!-- key:turn-41 -->\n\n## 15:00:00\n- user now works at microsoft.\n";
    let day = archive::parse("2026-11-22", src);
    assert_eq!(day.facts.len(), 3, "{:?}", day.facts);
    let f = &day.facts[0];
    assert_eq!(f.text, "User prefers compact dashboards");
    assert_eq!(f.category.as_deref(), Some("preference"));
    assert_eq!(f.session.as_deref(), Some("7f3a"));
    assert_eq!(f.time.as_deref(), Some("14:05:12"));
    assert_eq!(f.line, 4);
    let g = &day.facts[1];
    assert_eq!(g.text, "User now works at Microsoft");
    assert_eq!(g.key.as_deref(), Some("turn-41"));
    // The restatement normalises to the same text: same hash, occurrence 2.
    let h = &day.facts[2];
    assert_eq!(h.session, None);
    assert_eq!(h.id, format!("{}.2", g.id));
    assert!(g.id.starts_with("2026-11-22#") && g.id.len() == "2026-11-22#".len() + 8);
}

#[test]
fn hand_edits_are_read_as_markdown() {
    let src = "# day\n\n* star bullet\n+ plus bullet\n1. numbered\n- parent item\n  - child item\n- lazy\ncontinuation line\n\n```\n- not a fact, inside code\n```\n\nA paragraph, not a fact.\n";
    let day = archive::parse("2026-01-02", src);
    let texts: Vec<&str> = day.facts.iter().map(|f| f.text.as_str()).collect();
    assert_eq!(
        texts,
        vec![
            "star bullet",
            "plus bullet",
            "numbered",
            "parent item",
            "child item",
            "lazy continuation line"
        ]
    );
}

#[test]
fn ids_are_stable_under_reparsing_and_appends() {
    let (_tmp, layout) = memory_dir();
    let first = archive::append(
        &layout,
        "2026-03-01",
        "09:00:00",
        &[fact("Likes tea"), fact("likes tea!")],
    )
    .unwrap();
    let again = archive::append(&layout, "2026-03-01", "09:01:00", &[fact("LIKES   TEA")]).unwrap();
    assert_eq!(first[1].id, format!("{}.2", first[0].id));
    assert_eq!(again[0].id, format!("{}.3", first[0].id));
    let parsed = archive::read_day(&layout, "2026-03-01").unwrap();
    let ids: Vec<_> = parsed.facts.iter().map(|f| f.id.clone()).collect();
    let appended: Vec<_> = first.iter().chain(&again).map(|a| a.id.clone()).collect();
    assert_eq!(ids, appended);
}

#[test]
fn awkward_texts_stay_one_plain_fact() {
    let (_tmp, layout) = memory_dir();
    let texts = [
        "# not a heading",
        "- not a nested list",
        "1. not a numbered list",
        "> not a quote",
        "```not a fence",
        "<div>not html</div>",
        "\\ starts with a backslash",
        "[not-a-tag]without a space",
        "trailing spaces   ",
    ];
    let facts: Vec<NewFact> = texts.iter().map(|t| fact(t)).collect();
    let appended = archive::append(&layout, "2026-03-02", "10:00:00", &facts).unwrap();
    let parsed = archive::read_day(&layout, "2026-03-02").unwrap();
    let got: Vec<&str> = parsed.facts.iter().map(|f| f.text.as_str()).collect();
    let want: Vec<&str> = texts.iter().map(|t| t.trim()).collect();
    assert_eq!(got, want);
    for (a, p) in appended.iter().zip(&parsed.facts) {
        assert_eq!(a.id, p.id);
        assert_eq!(p.category, None);
    }
}

#[test]
fn a_heading_only_when_the_session_or_the_second_changes() {
    let (_tmp, layout) = memory_dir();
    let s = |text: &str, session: &str| NewFact {
        text: text.into(),
        session: Some(session.into()),
        ..Default::default()
    };
    archive::append(
        &layout,
        "2026-03-03",
        "08:00:00",
        &[s("one", "a"), s("two", "a")],
    )
    .unwrap();
    archive::append(&layout, "2026-03-03", "08:00:00", &[s("three", "a")]).unwrap();
    archive::append(&layout, "2026-03-03", "08:05:00", &[s("later", "a")]).unwrap();
    archive::append(
        &layout,
        "2026-03-03",
        "09:00:00",
        &[s("four", "b"), fact("five")],
    )
    .unwrap();
    let text = std::fs::read_to_string(layout.archive_file("2026-03-03")).unwrap();
    assert_eq!(
        text,
        "# 2026-03-03\n\n## 08:00:00 · session a\n- one\n- two\n- three\n\n## 08:05:00 · session a\n- later\n\n## 09:00:00 · session b\n- four\n\n## 09:00:00\n- five\n"
    );
    let day = archive::parse("2026-03-03", &text);
    let sessions: Vec<_> = day.facts.iter().map(|f| f.session.clone()).collect();
    assert_eq!(
        sessions,
        vec![
            Some("a".into()),
            Some("a".into()),
            Some("a".into()),
            Some("a".into()),
            Some("b".into()),
            None
        ]
    );
    let times: Vec<_> = day.facts.iter().map(|f| f.time.clone().unwrap()).collect();
    assert_eq!(
        times[3], "08:05:00",
        "each fact's heading says when it was written"
    );
}

#[test]
fn a_retried_append_with_the_same_key_writes_one_line() {
    let (_tmp, layout) = memory_dir();
    let keyed = NewFact {
        text: "User moved to Lisbon".into(),
        key: Some("turn-7".into()),
        ..Default::default()
    };
    let a = archive::append(
        &layout,
        "2026-03-04",
        "12:00:00",
        std::slice::from_ref(&keyed),
    )
    .unwrap();
    let before = std::fs::read(layout.archive_file("2026-03-04")).unwrap();
    let b = archive::append(
        &layout,
        "2026-03-04",
        "12:00:05",
        std::slice::from_ref(&keyed),
    )
    .unwrap();
    assert!(a[0].written && !b[0].written);
    assert_eq!(a[0].id, b[0].id);
    assert_eq!(
        std::fs::read(layout.archive_file("2026-03-04")).unwrap(),
        before
    );
    // A retry just after midnight still finds yesterday's line.
    let c = archive::append(&layout, "2026-03-05", "00:00:01", &[keyed]).unwrap();
    assert!(!c[0].written);
    assert!(!layout.archive_file("2026-03-05").exists());
}

#[test]
fn invalid_facts_write_nothing() {
    let (_tmp, layout) = memory_dir();
    let cases = [
        (vec![fact("fine"), fact("   ")], InvalidFact::Empty(2)),
        (vec![fact("two\nlines")], InvalidFact::MultiLine(1)),
        (
            vec![NewFact {
                text: "x".into(),
                category: Some("bad tag".into()),
                ..Default::default()
            }],
            InvalidFact::Category(1, "bad tag".into()),
        ),
        (
            vec![NewFact {
                text: "x".into(),
                key: Some("has space".into()),
                ..Default::default()
            }],
            InvalidFact::Key(1, "has space".into()),
        ),
    ];
    for (facts, want) in cases {
        let err = archive::append(&layout, "2026-03-06", "12:00:00", &facts).unwrap_err();
        let got = match &err {
            memd::Error::InvalidFact(f) => Some(f),
            _ => None,
        };
        assert_eq!(got, Some(&want), "{err:#}");
        assert!(!layout.archive_file("2026-03-06").exists());
    }
}

#[test]
fn invalid_utf8_does_not_hide_the_other_facts() {
    let (_tmp, layout) = memory_dir();
    let mut bytes = b"# 2026-03-07\n\n## 10:00:00\n- first fact\n- broken \xff\xfe fact\n".to_vec();
    bytes.extend_from_slice(b"- third fact\n");
    std::fs::write(layout.archive_file("2026-03-07"), &bytes).unwrap();
    let day = archive::read_day(&layout, "2026-03-07").unwrap();
    let texts: Vec<&str> = day.facts.iter().map(|f| f.text.as_str()).collect();
    assert_eq!(
        texts,
        vec!["first fact", "broken \u{fffd}\u{fffd} fact", "third fact"]
    );
    assert!(
        day.warnings[0].contains("invalid UTF-8") && day.warnings[0].contains("line 5"),
        "{:?}",
        day.warnings
    );
    // Appending to the damaged file still works and keeps its bytes.
    archive::append(&layout, "2026-03-07", "11:00:00", &[fact("fourth fact")]).unwrap();
    let after = std::fs::read(layout.archive_file("2026-03-07")).unwrap();
    assert!(after.starts_with(&bytes));
}

#[test]
fn a_file_without_final_newline_gets_whole_lines() {
    let (_tmp, layout) = memory_dir();
    std::fs::write(
        layout.archive_file("2026-03-08"),
        "# 2026-03-08\n\n## 10:00:00\n- edited by hand",
    )
    .unwrap();
    archive::append(&layout, "2026-03-08", "11:00:00", &[fact("appended")]).unwrap();
    let day = archive::read_day(&layout, "2026-03-08").unwrap();
    let texts: Vec<&str> = day.facts.iter().map(|f| f.text.as_str()).collect();
    assert_eq!(texts, vec!["edited by hand", "appended"]);
}

const WORKERS: usize = 8;
const PER_WORKER: usize = 500;

/// Not a test on its own: the body of one appending process, started by
/// `eight_processes_append_at_once` through this same test binary.
#[test]
fn append_worker() {
    let (Ok(dir), Ok(w)) = (
        std::env::var("MEMD_TEST_DIR"),
        std::env::var("MEMD_TEST_WORKER"),
    ) else {
        return;
    };
    let layout = memd::Layout::open(dir).unwrap();
    for i in 0..PER_WORKER {
        let f = NewFact {
            text: format!(
                "worker {w} fact {i} with a longer tail to make torn writes visible {}",
                "x".repeat(i % 50 + 1)
            ),
            session: Some(format!("w{w}")),
            ..Default::default()
        };
        archive::append(&layout, "2026-04-01", "12:00:00", &[f]).unwrap();
    }
}

#[test]
fn eight_processes_append_at_once() {
    let (_tmp, layout) = memory_dir();
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = (0..WORKERS)
        .map(|w| {
            std::process::Command::new(&exe)
                .args([
                    "--exact",
                    "archive::append_worker",
                    "--test-threads=1",
                    "-q",
                ])
                .env("MEMD_TEST_DIR", &layout.root)
                .env("MEMD_TEST_WORKER", w.to_string())
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    let text = std::fs::read_to_string(layout.archive_file("2026-04-01")).unwrap();
    let mut seen = std::collections::HashSet::new();
    for line in text.lines().filter(|l| l.starts_with("- ")) {
        // Every fact line is one whole line written by one worker.
        let rest = line.strip_prefix("- worker ").expect(line);
        let (w, rest) = rest.split_once(" fact ").expect(line);
        let (i, tail) = rest
            .split_once(" with a longer tail to make torn writes visible ")
            .expect(line);
        let i: usize = i.parse().expect(line);
        assert_eq!(tail, "x".repeat(i % 50 + 1), "torn line: {line}");
        assert!(seen.insert((w.to_string(), i)), "duplicate line: {line}");
    }
    assert_eq!(seen.len(), WORKERS * PER_WORKER);
    let day = archive::read_day(&layout, "2026-04-01").unwrap();
    assert_eq!(day.facts.len(), WORKERS * PER_WORKER);
    // Each fact sits under a heading of its own worker's session.
    for f in &day.facts {
        let w = f.text.split(' ').nth(1).unwrap();
        assert_eq!(
            f.session.as_deref(),
            Some(format!("w{w}").as_str()),
            "{f:?}"
        );
    }
}

/// A large batch counts the day's occurrences once instead of searching the
/// day per fact; the ids are the same either way: a restatement of a fact
/// already in the day, late in a long batch, is its second occurrence.
#[test]
fn a_long_batch_numbers_restatements_like_a_single_append() {
    let (_t, layout) = memory_dir();
    let day = "2026-03-08";
    let first =
        archive::append(&layout, day, "09:00:00", &[fact("Keeps bees on the roof")]).unwrap();
    let mut batch: Vec<NewFact> = (0..100)
        .map(|i| fact(&format!("Batch fact number {i}")))
        .collect();
    batch.push(fact("keeps bees on the roof."));
    let ids: Vec<String> = archive::append(&layout, day, "10:00:00", &batch)
        .unwrap()
        .into_iter()
        .map(|a| a.id.into())
        .collect();
    assert_eq!(ids[100], format!("{}.2", first[0].id));
    let (facts, _) = archive::read_all(&layout).unwrap();
    let parsed: Vec<&str> = facts.iter().map(|f| f.id.as_str()).collect();
    assert_eq!(
        &parsed[1..],
        ids.iter().map(String::as_str).collect::<Vec<_>>()
    );
}
