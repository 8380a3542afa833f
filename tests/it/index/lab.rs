//! `memd eval` and `memd bench`: recall and merges measured on labelled
//! pairs, and the benches' figures per day count and per search step.

#[cfg(feature = "lab")]
use super::lexical;
use crate::support::stderr;

/// Tiny data files in the formats of ../shared/evaldata: SICK rows, the
/// Letta JSON lines and MRPC training rows (headers added here; MRPC with
/// its BOM).
#[cfg(feature = "lab")]
fn eval_data(sick: &str, letta: &str, mrpc: &str) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let sick_head = "pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_AB\tentailment_BA\tSemEval_set\n";
    std::fs::write(d.join("sick_dev.tsv"), format!("{sick_head}{sick}")).unwrap();
    std::fs::write(d.join("letta_updates_dev.jsonl"), letta).unwrap();
    let mrpc_head = "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n";
    let train = format!("\u{feff}{mrpc_head}{mrpc}");
    std::fs::write(d.join("msr-para-train.tsv"), train).unwrap();
    std::fs::write(d.join("msr-para-val.tsv"), mrpc_head).unwrap();
    tmp
}

#[cfg(feature = "lab")]
#[tokio::test(flavor = "multi_thread")]
async fn eval_neighbours_measures_recall_on_labelled_pairs() {
    let sick = "1\tA man is playing a guitar\tA man is playing the guitar\t5\tA_entails_B\tB_entails_A\tTRAIN\n\
                2\tA dog runs in the park\tA cat sleeps on a sofa\t1\tA_neutral_B\tB_neutral_A\tTRAIN\n";
    let letta = r#"{"set":0,"facts":["Ann works as a nurse in Oslo","Bob plays chess on Sundays"],"new_fact":"Ann now works as a doctor in Oslo","supersedes":[0],"question":"q","answer_after":"doctor","answer_before":"nurse"}"#;
    let mrpc = "1\t1\t2\tStocks rallied sharply in March\tStocks rallied sharply during March\n\
                0\t3\t4\tThe senate passed the bill\tRain is expected tomorrow\n";
    let tmp = eval_data(sick, letta, mrpc);
    let d = tmp.path();

    let reports = memd::eval::neighbours(d, lexical(), &d.join("cache"))
        .await
        .unwrap();
    let by: std::collections::HashMap<_, _> =
        reports.iter().map(|r| (r.source.as_str(), r)).collect();
    let sick = by["sick-mutual-entailment"];
    assert_eq!((sick.pool, sick.queries), (4, 2));
    assert_eq!(sick.recall[0], (1, 1.0));
    let letta = by["letta-new-fact-to-superseded"];
    // The new fact is a query, not part of the pool it searches.
    assert_eq!((letta.pool, letta.queries), (2, 1));
    assert_eq!(letta.recall[0], (1, 1.0));
    let mrpc = by["mrpc-paraphrase"];
    assert_eq!((mrpc.pool, mrpc.queries), (4, 2));
    assert_eq!(mrpc.recall[0], (1, 1.0));
}

/// `memd eval dedup` counts merges per source: the shipped rule merges the
/// pair that says the same thing and not the contradiction, which a
/// one-word swap does merge (so the figures can show a false merge).
#[cfg(feature = "lab")]
#[tokio::test(flavor = "multi_thread")]
async fn eval_dedup_counts_merges_and_false_merges_per_rule() {
    let sick = "1\tA man is playing a guitar\tThe man is playing the guitar\t5\tA_entails_B\tB_entails_A\tTRAIN\n\
                2\tA man is playing a guitar\tA woman is playing a guitar\t3\tA_contradicts_B\tB_contradicts_A\tTRAIN\n";
    let letta = r#"{"set":0,"facts":["Ann works as a nurse in Oslo","Bob plays chess on Sundays"],"new_fact":"Ann works as a doctor in Oslo","supersedes":[0]}"#;
    let tmp = eval_data(sick, letta, "");
    let d = tmp.path();
    let r = memd::eval::dedup::run(d, lexical(), &d.join("cache"))
        .await
        .unwrap();
    let names: Vec<&str> = r.sources.iter().map(|s| s.name.as_str()).collect();
    let at = |name: &str| names.iter().position(|n| *n == name).unwrap();
    let row = |rule: memd::duplicate::Rule| r.rows.iter().find(|row| row.rule == rule).unwrap();
    let shipped = row(memd::duplicate::Rule::SHIPPED);
    assert_eq!(shipped.merged[at("sick-mutual-entailment")], 1);
    assert_eq!(shipped.false_merges, 0);
    let swap = row(memd::duplicate::Rule {
        words: memd::duplicate::Words::OneSwap,
        stem: true,
        min_cosine: 0.0,
    });
    assert_eq!(swap.merged[at("sick-contradiction")], 1);
    // "nurse" → "doctor": an update, not the same fact.
    assert_eq!(swap.merged[at("letta-update-vs-superseded")], 1);
    assert_eq!(swap.false_merges, 2);
}

