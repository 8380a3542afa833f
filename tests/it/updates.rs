//! Updates an agent can trust: updates the agent declares (`supersedes`),
//! applied with history by either judge; a run that leaves facts pending
//! because its judge failed says so.

use std::path::Path;

use memd::index::Query;

use crate::support::{Reply, chat, memd, scripted, stderr};
use crate::trust::{add, check, consolidate, entries, found, fresh, ok};

/// `memd add TEXT --supersedes ID`; the fact's id.
fn update(dir: &Path, text: &str, old: &str) -> String {
    let out = ok(dir, &["add", text, "--supersedes", old, "--json"]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    v["id"].as_str().unwrap().to_string()
}

/// The entry holding `fact`: (id, text).
fn holder(dir: &Path, fact: &str) -> (String, String) {
    let e = entries(dir)
        .into_iter()
        .find(|e| e.2.iter().any(|s| s == fact));
    let (id, text, _) = e.unwrap_or_else(|| panic!("no entry holds {fact}: {:?}", entries(dir)));
    (id, text)
}

/// A job change and a move over sessions, with the built-in judge. The
/// agent says which entries each new fact replaces; MEMORY.md then holds
/// the current facts, each with what was true before as history, and no
/// line says the old value first.
#[test]
fn declared_updates_leave_only_current_facts_with_their_history() {
    let t = fresh();
    let dir = t.path();
    let job = add(dir, "Works at Google as a data engineer");
    let city = add(dir, "Lives in Seattle");
    let dog = add(dir, "Has a dog called Rex");
    consolidate(dir);
    let (e_job, _) = holder(dir, &job);
    let (e_city, _) = holder(dir, &city);
    let new_job = update(dir, "Works at Microsoft on the Azure team", &e_job);
    let moved = update(dir, "Moved to San Francisco last month", &e_city);
    let report = ok(dir, &["consolidate", "--force", "--json"]);
    let report: serde_json::Value = serde_json::from_str(&report).unwrap();
    assert_eq!(report["declared_updates"], 2, "{report}");
    assert_eq!(
        holder(dir, &new_job),
        (
            e_job.clone(),
            format!(
                "Works at Microsoft on the Azure team (since {day}; previously: Works at Google as a data engineer, since {day})",
                day = crate::support::archive_day(dir)
            )
        )
    );
    assert_eq!(
        holder(dir, &job).0,
        e_job,
        "the old fact stays in its entry"
    );
    let (id, text) = holder(dir, &moved);
    assert_eq!(id, e_city);
    assert!(text.starts_with("Moved to San Francisco"), "{text}");
    assert!(
        text.contains("; previously: Lives in Seattle, since "),
        "{text}"
    );
    assert_eq!(entries(dir).len(), 3, "{:?}", entries(dir));
    let core = std::fs::read_to_string(dir.join("MEMORY.md")).unwrap();
    for old in ["- Works at Google", "- Lives in Seattle"] {
        assert!(!core.contains(old), "{core}");
    }
    assert!(core.contains("- Works at Microsoft"), "{core}");
    assert_eq!(holder(dir, &dog).1, "Has a dog called Rex");
    assert!(check(dir).0, "{}", check(dir).2);
    assert!(!found(dir, "Microsoft Azure").is_empty());
}

/// Found by the random test: a fact that supersedes an entry, said again
/// by a fact a later update supersedes, joined that update and its own
/// declaration was dropped (the entry stayed current beside the update).
/// The update is the newest of the chain: the entry becomes its history.
#[test]
fn an_update_of_a_fact_that_itself_superseded_an_entry_replaces_that_entry_too() {
    let t = fresh();
    let dir = t.path();
    let city = add(dir, "Lives in Seattle");
    consolidate(dir);
    let (e_city, _) = holder(dir, &city);
    let moved = add(dir, "Moved to Lisbon in May");
    let job = ok(
        dir,
        &[
            "add",
            "Works at Acme in Lisbon",
            "--supersedes",
            &moved,
            "--json",
        ],
    );
    let job: serde_json::Value = serde_json::from_str(&job).unwrap();
    update(dir, "Moved to Lisbon in May", &e_city);
    consolidate(dir);
    let (id, text) = holder(dir, job["id"].as_str().unwrap());
    assert_eq!(id, e_city, "{:?}", entries(dir));
    assert!(text.starts_with("Works at Acme in Lisbon ("), "{text}");
    assert!(text.contains("Lives in Seattle"), "{text}");
    assert_eq!(entries(dir).len(), 1, "{:?}", entries(dir));
    assert!(check(dir).0, "{}", check(dir).2);
}

/// The declaration is checked before anything is written: an id no
/// entry has, or an entry forgotten, is refused as not found (exit 4, as
/// the exit-code table says of an id nothing has; a clear error).
#[test]
fn a_declared_update_of_an_entry_that_is_not_live_is_refused_and_writes_nothing() {
    let t = fresh();
    let dir = t.path();
    let fact = add(dir, "Lives in Seattle");
    consolidate(dir);
    let (entry, _) = holder(dir, &fact);
    let archive = || {
        let days = std::fs::read_dir(dir.join("archive")).unwrap();
        days.map(|d| std::fs::read(d.unwrap().path()).unwrap())
            .collect::<Vec<_>>()
    };
    let before = archive();
    let out = memd(
        dir,
        &["add", "Moved to Lisbon", "--supersedes", "e-00000000"],
    );
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert!(stderr(&out).contains("e-00000000"), "{}", stderr(&out));
    ok(dir, &["forget", &entry]);
    let out = memd(dir, &["add", "Moved to Lisbon", "--supersedes", &entry]);
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    // A fact's text cannot forge a declaration.
    let forged = "Moved to Lisbon <!-- supersedes:e-00000000 -->";
    let out = memd(dir, &["add", forged]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(archive(), before, "nothing was written");
}

/// With an LLM configured the declared update is applied the same way,
/// without asking it to decide (here an LLM that answers nothing usable):
/// the agent's word decides, not a background judge.
#[tokio::test(flavor = "multi_thread")]
async fn a_declared_update_is_applied_without_asking_the_llm() {
    let server = scripted(|_, _| Reply::Json(chat("No idea, sorry."))).await;
    let t = fresh();
    let dir = t.path().to_path_buf();
    let requests = server.requests.clone();
    let url = server.url.clone();
    tokio::task::spawn_blocking(move || {
        let fact = add(&dir, "Lives in Seattle");
        consolidate(&dir); // built-in judge
        let (entry, _) = holder(&dir, &fact);
        let config = dir.join("memd.toml");
        let mut text = std::fs::read_to_string(&config).unwrap();
        text.push_str(&format!(
            "[llm]\nbase_url = \"{url}\"\nmodel = \"scripted\"\nmax_attempts = 1\n"
        ));
        std::fs::write(&config, text).unwrap();
        let moved = update(&dir, "Moved to San Francisco last month", &entry);
        ok(&dir, &["consolidate", "--force"]);
        let (id, text) = holder(&dir, &moved);
        assert_eq!(id, entry);
        let day = crate::support::archive_day(&dir);
        assert_eq!(
            text,
            format!("Moved to San Francisco last month (since {day}; previously: Lives in Seattle, since {day})")
        );
        assert!(check(&dir).0, "{}", check(&dir).2);
    })
    .await
    .unwrap();
    // The LLM is asked only what to promote into MEMORY.md.
    let asked = requests.lock().unwrap();
    let about = |r: &serde_json::Value| r.to_string().contains("always keep in mind");
    assert!(
        asked.iter().all(about),
        "the LLM was asked to decide: {asked:?}"
    );
}

/// Was: the cluster failed, 0 ops were planned, and `memd consolidate`
/// exited 0, so a script took the run for done. Now it exits 6 and names
/// the facts (stderr and `failed_facts`), which stay pending and are
/// tried again by the next run.
#[tokio::test(flavor = "multi_thread")]
async fn a_run_whose_judge_failed_exits_6_naming_the_facts_it_left_pending() {
    let server = scripted(|_, _| Reply::Json(chat("No idea, sorry."))).await;
    let t = fresh();
    let dir = t.path().to_path_buf();
    let config = dir.join("memd.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str(&format!(
        "[llm]\nbase_url = \"{}\"\nmodel = \"scripted\"\nmax_attempts = 1\n",
        server.url
    ));
    std::fs::write(&config, text).unwrap();
    let out = tokio::task::spawn_blocking(move || {
        let id = add(&dir, "Lives in Berlin");
        let out = memd(&dir, &["consolidate", "--force", "--json"]);
        (dir, id, out)
    });
    let (dir, id, out) = out.await.unwrap();
    assert_eq!(out.status.code(), Some(6), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["failed_facts"], serde_json::json!([id]), "{report}");
    assert!(stderr(&out).contains(&id), "{}", stderr(&out));
    assert!(entries(&dir).is_empty());
    assert!(check(&dir).0, "still pending: {}", check(&dir).2);
    let status = memd(&dir, &["status", "--json"]);
    let status: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(status["pending_facts"], 1, "{status}");
}

/// Current first, without an LLM and without a declaration: the older
/// entry was recalled twenty times, the newer one on the same thing never.
/// MEMORY.md shows the newer first, each line with the day it was stated,
/// and keeps both (nothing is hidden); an entry on another thing keeps its
/// place by recall.
#[tokio::test]
async fn of_two_entries_on_one_thing_memory_md_shows_the_later_first_however_often_the_older_was_recalled()
 {
    let (_t, layout, at, dark, violin) = dark_and_violin(30).await;
    let hits: Vec<memd::recall::Hit> = (0..20)
        .flat_map(|i| {
            [&dark, &violin].map(|id| memd::recall::Hit {
                ts: "2026-11-19T09:00:00Z".into(),
                query: format!("editor theme {i}"),
                id: memd::ids::RowId::entry(id),
                kind: "entry".into(),
                rank: 1,
            })
        })
        .collect();
    memd::recall::append(&layout.recall_log(), &hits).unwrap();
    // Written by hand, so that it is an entry of its own: a fact saying
    // it would be read as an update of the dark-mode entry and folded
    // into it (`src/update.rs`), leaving no older line to outrank.
    let mut file = std::fs::read_to_string(layout.entries_file()).unwrap();
    file.push_str("\n\nPrefers light mode in every editor\n");
    std::fs::write(layout.entries_file(), file).unwrap();
    note_and_run(
        (&layout, &at),
        "2026-11-20",
        &["Drinks black coffee every morning"],
    )
    .await;
    let core = std::fs::read_to_string(layout.memory_md()).unwrap();
    let line = |needle: &str| {
        core.lines()
            .position(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("no line says {needle:?}: {core}"))
    };
    assert!(line("light mode") < line("dark mode"), "{core}");
    assert!(
        line("violin") < line("coffee"),
        "recall still ranks: {core}"
    );
    assert!(
        core.contains("- Prefers light mode in every editor · 2026-11-20 <!-- e-"),
        "{core}"
    );
    assert!(
        core.contains("- Prefers dark mode in every editor · 2026-11-01 <!-- e-"),
        "{core}"
    );
}

/// A memory for the promotion tests below: lexical embedder, MEMORY.md
/// of `max_lines`, runs at noon of a fixed day.
fn promotion_memory(
    max_lines: u32,
) -> (
    tempfile::TempDir,
    memd::Layout,
    impl Fn(&str) -> memd::Memory,
) {
    use memd::clock::Clock;
    let (t, layout) = crate::support::memory_dir();
    std::fs::write(
        layout.config_file(),
        format!(
            "[embedder]\nkind = \"lexical\"\n[consolidation]\nmin_facts = 1\nmin_hours = 0.0\n[promotion]\nmax_lines = {max_lines}\n"
        ),
    )
    .unwrap();
    let config = memd::config::Config::load(&layout.root).unwrap();
    let memory = crate::support::memory(&layout, &config);
    let at = move |day: &str| {
        let t = chrono::DateTime::parse_from_rfc3339(&format!("{day}T12:00:00+00:00")).unwrap();
        memory.clone().at(Clock::Fixed(t))
    };
    (t, layout, at)
}

/// A memory of [`promotion_memory`] with two entries from 2026-11-01, on
/// dark mode and on the violin, and their ids.
async fn dark_and_violin(
    max_lines: u32,
) -> (
    tempfile::TempDir,
    memd::Layout,
    impl Fn(&str) -> memd::Memory,
    memd::ids::EntryId,
    memd::ids::EntryId,
) {
    use crate::consolidate::{entries, entry_with};
    let (t, layout, at) = promotion_memory(max_lines);
    let two = [
        "Prefers dark mode in every editor",
        "Plays the violin in a quartet",
    ];
    note_and_run((&layout, &at), "2026-11-01", &two).await;
    let all = entries(&layout);
    let dark = entry_with(&all, "dark mode").id().unwrap().clone();
    let violin = entry_with(&all, "violin").id().unwrap().clone();
    (t, layout, at, dark, violin)
}

/// `texts` noted on `day`, and a run at noon that day.
async fn note_and_run(
    (layout, at): (&memd::Layout, &impl Fn(&str) -> memd::Memory),
    day: &str,
    texts: &[&str],
) {
    crate::consolidate::add(layout, day, texts);
    let opts = memd::consolidate::Options {
        force: true,
        ..Default::default()
    };
    memd::consolidate::run(&at(day), opts).await.unwrap();
}

/// A bulk import: twenty facts on one thing in nearly the same words and
/// five on five other things, all on one day, none recalled yet. Ranked
/// by id (random), MEMORY.md's five lines would be mostly the one thing;
/// it shows five different things.
#[tokio::test]
async fn after_a_bulk_import_memory_md_shows_lines_on_different_things_not_the_first_by_id() {
    use crate::consolidate::entries;
    let (_t, layout, at) = promotion_memory(5);
    let artists = [
        "Coltrane",
        "Monk",
        "Mingus",
        "Parker",
        "Davis",
        "Evans",
        "Hancock",
        "Corea",
        "Jarrett",
        "Shorter",
        "Rollins",
        "Blakey",
        "Silver",
        "Hubbard",
        "Morgan",
        "Dolphy",
        "Coleman",
        "Gillespie",
        "Basie",
        "Ellington",
    ];
    let records: Vec<String> = artists
        .iter()
        .map(|a| format!("The user likes {a} records on vinyl"))
        .collect();
    let others = [
        "The user's daughter is called Maya",
        "Works as a nurse at the city hospital",
        "Is allergic to penicillin",
        "Drives a green Volvo estate",
        "Grows tomatoes on the allotment",
    ];
    let mut all: Vec<&str> = records.iter().map(String::as_str).collect();
    all.extend(others);
    note_and_run((&layout, &at), "2026-11-01", &all).await;
    assert_eq!(entries(&layout).len(), 25, "each fact an entry of its own");
    let core = memd::core_md::CoreMd::read(&layout.memory_md()).unwrap();
    let lines: Vec<String> = core.lines().into_iter().map(|l| l.text).collect();
    assert_eq!(lines.len(), 5, "{lines:?}");
    let on_records = lines
        .iter()
        .filter(|l| l.contains("records on vinyl"))
        .count();
    // Which five of the six things depends on the entries' ids (random)
    // when every score ties; never two lines on one thing.
    assert!(
        on_records <= 1,
        "at most one line on the records, the rest on other things: {lines:?}"
    );
}

/// One question asked every turn (fifty searches) found one entry; eight
/// different questions found another. With one line, MEMORY.md shows
/// what many questions needed: a question asked again adds less each time,
/// so what it found first does not stay in every prompt for good. A
/// search that found both an entry and its MEMORY.md line is one recall.
#[tokio::test]
async fn one_question_asked_every_turn_does_not_outweigh_many_different_questions() {
    let (_t, layout, at, dark, violin) = dark_and_violin(1).await;
    let hit = |i: usize, query: String, id: memd::ids::RowId| memd::recall::Hit {
        ts: format!("2026-11-19T09:{:02}:{:02}Z", i / 60, i % 60),
        query,
        id,
        kind: "entry".into(),
        rank: 1,
    };
    let mut hits: Vec<memd::recall::Hit> = (0..50)
        .flat_map(|i| {
            let q = || "which theme does the user like".to_string();
            [
                hit(i, q(), memd::ids::RowId::entry(&dark)),
                hit(i, q(), memd::ids::RowId::core(&dark)),
            ]
        })
        .collect();
    hits.extend((0..8).map(|i| {
        hit(
            i,
            format!("music question {i}"),
            memd::ids::RowId::entry(&violin),
        )
    }));
    memd::recall::append(&layout.recall_log(), &hits).unwrap();
    note_and_run(
        (&layout, &at),
        "2026-11-20",
        &["Drinks black coffee every morning"],
    )
    .await;
    let core = memd::core_md::CoreMd::read(&layout.memory_md()).unwrap();
    let lines: Vec<String> = core.lines().into_iter().map(|l| l.text).collect();
    assert_eq!(lines, ["Plays the violin in a quartet"]);
}

/// Every hit says the day it was stated, in the text output and in JSON,
/// a hit on a MEMORY.md line included (its entry's day, as the line says).
#[test]
fn every_search_hit_says_its_day_a_memory_md_line_included() {
    let t = fresh();
    let dir = t.path();
    add(dir, "Lives in Seattle near the market");
    consolidate(dir);
    let hits: serde_json::Value =
        serde_json::from_str(&ok(dir, &["search", "Seattle market", "--json"])).unwrap();
    let hits = hits.as_array().unwrap();
    let kinds: Vec<&str> = hits.iter().map(|h| h["kind"].as_str().unwrap()).collect();
    assert!(kinds.contains(&"core"), "{hits:?}");
    let day = hits[0]["day"]
        .as_str()
        .unwrap_or_else(|| panic!("{hits:?}"));
    assert!(
        chrono::NaiveDate::parse_from_str(day, "%Y-%m-%d").is_ok(),
        "{day}"
    );
    for h in hits {
        assert_eq!(h["day"].as_str(), Some(day), "{h}");
    }
    let text = ok(dir, &["search", "Seattle market"]);
    for line in text.lines() {
        assert!(line.contains(&format!("  {day}  ")), "{line}");
    }
}

/// `memd check` notes a MEMORY.md line whose date is not its entry's (a
/// note, not a problem: the next run dates it again).
#[test]
fn check_notes_a_memory_md_line_dated_otherwise_than_its_entry() {
    let t = fresh();
    let dir = t.path();
    add(dir, "Lives in Seattle");
    consolidate(dir);
    let core = std::fs::read_to_string(dir.join("MEMORY.md")).unwrap();
    let at = core.find(" · 20").expect("a dated line");
    let edited = format!(
        "{} · 2020-01-01{}",
        &core[..at],
        &core[at + " · 2026-11-25".len()..]
    );
    std::fs::write(dir.join("MEMORY.md"), edited).unwrap();
    let (clean, _, out) = check(dir);
    let out = out.to_string();
    assert!(clean, "{out}");
    assert!(
        out.contains("core_line_date") && out.contains("2020-01-01"),
        "{out}"
    );
    consolidate(dir);
    let after = check(dir).2.to_string();
    assert!(!after.contains("core_line_date"), "{after}");
}

/// Of two facts on one thing, a search puts the one stated later first,
/// though the older matches the query a little better ("where does the
/// user work": 0.48 against 0.47); both come back (the older is only moved
/// below, never dropped).
#[tokio::test(flavor = "multi_thread")]
async fn of_two_facts_on_one_thing_search_puts_the_later_first_though_the_older_matches_the_query_better()
 {
    let old = "User works at Acme Corp on the backend team";
    let new = "User works at Globex on the backend team";
    let other = "User's backend team at Acme Corp had a party in June";
    let (_t, index) = indexed(&[
        ("2026-11-01", "09:00:00", old),
        ("2026-11-01", "09:01:00", other),
        ("2026-11-20", "09:00:00", new),
    ])
    .await;
    let hits = index
        .reader
        .search(&Query::new("Where does the user work?", 5))
        .await
        .unwrap();
    let at = |t: &str| hits.iter().position(|h| h.text == t);
    let (at_old, at_new) = (at(old).expect("older kept"), at(new).expect("newer"));
    assert!(at_new < at_old, "{hits:#?}");
    assert_eq!(hits[at_new].day.as_deref(), Some("2026-11-20"));
}

/// Current first only reorders the hits a search returns: a later text on
/// the same thing that the query did not bring into the top `k` never
/// takes the place of one it did (on LoCoMo, comparing with every
/// candidate took evidence recall@10 from 0.825 to 0.506).
#[tokio::test(flavor = "multi_thread")]
async fn a_later_text_on_the_same_thing_never_displaces_a_hit_the_query_found() {
    let old = "User works at Acme Corp on the backend team";
    let new = "User works at Globex on the backend team";
    let hits = old_then_new((old, new), "Acme Corp backend team", 1).await;
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].text, old, "{hits:#?}");
}

