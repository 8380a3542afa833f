//! Entries as a resource: listed and got by id in one shape from the CLI,
//! HTTP and MCP, with the categories and sessions of their facts kept
//! through consolidation.

use std::io::{BufRead, Write};
use std::path::Path;

use serde_json::{Value, json};

use crate::support::{memd, stderr};
use crate::trust::{consolidate, fresh, ok};

/// `memd --dir DIR ARGS… --json`, read as JSON.
pub(crate) fn json_of(dir: &Path, args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.push("--json");
    serde_json::from_str(&ok(dir, &all)).unwrap()
}

/// A memory with a fact said twice in two sessions under two categories
/// (one entry holds both) and one other fact; consolidated.
pub(crate) fn two_entries() -> tempfile::TempDir {
    let t = fresh();
    let dir = t.path();
    for args in [
        [
            "add",
            "Keeps a sourdough starter called Bubbles",
            "--category",
            "food",
            "--session",
            "s1",
        ],
        [
            "add",
            "keeps a sourdough starter called Bubbles",
            "--category",
            "kitchen",
            "--session",
            "s2",
        ],
        [
            "add",
            "Plays padel on Tuesdays",
            "--category",
            "sport",
            "--session",
            "s1",
        ],
    ] {
        ok(dir, &args);
    }
    consolidate(dir);
    t
}

pub(crate) fn with<'a>(all: &'a Value, needle: &str) -> &'a Value {
    all.as_array()
        .unwrap()
        .iter()
        .find(|e| e["text"].as_str().unwrap().contains(needle))
        .unwrap_or_else(|| panic!("no entry with {needle:?}: {all:#}"))
}