/// `memd ARGS DIR` (a bench that prints a JSON line per figure set): its
/// lines, and its whole output.
fn bench_lines(args: &[&str], dir: &std::path::Path) -> (Vec<serde_json::Value>, String) {
    let out = std::process::Command::new(crate::support::memd_bin())
        .args(args)
        .arg(dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{}", stderr(&out));
    let lines = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (lines, stdout)
}

/// `memd bench days` runs a daemon per day count, all at once, and
/// reports each count's figures with its ratio to the first; every post
/// it times was found by the search after it (the bench fails otherwise),
/// and status, check, a gated consolidation and the similar-entries
/// lookup are timed at each count too (each must have succeeded).
#[test]
fn bench_days_compares_day_counts_in_one_run() {
    let t = tempfile::tempdir().unwrap();
    let args = [
        "bench",
        "days",
        "--days",
        "2,6",
        "--facts",
        "30",
        "--searches",
        "4",
        "--appends",
        "3",
        "--others",
        "2",
        "--embedder",
        "lexical",
        "--in",
    ];
    let (lines, stdout) = bench_lines(&args, t.path());
    let days: Vec<u64> = lines
        .iter()
        .map(|l| l["day_files"].as_u64().unwrap())
        .collect();
    assert_eq!(days, [2, 6], "{stdout}");
    assert_eq!(lines[0]["search_vs_first"], 1.0);
    for l in &lines {
        assert!(
            l["append_to_searchable_p50_ms"].as_f64().unwrap() > 0.0,
            "{l}"
        );
        for other in ["status", "check", "consolidate_gated", "similar"] {
            assert!(l["others"][other]["p50_ms"].as_f64().unwrap() > 0.0, "{l}");
        }
    }
    assert_eq!(lines[0]["others"]["check"]["vs_first"], 1.0, "{stdout}");
}

/// `memd bench search-path ARGS` with 5 searches and 2 appends at each
/// size, on the lexical embedder: its lines, and its whole output.
fn search_path_lines(args: &[&str]) -> (Vec<serde_json::Value>, String) {
    let t = tempfile::tempdir().unwrap();
    let load = ["--searches", "5", "--appends", "2", "--embedder", "lexical"];
    let mut all = vec!["bench", "search-path"];
    all.extend(args.iter().chain(&load));
    all.push("--in");
    bench_lines(&all, t.path())
}

/// How many times `steps` (a report's list) ran the step `name`.
fn runs(steps: &serde_json::Value, name: &str) -> Option<u64> {
    let steps = steps.as_array().unwrap();
    let step = steps.iter().find(|s| s["step"] == name);
    step.and_then(|s| s["runs"].as_u64())
}

/// `memd bench search-path --via mcp` sends the same requests to `memd
/// mcp`'s handler in its own process: each search is one MCP call, and,
/// as in `memd mcp` (not the table's sole writer), each search's sync
/// takes the index lock and looks for a newer table version; each
/// remember's sync embeds its row (and holds it back from the table for a
/// later commit of many, as `memd mcp` does).
#[test]
fn bench_search_path_via_mcp_times_the_mcp_servers_steps() {
    let (lines, stdout) = search_path_lines(&["--via", "mcp", "--sizes", "20"]);
    assert_eq!(lines.len(), 1, "{stdout}");
    let l = &lines[0];
    let search = &l["search_steps"];
    for step in [
        "MCP call",
        "sync: lock",
        "sync: latest version",
        "query embedding",
    ] {
        assert_eq!(runs(search, step), Some(5), "{step}: {l}");
    }
    for step in ["HTTP handler", "HTTP hop (client wait less handler)"] {
        assert_eq!(runs(search, step), None, "{step}: {l}");
    }
    assert_eq!(runs(&l["append_steps"], "sync: embedding"), Some(2), "{l}");
    assert!(runs(&l["append_steps"], "MCP call") >= Some(4), "{l}");
    assert!(
        l["append_to_searchable_p50_ms"].as_f64().unwrap() > 0.0,
        "{l}"
    );
}

/// `memd bench search-path` serves a memory from its own process and
/// breaks each search, and each append → searchable, into the steps the
/// daemon ran, at each size: every search ran each step of the search
/// path once, and the appends' syncs embedded and added rows; the median
/// append → searchable is shown as a timeline.
#[test]
fn bench_search_path_times_each_step_of_a_search_at_each_size() {
    let (lines, stdout) = search_path_lines(&["--sizes", "20,50"]);
    let sizes: Vec<u64> = lines.iter().map(|l| l["facts"].as_u64().unwrap()).collect();
    assert_eq!(sizes, [20, 50], "{stdout}");
    for l in &lines {
        let search = &l["search_steps"];
        for step in [
            "HTTP handler",
            "sync",
            "query embedding",
            "vector search",
            "full text (BM25)",
            "fusion",
            "collapse and finish",
            "recall log",
            "reply serialised",
            "HTTP hop (client wait less handler)",
        ] {
            assert_eq!(runs(search, step), Some(5), "{step}: {l}");
        }
        assert_eq!(runs(&l["append_steps"], "sync: embedding"), Some(2), "{l}");
        assert!(
            l["append_to_searchable_p50_ms"].as_f64().unwrap() > 0.0,
            "{l}"
        );
        // The median append → searchable, as a timeline: the post's
        // handler and its append, the sync's table add and the search's
        // vector search, each in time order, ending when the client has
        // the reply that found the fact.
        let timeline = l["append_timeline"].as_array().unwrap();
        let at = |m: &serde_json::Value, k: &str| m[k].as_f64().unwrap();
        let (last, moments) = timeline.split_last().unwrap();
        assert_eq!(last["step"], "found (the client has the reply)", "{l}");
        let found = at(last, "from_ms");
        for step in ["HTTP handler", "append", "sync: table add", "vector search"] {
            assert!(moments.iter().any(|m| m["step"] == step), "{step}: {l}");
        }
        for (a, b) in moments.iter().zip(&moments[1..]) {
            assert!(at(a, "from_ms") <= at(b, "from_ms"), "{l}");
        }
        for m in moments {
            assert!(at(m, "from_ms") <= at(m, "to_ms"), "{l}");
            assert!(at(m, "from_ms") <= found, "{l}");
        }
    }
}
