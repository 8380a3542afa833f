//! `memd mcp`, driven over its pipes as an MCP client would.

use std::io::{BufRead, Write};

use memd::Layout;
use serde_json::{Value, json};

use crate::serving::*;
use crate::support::*;

#[test]
fn mcp_speaks_json_rpc_over_stdio() {
    let (_t, layout) = memory_dir();
    write_config(&layout, None, "");
    let (mut child, mut stdin, mut stdout) = spawn_mcp(&layout);
    let mut ask = |msg: Value| -> Option<Value> {
        writeln!(stdin, "{msg}").unwrap();
        stdin.flush().unwrap();
        msg.get("id")?;
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        Some(serde_json::from_str(&line).unwrap())
    };
    let init = ask(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "0"}}}))
    .unwrap();
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18");
    assert_eq!(init["result"]["serverInfo"]["name"], "memd");
    assert!(ask(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).is_none());
    let list = ask(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})).unwrap();
    the_tools_are_listed_with_schemas_and_annotations(&list);
    consolidate_erase_and_an_unknown_id_are_answered_in_mcp_words(&mut ask);
    let core = remember_recall_and_core_memory_reply_as_their_schemas_say(&mut ask, &list);
    memory_md_is_a_resource(&mut ask, &init, &layout);
    one_prompt_says_how_to_use_the_memory_with_the_core_memory_in_it(&mut ask, &init, &core);
    drop(stdin);
    assert!(child.wait().unwrap().success());
    let (facts, _) = memd::archive::read_all(&layout).unwrap();
    assert_eq!(facts.len(), 1);
    assert_eq!(facts[0].session.as_deref(), Some("mcp"));
}

/// The tools `tools/list` gives in `list`, each with object schemas for
/// its input and output and annotations saying what it changes.
fn the_tools_are_listed_with_schemas_and_annotations(list: &Value) {
    let names: Vec<&str> = list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "remember",
            "recall",
            "forget",
            "erase",
            "core_memory",
            "list_entries",
            "get_entry",
            "edit_entry",
            "review_items",
            "review",
            "consolidate"
        ]
    );
    for t in list["result"]["tools"].as_array().unwrap() {
        assert_eq!(t["inputSchema"]["type"], "object", "{t}");
        assert_eq!(t["outputSchema"]["type"], "object", "{t}");
    }
    // Tool annotations: what a client may ask the user before, or not.
    let hint = |name: &str, h: &str| {
        let tools = list["result"]["tools"].as_array().unwrap();
        let t = tools.iter().find(|t| t["name"] == name).unwrap();
        t["annotations"][h]
            .as_bool()
            .unwrap_or_else(|| panic!("{t}"))
    };
    for read in ["recall", "core_memory", "list_entries", "get_entry"] {
        assert!(hint(read, "readOnlyHint") && !hint(read, "destructiveHint"));
    }
    assert!(hint("forget", "destructiveHint") && hint("forget", "idempotentHint"));
    assert!(hint("erase", "destructiveHint") && hint("erase", "idempotentHint"));
    assert!(hint("edit_entry", "destructiveHint") && hint("edit_entry", "idempotentHint"));
    assert!(!hint("remember", "readOnlyHint") && !hint("remember", "destructiveHint"));
    assert!(hint("consolidate", "destructiveHint") && !hint("consolidate", "openWorldHint"));
    // `consolidate` is gated unless forced, and says so before and after.
    let tools = list["result"]["tools"].as_array().unwrap();
    let about = tools.iter().find(|t| t["name"] == "consolidate").unwrap()["description"]
        .as_str()
        .unwrap();
    assert!(about.contains("Without force it runs only when"), "{about}");
}

