//! MEMORY.md markers, JSON-lines files, state, tombstones, atomic writes.

use memd::archive::Fact;
use memd::core_md::{self, CoreMd, Line};
use memd::state::State;
use memd::tombstones::{self, Tombstone, Tombstones};
use memd::{atomic, journal, jsonl, recall};

#[test]
fn memory_md_keeps_user_text_outside_the_markers() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("MEMORY.md");
    let user_top = "# About me\n\nMy own notes.\n\n";
    let user_bottom = "\n## More of my notes\nkept verbatim\n";
    std::fs::write(
        &path,
        format!(
            "{user_top}{}\n- old line <!-- e-1 -->\n{}\n{user_bottom}",
            core_md::BEGIN,
            core_md::END
        ),
    )
    .unwrap();
    let lines = vec![
        Line {
            entry_id: "e-2".parse().unwrap(),
            text: "Works at Microsoft".into(),
            date: Some("2026-11-24".into()),
        },
        Line {
            entry_id: "e-3".parse().unwrap(),
            text: "Prefers tea".into(),
            date: None,
        },
    ];
    assert!(core_md::write_lines(&path, &lines).unwrap());
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.starts_with(user_top));
    assert!(text.ends_with(user_bottom));
    assert!(!text.contains("old line"));
    assert_eq!(CoreMd::read(&path).unwrap().lines(), lines);
    // Writing the same lines again does not touch the file.
    assert!(!core_md::write_lines(&path, &lines).unwrap());
}

#[test]
fn memory_md_without_markers_gets_them_appended() {
    let md = CoreMd::parse(b"just my notes").unwrap();
    let out = md.with_lines(&[Line {
        entry_id: "e-1".parse().unwrap(),
        text: "x".into(),
        date: None,
    }]);
    assert_eq!(
        String::from_utf8(out).unwrap(),
        format!(
            "just my notes\n\n{}\n- x <!-- e-1 -->\n{}\n",
            core_md::BEGIN,
            core_md::END
        )
    );
}

#[test]
fn broken_markers_are_an_error_not_a_guess() {
    for src in [
        format!("{}\nno end", core_md::BEGIN),
        format!("{}\n{}", core_md::END, core_md::BEGIN),
        format!("{0}\n{0}\n{1}", core_md::BEGIN, core_md::END),
    ] {
        let err = CoreMd::parse(src.as_bytes()).unwrap_err().to_string();
        assert!(err.contains("broken memd markers"), "{err}");
    }
}

#[test]
fn malformed_jsonl_lines_are_skipped_and_never_rewritten() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join(".tombstones.jsonl");
    let good = Tombstone::new(
        &memd::clock::Clock::System,
        Some("e-1".parse().unwrap()),
        "User likes Jazz!",
        vec!["2026-01-01#aaaa0000".parse().unwrap()],
        "forget",
    );
    jsonl::append(&path, std::slice::from_ref(&good)).unwrap();
    // A hand edit leaves a broken line without a final newline.
    let mut bytes = std::fs::read(&path).unwrap();
    bytes.extend_from_slice(b"{this is not json");
    std::fs::write(&path, &bytes).unwrap();
    let second = Tombstone::new(
        &memd::clock::Clock::System,
        None,
        "Other thing",
        vec![],
        "forget",
    );
    tombstones::append(&path, std::slice::from_ref(&second)).unwrap();

    let (records, bad) = jsonl::read::<Tombstone>(&path).unwrap();
    assert_eq!(records, vec![good, second]);
    assert_eq!(bad.len(), 1);
    assert_eq!(bad[0].line, 2);
    // The broken line is still in the file.
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.lines().any(|l| l == "{this is not json"));

    let t = Tombstones::load(&path).unwrap();
    assert!(t.covers("2026-01-01#aaaa0000", "anything"));
    assert!(t.covers("2026-09-09#ffff0000", "user likes jazz"));
    assert!(!t.covers("2026-09-09#ffff0000", "user likes blues"));
}

#[test]
fn recall_summary_counts_hits_and_distinct_queries() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join(".recall_log.jsonl");
    let hit = |ts: &str, q: &str, id: &str| recall::Hit {
        ts: ts.into(),
        query: q.into(),
        id: id.parse().unwrap(),
        kind: "entry".into(),
        rank: 1,
    };
    recall::append(
        &path,
        &[
            hit("2026-01-01T00:00:00Z", "coffee", "e-1"),
            hit("2026-01-03T00:00:00Z", "Coffee?", "e-1"),
            hit("2026-01-02T00:00:00Z", "tea", "e-1"),
            hit("2026-01-02T00:00:00Z", "tea", "e-2"),
        ],
    )
    .unwrap();
    let s = recall::summary(&path, chrono::Local::now().fixed_offset()).unwrap();
    assert_eq!(s["e-1"].count, 3);
    assert_eq!(s["e-1"].distinct_queries, 2);
    assert_eq!(s["e-1"].last, "2026-01-03T00:00:00Z");
    assert_eq!(s["e-2"].count, 1);
}

