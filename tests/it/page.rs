//! The memory's web page (`memd serve` at `/`), driven over HTTP as a
//! browser drives it: pages that read the files, forms that POST with the
//! page's own `Origin`, redirects, the login cookie.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::consolidate::add;
use crate::serving::*;
use crate::support::*;

/// A browser's requests: the page's own origin on every POST, no
/// redirect followed, the cookie it was given kept.
struct Browser {
    base: String,
    client: reqwest::Client,
    cookie: Option<String>,
}

struct Got {
    status: u16,
    body: String,
    location: Option<String>,
    set_cookie: Option<String>,
}

impl Browser {
    fn at(base: &str) -> Browser {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap();
        Browser {
            base: base.to_string(),
            client,
            cookie: None,
        }
    }

    fn send(
        &self,
        method: reqwest::Method,
        path: &str,
        form: Option<&str>,
        origin: Option<&str>,
    ) -> Got {
        run(async {
            let mut req = self.client.request(method, format!("{}{path}", self.base));
            if let Some(c) = &self.cookie {
                req = req.header("cookie", c);
            }
            if let Some(o) = origin {
                req = req
                    .header("origin", o)
                    .header("sec-fetch-site", "same-origin");
            }
            if let Some(f) = form {
                req = req
                    .header("content-type", "application/x-www-form-urlencoded")
                    .body(f.to_string());
            }
            let resp = req.send().await.unwrap();
            let header = |name: &str| {
                resp.headers()
                    .get(name)
                    .and_then(|v| v.to_str().ok())
                    .map(String::from)
            };
            let (location, set_cookie) = (header("location"), header("set-cookie"));
            Got {
                status: resp.status().as_u16(),
                location,
                set_cookie,
                body: resp.text().await.unwrap(),
            }
        })
    }

    fn get(&self, path: &str) -> Got {
        self.send(reqwest::Method::GET, path, None, None)
    }

    /// A form's POST, from the page itself.
    fn post(&self, path: &str, form: &str) -> Got {
        let own = self.base.clone();
        self.send(reqwest::Method::POST, path, Some(form), Some(&own))
    }
}

