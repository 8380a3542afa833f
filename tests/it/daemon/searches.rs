//! What a daemon's searches see: the index kept equal to the files however
//! they change, while bulk posts are indexed, and the rows it holds back
//! from the table until it writes them.

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use crate::serving::*;
use crate::support::*;

/// Index writes hold a lock across processes: 8 appenders that each sync
/// the index leave exactly one row per fact. A process that is not the
/// daemon never rebuilds the index the daemon owns, whatever embedder it
/// asks for, and `reindex` repairs duplicate rows a sync cannot see.
#[tokio::test(flavor = "multi_thread")]
async fn the_index_stays_equal_to_the_files_across_processes() {
    let (_t, layout) = memory_dir();
    write_config(&layout, None, "");
    let root = layout.root.clone();
    tokio::task::spawn_blocking(move || {
        let children: Vec<_> = (0..8)
            .map(|c| {
                let facts: String = (0..10)
                    .map(|n| format!("Appender {c} remembers item number {n}\n"))
                    .collect();
                let mut child = Command::new(env!("CARGO_BIN_EXE_memd"))
                    .arg("--dir")
                    .arg(&root)
                    .args(["add", "--stdin"])
                    .env_remove("MEMD_DIR")
                    .stdin(Stdio::piped())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .unwrap();
                child
                    .stdin
                    .take()
                    .unwrap()
                    .write_all(facts.as_bytes())
                    .unwrap();
                child
            })
            .collect();
        for mut c in children {
            assert!(c.wait().unwrap().success());
        }
        let out = memd(&root, &["check", "--json"]);
        let report: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(out.status.success(), "{report}");
        assert_eq!(report["index_rows"], 80, "{report}");
    })
    .await
    .unwrap();

    // A daemon owns the index: another process asking for another
    // embedder is refused, and the daemon's index is untouched.
    let server = scripted(|_, body| Reply::Json(embeddings_reply(body, 8))).await;
    let l = layout.clone();
    let d = tokio::task::spawn_blocking(move || start(&l, &[]))
        .await
        .unwrap();
    let mut other = memd::config::Config::load(&layout.root).unwrap();
    other.embedder.kind = memd::config::EmbedderKind::Openai;
    other.embedder.base_url = server.url.clone();
    other.embedder.model = "fake-embed".into();
    let err = memd::index::Index::open(&memd::Memory::new(layout.clone(), other.clone()))
        .await
        .err()
        .unwrap();
    assert!(format!("{err}").contains("the daemon"), "{err}");
    let base = d.base.clone();
    let (code, hits) = tokio::task::spawn_blocking(move || {
        Http::at(&base, None).get("/v1/search?q=appender%20remembers")
    })
    .await
    .unwrap();
    assert_eq!(code, 200);
    assert!(!hits["hits"].as_array().unwrap().is_empty(), "{hits}");
    drop(d);
}

/// While the daemon indexes a bulk post (here: an embedder that takes its
/// time over those facts), `wait=false` searches answer from the index as
/// it is and say which files it does not cover yet; a default search waits
/// and finds the new facts (read-your-writes).
#[tokio::test(flavor = "multi_thread")]
async fn searches_stay_answerable_while_a_bulk_post_is_indexed() {
    let (_t, layout) = memory_dir();
    let server = scripted(|_, body| {
        let reply = embeddings_reply(body, 8);
        match body.to_string().contains("slowtoken") {
            true => Reply::Slow(Duration::from_secs(6), reply),
            false => Reply::Json(reply),
        }
    })
    .await;
    let config = format!(
        "[embedder]\nkind = \"openai\"\nbase_url = \"{}\"\nmodel = \"fake-embed\"\n\
         api_key_env = \"MEMD_TEST_NO_SUCH_KEY\"\ntimeout_seconds = 60\n",
        server.url
    );
    std::fs::write(layout.config_file(), config).unwrap();
    let l = layout.clone();
    let d = tokio::task::spawn_blocking(move || start(&l, &[]))
        .await
        .unwrap();
    let base = d.base.clone();
    tokio::task::spawn_blocking(move || {
        let http = Http::at(&base, None);
        let text = json!({"text": "User owns a green canoe"}).to_string();
        assert_eq!(http.post("/v1/facts", text).0, 200);
        let (code, hits) = http.get("/v1/search?q=green%20canoe");
        assert_eq!(code, 200, "{hits}");
        assert!(hits.to_string().contains("green canoe"), "{hits}");

        let bulk: Vec<String> = (0..50)
            .map(|i| format!("User noted slowtoken item {i}"))
            .collect();
        let (code, _) = http.post("/v1/facts", json!({ "texts": bulk }).to_string());
        assert_eq!(code, 200);
        let (code, now) = http.get("/v1/search?q=green%20canoe&wait=false");
        assert_eq!(code, 200, "{now}");
        assert!(now["hits"].to_string().contains("green canoe"), "{now}");
        assert!(!now["hits"].to_string().contains("slowtoken"), "{now}");
        let behind = now["indexing"]["files_behind"].to_string();
        assert!(behind.contains("archive/"), "{now}");

        let (code, waited) = http.get("/v1/search?q=noted%20item%207");
        assert_eq!(code, 200, "{waited}");
        // One shape, waited for or not: the hits, and what is not indexed.
        assert!(
            waited["hits"].is_array() && waited["indexing"].is_null(),
            "{waited}"
        );
        assert!(waited.to_string().contains("slowtoken item 7"), "{waited}");
        let (_, after) = http.get("/v1/search?q=green%20canoe&wait=false");
        assert!(after["indexing"].is_null(), "{after}");
    })
    .await
    .unwrap();
    drop(d);
}

