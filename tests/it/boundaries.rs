//! What memd takes from parties it must not trust (docs/GUARANTEES.md,
//! "Who is trusted"): an HTTP client without the token, a browser page of
//! another origin, a tenant and its files, a git remote. Each test here
//! failed on cc218e0.

use serde_json::json;

use crate::serving::*;

/// A root with a token and a memory named `login` that holds a fact.
fn root_with_a_memory_named_login() -> (tempfile::TempDir, InProcess) {
    let root = root_dir();
    let mut opts = open_options(8);
    opts.token = Some("daemon-token".into());
    let d = start_root(root.path(), opts);
    let admin = Http::at(&d.base, Some("daemon-token"));
    for m in ["login", "alice"] {
        let fact = json!({"text": "The vault code is ORCHID-7"}).to_string();
        let (status, _) = admin.post(&format!("/v1/m/{m}/facts"), fact);
        assert_eq!(status, 200, "{m}");
    }
    (root, d)
}

#[test]
fn the_token_is_waived_for_the_login_route_alone_not_for_a_path_that_ends_in_login() {
    let (_root, d) = root_with_a_memory_named_login();
    let none = Http::at(&d.base, None);
    for path in [
        "/m/login",
        "/m/login/",
        "/m/%6cogin",
        "/m/login/archive",
        "/m/alice/entries/login",
        "/m/alice/runs/login",
        "/v1/m/login/status",
    ] {
        let (status, body) = none.send(reqwest::Method::GET, path, None);
        assert_eq!(status, 401, "{path}: {body}");
        assert!(!body.contains("ORCHID"), "{path} shows the memory: {body}");
    }
    let (status, form) = none.send(reqwest::Method::GET, "/m/alice/login", None);
    assert_eq!(status, 200, "the login form itself is open");
    assert!(form.contains("type=\"password\""), "{form}");
    let (status, _) = none.send(reqwest::Method::GET, "/m/login/login", None);
    assert_eq!(status, 200, "the login form of a memory named login");
    d.stop();
}

#[test]
fn the_page_may_not_be_framed_sniffed_or_cached() {
    let (_root, d) = root_with_a_memory_named_login();
    let got = run(async {
        reqwest::Client::new()
            .get(format!("{}/m/alice/", d.base))
            .bearer_auth("daemon-token")
            .send()
            .await
            .unwrap()
    });
    assert_eq!(got.status().as_u16(), 200);
    let h = |name: &str| {
        got.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string()
    };
    assert_eq!(h("x-frame-options"), "DENY");
    assert!(h("content-security-policy").contains("frame-ancestors 'none'"));
    assert_eq!(h("x-content-type-options"), "nosniff");
    assert_eq!(h("cache-control"), "no-store");
    assert!(
        h("content-type").starts_with("text/html"),
        "{}",
        h("content-type")
    );
    d.stop();
}

/// Tokens each scripted reply says it spent.
const PER_CALL: u64 = 2_600;