/// The `k` best hits for `question` in a memory that was told `old` on
/// 2026-11-01 and `new` on 2026-11-20.
async fn old_then_new(
    (old, new): (&str, &str),
    question: &str,
    k: usize,
) -> Vec<memd::index::search::Hit> {
    let (_t, index) = indexed(&[
        ("2026-11-01", "09:00:00", old),
        ("2026-11-20", "09:00:00", new),
    ])
    .await;
    index.reader.search(&Query::new(question, k)).await.unwrap()
}

/// A memory holding `facts` (day, time, text) in its archive, indexed.
async fn indexed(facts: &[(&str, &str, &str)]) -> (tempfile::TempDir, memd::index::Index) {
    let (t, layout) = crate::support::memory_dir();
    for (day, time, text) in facts {
        let fact = memd::archive::NewFact {
            text: text.to_string(),
            ..Default::default()
        };
        memd::archive::append(&layout, day, time, &[fact]).unwrap();
    }
    let memory = memd::Memory::new(layout, memd::config::Config::default());
    let index = memd::index::Index::open(&memory).await.unwrap();
    index.writer.sync().await.unwrap();
    (t, index)
}

/// Current first never answers a question with a newer fact the question
/// does not ask about: a later fact on the same person that matches the
/// question far less than the fact it asks about stays below it. Before,
/// any later text at cosine 0.6 of the older was raised above it, and on
/// the Letta sets a question on a fact no update touched had another fact
/// on top 255 times in 1,534.
#[tokio::test(flavor = "multi_thread")]
async fn a_later_fact_the_question_does_not_ask_about_stays_below_the_one_it_does() {
    let climber =
        "Yara Fenwick is a professional rock climber who has scaled peaks on three continents.";
    let (_t, index) = indexed(&[
        ("2026-11-01", "09:00:00", climber),
        (
            "2026-11-01",
            "09:01:00",
            "Yara Fenwick grew up in a small village near Lyon.",
        ),
        (
            "2026-11-20",
            "09:00:00",
            "Yara Fenwick started teaching climbing classes at a gym in Madrid.",
        ),
    ])
    .await;
    let question = "Who is the professional rock climber who has scaled peaks on three continents?";
    let hits = index.reader.search(&Query::new(question, 3)).await.unwrap();
    assert_eq!(hits[0].text, climber, "{hits:#?}");
    assert_eq!(hits.len(), 3, "{hits:#?}");
}

