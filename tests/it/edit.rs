//! `memd edit` / `PATCH /v1/entries/{id}` / MCP `edit_entry`: an
//! entry corrected by request keeps its id and facts, shows in MEMORY.md
//! and search, is journaled, and is undone as a run.

use std::io::{BufRead, Write};

use serde_json::{Value, json};

use crate::entry_api::{json_of, two_entries, with};
use crate::support::{memd, stderr};
use crate::trust::ok;

fn checked(dir: &std::path::Path) {
    let out = memd(dir, &["check"]);
    assert!(out.status.success(), "{}", crate::support::stdout(&out));
}

#[test]
fn an_edited_entry_keeps_its_id_and_facts_shows_everywhere_and_is_undone_as_a_run() {
    let t = two_entries();
    let dir = t.path();
    let was = with(&json_of(dir, &["entries"]), "Bubbles").clone();
    let id = was["id"].as_str().unwrap().to_string();
    let core = std::fs::read_to_string(dir.join("MEMORY.md")).unwrap();
    assert!(core.contains("Bubbles"), "{core}");

    let text = "Keeps a rye sourdough starter called Bubbles";
    let edited = json_of(dir, &["edit", &format!("core:{id}"), "--text", text]);
    let run = edited["run"].as_str().unwrap().to_string();
    let now = &edited["entry"];
    assert_eq!(now["id"], was["id"]);
    assert_eq!(now["text"], text);
    assert_eq!(now["sources"], was["sources"], "its facts stay");
    assert_eq!(now["edited"], false, "memd's own edit is not a hand edit");
    assert_eq!(&json_of(dir, &["entries", &id]), now);
    let core = std::fs::read_to_string(dir.join("MEMORY.md")).unwrap();
    assert!(
        core.contains("rye sourdough") && core.contains(&id),
        "{core}"
    );
    let hits = json_of(dir, &["search", "rye sourdough", "-k", "3"]);
    assert!(hits.to_string().contains("rye sourdough"), "{hits:#}");
    let runs = json_of(dir, &["runs"]);
    let listed = runs.as_array().unwrap().iter().find(|r| r["id"] == run);
    assert_eq!(listed.unwrap()["kind"], "edit", "{runs:#}");
    let history = ok(dir, &["history", &id]);
    assert!(history.contains("EDIT"), "{history}");
    checked(dir);

    // The same edit again changes nothing and journals nothing.
    let again = json_of(dir, &["edit", &id, "--text", text]);
    assert!(again.get("run").is_none(), "{again:#}");

    ok(dir, &["undo", &run]);
    let back = json_of(dir, &["entries", &id]);
    assert_eq!(back["text"], was["text"]);
    let core = std::fs::read_to_string(dir.join("MEMORY.md")).unwrap();
    assert!(!core.contains("rye sourdough"), "{core}");
    checked(dir);
}

/// Through HTTP and MCP, on a file a person edited: the edit lands on
/// what is there; a pin and a category of the entry's own are set and
/// cleared; an empty text, an unknown field and an unknown id are refused
/// with nothing written.
#[test]
fn http_and_mcp_edit_what_the_file_holds_and_refuse_what_would_lose_an_entry() {
    let t = two_entries();
    let dir = t.path();
    let all = json_of(dir, &["entries"]);
    let padel = with(&all, "padel")["id"].as_str().unwrap().to_string();
    let bubbles = with(&all, "Bubbles")["id"].as_str().unwrap().to_string();
    let file = dir.join("consolidated/memory.md");
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, text.replace("called Bubbles", "called Bubbles II")).unwrap();

    let layout = memd::Layout::open(dir).unwrap();
    let d = crate::serving::start_in_process(&layout);
    let c = crate::serving::Http::at(&d.base, None);
    let path = format!("/v1/entries/{padel}");
    let (status, body) = c.patch(&path, json!({"pinned": true, "category": "weekly"}));
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["entry"]["pinned"], true);
    assert_eq!(body["entry"]["categories"], json!(["weekly"]));
    assert_eq!(body["entry"]["text"], "Plays padel on Tuesdays");
    let (_, weekly) = c.get("/v1/entries?category=weekly");
    assert_eq!(weekly.as_array().unwrap().len(), 1, "{weekly}");
    for (bad, code) in [
        (json!({"text": " \n\n "}), 400),
        (json!({"colour": "red"}), 422),
    ] {
        let (status, body) = c.patch(&path, bad);
        assert_eq!(status, code, "{body}");
    }
    assert_eq!(
        c.patch("/v1/entries/e-00000bad", json!({"pinned": true})).0,
        404
    );
    d.stop();
    let hand = json_of(dir, &["entries", &bubbles]);
    assert!(hand["text"].as_str().unwrap().ends_with("Bubbles II"));

    let (mut child, mut stdin, mut out) = crate::serving::spawn_mcp_with(dir, &[]);
    let msg = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "edit_entry", "arguments": {"id": padel, "category": "", "pinned": false}}});
    writeln!(stdin, "{msg}").unwrap();
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    let r: Value = serde_json::from_str(&line).unwrap();
    let said = r["result"]["content"][0]["text"].as_str().unwrap();
    assert!(said.starts_with("edited (run r-"), "{said}");
    drop(stdin);
    child.wait().unwrap();
    let now = json_of(dir, &["entries", &padel]);
    assert_eq!(now["pinned"], false);
    assert_eq!(now["categories"], json!(["sport"]), "its facts' again");
    let out = memd(dir, &["edit", &padel]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    checked(dir);
}

/// SIGKILL after the edit's journal record and before its text lands:
/// `memd check` reports the unfinished edit, and making it again settles
/// it.
#[test]
fn an_edit_killed_before_its_text_lands_is_reported_and_finished_by_making_it_again() {
    let t = two_entries();
    let dir = t.path();
    let id = with(&json_of(dir, &["entries"]), "padel")["id"]
        .as_str()
        .unwrap()
        .to_string();
    let args = ["edit", &id, "--text", "Plays padel on Thursdays"];
    assert!(crate::support::pause_and_kill(dir, &args, "edit-journaled"));
    let report = memd(dir, &["check", "--json"]);
    assert!(!report.status.success());
    let said = crate::support::stdout(&report);
    assert!(
        said.contains("journal_disagrees") && said.contains("did not finish"),
        "{said}"
    );
    ok(dir, &args);
    assert_eq!(
        json_of(dir, &["entries", &id])["text"],
        "Plays padel on Thursdays"
    );
    checked(dir);
}
