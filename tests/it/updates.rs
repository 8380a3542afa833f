//! Updates an agent can trust (issue 32): a run that leaves facts pending
//! because its judge failed says so.

use crate::support::{Reply, chat, memd, scripted, stderr};
use crate::trust::{add, check, entries, fresh};

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