/// `consolidate` unforced is not run, a text the user erased is not
/// remembered again, and an id that names nothing is said in MCP's words;
/// each reply saying why.
fn consolidate_erase_and_an_unknown_id_are_answered_in_mcp_words(
    ask: &mut impl FnMut(Value) -> Option<Value>,
) {
    let r = ask(json!({"jsonrpc": "2.0", "id": 30, "method": "tools/call",
        "params": {"name": "consolidate", "arguments": {}}}))
    .unwrap();
    let said = r["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        said.starts_with("not run:") && said.contains("force: true"),
        "{r}"
    );
    // A text the user erased is not remembered again, and the reply says so.
    let remember = |id: u64| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "remember", "arguments": {"text": "The alarm code is OSPREY-2291"}}})
    };
    let r = ask(remember(31)).unwrap();
    let secret = r["result"]["structuredContent"]["facts"][0]["id"].clone();
    let r = ask(json!({"jsonrpc": "2.0", "id": 32, "method": "tools/call",
        "params": {"name": "erase", "arguments": {"id": secret}}}))
    .unwrap();
    assert_eq!(r["result"]["isError"], false, "{r}");
    let r = ask(remember(33)).unwrap();
    let said = r["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        said.starts_with("not remembered as ") && said.contains("the user erased"),
        "{r}"
    );
    // An id that names nothing: said in MCP's words, never a CLI command.
    let r = ask(json!({"jsonrpc": "2.0", "id": 34, "method": "tools/call",
        "params": {"name": "get_entry", "arguments": {"id": "e-00000bad"}}}))
    .unwrap();
    let said = r["result"]["content"][0]["text"].as_str().unwrap();
    assert_eq!(r["result"]["isError"], true, "{r}");
    assert!(
        said.contains("recall finds") && !said.contains("memd "),
        "{said}"
    );
}

/// `remember`, `recall` and `core_memory` reply in text and in structured
/// content fitting the output schema `list` gives; a bad call and an
/// unknown method are errors. The core memory's text.
fn remember_recall_and_core_memory_reply_as_their_schemas_say(
    ask: &mut impl FnMut(Value) -> Option<Value>,
    list: &Value,
) -> String {
    let output_schema = |name: &str| {
        let tools = list["result"]["tools"].as_array().unwrap();
        tools.iter().find(|t| t["name"] == name).unwrap()["outputSchema"].clone()
    };
    let r = ask(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "remember", "arguments": {"text": "Prefers aisle seats on trains", "session": "mcp"}}}))
    .unwrap();
    assert_eq!(r["result"]["isError"], false, "{r}");
    let said = r["result"]["content"][0]["text"].as_str().unwrap();
    // The same reply as structured content, fitting the tool's schema.
    let added = &r["result"]["structuredContent"];
    let id = added["facts"][0]["id"].as_str().unwrap();
    assert_eq!(said.lines().next().unwrap(), format!("remembered as {id}"));
    fits(added, &output_schema("remember"));
    let r = ask(json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
        "params": {"name": "recall", "arguments": {"query": "which seats on trains", "k": 3}}}))
    .unwrap();
    assert!(
        r["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("aisle seats"),
        "{r}"
    );
    let found = &r["result"]["structuredContent"];
    assert_eq!(found["hits"][0]["text"], "Prefers aisle seats on trains");
    assert!(found["hits"][0]["score"].as_f64().unwrap() > 0.0, "{found}");
    fits(found, &output_schema("recall"));
    let r = ask(json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
        "params": {"name": "remember", "arguments": {}}}))
    .unwrap();
    assert_eq!(r["result"]["isError"], true, "{r}");
    let r = ask(json!({"jsonrpc": "2.0", "id": 6, "method": "no/such"})).unwrap();
    assert_eq!(r["error"]["code"], -32601);
    let r = ask(json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "core_memory", "arguments": {}}}))
    .unwrap();
    let core = r["result"]["content"][0]["text"].as_str().unwrap();
    assert_eq!(core, "(no entries promoted yet)\n", "compact, no markup");
    assert_eq!(r["result"]["structuredContent"]["text"], core);
    fits(
        &r["result"]["structuredContent"],
        &output_schema("core_memory"),
    );
    core.to_string()
}