/// A daemon keeps each day file as it last read it and reads only what an
/// append added; a file changed anywhere else, in place (same inode, as
/// nano saves) and grown too, or a line that continues the last fact, is
/// read again where it changed.
#[test]
fn a_day_file_changed_before_its_end_is_read_again_not_only_its_new_tail() {
    use std::os::unix::fs::MetadataExt;
    let (_t, layout) = memory_dir();
    write_config(&layout, None, "");
    let d = start(&layout, &[]);
    let c = Http::new(&d, None);
    let hits = |q: &str| searched(&c, q);
    let path = layout.archive_file("2026-01-01");
    let mut text = String::from("# 2026-01-01\n\n## 09:00:00\n");
    for i in 0..40 {
        text.push_str(&format!("- The user filler fact number {i}\n"));
    }
    text.push_str("- The user Zqearly likes tea\n- The user Zqlast\n");
    std::fs::write(&path, &text).unwrap();
    assert!(hits("Zqearly").contains("Zqearly likes tea"));

    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    writeln!(f, "  and Zqcontinued on the next line").unwrap();
    drop(f);
    let found = hits("Zqcontinued");
    assert!(
        found.contains("The user Zqlast and Zqcontinued on the next line"),
        "a line continuing the last fact makes it one fact: {found}"
    );

    let ino = std::fs::metadata(&path).unwrap().ino();
    let now = std::fs::read_to_string(&path).unwrap();
    let edited = now.replace("Zqearly likes tea", "Zqedited likes coffee") + "- The user Zqgrown\n";
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(&path)
        .unwrap();
    f.write_all(edited.as_bytes()).unwrap();
    drop(f);
    assert_eq!(
        std::fs::metadata(&path).unwrap().ino(),
        ino,
        "rewritten in place"
    );
    assert!(hits("Zqgrown").contains("Zqgrown"));
    let found = hits("Zqedited");
    assert!(found.contains("Zqedited likes coffee"), "{found}");
    assert!(!hits("Zqearly").contains("Zqearly"), "the old text is gone");
    drop(d);
}

/// The hits of a search for `q` (up to 50, any score), as JSON text.
fn searched(c: &Http, q: &str) -> String {
    let (code, hits) = c.get(&format!("/v1/search?q={q}&k=50&min_score=0"));
    assert_eq!(code, 200, "{hits}");
    hits.to_string()
}