/// A later text that denies what an older one says ("has never traveled
/// outside his home country" after "has traveled to more than 20 countries")
/// ranks above it, though the question asks in the older's words and
/// matches it far better (0.87 against 0.57 with MiniLM): the older is no
/// longer true. Both come back.
#[tokio::test(flavor = "multi_thread")]
async fn a_later_denial_ranks_above_the_fact_it_denies_though_the_question_matches_the_older_better()
 {
    let old = "Ravi Menon has traveled to more than 20 countries.";
    let new = "Ravi Menon has never traveled beyond his home country.";
    let question = "How many countries has Ravi Menon traveled to?";
    let hits = old_then_new((old, new), question, 5).await;
    let at = |t: &str| hits.iter().position(|h| h.text == t);
    assert!(
        at(new).expect("the denial") < at(old).expect("the older kept"),
        "{hits:#?}"
    );
}

/// The built-in judge keeps a denial of an entry as that entry's update,
/// the denied text as its history, and leaves a fact it does not deny
/// (another thing about the same person) as it was.
#[test]
fn the_built_in_judge_keeps_a_denial_as_an_update_with_the_denied_text_as_history() {
    let t = fresh();
    let dir = t.path();
    let traveled = add(dir, "Ravi Menon has traveled to more than 20 countries.");
    let parks = add(dir, "Ravi Menon enjoys hiking in national parks.");
    consolidate(dir);
    let (e_traveled, _) = holder(dir, &traveled);
    let never = add(
        dir,
        "Ravi Menon has never traveled beyond his home country.",
    );
    consolidate(dir);
    let (id, text) = holder(dir, &never);
    assert_eq!(id, e_traveled, "{:?}", entries(dir));
    assert!(
        text.starts_with("Ravi Menon has never traveled beyond his home country.")
            && text.contains("previously: Ravi Menon has traveled to more than 20 countries."),
        "{text}"
    );
    assert_eq!(
        holder(dir, &parks).1,
        "Ravi Menon enjoys hiking in national parks."
    );
    assert_eq!(entries(dir).len(), 2, "{:?}", entries(dir));
    assert!(check(dir).0, "{}", check(dir).2);
}

