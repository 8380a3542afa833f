//! The web page in a real browser: Debian's headless Chromium, driven
//! through ChromeDriver, against a daemon on 127.0.0.1. Without
//! `chromium` and `chromedriver` these tests skip and say why
//! (`scripts/install-browser.sh` installs them; CI runs it).
//!
//! The WebDriver client is the few commands these tests use, over the
//! `reqwest` memd already builds ([`Session`]). A WebDriver crate
//! (fantoccini) was tried first: its hyper features differ from the
//! tree's, so the tests' build and the binary's would each have built
//! LanceDB (measured: adding it started a rebuild of `lance`), against the
//! rule that the tree is built once.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::consolidate::add;
use crate::serving::*;
use crate::support::*;

/// ChromeDriver on a port of its own, stopped when dropped.
struct Driver {
    child: Child,
    url: String,
    profile: tempfile::TempDir,
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn found(name: &str) -> Option<std::path::PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// ChromeDriver, started; `None` (and why, on stderr) when Chromium or
/// ChromeDriver is not installed.
fn driver() -> Option<Driver> {
    let (Some(driver), Some(_)) = (found("chromedriver"), found("chromium")) else {
        eprintln!(
            "skipped: the browser tests need Debian's chromium and chromium-driver (scripts/install-browser.sh)"
        );
        return None;
    };
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new(driver)
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let url = format!("http://127.0.0.1:{port}");
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "chromedriver did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    let profile = tempfile::tempdir().unwrap();
    Some(Driver {
        child,
        url,
        profile,
    })
}

/// How an element is found: a CSS selector, an XPath, a link's text.
enum Locator<'a> {
    Css(&'a str),
    XPath(&'a str),
    LinkText(&'a str),
}

impl Locator<'_> {
    fn json(&self) -> Value {
        match self {
            Locator::Css(v) => json!({"using": "css selector", "value": v}),
            Locator::XPath(v) => json!({"using": "xpath", "value": v}),
            Locator::LinkText(v) => json!({"using": "link text", "value": v}),
        }
    }
}

/// A WebDriver session (W3C WebDriver, the commands these tests use).
struct Session {
    http: reqwest::Client,
    at: String,
}

/// An element of the page, by its WebDriver id.
struct Element(String);

const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

impl Session {
    /// A headless Chromium session, with the flags this machine's closed
    /// network needs (no background connections).
    async fn start(d: &Driver) -> Session {
        let chromium = found("chromium").unwrap();
        let args = json!([
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--window-size=1100,900",
            format!("--user-data-dir={}", d.profile.path().display()),
        ]);
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": chromium, "args": args},
        }}});
        let http = reqwest::Client::new();
        let reply: Value = http
            .post(format!("{}/session", d.url))
            .json(&caps)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let id = reply["value"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no session: {reply}"));
        Session {
            http,
            at: format!("{}/session/{id}", d.url),
        }
    }

    async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        let mut req = self.http.request(method, format!("{}{path}", self.at));
        if let Some(b) = body {
            req = req.json(&b);
        }
        let reply: Value = req.send().await.unwrap().json().await.unwrap();
        if let Some(e) = reply["value"]["error"].as_str() {
            panic!("WebDriver {path}: {e}: {}", reply["value"]["message"]);
        }
        reply["value"].clone()
    }

    async fn goto(&self, url: &str) {
        self.call(reqwest::Method::POST, "/url", Some(json!({ "url": url })))
            .await;
    }

    async fn url(&self) -> String {
        let v = self.call(reqwest::Method::GET, "/url", None).await;
        v.as_str().unwrap_or_default().to_string()
    }

    async fn source(&self) -> String {
        let v = self.call(reqwest::Method::GET, "/source", None).await;
        v.as_str().unwrap_or_default().to_string()
    }

    async fn find(&self, l: Locator<'_>) -> Element {
        let v = self
            .call(reqwest::Method::POST, "/element", Some(l.json()))
            .await;
        Element(v[ELEMENT].as_str().unwrap().to_string())
    }

    /// A command that may fail while a page loads (`None` then).
    async fn try_call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> Option<Value> {
        let mut req = self.http.request(method, format!("{}{path}", self.at));
        if let Some(b) = body {
            req = req.json(&b);
        }
        let reply: Value = req.send().await.ok()?.json().await.ok()?;
        reply["value"]["error"]
            .is_null()
            .then(|| reply["value"].clone())
    }

    /// The main content's text, if the page has it now (a page still
    /// loading may not).
    async fn try_main_text(&self) -> Option<String> {
        let main = Locator::Css("main").json();
        let found = self
            .try_call(reqwest::Method::POST, "/element", Some(main))
            .await?;
        let path = format!("/element/{}/text", found[ELEMENT].as_str()?);
        let text = self.try_call(reqwest::Method::GET, &path, None).await?;
        text.as_str().map(String::from)
    }

    async fn active(&self) -> Element {
        let v = self
            .call(reqwest::Method::GET, "/element/active", None)
            .await;
        Element(v[ELEMENT].as_str().unwrap().to_string())
    }

    async fn click(&self, e: &Element) {
        let path = format!("/element/{}/click", e.0);
        self.call(reqwest::Method::POST, &path, Some(json!({})))
            .await;
    }

    async fn type_in(&self, e: &Element, text: &str) {
        let path = format!("/element/{}/value", e.0);
        self.call(reqwest::Method::POST, &path, Some(json!({ "text": text })))
            .await;
    }

    async fn text(&self, e: &Element) -> String {
        let path = format!("/element/{}/text", e.0);
        let v = self.call(reqwest::Method::GET, &path, None).await;
        v.as_str().unwrap_or_default().to_string()
    }

    /// The text of the page's main content.
    async fn main_text(&self) -> String {
        let main = self.find(Locator::Css("main")).await;
        self.text(&main).await
    }

    /// Wait until the main content says `needle` (a page the last click
    /// led to).
    async fn wait_for(&self, needle: &str) {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if self
                .try_main_text()
                .await
                .is_some_and(|t| t.contains(needle))
            {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "the page never said {needle:?}: {}",
                self.source().await
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    async fn close(self) {
        let _ = self.http.delete(&self.at).send().await;
    }
}

/// A memory with two entries, then, in review mode, two proposals.
fn memory_to_browse() -> (tempfile::TempDir, memd::Layout) {
    let (t, layout) = memory_dir();
    write_config(&layout, None, "");
    add(
        &layout,
        "2026-11-20",
        &["Keeps bees on the roof", "Plays go on Sundays"],
    );
    assert!(
        memd(&layout.root, &["consolidate", "--force"])
            .status
            .success()
    );
    write_config(&layout, None, "review = \"manual\"\n");
    add(
        &layout,
        "2026-11-21",
        &["Bakes sourdough bread", "Swims in the lake at dawn"],
    );
    let out = memd(&layout.root, &["consolidate", "--force"]);
    assert!(stdout(&out).contains("2 ops proposed"), "{}", stdout(&out));
    (t, layout)
}

#[test]
fn in_a_browser_the_page_searches_follows_a_line_to_its_facts_forgets_undoes_and_reviews() {
    let Some(driver) = driver() else { return };
    let (_t, layout) = memory_to_browse();
    let d = start_in_process(&layout);
    let base = d.base.clone();
    run(async {
        let c = Session::start(&driver).await;
        c.goto(&format!("{base}/")).await;
        assert!(c.main_text().await.contains("Keeps bees on the roof"));

        the_search_box_takes_a_query_from_the_keyboard(&c).await;
        a_line_is_followed_to_its_entry_forgotten_and_taken_back(&c, &base).await;
        the_review_is_decided_carried_out_and_undone(&c, &base, &layout).await;
        c.close().await;
    });
    let doc = memd::entries::Document::read(&layout.entries_file()).unwrap();
    let texts: Vec<&str> = doc.entries().map(|e| e.text.as_str()).collect();
    assert_eq!(
        texts,
        vec!["Keeps bees on the roof", "Plays go on Sundays"],
        "the review undone"
    );
    assert_checks_clean(&layout.root, "a session in the browser");
    d.stop();
}

/// From the keyboard: the first Tab reaches the skip link; the search
/// box takes a query and Enter.
async fn the_search_box_takes_a_query_from_the_keyboard(c: &Session) {
    let body = c.find(Locator::Css("body")).await;
    c.type_in(&body, "\u{E004}").await; // Tab
    let active = c.active().await;
    assert_eq!(c.text(&active).await, "Skip to the content");
    let q = c.find(Locator::Css("input#q")).await;
    c.type_in(&q, "bees\u{E007}").await; // Enter
    c.wait_for("Search: bees").await;
    assert!(c.main_text().await.contains("Keeps bees on the roof"));
}

/// A line of MEMORY.md at `base`, followed to its entry and its fact;
/// the entry forgotten, and the forget taken back.
async fn a_line_is_followed_to_its_entry_forgotten_and_taken_back(c: &Session, base: &str) {
    // A line of MEMORY.md, followed to its entry and its fact.
    c.goto(&format!("{base}/")).await;
    let line = c.find(Locator::LinkText("Plays go on Sundays")).await;
    c.click(&line).await;
    c.wait_for("History").await;
    let entry = c.main_text().await;
    assert!(
        entry.contains("2026-11-20") && entry.contains("Plays go on Sundays"),
        "{entry}"
    );
    let url = c.url().await;
    assert!(url.contains("/entries/e-"), "{url}");

    // Forgotten, and the forget taken back.
    let forget = c
        .find(Locator::XPath("//button[text()='Forget this entry']"))
        .await;
    c.click(&forget).await;
    c.wait_for("This entry is not in the file now").await;
    let back = c
        .find(Locator::XPath("//button[text()='Take the forget back']"))
        .await;
    c.click(&back).await;
    c.wait_for("is back").await;
    assert!(c.main_text().await.contains("Forget this entry"));
}

/// The review of `layout` at `base`: one op accepted, the other
/// rejected, carried out; then its run undone from the runs page.
async fn the_review_is_decided_carried_out_and_undone(
    c: &Session,
    base: &str,
    layout: &memd::Layout,
) {
    // The review: one op accepted, the other rejected, carried out.
    c.goto(&format!("{base}/review")).await;
    let bread = crate::review::item(layout, "sourdough");
    let swim = crate::review::item(layout, "lake");
    let accept = c
        .find(Locator::XPath(&format!(
            "//button[text()='Accept {bread}']"
        )))
        .await;
    c.click(&accept).await;
    c.wait_for(&format!("REVIEW.md changed for {bread}")).await;
    let reject = c
        .find(Locator::XPath(&format!("//button[text()='Reject {swim}']")))
        .await;
    c.click(&reject).await;
    c.wait_for(&format!("REVIEW.md changed for {swim}")).await;
    let apply = c
        .find(Locator::XPath(
            "//button[text()='Carry out the decisions now']",
        ))
        .await;
    c.click(&apply).await;
    c.wait_for("1 accepted, 1 rejected").await;

    // A run undone: the review's run, from the runs page.
    let runs = memd::runs::list(layout).unwrap();
    let review_run = runs
        .iter()
        .rev()
        .find(|r| r.kind == "review")
        .unwrap()
        .id
        .clone();
    c.goto(&format!("{base}/runs")).await;
    let undo = c
        .find(Locator::XPath(&format!(
            "//button[text()='Undo {review_run}']"
        )))
        .await;
    c.click(&undo).await;
    c.wait_for(&format!("undid {review_run}")).await;
}

#[test]
fn in_a_browser_a_token_protected_daemon_shows_nothing_before_login() {
    let Some(driver) = driver() else { return };
    let (_t, layout) = memory_to_browse();
    let options = memd::server::Options {
        token: Some("s3cret-token".into()),
        ..Default::default()
    };
    let d = crate::page::serve_with(&layout, options);
    let base = d.base.clone();
    run(async {
        let c = Session::start(&driver).await;
        c.goto(&format!("{base}/")).await;
        assert!(
            !c.source().await.contains("Keeps bees"),
            "nothing of the memory before login"
        );
        let token = c.find(Locator::Css("input#token")).await;
        c.type_in(&token, "guess\u{E007}").await;
        c.wait_for("not this daemon's token").await;
        assert!(!c.source().await.contains("Keeps bees"));
        let token = c.find(Locator::Css("input#token")).await;
        c.type_in(&token, "s3cret-token\u{E007}").await;
        c.wait_for("Keeps bees on the roof").await;
        c.close().await;
    });
    d.stop();
}
