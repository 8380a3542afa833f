//! What is true now, on top: with the defaults (no LLM, MiniLM), an update
//! an agent states in words, or declares by any id memd shows, is what
//! search, `recall` and MEMORY.md answer with first, through the CLI, HTTP
//! and MCP alike; what was true before stays findable as history.

use std::io::Write;
use std::path::Path;

use serde_json::{Value, json};

use crate::serving::{Http, start};
use crate::support::{memd, memory_dir, stderr, stdout};
use crate::trust::{check, entries, ok};

/// The defaults (MiniLM, the built-in judge), with a run whenever asked.
fn defaults(dir: &Path) {
    let config = "[consolidation]\nmin_facts = 1\nmin_hours = 0.0\n";
    std::fs::write(dir.join("memd.toml"), config).unwrap();
}

/// One of the ways an agent reaches memd.
trait Surface {
    /// Append `text` declaring it supersedes `ids`: its fact id, or the
    /// error as the surface gives it (status and message).
    fn add(&mut self, text: &str, session: &str, ids: &[&str]) -> Result<String, (i64, String)>;
    /// The hits of a search with the default cutoff, best first.
    fn search(&mut self, query: &str) -> Vec<Value>;
    fn consolidate(&mut self);
    /// MEMORY.md as the surface gives it.
    fn core(&mut self) -> String;
}

struct Cli<'a>(&'a Path);

impl Surface for Cli<'_> {
    fn add(&mut self, text: &str, session: &str, ids: &[&str]) -> Result<String, (i64, String)> {
        let mut args = vec!["add", text, "--session", session, "--json"];
        for id in ids {
            args.extend(["--supersedes", id]);
        }
        let out = memd(self.0, &args);
        if !out.status.success() {
            return Err((out.status.code().unwrap_or(-1).into(), stderr(&out)));
        }
        let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
        Ok(v["id"].as_str().unwrap().to_string())
    }

    fn search(&mut self, query: &str) -> Vec<Value> {
        let v: Value = serde_json::from_str(&ok(self.0, &["search", query, "--json"])).unwrap();
        v.as_array().unwrap().clone()
    }

    fn consolidate(&mut self) {
        ok(self.0, &["consolidate", "--force"]);
    }

    fn core(&mut self) -> String {
        ok(self.0, &["core"])
    }
}

struct Api(Http);

impl Surface for Api {
    fn add(&mut self, text: &str, session: &str, ids: &[&str]) -> Result<String, (i64, String)> {
        let body = json!({"text": text, "session": session, "supersedes": ids});
        match self.0.post("/v1/facts", body.to_string()) {
            (200, v) => Ok(v["ids"][0].as_str().unwrap().to_string()),
            (status, v) => Err((status.into(), v.to_string())),
        }
    }

    fn search(&mut self, query: &str) -> Vec<Value> {
        let q: String = url_encoded(query);
        let (status, v) = self.0.get(&format!("/v1/search?q={q}"));
        assert_eq!(status, 200, "{v}");
        v["hits"].as_array().unwrap().clone()
    }

    fn consolidate(&mut self) {
        let (status, v) = self
            .0
            .post("/v1/consolidate", json!({"force": true}).to_string());
        assert_eq!(status, 200, "{v}");
    }

    fn core(&mut self) -> String {
        let (status, text) = self.0.send(reqwest::Method::GET, "/v1/memory", None);
        assert_eq!(status, 200, "{text}");
        text
    }
}