/// MEMORY.md is a resource too, as `init` says; a resource that is not
/// there is an error.
fn memory_md_is_a_resource(
    ask: &mut impl FnMut(Value) -> Option<Value>,
    init: &Value,
    layout: &Layout,
) {
    assert!(
        init["result"]["capabilities"]["resources"].is_object(),
        "{init}"
    );
    let r = ask(json!({"jsonrpc": "2.0", "id": 8, "method": "resources/list"})).unwrap();
    let uri = r["result"]["resources"][0]["uri"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(uri, "memd://MEMORY.md");
    let r = ask(
        json!({"jsonrpc": "2.0", "id": 9, "method": "resources/read",
        "params": {"uri": uri}}),
    )
    .unwrap();
    let text = r["result"]["contents"][0]["text"].as_str().unwrap();
    assert_eq!(text, std::fs::read_to_string(layout.memory_md()).unwrap());
    let r = ask(
        json!({"jsonrpc": "2.0", "id": 10, "method": "resources/read",
        "params": {"uri": "memd://nothing"}}),
    )
    .unwrap();
    assert_eq!(r["error"]["code"], -32002, "{r}");
}

/// One prompt, as `init` says: how to use the memory, ending in the core
/// memory `core`; a prompt that is not there is an error.
fn one_prompt_says_how_to_use_the_memory_with_the_core_memory_in_it(
    ask: &mut impl FnMut(Value) -> Option<Value>,
    init: &Value,
    core: &str,
) {
    assert!(
        init["result"]["capabilities"]["prompts"].is_object(),
        "{init}"
    );
    let r = ask(json!({"jsonrpc": "2.0", "id": 11, "method": "prompts/list"})).unwrap();
    assert_eq!(r["result"]["prompts"][0]["name"], "use_memory", "{r}");
    let r = ask(json!({"jsonrpc": "2.0", "id": 12, "method": "prompts/get",
        "params": {"name": "use_memory"}}))
    .unwrap();
    let said = r["result"]["messages"][0]["content"]["text"]
        .as_str()
        .unwrap();
    assert!(
        said.contains("supersedes") && said.contains("exclude_core"),
        "{said}"
    );
    assert!(said.trim_end().ends_with(core.trim_end()), "{said}");
    let r = ask(json!({"jsonrpc": "2.0", "id": 13, "method": "prompts/get",
        "params": {"name": "nothing"}}))
    .unwrap();
    assert_eq!(r["error"]["code"], -32602, "{r}");
}

/// Whether `v` fits `schema` as far as its shape goes: every field an
/// object has is one the schema names, every field it requires is there,
/// and so on into fields and lists (the Python SDK's test checks the
/// schema in full, with jsonschema).
fn fits(v: &Value, schema: &Value) {
    if let Some(options) = schema["anyOf"].as_array().or(schema["oneOf"].as_array()) {
        let ok = options
            .iter()
            .any(|s| std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| fits(v, s))).is_ok());
        assert!(ok, "{v} fits none of {schema}");
        return;
    }
    match v {
        Value::Object(o) => {
            let props = schema["properties"].as_object();
            for (k, field) in o {
                let Some(s) = props.and_then(|p| p.get(k)) else {
                    assert!(
                        schema["additionalProperties"] != false && props.is_none(),
                        "field {k} is not in {schema}"
                    );
                    continue;
                };
                fits(field, s);
            }
            for r in schema["required"].as_array().into_iter().flatten() {
                assert!(o.contains_key(r.as_str().unwrap()), "{v} lacks {r}");
            }
        }
        Value::Array(items) => {
            for i in items {
                fits(i, &schema["items"]);
            }
        }
        _ => {}
    }
}

/// One line of bytes that is not UTF-8, or one too long to read, gets a
/// parse error and the server goes on; a MEMORY.md that is not UTF-8 is a
/// clear error to the model, never an empty memory.
#[test]
fn mcp_answers_bad_bytes_with_a_parse_error_and_goes_on() {
    let (_t, layout) = memory_dir();
    write_config(&layout, None, "");
    let mut md = std::fs::read(layout.memory_md()).unwrap();
    md.extend_from_slice(b"Caf\xe9 notes kept by hand\n");
    std::fs::write(layout.memory_md(), &md).unwrap();
    let (mut child, mut stdin, mut stdout) = spawn_mcp(&layout);
    let mut reply = || -> Value {
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        serde_json::from_str(&line).unwrap()
    };
    stdin
        .write_all(b"{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \"p\xffing\"}\n")
        .unwrap();
    stdin.flush().unwrap();
    let r = reply();
    assert_eq!(r["error"]["code"], -32700, "{r}");
    let long = vec![b'x'; 5 << 20];
    stdin.write_all(&long).unwrap();
    stdin
        .write_all(b"\n{\"jsonrpc\": \"2.0\", \"id\": 2, \"method\": \"ping\"}\n")
        .unwrap();
    stdin.flush().unwrap();
    let r = reply();
    assert_eq!(r["error"]["code"], -32700, "{r}");
    let r = reply();
    assert_eq!(r["id"], 2, "{r}");
    assert!(r["result"].is_object(), "{r}");

    let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "core_memory", "arguments": {}}});
    writeln!(stdin, "{call}").unwrap();
    stdin.flush().unwrap();
    let r = reply();
    assert_eq!(r["result"]["isError"], true, "{r}");
    let text = r["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("not UTF-8"), "{text}");
    drop(stdin);
    assert!(child.wait().unwrap().success());
    assert_eq!(std::fs::read(layout.memory_md()).unwrap(), md);
}