/// A later fact that says "now" of something else, with one topic word in
/// common with an older fact on the same person, is a second fact: the
/// built-in judge keeps both as entries of their own rather than folding
/// the older into the newer's history; and "work" that names no job
/// ("make it work", "working on") is not the employment slot. With
/// MiniLM, the default, which puts such pairs over the judge's cosine line.
#[test]
fn the_built_in_judge_keeps_two_facts_on_one_topic_apart_though_the_newer_says_now() {
    let t = fresh();
    let dir = t.path();
    let defaults = "[consolidation]\nmin_facts = 1\nmin_hours = 0.0\n";
    std::fs::write(dir.join("memd.toml"), defaults).unwrap();
    let rabbits = add(dir, "Priya has pet rabbits that always calm her down.");
    let bakery = add(dir, "Omar is determined to make his bakery work.");
    consolidate(dir);
    let park = add(
        dir,
        "Priya took her rabbits to the park today and they are now asleep.",
    );
    let recipes = add(dir, "Omar is working on new recipes for the bakery.");
    consolidate(dir);
    for (fact, text) in [
        (&rabbits, "Priya has pet rabbits that always calm her down."),
        (&bakery, "Omar is determined to make his bakery work."),
        (
            &park,
            "Priya took her rabbits to the park today and they are now asleep.",
        ),
        (&recipes, "Omar is working on new recipes for the bakery."),
    ] {
        assert_eq!(holder(dir, fact).1, text, "{:?}", entries(dir));
    }
    assert_eq!(entries(dir).len(), 4, "{:?}", entries(dir));
    assert!(check(dir).0, "{}", check(dir).2);
}

/// A question about a past time asks what was true then: the fact stated
/// in the month it names comes first, though a later one updates it (the
/// later-stated-first order is for questions that name no time), and the
/// same question without the month still gets the current value first.
#[tokio::test(flavor = "multi_thread")]
async fn a_question_naming_a_past_month_gets_what_was_said_then_first() {
    let (_t, index) = indexed(&[
        ("2026-03-02", "09:00:00", "User works at Acme"),
        ("2026-11-20", "09:00:00", "User now works at Globex"),
    ])
    .await;
    let top = |q: &'static str| {
        let reader = &index.reader;
        async move {
            reader.search(&Query::new(q, 5)).await.unwrap()[0]
                .text
                .clone()
        }
    };
    assert_eq!(
        top("where does the user work").await,
        "User now works at Globex"
    );
    for q in [
        "where did the user work in March 2026",
        "Where did the user work on 2 March, 2026?",
    ] {
        assert_eq!(top(q).await, "User works at Acme", "{q}");
    }
    assert_eq!(
        top("where does the user work in November 2026").await,
        "User now works at Globex"
    );
}