#[test]
fn journal_history_follows_an_entry_and_its_merges() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("journal.jsonl");
    let mut add = journal::Record::new(
        &memd::clock::Clock::System,
        &"r-1".parse().unwrap(),
        journal::Op::Add,
        "e-1",
    );
    add.after = Some("works at Google".into());
    let mut rep = journal::Record::new(
        &memd::clock::Clock::System,
        &"r-2".parse().unwrap(),
        journal::Op::Replace,
        "e-1",
    );
    rep.before = Some("works at Google".into());
    rep.after = Some("works at Microsoft; previously Google".into());
    let mut merge = journal::Record::new(
        &memd::clock::Clock::System,
        &"r-3".parse().unwrap(),
        journal::Op::Remove,
        "e-9",
    );
    merge.into = Some("e-1".parse().unwrap());
    let other = journal::Record::new(
        &memd::clock::Clock::System,
        &"r-3".parse().unwrap(),
        journal::Op::Add,
        "e-2",
    );
    journal::append(&path, &[add.clone(), rep.clone(), merge.clone(), other]).unwrap();
    assert_eq!(
        journal::history(&path, "e-1").unwrap(),
        vec![add, rep, merge]
    );
    let line = std::fs::read_to_string(&path).unwrap();
    assert!(line.contains(r#""op":"REPLACE""#), "{line}");
}

fn fact(id: &str) -> Fact {
    Fact {
        id: id.parse().unwrap(),
        day: id[..10].into(),
        text: id.into(),
        category: None,
        session: None,
        time: None,
        key: None,
        supersedes: Vec::new(),
        supersedes_facts: Vec::new(),
        line: 1,
        span: 0..0,
    }
}

/// The watermark is per fact: an earlier fact stays pending whatever is
/// done after it, and a day whose facts were all done is never closed to
/// a fact that lands on it later. `through_day` from older versions is
/// read and decides nothing.
#[test]
fn the_watermark_has_holes_and_never_closes_a_day() {
    let all: Vec<Fact> = [
        "2026-01-01#a",
        "2026-01-01#b",
        "2026-01-02#c",
        "2026-01-03#d",
    ]
    .into_iter()
    .map(fact)
    .collect();
    let mut s = State::default();
    s.retries.insert("2026-01-01#b".parse().unwrap(), 2);
    s.mark_done(["2026-01-01#b", "2026-01-02#c"].map(|f| f.parse::<memd::ids::FactId>().unwrap()));
    // 01-01#a is still pending: the later facts are a hole after it.
    assert!(!s.is_done(&all[0]) && s.is_done(&all[1]) && s.is_done(&all[2]));
    assert!(s.retries.is_empty());
    s.mark_done(["2026-01-01#a", "2026-01-03#d"].map(|f| f.parse::<memd::ids::FactId>().unwrap()));
    assert!(all.iter().all(|f| s.is_done(f)));
    assert_eq!(s.watermark.through_day, None);
    // A fact that lands later on a day whose facts were all done.
    assert!(!s.is_done(&fact("2026-01-01#e")));
    let old: State =
        serde_json::from_str(r#"{"watermark": {"through_day": "2026-01-02", "done": []}}"#)
            .unwrap();
    assert!(!old.is_done(&all[0]));

    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("state.json");
    s.save(&path).unwrap();
    assert_eq!(State::load(&path).unwrap(), s);
    std::fs::write(&path, "{ broken").unwrap();
    let err = format!("{:#}", State::load(&path).unwrap_err());
    assert!(err.contains("not valid JSON"), "{err}");
}

#[test]
fn a_failed_atomic_write_leaves_the_old_file_intact() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("memory.md");
    std::fs::write(&path, "old contents\n").unwrap();
    let err = atomic::write_with_hook(&path, b"new contents\n", || {
        Err(std::io::Error::other("injected failure before rename"))
    })
    .unwrap_err();
    assert!(err.to_string().contains("injected"));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "old contents\n");
    // No temp file is left behind.
    let names: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names, vec!["memory.md".to_string()]);

    // A directory we cannot create files in: the write fails, nothing changes.
    let missing = tmp.path().join("no-such-dir").join("memory.md");
    assert!(atomic::write(&missing, b"x").is_err());
    atomic::write(&path, b"new contents\n").unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "new contents\n");
}

/// Text that looks like memd's own markup: comment openers in every
/// spelling, forged metadata, MEMORY.md's markers and a line id.
const HOSTILE: &[&str] = &[
    "<!-- memd:end -->",
    "<!-- memd:begin --> and <!-- memd:end -->",
    "<!--m {\"id\":\"e-00000001\",\"pinned\":true,\"sources\":[]}-->",
    "<!--m {\"id\":\"e-x\"}--> tail",
    "tail <!-- e-00000001 -->",
    "<!---->",
    "<!--",
    "a --> b",
    "<!\u{200B}-- already broken",
    "<!\u{200B}\u{200B}--m twice",
    "<!- not an opener <! -- nor this",
    "first line\n<!--m {\"id\":\"e-y\"}-->\nthird line",
];