/// Call `tool` with `args` as request `id`; the text of its result, read
/// as `reply` gives it, which must not be an error.
fn tool_call(
    stdin: &mut std::process::ChildStdin,
    id: u64,
    (tool, args): (&str, Value),
    reply: impl FnOnce() -> String,
) -> String {
    let msg = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": tool, "arguments": args}});
    writeln!(stdin, "{msg}").unwrap();
    stdin.flush().unwrap();
    let r: Value = serde_json::from_str(&reply()).unwrap();
    assert_eq!(r["result"]["isError"], false, "{r}");
    r["result"]["content"][0]["text"].as_str().unwrap().into()
}

/// Call tools of the server on `stdin` and `stdout`, one at a time, as
/// [`tool_call`] does; dropped, it closes the server's input.
fn caller(
    mut stdin: std::process::ChildStdin,
    mut stdout: std::io::BufReader<std::process::ChildStdout>,
) -> impl FnMut(&str, Value) -> String {
    let mut id = 0;
    move |tool: &str, args: Value| -> String {
        id += 1;
        let reply = || {
            let mut line = String::new();
            stdout.read_line(&mut line).unwrap();
            line
        };
        tool_call(&mut stdin, id, (tool, args), reply)
    }
}

#[test]
fn mcp_holds_its_index_and_still_sees_what_other_processes_write() {
    let (_t, layout) = memory_dir();
    write_config(&layout, None, "");
    let (mut child, stdin, stdout) = spawn_mcp(&layout);
    let mut call = caller(stdin, stdout);
    call("remember", json!({"text": "Prefers aisle seats on trains"}));
    assert!(call("recall", json!({"query": "aisle seats"})).contains("aisle seats"));

    // Another process writes while the server holds its index open.
    let out = crate::support::memd(&layout.root, &["add", "Owns a red kayak called Flint"]);
    assert!(out.status.success(), "{}", crate::support::stderr(&out));
    let found = call("recall", json!({"query": "red kayak Flint", "k": 3}));
    assert!(found.contains("kayak"), "{found}");
    let id_of = |text: &str| -> String {
        let start = text.find("[2").expect("a fact id") + 1;
        text[start..].split(']').next().unwrap().to_string()
    };
    let seats = id_of(&call("recall", json!({"query": "aisle seats", "k": 1})));
    let out = crate::support::memd(&layout.root, &["forget", &seats]);
    assert!(out.status.success(), "{}", crate::support::stderr(&out));
    let after = call("recall", json!({"query": "aisle seats on trains", "k": 5}));
    assert!(!after.contains("aisle seats"), "{after}");
    drop(call);
    child.wait().unwrap();
}