/// A daemon serving one memory, in this process, with `options`.
pub(crate) fn serve_with(layout: &memd::Layout, options: memd::server::Options) -> InProcess {
    let memory = memd::Memory::open(&layout.root).unwrap();
    let d = on_port_zero(move |listener, stopped| async move {
        let shutdown = async move {
            let _ = stopped.await;
        };
        memd::server::serve(
            memd::server::Served::One(memory),
            listener,
            options,
            shutdown,
        )
        .await
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    while memd::server::running(layout).is_none() {
        assert!(Instant::now() < deadline, "daemon did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    d
}

/// A memory with two facts consolidated into two entries, served.
fn served() -> (tempfile::TempDir, memd::Layout, InProcess) {
    let (t, layout) = memory_dir();
    write_config(&layout, None, "");
    add(
        &layout,
        "2026-11-20",
        &["Keeps bees on the roof", "Plays go on Sundays"],
    );
    let out = memd(&layout.root, &["consolidate", "--force"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let d = start_in_process(&layout);
    (t, layout, d)
}

fn entry_id(layout: &memd::Layout, needle: &str) -> String {
    let doc = memd::entries::Document::read(&layout.entries_file()).unwrap();
    let e = doc.entries().find(|e| e.text.contains(needle)).unwrap();
    e.id().unwrap().to_string()
}

#[test]
fn the_page_shows_memory_md_linked_to_each_entry_and_an_entry_with_its_facts_and_history() {
    let (_t, layout, d) = served();
    let b = Browser::at(&d.base);
    let bees = entry_id(&layout, "bees");
    let home = b.get("/");
    assert_eq!(home.status, 200, "{}", home.body);
    assert!(home.body.contains("<html lang=\"en\">"), "{}", home.body);
    assert!(
        home.body.contains(&format!(
            "href=\"/entries/{bees}\">Keeps bees on the roof</a>"
        )),
        "MEMORY.md's line links to its entry: {}",
        home.body
    );
    assert!(
        home.body.contains("<label for=\"q\">"),
        "the search box has a label"
    );
    let page = b.get(&format!("/entries/{bees}"));
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(
        page.body.contains("2026-11-20"),
        "its fact's day: {}",
        page.body
    );
    assert!(
        page.body.contains("<strong>ADD</strong>"),
        "its history: {}",
        page.body
    );
    let found = b.get("/search?q=bees");
    assert!(
        found.body.contains(&format!("/entries/{bees}")),
        "{}",
        found.body
    );
    assert_eq!(b.get("/style.css").status, 200);
    let hostile = b.get("/search?q=%3Cscript%3Ealert(1)%3C%2Fscript%3E");
    assert!(
        !hostile.body.contains("<script>"),
        "what is asked is escaped: {}",
        hostile.body
    );
    d.stop();
}

#[test]
fn forgetting_and_taking_it_back_on_the_page_go_through_forget_and_a_cross_site_post_is_refused() {
    let (_t, layout, d) = served();
    let b = Browser::at(&d.base);
    let go = entry_id(&layout, "go");
    let forget = format!("/entries/{go}/forget");
    let evil = b.send(
        reqwest::Method::POST,
        &forget,
        Some(""),
        Some("http://evil.example"),
    );
    assert_eq!(evil.status, 403, "{}", evil.body);
    assert!(entry_id(&layout, "go") == go, "nothing changed");

    let done = b.post(&forget, "");
    assert_eq!(done.status, 303, "{}", done.body);
    assert!(
        done.location
            .unwrap()
            .starts_with(&format!("/entries/{go}?said="))
    );
    let doc = memd::entries::Document::read(&layout.entries_file()).unwrap();
    assert!(doc.get(&go).is_none(), "forgotten through the same forget");
    let home = b.get("/");
    assert!(home.body.contains("Forgotten entries"), "{}", home.body);
    let back = b.post(&format!("/entries/{go}/unforget"), "");
    assert_eq!(back.status, 303, "{}", back.body);
    assert_eq!(entry_id(&layout, "go"), go, "back, with its id");
    assert_checks_clean(&layout.root, "a forget and its undo on the page");
    d.stop();
}

#[test]
fn a_run_undone_on_the_page_is_undone_as_memd_undo_does() {
    let (_t, layout, d) = served();
    let b = Browser::at(&d.base);
    let runs = memd::runs::list(&layout).unwrap();
    let run = runs.last().unwrap().id.clone();
    let page = b.get("/runs");
    assert!(page.body.contains(&format!("Undo {run}")), "{}", page.body);
    let done = b.post(&format!("/runs/{run}/undo"), "");
    assert_eq!(done.status, 303, "{}", done.body);
    let doc = memd::entries::Document::read(&layout.entries_file()).unwrap();
    assert_eq!(doc.entries().count(), 0, "the run's entries are gone");
    let said = b.get(done.location.as_deref().unwrap());
    assert!(said.body.contains("role=\"status\""), "{}", said.body);
    assert_checks_clean(&layout.root, "an undo on the page");
    d.stop();
}

#[test]
fn on_the_page_one_proposed_op_is_accepted_and_another_rejected() {
    let (_t, layout) = memory_dir();
    write_config(&layout, None, "review = \"manual\"\n");
    add(
        &layout,
        "2026-11-20",
        &["Keeps bees on the roof", "Plays go on Sundays"],
    );
    let out = memd(&layout.root, &["consolidate", "--force"]);
    assert!(stdout(&out).contains("2 ops proposed"), "{}", stdout(&out));
    let d = start_in_process(&layout);
    let b = Browser::at(&d.base);
    let bees = crate::review::item(&layout, "bees");
    let go = crate::review::item(&layout, "go");
    let page = b.get("/review");
    assert!(
        page.body.contains(&format!("Accept {bees}")),
        "{}",
        page.body
    );
    let accept = b.post("/review", &format!("action=accept&item={bees}"));
    assert_eq!(accept.status, 303, "{}", accept.body);
    let reject = b.post("/review", &format!("action=reject&item={go}"));
    assert_eq!(reject.status, 303, "{}", reject.body);
    let md = std::fs::read_to_string(layout.review_md()).unwrap();
    assert!(
        md.contains(&format!("- [x] {bees}")) && !md.contains(go.as_str()),
        "{md}"
    );
    let apply = b.post("/review", "action=apply");
    assert_eq!(apply.status, 303, "{}", apply.body);
    let doc = memd::entries::Document::read(&layout.entries_file()).unwrap();
    let mut texts: Vec<&str> = doc.entries().map(|e| e.text.as_str()).collect();
    texts.sort();
    assert_eq!(texts, vec!["Keeps bees on the roof", "Plays go on Sundays"]);
    let said = b.get(apply.location.as_deref().unwrap());
    assert!(
        said.body.contains("1 accepted, 1 rejected"),
        "{}",
        said.body
    );
    assert_checks_clean(&layout.root, "a review on the page");
    d.stop();
}

#[test]
fn a_token_protected_daemon_asks_the_page_to_log_in_and_its_cookie_is_httponly_and_same_site() {
    let (_t, layout) = memory_dir();
    write_config(&layout, None, "");
    let options = memd::server::Options {
        token: Some("s3cret-token".into()),
        ..Default::default()
    };
    let d = serve_with(&layout, options);
    let mut b = Browser::at(&d.base);
    let refused = b.get("/");
    assert_eq!(refused.status, 401);
    assert!(
        refused.body.contains("type=\"password\""),
        "the login form: {}",
        refused.body
    );
    assert_eq!(b.get("/v1/status").status, 401, "the API too");
    let wrong = b.post("/login", "token=guess");
    assert_eq!(wrong.status, 401);
    let right = b.post("/login", "token=s3cret-token");
    assert_eq!(right.status, 303, "{}", right.body);
    let cookie = right.set_cookie.expect("a cookie");
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );
    assert!(
        !cookie.contains("s3cret-token"),
        "the cookie is not the token: {cookie}"
    );
    b.cookie = Some(cookie.split(';').next().unwrap().to_string());
    assert_eq!(b.get("/").status, 200);
    let post = json!({"texts": ["x"]}).to_string();
    let evil = b.send(
        reqwest::Method::POST,
        "/v1/facts",
        Some(&post),
        Some("http://evil.example"),
    );
    assert_eq!(
        evil.status, 403,
        "another site's page is refused, cookie or not"
    );
    d.stop();
}

#[test]
fn under_a_root_each_memory_has_its_page_and_the_root_lists_them() {
    let root = root_dir();
    let d = start_root(root.path(), open_options(8));
    let c = Http::at(&d.base, None);
    let facts = json!({"texts": ["Alice keeps bees"]}).to_string();
    assert_eq!(c.post("/v1/m/alice/facts", facts).0, 200);
    let b = Browser::at(&d.base);
    let list = b.get("/");
    assert_eq!(list.status, 200, "{}", list.body);
    assert!(list.body.contains("href=\"/m/alice/\""), "{}", list.body);
    let page = b.get("/m/alice/");
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(
        page.body.contains("Alice keeps bees"),
        "its pending fact: {}",
        page.body
    );
    assert!(
        page.body.contains("href=\"/m/alice/review\""),
        "links stay under it"
    );
    assert_eq!(b.get("/m/nobody/").status, 404);
    assert_eq!(b.get("/m/..%2Fetc/").status, 400);
    d.stop();
}

#[test]
fn a_hand_edit_made_while_the_page_is_open_is_what_the_next_page_shows() {
    let (_t, layout, d) = served();
    let b = Browser::at(&d.base);
    let bees = entry_id(&layout, "bees");
    let before = b.get(&format!("/entries/{bees}"));
    assert!(before.body.contains("Keeps bees on the roof"));
    let file = std::fs::read_to_string(layout.entries_file()).unwrap();
    let edited = file.replace(
        "Keeps bees on the roof",
        "Keeps bees on the roof and in the garden",
    );
    std::fs::write(layout.entries_file(), &edited).unwrap();
    let after = b.get(&format!("/entries/{bees}"));
    assert!(
        after
            .body
            .contains("Keeps bees on the roof and in the garden"),
        "{}",
        after.body
    );
    assert!(after.body.contains("edited by hand"), "{}", after.body);
    // An action on another entry leaves the hand edit as it is.
    let go = entry_id(&layout, "go");
    assert_eq!(b.post(&format!("/entries/{go}/forget"), "").status, 303);
    let now = std::fs::read_to_string(layout.entries_file()).unwrap();
    assert!(
        now.contains("Keeps bees on the roof and in the garden"),
        "{now}"
    );
    let run = memd::runs::list(&layout).unwrap()[0].id.clone();
    let diff = b.get(&format!("/runs/{run}"));
    assert!(
        diff.body.contains("<ins>+ Keeps bees on the roof</ins>"),
        "the run as a diff: {}",
        diff.body
    );
    d.stop();
}

#[test]
fn the_page_shows_and_searches_the_memory_as_of_a_time() {
    let (_t, layout, d) = served();
    let b = Browser::at(&d.base);
    // A time past the run's second (the form takes whole seconds).
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let at = |t: &str| {
        percent_encoding::utf8_percent_encode(t, percent_encoding::NON_ALPHANUMERIC).to_string()
    };
    let shown = b.get(&format!("/as-of?as_of={}", at(&now)));
    assert_eq!(shown.status, 200, "{}", shown.body);
    assert!(
        shown.body.contains("Keeps bees on the roof"),
        "{}",
        shown.body
    );
    let before = b.get("/as-of?as_of=2000-01-01");
    assert!(before.body.contains("Unknowable"), "{}", before.body);
    let found = b.get(&format!("/search?q=bees&as_of={}", at(&now)));
    assert_eq!(found.status, 200, "{}", found.body);
    assert!(
        found.body.contains("Keeps bees on the roof"),
        "{}",
        found.body
    );
    let bees = entry_id(&layout, "bees");
    assert_eq!(b.post(&format!("/entries/{bees}/forget"), "").status, 303);
    let later = b.get(&format!("/search?q=bees&as_of={}", at(&now)));
    assert!(
        !later.body.contains(&format!("/entries/{bees}\"")),
        "what was forgotten since stays out: {}",
        later.body
    );
    d.stop();
}