/// parse(render(x)) keeps x: whatever an entry's text says, it comes back
/// as that text of that one entry, and no text becomes metadata.
#[test]
fn entry_text_that_looks_like_markup_round_trips_and_never_becomes_metadata() {
    use memd::entries::Document;
    let mut doc = Document::parse("");
    let mut ids = Vec::new();
    for (i, text) in HOSTILE.iter().enumerate() {
        let meta = doc.new_meta(
            text,
            "2026-11-20",
            vec![format!("2026-11-20#{i:08x}").parse().unwrap()],
        );
        ids.push(doc.push(text, meta).id().unwrap().to_string());
    }
    let back = Document::parse(&doc.render());
    let got: Vec<(String, String)> = back
        .entries()
        .map(|e| {
            (
                e.id().map(|i| i.to_string()).unwrap_or_default(),
                e.text.clone(),
            )
        })
        .collect();
    let want: Vec<(String, String)> = ids
        .iter()
        .cloned()
        .zip(HOSTILE.iter().map(|t| t.to_string()))
        .collect();
    assert_eq!(got, want);
    assert!(back.warnings.is_empty(), "{:?}", back.warnings);
}

/// The same for MEMORY.md's generated lines: the markers stay one pair and
/// each line keeps its text and its entry.
#[test]
fn memory_md_lines_that_look_like_markup_round_trip() {
    let lines: Vec<Line> = HOSTILE
        .iter()
        .enumerate()
        .map(|(i, t)| Line {
            entry_id: format!("e-{i:08x}").parse().unwrap(),
            text: t.replace('\n', " "),
            date: Some("2026-11-24".into()),
        })
        .collect();
    let md = CoreMd::parse(core_md::EMPTY_FILE.as_bytes()).unwrap();
    let written = md.with_lines(&lines);
    let back = CoreMd::parse(&written).unwrap();
    assert_eq!(back.lines(), lines);
}

#[test]
fn ascii_text_normalises_as_the_unicode_pass_normalises_it() {
    // A zero-width space is dropped by the Unicode pass and only by it, so
    // a text with one takes that pass and must come out the same.
    let every: String = (0u8..128).map(char::from).collect();
    let samples = [
        every.as_str(),
        "  User LOVES\tflat white,\r\n  really!  ",
        "x\u{0B}y\u{0C}z\u{1C}w\u{1F}v",
        "---",
        "",
    ];
    for s in samples {
        let plain = memd::text::normalize(s);
        assert_eq!(
            plain,
            memd::text::normalize(&format!("\u{200B}{s}")),
            "{s:?}"
        );
    }
}

#[test]
fn a_short_hash_is_the_leading_hex_digits_of_the_sha256() {
    // SHA-256("abc"), FIPS 180-2 appendix B.1.
    let full = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
    assert_eq!(memd::text::short_hash("abc", 64), full);
    assert_eq!(memd::text::short_hash("abc", 8), &full[..8]);
}

/// A MEMORY.md line says when its entry was last stated; a text that
/// itself ends like a date keeps it, the line's own date is the last one.
#[test]
fn memory_md_lines_carry_their_date_and_a_text_that_ends_like_one_keeps_it() {
    let lines = vec![
        Line {
            entry_id: "e-00000001".parse().unwrap(),
            text: "Moved on · 2026-01-02".into(),
            date: Some("2026-11-24".into()),
        },
        Line {
            entry_id: "e-00000002".parse().unwrap(),
            text: "Plays chess".into(),
            date: Some("2026-03-01".into()),
        },
    ];
    let md = CoreMd::parse(core_md::EMPTY_FILE.as_bytes()).unwrap();
    let written = String::from_utf8(md.with_lines(&lines)).unwrap();
    assert!(
        written.contains("- Plays chess · 2026-03-01 <!-- e-00000002 -->"),
        "{written}"
    );
    let back = CoreMd::parse(written.as_bytes()).unwrap();
    assert_eq!(back.lines(), lines);
}

/// What MCP's `core_memory` gives an agent: the person's notes without
/// `memd init`'s boilerplate or the markers, and each line dated with its
/// id in brackets; a fraction of the file's bytes.
#[test]
fn memory_md_compact_keeps_the_persons_notes_and_dated_lines_without_markup() {
    let lines = vec![
        Line {
            entry_id: "e-00000001".parse().unwrap(),
            text: "Works at Globex as a manager".into(),
            date: Some("2026-11-20".into()),
        },
        Line {
            entry_id: "e-00000002".parse().unwrap(),
            text: "Plays chess".into(),
            date: None,
        },
    ];
    let mine = format!("{}\nCall me Sam.\n", core_md::EMPTY_FILE);
    let md = CoreMd::parse(mine.as_bytes()).unwrap();
    let full = md.with_lines(&lines);
    let compact = CoreMd::parse(&full).unwrap().compact();
    assert_eq!(
        compact,
        "Call me Sam.\n\n- Works at Globex as a manager · 2026-11-20 [e-00000001]\n- Plays chess [e-00000002]\n"
    );
    assert!(
        compact.len() * 2 < full.len(),
        "{compact:?} vs {} bytes",
        full.len()
    );
}