#[tokio::test(flavor = "multi_thread")]
async fn a_tenant_neither_raises_the_roots_llm_budget_nor_spends_it_again_by_editing_its_files() {
    use crate::support::{Reply, add_every_fact, scripted};
    let server = scripted(|_, body| {
        let mut reply = add_every_fact(body);
        reply["usage"] = json!({"prompt_tokens": PER_CALL - 200, "completion_tokens": 200});
        Reply::Json(reply)
    })
    .await;
    let root = root_dir();
    let toml = root.path().join("memd.toml");
    let mut text = std::fs::read_to_string(&toml).unwrap();
    text.push_str(&format!(
        "[llm]\nbase_url = \"{}\"\nmodel = \"scripted\"\nmax_attempts = 1\nmax_tokens_per_day = 3000\n",
        server.url
    ));
    std::fs::write(&toml, text).unwrap();
    let requests = server.requests.clone();
    let dir = root.path().to_path_buf();
    tokio::task::spawn_blocking(move || {
        let d = start_root(&dir, open_options(1));
        let c = Http::at(&d.base, None);
        let add = |m: &str, t: &str| {
            let (s, body) = c.post(
                &format!("/v1/m/{m}/facts"),
                json!({ "text": t }).to_string(),
            );
            assert_eq!(s, 200, "{body}");
        };
        let consolidate = |m: &str| c.post(&format!("/v1/m/{m}/consolidate"), r#"{"force":true}"#);
        add("alice", "Alice lives in Berlin");
        // The tenant raises its own budget far past the root's.
        let own = dir.join("alice/memd.toml");
        let raised = std::fs::read_to_string(&own)
            .unwrap()
            .replace("max_tokens_per_day = 3000", "max_tokens_per_day = 1000000");
        assert!(raised.contains("1000000"));
        std::fs::write(&own, raised).unwrap();
        // Opening bob closes alice (one open at a time), so her file is read again.
        add("bob", "Bob keeps goats");
        let (s, first) = consolidate("alice");
        assert_eq!(s, 200, "{first}");
        assert_eq!(requests.lock().unwrap().len(), 1);
        add("alice", "Alice works at Acme as an engineer");
        let (_, second) = consolidate("alice");
        assert_eq!(
            requests.lock().unwrap().len(),
            1,
            "over the root's budget: {second}"
        );
        // Nor does deleting the ledger in its own directory give it back.
        let _ = std::fs::remove_file(dir.join("alice/.llm_usage.jsonl"));
        add("bob", "Bob keeps hens");
        let (_, third) = consolidate("alice");
        assert_eq!(requests.lock().unwrap().len(), 1, "spent again: {third}");
        let (_, status) = c.get("/v1/m/alice/status");
        assert_eq!(status["llm_tokens_today"], PER_CALL, "{status}");
        assert_eq!(status["llm_budget"], 3000, "{status}");
        d.stop();
    })
    .await
    .unwrap();
}

/// A client without the token, sending random methods to random paths
/// made from the routes the daemon serves (its OpenAPI document and the
/// page's), their names and ids filled with what a guessing stranger
/// tries: nothing of a memory comes back, and only the login form answers
/// with success.
#[test]
fn a_client_without_the_token_gets_nothing_of_a_memory_on_any_route_or_method() {
    use proptest::prelude::*;
    use proptest::test_runner::{Config, RngSeed, TestRunner};
    let (_root, d) = root_with_a_memory_named_login();
    let admin = Http::at(&d.base, Some("daemon-token"));
    let (_, doc) = admin.get("/v1/openapi.json");
    let mut routes: Vec<String> = doc["paths"].as_object().unwrap().keys().cloned().collect();
    for page in [
        "/",
        "/m/{name}",
        "/m/{name}/",
        "/m/{name}/search",
        "/m/{name}/as-of",
        "/m/{name}/entries/{id}",
        "/m/{name}/entries/{id}/forget",
        "/m/{name}/review",
        "/m/{name}/runs/{run}",
        "/m/{name}/archive",
        "/m/{name}/login",
        "/login",
    ] {
        routes.push(page.to_string());
    }
    let words = [
        "login",
        "alice",
        "LOGIN",
        "%6cogin",
        "..",
        "login/",
        "x%2Flogin",
        "e-1",
        "",
    ];
    let methods = ["GET", "POST", "DELETE", "PATCH", "PUT", "HEAD"];
    let tails = ["", "/", "/login", "?q=vault", "/login/"];
    let none = Http::at(&d.base, None);
    let strategy = (
        0..routes.len(),
        0..methods.len(),
        proptest::collection::vec(0..words.len(), 3),
        0..tails.len(),
    );
    let config = Config {
        cases: 300,
        rng_seed: RngSeed::Fixed(61),
        failure_persistence: None,
        ..Config::default()
    };
    let mut runner = TestRunner::new(config);
    let result = runner.run(&strategy, |(r, m, fill, tail)| {
        let mut path = routes[r].clone();
        for (i, w) in fill.iter().enumerate() {
            if let (Some(a), Some(b)) = (path.find('{'), path.find('}')) {
                path.replace_range(a..=b, words[(*w + i) % words.len()]);
            }
        }
        path.push_str(tails[tail]);
        let method = reqwest::Method::from_bytes(methods[m].as_bytes()).unwrap();
        let body = Some(reqwest::Body::from(r#"{"text":"x","q":"vault"}"#));
        let (status, text) = none.send(method.clone(), &path, body);
        // The client folds `..` before it sends: the form is known by what it says.
        let login = text.contains("<h1>Log in</h1>");
        prop_assert!(!text.contains("ORCHID"), "{method} {path}: {status} {text}");
        prop_assert!(
            !(200..400).contains(&status) || login,
            "{method} {path} answered {status} without the token: {text}"
        );
        Ok(())
    });
    d.stop();
    result.unwrap();
}

/// A hostile tenant, in random sequences: it rewrites its own
/// `memd.toml` (a budget far past the root's, its own LLM address and
/// key variable, its index's table elsewhere, the root's again), deletes the ledger in its own
/// directory, links a file of its archive outside, adds facts and asks
/// for runs, while another memory's traffic closes and reopens it. After
/// every step: nothing reached the address the root did not name, its
/// LLM calls of the day stayed within the root's budget (at most one
/// call of 2,600 tokens in 3,000), and nothing outside was written.
#[tokio::test(flavor = "multi_thread")]
async fn a_hostile_tenant_in_random_sequences_spends_no_more_than_the_root_allows_and_sends_nothing_elsewhere()
 {
    use crate::support::{Reply, add_every_fact, scripted};
    let server = scripted(|_, body| {
        let mut reply = add_every_fact(body);
        reply["usage"] = json!({"prompt_tokens": PER_CALL - 200, "completion_tokens": 200});
        Reply::Json(reply)
    })
    .await;
    let evil = scripted(|_, body| Reply::Json(add_every_fact(body))).await;
    let (good, bad) = (server.url.clone(), evil.url.clone());
    let (calls, stolen) = (server.requests.clone(), evil.requests.clone());
    tokio::task::spawn_blocking(move || {
        use proptest::test_runner::{Config, RngSeed, TestRunner};
        let config = Config {
            cases: 12,
            rng_seed: RngSeed::Fixed(61),
            failure_persistence: None,
            ..Config::default()
        };
        let mut runner = TestRunner::new(config);
        let steps = proptest::collection::vec(0u8..10, 1..16);
        let made = std::sync::atomic::AtomicUsize::new(0);
        let result = runner.run(&steps, |steps| {
            calls.lock().unwrap().clear();
            hostile_tenant(&good, &bad, &steps, &calls, &stolen);
            made.fetch_add(
                calls.lock().unwrap().len(),
                std::sync::atomic::Ordering::Relaxed,
            );
            Ok(())
        });
        result.unwrap();
        let made = made.into_inner();
        assert!(
            made > 0,
            "no sequence made an LLM call: the budget was never tried"
        );
    })
    .await
    .unwrap();
}

type Seen = std::sync::Arc<std::sync::Mutex<Vec<serde_json::Value>>>;

/// One sequence of [`a_hostile_tenant_in_random_sequences_spends_no_more_than_the_root_allows_and_sends_nothing_elsewhere`].
fn hostile_tenant(good: &str, bad: &str, steps: &[u8], calls: &Seen, stolen: &Seen) {
    let (root, text) = root_whose_llm_allows_3000_tokens_a_day(good);
    let outside = tempfile::tempdir().unwrap();
    let canary = outside.path().join("canary.md");
    std::fs::write(&canary, "- someone else's\n").unwrap();
    let d = start_root(root.path(), open_options(1));
    let c = Http::at(&d.base, None);
    let alice = root.path().join("alice");
    let mut log = Vec::new();
    for (n, step) in steps.iter().enumerate() {
        let own = alice.join("memd.toml");
        match step {
            0 => {
                let raised =
                    text.replace("max_tokens_per_day = 3000", "max_tokens_per_day = 1000000");
                let _ = std::fs::write(&own, raised);
            }
            1 => {
                let other = text
                    .replace(good, bad)
                    .replace("[llm]\n", "[llm]\napi_key_env = \"HOME\"\n");
                let _ = std::fs::write(&own, other);
            }
            2 => {
                let _ = std::fs::write(&own, &text);
            }
            3 => {
                let _ = std::fs::remove_file(alice.join(".llm_usage.jsonl"));
            }
            4 => {
                let _ = std::os::unix::fs::symlink(&canary, alice.join("archive/2020-01-01.md"));
            }
            5 => {
                let _ = std::fs::remove_file(alice.join("archive/2020-01-01.md"));
            }
            6 => {
                let fact = json!({"text": format!("Alice said thing {n}")}).to_string();
                c.post("/v1/m/alice/facts", fact);
            }
            7 => {
                c.post("/v1/m/alice/consolidate", r#"{"force":true}"#);
            }
            8 => {
                // Its table elsewhere, written with the root's credentials:
                // refused, naming the key, until the root's text is back
                // (before alice's first write there is no file to set).
                let elsewhere = format!("{text}[index]\nuri = \"s3://someone-else/x\"\n");
                if std::fs::write(&own, elsewhere).is_ok() {
                    let fact = json!({"text": format!("Alice said thing {n}")}).to_string();
                    let (status, reply) = c.post("/v1/m/alice/facts", fact);
                    assert!(
                        status >= 400 && reply.to_string().contains("[index] uri"),
                        "a tenant's own [index] uri was taken: {status} {reply}; steps {log:?}"
                    );
                }
            }
            _ => {
                let fact = json!({"text": format!("Bob said thing {n}")}).to_string();
                c.post("/v1/m/bob/facts", fact);
            }
        }
        log.push(*step);
        the_tenant_crossed_no_boundary(calls, stolen, &canary, &log);
    }
    d.stop();
}

/// A root whose LLM, at `good`, allows 3,000 tokens a day; with the text
/// of its `memd.toml`.
fn root_whose_llm_allows_3000_tokens_a_day(good: &str) -> (tempfile::TempDir, String) {
    let root = root_dir();
    let toml = root.path().join("memd.toml");
    let mut text = std::fs::read_to_string(&toml).unwrap();
    text.push_str(&format!(
        "[llm]\nbase_url = \"{good}\"\nmodel = \"scripted\"\nmax_attempts = 1\nmax_tokens_per_day = 3000\n"
    ));
    std::fs::write(&toml, &text).unwrap();
    (root, text)
}

/// After the steps `log`: alice's LLM calls (in `calls`) within the
/// root's budget, no request at the tenant's address (in `stolen`), and
/// the file `canary` outside the root untouched.
fn the_tenant_crossed_no_boundary(
    calls: &Seen,
    stolen: &Seen,
    canary: &std::path::Path,
    log: &[u8],
) {
    let of_alice = calls
        .lock()
        .unwrap()
        .iter()
        .filter(|r| r.to_string().contains("Alice said"))
        .count();
    assert!(
        of_alice <= 1,
        "alice's calls passed the root's budget: steps {log:?}"
    );
    assert!(
        stolen.lock().unwrap().is_empty(),
        "a request reached the tenant's address: steps {log:?}"
    );
    assert_eq!(
        std::fs::read_to_string(canary).unwrap(),
        "- someone else's\n",
        "steps {log:?}"
    );
}