/// An entry holds the categories and sessions of every fact it folded in,
/// so a consolidation that merges a restatement keeps both; the filters
/// keep what they name; one entry by id (as an entry or as its MEMORY.md
/// row names it) is what the list shows.
#[test]
fn entries_are_listed_and_got_by_id_with_the_categories_of_all_their_facts() {
    let t = two_entries();
    let dir = t.path();
    let all = json_of(dir, &["entries"]);
    assert_eq!(all.as_array().unwrap().len(), 2, "{all:#}");
    let bubbles = with(&all, "Bubbles");
    assert_eq!(bubbles["categories"], json!(["food", "kitchen"]), "{all:#}");
    assert_eq!(bubbles["sessions"], json!(["s1", "s2"]), "{all:#}");
    assert_eq!(bubbles["sources"].as_array().unwrap().len(), 2, "{all:#}");
    let id = bubbles["id"].as_str().unwrap();

    let kitchen = json_of(dir, &["entries", "--category", "kitchen"]);
    assert_eq!(kitchen, json!([bubbles]));
    let s1 = json_of(dir, &["entries", "--session", "s1"]);
    assert_eq!(s1.as_array().unwrap().len(), 2, "{s1:#}");
    assert_eq!(
        json_of(dir, &["entries", "--since", "2999-01-01"]),
        json!([])
    );
    assert_eq!(json_of(dir, &["entries", "--edited"]), json!([]));

    assert_eq!(&json_of(dir, &["entries", id]), bubbles);
    assert_eq!(&json_of(dir, &["entries", &format!("core:{id}")]), bubbles);
    let text = ok(dir, &["entries", id]);
    assert!(text.contains("categories: food, kitchen"), "{text}");

    let out = memd(dir, &["entries", "--since", "last week"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(stderr(&out).contains("since must be a day"), "{out:?}");
    let out = memd(dir, &["entries", "e-00000bad"]);
    assert_eq!(out.status.code(), Some(4), "{out:?}");
}

/// A forgotten entry is neither listed nor got; an entry edited by hand
/// is listed with its new text and marked.
#[test]
fn a_forgotten_entry_is_not_found_and_a_hand_edit_is_listed_as_written() {
    let t = two_entries();
    let dir = t.path();
    let all = json_of(dir, &["entries"]);
    let padel = with(&all, "padel")["id"].as_str().unwrap().to_string();
    ok(dir, &["forget", &padel]);
    let out = memd(dir, &["entries", &padel]);
    assert_eq!(out.status.code(), Some(4), "{out:?}");
    assert_eq!(json_of(dir, &["entries"]).as_array().unwrap().len(), 1);

    let file = dir.join("consolidated/memory.md");
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, text.replace("called Bubbles", "called Bubbles II")).unwrap();
    let edited = json_of(dir, &["entries", "--edited"]);
    assert_eq!(edited.as_array().unwrap().len(), 1, "{edited:#}");
    assert!(edited[0]["text"].as_str().unwrap().ends_with("Bubbles II"));
    assert_eq!(edited[0]["edited"], true);
    let checked = memd(dir, &["check"]);
    assert!(checked.status.success(), "{}", stderr(&checked));
}

/// The HTTP API and MCP give what the CLI gives: the same JSON from `GET
/// /v1/entries` (filters in the query) and `GET /v1/entries/{id}`, 404 for
/// an id that names no live entry, and one line per entry from MCP.
#[test]
fn http_and_mcp_give_the_entries_the_cli_gives() {
    let t = two_entries();
    let dir = t.path();
    let all = json_of(dir, &["entries"]);
    let food = json_of(dir, &["entries", "--category", "food"]);
    let id = with(&all, "Bubbles")["id"].as_str().unwrap().to_string();
    let layout = memd::Layout::open(dir).unwrap();
    let d = crate::serving::start_in_process(&layout);
    let c = crate::serving::Http::at(&d.base, None);
    assert_eq!(c.get("/v1/entries"), (200, all.clone()));
    assert_eq!(c.get("/v1/entries?category=food"), (200, food));
    assert_eq!(
        c.get(&format!("/v1/entries/{id}")),
        (200, with(&all, "Bubbles").clone())
    );
    assert_eq!(c.get("/v1/entries/e-00000bad").0, 404);
    assert_eq!(c.get("/v1/entries?since=soon").0, 400);
    d.stop();

    let (mut child, mut stdin, mut out) = crate::serving::spawn_mcp_with(dir, &[]);
    let mut call = |n: u32, name: &str, args: Value| -> String {
        let msg = json!({"jsonrpc": "2.0", "id": n, "method": "tools/call",
            "params": {"name": name, "arguments": args}});
        writeln!(stdin, "{msg}").unwrap();
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
        let r: Value = serde_json::from_str(&line).unwrap();
        r["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let listed = call(1, "list_entries", json!({"category": "sport"}));
    assert!(
        listed.starts_with("- [e-") && listed.contains("padel"),
        "{listed}"
    );
    assert_eq!(listed.lines().count(), 1, "{listed}");
    let got = call(2, "get_entry", json!({"id": format!("core:{id}")}));
    assert!(
        got.contains("Bubbles") && got.contains("categories: food, kitchen"),
        "{got}"
    );
    drop(stdin);
    child.wait().unwrap();
}

/// `search --exclude-core` leaves out MEMORY.md's lines and the entries it
/// has a line for (an agent has them in its prompt already), and fills
/// its places with the other hits; without it they come back.
#[test]
fn a_search_can_leave_out_what_memory_md_already_holds() {
    let t = two_entries();
    let dir = t.path();
    ok(dir, &["add", "Bought a sourdough tin on Friday"]);
    let core = std::fs::read_to_string(dir.join("MEMORY.md")).unwrap();
    assert!(core.contains("Bubbles"), "{core}");
    let search = |extra: &[&str]| {
        let mut args = vec![
            "search",
            "sourdough starter Bubbles",
            "-k",
            "3",
            "--min-score",
            "0",
        ];
        args.extend(extra);
        json_of(dir, &args)
    };
    let all = search(&[]);
    let bubbles = |h: &&Value| h["text"].as_str().unwrap().contains("Bubbles");
    assert!(
        all.as_array().unwrap().iter().any(|h| bubbles(&h)),
        "{all:#}"
    );
    let outside = search(&["--exclude-core"]);
    let hits = outside.as_array().unwrap();
    assert!(hits.iter().all(|h| h["kind"] != "core"), "{outside:#}");
    assert!(
        hits.iter().all(|h| !(h["kind"] == "entry" && bubbles(&h))),
        "{outside:#}"
    );
    assert!(
        hits.iter()
            .any(|h| h["text"] == "Bought a sourdough tin on Friday"),
        "{outside:#}"
    );
}

/// Scores run from 0 to 1 and say how well a hit matches: a row said word
/// for word scores 1 (its words, and its meaning). `min_score` leaves out
/// what scores less, so a question nothing answers can come back empty;
/// a score outside 0 to 1 is refused.
#[test]
fn search_scores_run_from_0_to_1_and_min_score_leaves_out_what_matches_little() {
    let t = two_entries();
    let dir = t.path();
    let scores = |hits: &Value| -> Vec<f64> {
        hits.as_array()
            .unwrap()
            .iter()
            .map(|h| h["score"].as_f64().unwrap())
            .collect()
    };
    let all = json_of(
        dir,
        &["search", "Plays padel on Tuesdays", "--min-score", "0"],
    );
    let padel = with(&all, "padel");
    assert!(padel["score"].as_f64().unwrap() > 0.99, "{all:#}");
    assert!(
        scores(&all).iter().all(|s| (0.0..=1.0).contains(s)),
        "{all:#}"
    );
    let loose = json_of(dir, &["search", "padel sourdough", "--min-score", "0"]);
    let strict = json_of(dir, &["search", "padel sourdough", "--min-score", "0.9"]);
    assert!(scores(&strict).iter().all(|s| *s >= 0.9), "{strict:#}");
    assert!(
        strict.as_array().unwrap().len() < loose.as_array().unwrap().len(),
        "{loose:#}\n{strict:#}"
    );
    let none = json_of(
        dir,
        &["search", "quantum chromodynamics", "--min-score", "0.5"],
    );
    assert_eq!(none, json!([]));
    let out = memd(dir, &["search", "padel", "--min-score", "1.5"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

/// `category`, `session` and `since` narrow a search to the facts of
/// them and the entries holding one (with their MEMORY.md lines), from
/// the CLI and HTTP alike.
#[test]
fn a_search_can_be_narrowed_by_category_session_and_day() {
    let t = two_entries();
    let dir = t.path();
    let q = [
        "search",
        "sourdough starter Bubbles padel Tuesdays",
        "--min-score",
        "0",
    ];
    let texts = |extra: &[&str]| -> Vec<String> {
        let mut args = q.to_vec();
        args.extend(extra);
        let hits = json_of(dir, &args);
        hits.as_array()
            .unwrap()
            .iter()
            .map(|h| h["text"].as_str().unwrap().to_lowercase())
            .collect()
    };
    let both = texts(&[]);
    assert!(both.iter().any(|t| t.contains("padel")) && both.iter().any(|t| t.contains("bubbles")));
    let sport = texts(&["--category", "sport"]);
    assert!(
        !sport.is_empty() && sport.iter().all(|t| t.contains("padel")),
        "{sport:?}"
    );
    let s2 = texts(&["--session", "s2"]);
    assert!(
        !s2.is_empty() && s2.iter().all(|t| t.contains("bubbles")),
        "{s2:?}"
    );
    assert!(texts(&["--since", "2999-01-01"]).is_empty());
    let out = memd(dir, &["search", "padel", "--since", "soon"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));

    let layout = memd::Layout::open(dir).unwrap();
    let d = crate::serving::start_in_process(&layout);
    let c = crate::serving::Http::at(&d.base, None);
    let (code, hits) = c.get("/v1/search?q=sourdough%20padel&category=kitchen&min_score=0");
    assert_eq!(code, 200, "{hits}");
    let hits = hits["hits"].as_array().unwrap();
    assert!(!hits.is_empty(), "{hits:?}");
    assert!(
        hits.iter()
            .all(|h| h["text"].as_str().unwrap().contains("Bubbles")),
        "{hits:?}"
    );
    d.stop();
}

/// A fact stated in two categories is found by a search narrowed to
/// either: near-identical hits collapse after the narrowing, so the twin
/// left out never hides the one let through (the same text under another
/// category came back as nothing).
#[test]
fn a_narrowed_search_finds_a_fact_whose_twin_is_in_another_category() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path();
    crate::trust::ok(dir, &["init"]);
    let text = "User keeps the spare key under the blue flowerpot";
    let id_of = |category: &str| {
        let v: serde_json::Value = serde_json::from_str(&crate::trust::ok(
            dir,
            &["add", text, "--category", category, "--json"],
        ))
        .unwrap();
        v["id"].as_str().unwrap().to_string()
    };
    let (a, b) = (id_of("u1"), id_of("u2"));
    assert_ne!(a, b);
    for (category, id) in [("u1", &a), ("u2", &b)] {
        let hits = json_of(
            dir,
            &["search", "where is the spare key", "--category", category],
        );
        let ids: Vec<&str> = hits
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, [id.as_str()], "--category {category}");
    }
}