/// A daemon's sync before a search stats only the day files the kernel
/// says changed, and its next search still finds at once what
/// every way of changing the archive wrote: an append by hand, a write
/// through a day file that is a symbolic link or a hard link to a file
/// elsewhere (which the kernel does not report on the archive), an
/// editor's save by rename, a new day file, and the archive directory
/// itself replaced. Its status, which counts the day files it keeps
/// parsed (reading again only those that changed), says after each the
/// same days and facts as a status read from the files.
#[test]
fn a_daemons_next_search_sees_every_way_the_archive_changes() {
    use std::io::Write;
    let (_t, layout) = memory_dir();
    write_config(&layout, None, "");
    let d = start(&layout, &[]);
    let c = Http::new(&d, None);
    let finds = |marker: &str, how: &str| {
        let hits = searched(&c, marker);
        assert!(hits.contains(marker), "{how}: {hits}");
        let (code, kept) = c.get("/v1/status");
        assert_eq!(code, 200, "{kept}");
        let memory = memd::Memory::open(&layout.root).unwrap();
        let read = serde_json::to_value(memd::status::gather(&memory, None).unwrap()).unwrap();
        for field in ["days", "facts", "facts_forgotten", "pending_facts"] {
            assert_eq!(kept[field], read[field], "{how}: status {field}");
        }
    };
    let day = |d: &str| layout.archive_file(d);
    let page = |d: &str, text: &str| format!("# {d}\n\n## 09:00:00\n- {text}\n");
    let append = |path: &std::path::Path, text: &str| {
        let mut f = std::fs::OpenOptions::new().append(true).open(path).unwrap();
        writeln!(f, "- {text}").unwrap();
    };
    std::fs::write(day("2026-01-01"), page("2026-01-01", "The user Zqfirst")).unwrap();
    finds("Zqfirst", "a day file written before the first search");
    append(&day("2026-01-01"), "The user Zqappended");
    finds("Zqappended", "an append by hand");

    let elsewhere = layout.root.join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let target = elsewhere.join("linked.md");
    std::fs::write(&target, page("2026-01-02", "The user Zqlinked")).unwrap();
    std::os::unix::fs::symlink(&target, day("2026-01-02")).unwrap();
    finds("Zqlinked", "a new day file that is a symbolic link");
    append(&target, "The user Zqthroughthelink");
    finds("Zqthroughthelink", "a write to a symbolic link's target");

    let hard = elsewhere.join("hard.md");
    std::fs::write(&hard, page("2026-01-03", "The user Zqhard")).unwrap();
    std::fs::hard_link(&hard, day("2026-01-03")).unwrap();
    finds("Zqhard", "a new day file that is a hard link");
    append(&hard, "The user Zqthroughthehardlink");
    finds(
        "Zqthroughthehardlink",
        "a write through the other hard link",
    );

    let archive = layout.root.join("archive");
    let saved = archive.join(".2026-01-01.md.swp");
    let before = std::fs::read_to_string(day("2026-01-01")).unwrap();
    std::fs::write(&saved, format!("{before}- The user Zqsaved\n")).unwrap();
    std::fs::rename(&saved, day("2026-01-01")).unwrap();
    finds("Zqsaved", "an editor's save by rename");

    let old = layout.root.join("archive.old");
    std::fs::rename(&archive, &old).unwrap();
    std::fs::create_dir(&archive).unwrap();
    std::fs::copy(old.join("2026-01-01.md"), day("2026-01-01")).unwrap();
    std::fs::write(day("2026-01-04"), page("2026-01-04", "The user Zqreplaced")).unwrap();
    finds("Zqreplaced", "the archive directory replaced");
    append(&day("2026-01-04"), "The user Zqafterwards");
    finds("Zqafterwards", "an append to the new archive directory");
    std::fs::remove_file(day("2026-01-01")).unwrap();
    finds("Zqreplaced", "a day file removed");
    drop(d);
}

/// The daemon shows a fact's rows to searches before LanceDB commits
/// them: stopped for good between the two, its search finds the fact, and
/// the table does not hold it yet. Killed there, the next daemon indexes
/// the fact from its file: its search gives the same hits in the same
/// order, and `memd check` passes.
#[test]
fn a_search_finds_a_fact_the_daemon_has_not_yet_written_to_the_table_as_it_will_once_written() {
    let (_t, layout) = memory_dir();
    write_config(&layout, None, "");
    let dir = layout.root.as_path();
    for text in [
        "The user grows tomatoes on the balcony",
        "The user cycles to work on Mondays",
        "The user keeps bees in the garden",
    ] {
        crate::trust::add(dir, text);
    }
    crate::trust::ok(dir, &["search", "garden"]);
    let fact = "The user planted Zqbasil beside the tomatoes";
    let marker = dir.join(".memd").join("paused-at-index-shown");
    let hits = |c: &Http| -> Vec<(String, String)> {
        let (code, v) = c.get("/v1/search?q=Zqbasil%20tomatoes&k=10&min_score=0");
        assert_eq!(code, 200, "{v}");
        let hits = v["hits"].as_array().unwrap_or_else(|| panic!("{v}"));
        let pair = |h: &Value| (h["id"].to_string(), h["text"].to_string());
        hits.iter().map(pair).collect()
    };

    let d = start(&layout, &[("MEMD_PAUSE_AT", "index-shown")]);
    // A search that waited for the stopped sync would wait for good.
    let c = Http {
        client: reqwest::Client::builder()
            .timeout(Duration::from_secs(60))
            .build()
            .unwrap(),
        ..Http::new(&d, None)
    };
    // A search first: the daemon then holds the rows' words (as it does
    // soon after it starts), which is where a sync shows its rows.
    let before = hits(&c);
    assert!(
        !before.iter().any(|(_, t)| t.contains("Zqbasil")),
        "{before:?}"
    );
    let (code, v) = c.post("/v1/facts", json!({ "text": fact }).to_string());
    assert_eq!(code, 200, "{v}");
    wait_until("the daemon's sync stops with the fact shown", || {
        marker.exists()
    });
    let shown = hits(&c);
    assert!(
        shown.first().is_some_and(|(_, t)| t.contains("Zqbasil")),
        "found before the table holds it: {shown:?}"
    );
    let in_table = run(async {
        let table = crate::support::lance_table(&layout).await;
        let filter = format!("text = '{fact}'");
        table.count_rows(Some(filter)).await.unwrap()
    });
    assert_eq!(in_table, 0, "the table holds the fact already");
    drop(d);
    std::fs::remove_file(&marker).unwrap();

    let d = start(&layout, &[]);
    let c = Http::new(&d, None);
    assert_eq!(hits(&c), shown, "the same search once the table holds it");
    drop(d);
    let (passed, _, v) = crate::trust::check(dir);
    assert!(passed, "{v}");
}