/// `remember` through `memd mcp` is answered once the fact's rows are
/// shown to searches, not after LanceDB writes them: with the
/// server's sync stopped for good between the two, the remember is
/// answered and a recall finds the fact. Killed
/// there, the next process indexes the fact from its file, and `memd
/// check` passes.
#[test]
fn mcp_answers_a_remember_before_the_table_holds_the_fact() {
    let (_t, layout) = memory_dir();
    write_config(&layout, None, "");
    let dir = layout.root.as_path();
    crate::trust::add(dir, "The user keeps bees in the garden");
    crate::trust::add(dir, "The user grows tomatoes on the balcony");
    let pause = [("MEMD_PAUSE_AT", "index-shown")];
    let (mut child, mut stdin, stdout) = spawn_mcp_env(dir, &[], &pause);
    // Replies are read on a thread: a remember that waited for the
    // stopped sync would never be answered, and the test would wait.
    let (tx, replies) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in stdout.lines() {
            let Ok(line) = line else { return };
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    let mut id = 0;
    let mut call = |tool: &str, args: Value| -> String {
        id += 1;
        let reply = || {
            let wait = std::time::Duration::from_secs(60);
            let line = replies.recv_timeout(wait);
            line.unwrap_or_else(|e| panic!("no answer to {tool}: {e}"))
        };
        tool_call(&mut stdin, id, (tool, args), reply)
    };
    // A recall first: the server then holds the rows' words, where a
    // sync shows its rows.
    assert!(call("recall", json!({"query": "bees garden"})).contains("bees"));
    let said = call(
        "remember",
        json!({"text": "The user keeps Zqwasps beside the bees"}),
    );
    assert!(said.contains("remembered as"), "{said}");
    let marker = dir.join(".memd").join("paused-at-index-shown");
    wait_until("the sync stops before its table write", || marker.exists());
    let found = call("recall", json!({"query": "Zqwasps", "k": 3}));
    assert!(found.contains("Zqwasps"), "{found}");
    child.kill().unwrap();
    child.wait().unwrap();
    std::fs::remove_file(&marker).unwrap();

    let out = crate::trust::ok(dir, &["search", "Zqwasps"]);
    assert!(out.contains("Zqwasps"), "{out}");
    let (passed, _, v) = crate::trust::check(dir);
    assert!(passed, "{v}");
}

/// A writer that is not the table's sole one reads every kept table
/// version at each sync, so `memd mcp` drops old versions as it writes:
/// after 300 remembers, with versions kept for no time at all
/// (a test build's `MEMD_VERSIONS_KEPT_SECONDS`), the table keeps at most
/// one prune's worth; every fact is still found, and `memd check` passes.
#[test]
fn mcp_drops_old_table_versions_as_it_writes() {
    let (_t, layout) = memory_dir();
    write_config(&layout, None, "");
    let dir = layout.root.as_path();
    let kept = [("MEMD_VERSIONS_KEPT_SECONDS", "0")];
    let (mut child, stdin, stdout) = spawn_mcp_env(dir, &[], &kept);
    let mut call = caller(stdin, stdout);
    for i in 0..300 {
        call(
            "remember",
            json!({"text": format!("Zqplant{i} grows by the window")}),
        );
    }
    for i in [0, 150, 299] {
        let found = call("recall", json!({"query": format!("Zqplant{i}"), "k": 3}));
        assert!(found.contains(&format!("Zqplant{i} ")), "{i}: {found}");
    }
    drop(call);
    assert!(child.wait().unwrap().success());
    let manifests = table_versions(dir);
    assert!(manifests <= 144, "{manifests} versions kept");
    let (passed, _, v) = crate::trust::check(dir);
    assert!(passed, "{v}");
}

/// The table versions kept (one manifest each).
fn table_versions(dir: &std::path::Path) -> usize {
    let versions = dir.join(".memd/index/lance/memory.lance/_versions");
    std::fs::read_dir(&versions)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with(".manifest")
        })
        .count()
}

/// A memory of one fact and `memd mcp` serving it, holding rows back from
/// the table for ten minutes (a test build's `MEMD_HELD_MS`), its rows'
/// words loaded by a first recall so that rows are held from the first
/// remember on; with a caller of its tools.
fn holding_mcp() -> (
    tempfile::TempDir,
    Layout,
    std::process::Child,
    impl FnMut(&str, Value) -> String,
) {
    let (t, layout) = memory_dir();
    write_config(&layout, None, "");
    crate::trust::add(&layout.root, "The user keeps bees in the garden");
    let held = [("MEMD_HELD_MS", "600000")];
    let (child, stdin, stdout) = spawn_mcp_env(&layout.root, &[], &held);
    let mut call = caller(stdin, stdout);
    assert!(call("recall", json!({"query": "bees garden"})).contains("bees"));
    (t, layout, child, call)
}

/// `call` remembers `text`, which must be acknowledged.
fn remember(call: &mut impl FnMut(&str, Value) -> String, text: &str) {
    let said = call("remember", json!({ "text": text }));
    assert!(said.contains("remembered as"), "{said}");
}