fn url_encoded(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

struct Mcp {
    mcp: crate::serving::Mcp,
    id: u64,
}

impl Mcp {
    /// Call `tool`: its result (`isError`, `content`, `structuredContent`).
    fn call(&mut self, tool: &str, args: Value) -> Value {
        use std::io::BufRead;
        self.id += 1;
        let msg = json!({"jsonrpc": "2.0", "id": self.id, "method": "tools/call",
            "params": {"name": tool, "arguments": args}});
        writeln!(self.mcp.1, "{msg}").unwrap();
        self.mcp.1.flush().unwrap();
        let mut line = String::new();
        self.mcp.2.read_line(&mut line).unwrap();
        let r: Value = serde_json::from_str(&line).unwrap();
        r["result"].clone()
    }

    fn text(result: &Value) -> String {
        result["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    }
}

impl Surface for Mcp {
    fn add(&mut self, text: &str, session: &str, ids: &[&str]) -> Result<String, (i64, String)> {
        let r = self.call(
            "remember",
            json!({"text": text, "session": session, "supersedes": ids}),
        );
        match r["isError"].as_bool() {
            Some(true) => Err((1, Mcp::text(&r))),
            _ => Ok(r["structuredContent"]["ids"][0]
                .as_str()
                .unwrap()
                .to_string()),
        }
    }

    fn search(&mut self, query: &str) -> Vec<Value> {
        let r = self.call("recall", json!({"query": query}));
        assert_eq!(r["isError"], false, "{r}");
        r["structuredContent"]["hits"].as_array().unwrap().clone()
    }

    fn consolidate(&mut self) {
        let r = self.call("consolidate", json!({"force": true}));
        assert_eq!(r["isError"], false, "{r}");
    }

    fn core(&mut self) -> String {
        let r = self.call("core_memory", json!({}));
        assert_eq!(r["isError"], false, "{r}");
        Mcp::text(&r)
    }
}

fn texts(hits: &[Value]) -> Vec<&str> {
    hits.iter().map(|h| h["text"].as_str().unwrap()).collect()
}

/// The first line of MEMORY.md `core` that says where the user works.
fn job_line(core: &str) -> String {
    let line = core.lines().find(|l| l.contains("works at"));
    line.unwrap_or_else(|| panic!("no line on the job: {core}"))
        .to_string()
}

/// A job change said in words within a day, then another: each answer
/// gives the current employer first, the history dated in the entry and
/// findable.
fn replay(s: &mut dyn Surface, dir: &Path) {
    s.add("User works at Acme", "s1", &[]).unwrap();
    s.add("User now works at Globex", "s2", &[]).unwrap();
    let hits = s.search("where does the user work");
    assert!(
        texts(&hits).first().is_some_and(|t| t.contains("Globex")),
        "pending, the correction said in words comes first: {:?}",
        texts(&hits)
    );
    s.consolidate();
    let job = job_line(&s.core());
    assert!(job.contains("Globex"), "{job}");
    assert!(
        job.find("Globex") < job.find("Acme"),
        "the old employer only as history: {job}"
    );
    s.add("User now works at Initech", "s3", &[]).unwrap();
    s.consolidate();
    let hits = s.search("where does the user work");
    let top = texts(&hits)
        .first()
        .map(|t| t.to_string())
        .unwrap_or_default();
    assert!(
        top.starts_with("User now works at Initech"),
        "{:?}",
        texts(&hits)
    );
    let before = s.search("where did the user work before");
    assert!(
        texts(&before).iter().any(|t| t.contains("Acme")),
        "the old employer is findable: {:?}",
        texts(&before)
    );
    let job = job_line(&s.core());
    assert!(job.contains("Initech"), "{job}");
    let jobs = entries(dir)
        .into_iter()
        .filter(|e| e.1.contains("works at"))
        .collect::<Vec<_>>();
    assert_eq!(
        jobs.len(),
        1,
        "one entry holds the job and its history: {jobs:?}"
    );
    assert_eq!(
        jobs[0].2.len(),
        3,
        "all three facts are its sources: {jobs:?}"
    );
    let day = crate::support::archive_day(dir);
    assert_eq!(
        jobs[0].1,
        format!(
            "User now works at Initech (since {day}; previously: User now works at Globex, since {day}; User works at Acme, since {day})"
        ),
        "each value with the day it was first stated"
    );
    assert!(check(dir).0, "{}", check(dir).2);
}

#[test]
fn a_job_change_said_in_words_is_answered_first_through_the_cli() {
    let (_t, layout) = memory_dir();
    defaults(&layout.root);
    replay(&mut Cli(&layout.root), &layout.root);
}

#[test]
fn a_job_change_said_in_words_is_answered_first_over_http() {
    let (_t, layout) = memory_dir();
    defaults(&layout.root);
    let daemon = start(&layout, &[]);
    replay(&mut Api(Http::new(&daemon, None)), &layout.root);
}

#[test]
fn a_job_change_said_in_words_is_answered_first_over_mcp() {
    let (_t, layout) = memory_dir();
    defaults(&layout.root);
    let mcp = crate::serving::spawn_mcp(&layout);
    let mut s = Mcp { mcp, id: 0 };
    s.call("initialize", json!({}));
    replay(&mut s, &layout.root);
}

/// A second value of what a person has many of is a fact of its own,
/// and both stay in MEMORY.md.
#[test]
fn a_second_liking_stays_a_fact_of_its_own() {
    let (_t, layout) = memory_dir();
    let dir = &layout.root;
    defaults(dir);
    let mut s = Cli(dir);
    s.add("User likes swimming", "s1", &[]).unwrap();
    s.add("User likes hiking", "s2", &[]).unwrap();
    s.consolidate();
    let all = entries(dir);
    assert_eq!(all.len(), 2, "{all:?}");
    let core = s.core();
    assert!(
        core.contains("swimming") && core.contains("hiking"),
        "{core}"
    );
}

/// Before any run, a pending fact another pending fact declared it
/// supersedes is stale: a search puts the declared update above it, here
/// where neither the words nor the cosine see an update and the old text
/// matches the question better; and likewise an entry a pending fact
/// supersedes, and its MEMORY.md line.
#[test]
fn a_superseded_pending_fact_or_entry_ranks_below_the_fact_that_declared_it_before_the_run() {
    let (_t, layout) = memory_dir();
    let dir = &layout.root;
    defaults(dir);
    let mut s = Cli(dir);
    let query = "who is the user's dentist";
    let old = s
        .add("The user's dentist is Dr. Patel on Elm Street", "s1", &[])
        .unwrap();
    let before = s.search(query);
    assert!(texts(&before)[0].contains("Patel"), "{:?}", texts(&before));
    s.add("Dr. Moreno cleans the user's teeth", "s1", &[&old])
        .unwrap();
    let hits = s.search(query);
    let at = |name: &str| texts(&hits).iter().position(|t| t.contains(name));
    assert!(
        at("Moreno").is_some() && at("Moreno") < at("Patel"),
        "{:?}",
        texts(&hits)
    );
    let scores: Vec<f64> = hits.iter().map(|h| h["score"].as_f64().unwrap()).collect();
    assert!(scores.windows(2).all(|w| w[0] >= w[1]), "{scores:?}");
    // Folded by the run into one entry, which a new fact then supersedes.
    s.consolidate();
    let entry = entries(dir)
        .into_iter()
        .find(|x| x.1.contains("Moreno"))
        .unwrap()
        .0;
    s.add("Dr. Okafor cleans the user's teeth", "s2", &[&entry])
        .unwrap();
    let hits = s.search(query);
    let at = |name: &str| texts(&hits).iter().position(|t| t.contains(name));
    assert!(at("Okafor").is_some(), "{:?}", texts(&hits));
    for stale in hits
        .iter()
        .filter(|h| h["text"].as_str().unwrap().starts_with("Dr. Moreno"))
    {
        let i = hits.iter().position(|h| h == stale);
        assert!(
            at("Okafor") < i,
            "{stale} above the fact that supersedes it: {:?}",
            texts(&hits)
        );
    }
}

/// `supersedes` takes the ids memd prints: a MEMORY.md line's, a pending
/// fact's, and a fact an entry holds (which names that entry).
#[test]
fn supersedes_takes_a_core_line_a_pending_fact_and_a_held_fact() {
    let (_t, layout) = memory_dir();
    let dir = &layout.root;
    defaults(dir);
    let mut s = Cli(dir);
    s.add("User drives a Volvo", "s1", &[]).unwrap();
    s.consolidate();
    let line = s
        .search("what car does the user drive")
        .into_iter()
        .find(|h| h["id"].as_str().is_some_and(|i| i.starts_with("core:")))
        .expect("a MEMORY.md line is a hit");
    let core_id = line["id"].as_str().unwrap().to_string();
    s.add("User drives a Tesla", "s2", &[&core_id]).unwrap();
    let paris = s.add("User lives in Paris", "s2", &[]).unwrap();
    s.add("User lives in Berlin", "s3", &[&paris]).unwrap();
    s.consolidate();
    let all = entries(dir);
    let car: Vec<_> = all.iter().filter(|e| e.1.contains("drives")).collect();
    assert_eq!(car.len(), 1, "{all:?}");
    let day = crate::support::archive_day(dir);
    assert_eq!(
        car[0].1,
        format!("User drives a Tesla (since {day}; previously: User drives a Volvo, since {day})")
    );
    let home: Vec<_> = all.iter().filter(|e| e.1.contains("lives")).collect();
    assert_eq!(home.len(), 1, "{all:?}");
    assert_eq!(
        home[0].1,
        format!("User lives in Berlin (since {day}; previously: User lives in Paris, since {day})")
    );
    assert!(home[0].2.contains(&paris), "{home:?}");
    // A fact already in an entry names that entry.
    let tesla = car[0].2.last().unwrap().clone();
    s.add("User drives a bicycle now", "s4", &[&tesla]).unwrap();
    s.consolidate();
    let car: Vec<_> = entries(dir)
        .into_iter()
        .filter(|e| e.1.contains("drives"))
        .collect();
    assert_eq!(car.len(), 1, "{car:?}");
    assert!(
        car[0]
            .1
            .starts_with(&format!("User drives a bicycle now (since {day}; previously: User drives a Tesla, since {day}; User drives a Volvo, since {day})")),
        "{car:?}"
    );
    assert!(check(dir).0, "{}", check(dir).2);
}

/// Every day file's bytes.
fn archive(dir: &Path) -> Vec<Vec<u8>> {
    let mut days: Vec<_> = std::fs::read_dir(dir.join("archive"))
        .unwrap()
        .map(|d| d.unwrap().path())
        .collect();
    days.sort();
    days.iter().map(|p| std::fs::read(p).unwrap()).collect()
}

/// An id nothing live has is refused as not found (exit 4), a fact
/// superseding itself as invalid (exit 2), nothing written either way;
/// the message speaks of the request, not of a command to run.
#[test]
fn supersedes_refuses_what_is_not_live_and_a_fact_superseding_itself() {
    let (_t, layout) = memory_dir();
    let dir = &layout.root;
    defaults(dir);
    let mut s = Cli(dir);
    let gone = s.add("User lives in Rome", "s1", &[]).unwrap();
    ok(dir, &["forget", &gone]);
    let pending = s.add("User lives in Oslo", "s1", &[]).unwrap();
    let before = archive(dir);
    for id in [
        "2026-01-01#deadbeef",
        gone.as_str(),
        "core:e-00000000",
        "e-00000000",
    ] {
        let (code, msg) = s.add("User lives in Madrid", "s2", &[id]).unwrap_err();
        assert_eq!(code, 4, "{id}: {msg}");
        assert!(msg.contains(id), "{msg}");
        assert!(!msg.contains("memd search"), "{msg}");
    }
    let (code, msg) = s.add("User lives in Oslo", "s2", &[&pending]).unwrap_err();
    assert_eq!(code, 2, "{msg}");
    assert!(msg.contains("itself"), "{msg}");
    assert_eq!(archive(dir), before, "nothing was written");
    // Over HTTP and MCP the same refusals, in their own terms.
    let daemon = start(&layout, &[]);
    let mut api = Api(Http::new(&daemon, None));
    let (status, body) = api.add("User lives in Madrid", "s2", &[&gone]).unwrap_err();
    assert_eq!(status, 404, "{body}");
    assert!(body.contains("not_found"), "{body}");
    assert!(!body.contains("`memd"), "{body}");
    drop(daemon);
    let mut mcp = Mcp {
        mcp: crate::serving::spawn_mcp(&layout),
        id: 0,
    };
    mcp.call("initialize", json!({}));
    let (_, text) = mcp.add("User lives in Madrid", "s2", &[&gone]).unwrap_err();
    assert!(
        text.contains(gone.as_str()) && !text.contains("`memd"),
        "{text}"
    );
    assert_eq!(archive(dir), before, "nothing was written");
}

/// Found by the random test: a pending fact that a later fact declared it
/// supersedes, forgotten before the run and brought back after it, is
/// pending beside the decided fact. That is the person's doing, as for an
/// entry pinned or forgotten then: `memd check` notes it, and it is no
/// problem.
#[test]
fn a_superseded_fact_forgotten_before_the_run_and_brought_back_is_a_note() {
    let (_t, layout) = memory_dir();
    let dir = &layout.root;
    defaults(dir);
    let mut s = Cli(dir);
    let old = s.add("User lives in Paris", "s1", &[]).unwrap();
    s.add("User lives in Berlin", "s2", &[&old]).unwrap();
    ok(dir, &["forget", &old]);
    s.consolidate();
    ok(dir, &["forget", "--undo", &old]);
    let (passed, problems, report) = check(dir);
    assert!(passed, "{problems:?}");
    let notes = report["notes"].to_string();
    assert!(notes.contains("superseded_pending"), "{report}");
}

/// Found by the two-copy random test: two copies decided one update in
/// opposite orders, so one entry says "light (previously: dark)" and the
/// other "dark (previously: light)". Their words are the same, and search
/// collapsed them as near duplicates, hiding one entry from every search.
/// Two entries that say different values now are two hits.
#[test]
fn two_entries_each_with_the_others_value_as_history_are_both_found() {
    let t = crate::trust::fresh();
    let dir = t.path();
    let light = "Prefers light mode in every editor (since 2026-11-30; previously: Prefers dark mode in every editor, since 2026-11-30)";
    let dark = "Prefers dark mode in every editor (since 2026-11-30; previously: Prefers light mode in every editor, since 2026-11-30)";
    let doc = format!(
        "# Memory\n\n<!--m {{\"id\":\"e-0000aaaa\",\"first_seen\":\"2026-11-30\",\"updated\":\"2026-11-30\",\"sources\":[],\"hash\":\"\"}}-->\n{light}\n\n<!--m {{\"id\":\"e-0000bbbb\",\"first_seen\":\"2026-11-30\",\"updated\":\"2026-11-30\",\"sources\":[],\"hash\":\"\"}}-->\n{dark}\n"
    );
    std::fs::write(dir.join("consolidated/memory.md"), doc).unwrap();
    let hits = crate::trust::found(dir, "Prefers light mode in every editor");
    for said in [light, dark] {
        assert!(hits.iter().any(|h| h == said), "{said:?} not in {hits:#?}");
    }
}

/// A memory on the defaults where `older` was said on 2026-11-01 and
/// `newer` today, both consolidated by the built-in judge, which keeps
/// them as two entries.
fn kept_apart(older: &str, newer: &str) -> (tempfile::TempDir, memd::Layout) {
    let (t, layout) = memory_dir();
    defaults(&layout.root);
    crate::consolidate::add(&layout, "2026-11-01", &[older]);
    let mut s = Cli(&layout.root);
    s.add(newer, "s2", &[]).unwrap();
    s.consolidate();
    assert_eq!(entries(&layout.root).len(), 2, "two facts of their own");
    (t, layout)
}

/// A newer fact on the same person that only its topic ties to an older
/// one (MiniLM puts the two at a cosine just over the same-topic line;
/// neither the words nor a denial say one updates the other) is not
/// answered first to a question asked in words only the older says: the
/// question is about what the older states.
#[test]
fn a_newer_fact_on_the_same_person_is_not_answered_first_to_a_question_only_the_older_answers() {
    let award = "Maya Lindqvist received an award for her research on coral reefs.";
    let article = "Maya Lindqvist published an article on her research in a science journal, which Tom Berger later cited.";
    let (_t, layout) = kept_apart(award, article);
    let mut s = Cli(&layout.root);
    let hits = s.search("Which award did Maya Lindqvist receive recognition for?");
    assert_eq!(texts(&hits).first(), Some(&award), "{:?}", texts(&hits));
    let hits = s.search("Which journal article by Maya Lindqvist did Tom Berger cite?");
    assert_eq!(texts(&hits).first(), Some(&article), "{:?}", texts(&hits));
}

/// A later fact that denies part of an older one on the same person, in
/// words the judge finds too few to fold the two (2 of the 6 the older
/// affirms), and at a cosine under the same-topic line, is answered first
/// to the question the older answered: that answer is no longer true.
/// The older stays a hit, below it.
#[test]
fn a_later_fact_denying_part_of_an_older_one_is_answered_first_though_the_judge_keeps_both() {
    let talks = "Priya Natarajan has given keynote talks at global robotics conferences in Asia.";
    let denies = "Priya Natarajan has never attended robotics conferences, but she teaches high school physics.";
    let (_t, layout) = kept_apart(talks, denies);
    let mut s = Cli(&layout.root);
    let hits = s.search("What kind of conferences has Priya Natarajan given keynote talks at?");
    assert_eq!(texts(&hits)[..2], [denies, talks], "{:?}", texts(&hits));
}

/// A later fact that opens as an older one does ("has written several
/// essays on …") with another value in many words, at a cosine under the
/// same-topic line, is answered first to the question both answer; a
/// question in words only the older says still finds the older first.
#[test]
fn a_later_fact_that_opens_as_an_older_one_is_answered_first_to_the_question_both_answer() {
    let ships = "Tomas Berg has written several essays on medieval shipbuilding.";
    let lanes = "Tomas Berg has written several essays on the economics of urban bike lanes.";
    let (_t, layout) = kept_apart(ships, lanes);
    let mut s = Cli(&layout.root);
    let hits = s.search("What does Tomas Berg write essays about?");
    assert_eq!(texts(&hits)[..2], [lanes, ships], "{:?}", texts(&hits));
    let hits = s.search("Which essays has Tomas Berg written on medieval shipbuilding?");
    assert_eq!(texts(&hits).first(), Some(&ships), "{:?}", texts(&hits));
}