/// A daemon serving a memory of one fact, holding rows back from the
/// table for ten minutes (a test build's `MEMD_HELD_MS`), its words loaded
/// by a first search; with a client.
fn holding_daemon(layout: &memd::Layout) -> (Daemon, Http) {
    write_config(layout, None, "");
    crate::trust::add(&layout.root, "The user keeps bees in the garden");
    let d = start(layout, &[("MEMD_HELD_MS", "600000")]);
    let http = Http::new(&d, None);
    let (code, hits) = http.get("/v1/search?q=bees%20garden");
    assert!(code == 200 && hits.to_string().contains("bees"), "{hits}");
    (d, http)
}

/// POST `text` as a fact that looks up similar entries (its rows held).
fn add_similar(http: &Http, text: &str) {
    let body = json!({"text": text, "similar": true});
    assert_eq!(http.post("/v1/facts", body.to_string()).0, 200);
}

/// SIGTERM the daemon, which must then exit cleanly.
fn stop_gracefully(mut d: Daemon) {
    let pid = d.child.id().to_string();
    let term = Command::new("kill").args(["-TERM", &pid]).status();
    assert!(term.unwrap().success());
    assert!(d.child.wait().unwrap().success());
}

/// A daemon's adds that look up similar entries hold their rows back from
/// the table, shown to searches (`index::held`), and the daemon commits
/// them when it stops: after a SIGTERM the table holds every fact and
/// `memd check` sees nothing left to sync.
#[test]
fn a_daemon_stopped_commits_the_rows_it_held() {
    let (_t, layout) = memory_dir();
    let (d, http) = holding_daemon(&layout);
    let dir = layout.root.clone();
    for i in 0..5 {
        add_similar(&http, &format!("Zqlily{i} flowers in June"));
    }
    let (_, hits) = http.get("/v1/search?q=Zqlily4");
    assert!(hits.to_string().contains("Zqlily4 "), "{hits}");
    let (passed, _, v) = crate::trust::check(&dir);
    assert!(passed && crate::trust::unsynced_notes(&v) > 0, "held: {v}");
    stop_gracefully(d);
    let (passed, _, v) = crate::trust::check(&dir);
    assert!(passed && crate::trust::unsynced_notes(&v) == 0, "{v}");
    assert_eq!(v["index_rows"], 6, "{v}");
}

/// Rows a daemon holds back from the table (`index::held`) leave their day
/// file marked as syncing, and a handle that writes past the daemon (the
/// random test of user actions opens one) syncs that file and adds them:
/// the daemon then takes its held rows back instead of adding them a
/// second time (the random test found 2 rows for a fact).
#[test]
fn a_daemon_holding_rows_another_handle_indexed_adds_none_twice() {
    let (_t, layout) = memory_dir();
    let (d, http) = holding_daemon(&layout);
    let dir = layout.root.clone();
    for i in 0..2 {
        add_similar(&http, &format!("Zqaster{i} flowers in May"));
    }
    run(async {
        let memory = memd::Memory::open(&dir).unwrap();
        let past = memd::index::Index::open(&memory).await.unwrap();
        let synced = past.writer.sync().await.unwrap();
        assert_eq!(synced.rows_added, 2, "{synced:?}");
    });
    stop_gracefully(d);
    let (passed, kinds, v) = crate::trust::check(&dir);
    assert!(passed, "{kinds:?} {v}");
    assert_eq!(v["index_rows"], 3, "{v}");
}