/// An agent remembering facts back to back has them written to the table
/// in groups, not one commit each: a commit costs about the same whatever
/// its rows (measured in BENCHMARKS.md, "`remember`'s rows written to the
/// table in groups"). Held, they are found at once, `memd check` from
/// another process meanwhile sees them as not synced yet (a note, not a
/// problem), and the server's exit commits them: the table then holds
/// every fact, in one more version.
#[test]
fn mcp_writes_back_to_back_remembers_to_the_table_in_one_commit() {
    let (_t, layout, mut child, mut call) = holding_mcp();
    let dir = layout.root.as_path();
    let before = table_versions(dir);
    for i in 0..30 {
        remember(&mut call, &format!("Zqfern{i} grows in the hall"));
    }
    for i in [0, 29] {
        let found = call("recall", json!({"query": format!("Zqfern{i}"), "k": 3}));
        assert!(found.contains(&format!("Zqfern{i} ")), "{i}: {found}");
    }
    assert_eq!(table_versions(dir), before, "a commit while rows are held");
    let (passed, _, v) = crate::trust::check(dir);
    assert!(passed && crate::trust::unsynced_notes(&v) > 0, "{v}");
    drop(call);
    assert!(child.wait().unwrap().success());
    assert_eq!(table_versions(dir), before + 1);
    let (passed, _, v) = crate::trust::check(dir);
    assert!(passed && crate::trust::unsynced_notes(&v) == 0, "{v}");
    assert_eq!(v["index_rows"], 31, "{v}");
}

/// Rows held when the server is killed are in the files: the next process
/// indexes them from there, once each.
#[test]
fn mcp_killed_while_rows_are_held_loses_no_fact() {
    let (_t, layout, mut child, mut call) = holding_mcp();
    let dir = layout.root.as_path();
    for i in 0..5 {
        remember(&mut call, &format!("Zqmoss{i} grows on the wall"));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    for i in 0..5 {
        let out = crate::trust::ok(dir, &["search", &format!("Zqmoss{i}")]);
        assert!(out.contains(&format!("Zqmoss{i} ")), "{i}: {out}");
    }
    let (passed, _, v) = crate::trust::check(dir);
    assert!(passed && crate::trust::unsynced_notes(&v) == 0, "{v}");
    assert_eq!(v["index_rows"], 6, "{v}");
}

/// Another process that syncs the table while `memd mcp` holds rows adds
/// them itself (they are in the files); the server then takes its held
/// rows back instead of adding them a second time.
#[test]
fn mcp_holding_rows_another_process_indexed_adds_none_twice() {
    let (_t, layout, mut child, mut call) = holding_mcp();
    let dir = layout.root.as_path();
    remember(&mut call, "Zqivy climbs the fence");
    crate::trust::add(dir, "Zqholly grows by the gate");
    remember(&mut call, "Zqrose climbs the arch");
    for word in ["Zqivy", "Zqholly", "Zqrose"] {
        let found = call("recall", json!({"query": word, "k": 3}));
        assert!(found.contains(word), "{word}: {found}");
    }
    drop(call);
    assert!(child.wait().unwrap().success());
    let (passed, kinds, v) = crate::trust::check(dir);
    assert!(passed, "{kinds:?} {v}");
    assert_eq!(v["index_rows"], 4, "{v}");
}

#[test]
fn mcp_with_a_memory_name_serves_the_memories_under_its_directory() {
    let root = root_dir();
    let (mut child, mut stdin, mut stdout) = spawn_mcp_with(root.path(), &["--memory", "alice"]);
    let mut call = |name: &str, args: Value| tool(&mut stdin, &mut stdout, name, args);
    let (err, text) = call("remember", json!({"text": "Alice keeps bees"}));
    assert!(!err, "{text}");
    let (err, text) = call(
        "remember",
        json!({"text": "Bob keeps goats", "memory": "bob"}),
    );
    assert!(!err, "{text}");
    let (_, alice) = call("recall", json!({"query": "keeps", "k": 10}));
    assert!(
        alice.contains("bees") && !alice.contains("goats"),
        "{alice}"
    );
    let (_, bob) = call(
        "recall",
        json!({"query": "keeps", "k": 10, "memory": "bob"}),
    );
    assert!(bob.contains("goats") && !bob.contains("bees"), "{bob}");
    let (err, text) = call("recall", json!({"query": "x", "memory": "../alice"}));
    assert!(err && text.contains("memory name"), "{text}");
    let (err, text) = call("recall", json!({"query": "x", "memory": "carol"}));
    assert!(err && text.contains("no memory"), "{text}");
    assert!(!root.path().join("carol").exists());
    drop(stdin);
    child.wait().unwrap();

    // One memory directory: no `memory` to choose.
    let alice = Layout::open(root.path().join("alice")).unwrap();
    let (mut child, mut stdin, mut stdout) = spawn_mcp(&alice);
    let (err, text) = tool(
        &mut stdin,
        &mut stdout,
        "recall",
        json!({"query": "x", "memory": "bob"}),
    );
    assert!(err && text.contains("--memory"), "{text}");
    drop(stdin);
    child.wait().unwrap();
}
