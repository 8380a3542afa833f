//! `[llm] max_tokens_per_day`: a call that could pass the day's budget is
//! not made, its facts wait, and `memd status` and `memd runs` say what was
//! spent. Against a scripted LLM on 127.0.0.1 that reports its usage.

use std::path::Path;

use serde_json::Value;

use crate::support::{Reply, add_every_fact, memd, scripted, stderr};
use crate::trust::{add, fresh, ok};

/// Tokens each scripted reply says it spent.
const PER_CALL: u64 = 2_600;

fn configure(dir: &Path, url: &str, budget: u64) {
    let config = dir.join("memd.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    if let Some(at) = text.find("[promotion]") {
        text.truncate(at);
    }
    text.push_str(&format!(
        "[promotion]\nmax_lines = 0\n[llm]\nbase_url = \"{url}\"\nmodel = \"scripted\"\nmax_attempts = 1\nmax_tokens_per_day = {budget}\n"
    ));
    std::fs::write(&config, text).unwrap();
}

fn json(dir: &Path, args: &[&str]) -> Value {
    serde_json::from_str(&ok(dir, args)).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_call_that_could_pass_the_days_budget_is_not_made_and_its_facts_wait() {
    let server = scripted(|_, body| {
        let mut reply = add_every_fact(body);
        reply["usage"] =
            serde_json::json!({"prompt_tokens": PER_CALL - 200, "completion_tokens": 200});
        Reply::Json(reply)
    })
    .await;
    let t = fresh();
    let dir = t.path().to_path_buf();
    // The first call fits in 3,000; after it, 2,600 are spent and the next
    // asks for its prompt and 512 more.
    configure(&dir, &server.url, 3_000);
    let requests = server.requests.clone();
    let url = server.url.clone();
    tokio::task::spawn_blocking(move || {
        add(&dir, "Lives in Berlin");
        let first = json(&dir, &["consolidate", "--force", "--json"]);
        assert_eq!(first["failed_clusters"], 0, "{first}");
        assert_eq!(requests.lock().unwrap().len(), 1);

        let waiting = add(&dir, "Works at Acme as an engineer");
        let out = memd(&dir, &["consolidate", "--force", "--json"]);
        assert_eq!(out.status.code(), Some(6), "{}", stderr(&out));
        let second: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(second["over_budget"], true, "{second}");
        assert_eq!(
            second["failed_facts"],
            serde_json::json!([waiting]),
            "{second}"
        );
        assert_eq!(requests.lock().unwrap().len(), 1, "no call was made");

        let status = json(&dir, &["status", "--json"]);
        assert_eq!(status["llm_tokens_today"], PER_CALL, "{status}");
        assert_eq!(status["llm_budget"], 3_000, "{status}");
        assert_eq!(status["pending_facts"], 1, "{status}");
        let warned = status["warnings"].as_array().unwrap();
        assert!(
            warned
                .iter()
                .any(|w| w.as_str().unwrap().contains("budget")),
            "{status}"
        );
        let runs = json(&dir, &["runs", "--json"]);
        let run = runs
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["id"] == first["run_id"]);
        assert_eq!(run.unwrap()["tokens"], PER_CALL, "{runs}");
        crate::support::assert_checks_clean(&dir, "a run stopped by the budget");

        // A larger budget lets the waiting fact in.
        configure(&dir, &url, 10_000);
        let third = json(&dir, &["consolidate", "--force", "--json"]);
        assert_eq!(third["failed_clusters"], 0, "{third}");
        assert_eq!(requests.lock().unwrap().len(), 2);
        let status = json(&dir, &["status", "--json"]);
        assert_eq!(
            (
                status["pending_facts"].clone(),
                status["llm_tokens_today"].clone()
            ),
            (0.into(), (2 * PER_CALL).into())
        );
        crate::support::assert_checks_clean(&dir, "the waiting fact consolidated");
    })
    .await
    .unwrap();
}

/// `memd check` finds a run that called the LLM when the day's earlier
/// runs had spent its budget (the usage file edited to say so).
#[test]
fn check_finds_a_call_made_past_the_days_budget() {
    let t = fresh();
    let dir = t.path();
    let day = chrono::Local::now().format("%Y-%m-%d").to_string();
    let line = |run: &str, tokens: u64| {
        format!(
            "{{\"ts\":\"{day}T10:00:00Z\",\"day\":\"{day}\",\"run\":\"{run}\",\"tokens\":{tokens},\"limit\":1000}}\n"
        )
    };
    let mut usage = line("r-20260101T000000-aaaa", 1_000);
    std::fs::write(dir.join(".llm_usage.jsonl"), &usage).unwrap();
    crate::support::assert_checks_clean(dir, "a day's budget spent to the token");
    usage.push_str(&line("r-20260101T000001-bbbb", 10));
    std::fs::write(dir.join(".llm_usage.jsonl"), &usage).unwrap();
    let out = memd(dir, &["check", "--json"]);
    assert!(!out.status.success());
    assert!(crate::support::stdout(&out).contains("past_budget"));
}
