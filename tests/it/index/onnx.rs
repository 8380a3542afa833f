//! The built-in MiniLM embedder on ONNX Runtime: its vectors, its quick
//! session, what a missing model or runtime says, and no telemetry.

use memd::config::Config;
use memd::embed::{self, Embedder};

use super::runtime_texts;
use crate::support::stderr;

#[tokio::test(flavor = "multi_thread")]
async fn minilm_ranks_by_meaning() {
    let cfg = Config::default().embedder;
    let dir = embed::minilm::model_dir(&cfg);
    let e = embed::onnx::OnnxMiniLm::load(&dir)
        .expect("the test suite fetches the model: ./scripts/fetch-model.sh");
    let texts: Vec<String> = [
        "what coffee does the user like",
        "User loves coffee, especially flat white",
        "User broke the pour-over set",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let v = e.embed(&texts).await.unwrap();
    assert_eq!(v[0].len(), 384);
    let (good, bad) = (embed::cosine(&v[0], &v[1]), embed::cosine(&v[0], &v[2]));
    assert!(good > bad, "flat white {good} should beat pour-over {bad}");
}

#[test]
fn a_missing_model_says_how_to_get_it() {
    let tmp = tempfile::tempdir().unwrap();
    let err = embed::onnx::OnnxMiniLm::load(tmp.path())
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("memd setup") && err.contains("lexical"),
        "{err}"
    );
}

/// A model directory of links to the real model's files, with a folder of
/// its own for ONNX Runtime (where the quick session's graph is saved).
fn linked_model_dir() -> (tempfile::TempDir, std::path::PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    let files = [
        "model.onnx",
        "config.json",
        "tokenizer.json",
        "onnxruntime/libonnxruntime.so",
    ];
    crate::support::link_model_files(&dir, &files);
    (tmp, dir)
}

/// The saved graphs in a model directory.
fn saved_graphs(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(dir.join("onnxruntime"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "ort"))
        .collect()
}

/// A one-shot process embeds a few texts on the quick session (the graph
/// saved once, mapped, its weights unpacked); a large call makes the full
/// session. Both give the same vectors, and a damaged saved graph is
/// neither used nor fatal: the full session answers and the next process
/// saves the graph again.
#[tokio::test(flavor = "multi_thread")]
async fn the_quick_onnx_session_gives_the_full_sessions_vectors() {
    use memd::embed::onnx::OnnxMiniLm;
    let (_tmp, dir) = linked_model_dir();
    let texts = runtime_texts();
    let first = OnnxMiniLm::load(&dir).unwrap();
    let quick = first.embed(&texts).await.unwrap();
    assert!(first.is_quick(), "a few texts run on the quick session");
    assert_eq!(saved_graphs(&dir).len(), 1, "the graph is saved once");

    let many: Vec<String> = (0..100)
        .map(|i| format!("The user fact number {i}"))
        .collect();
    first.embed(&many).await.unwrap();
    assert!(!first.is_quick(), "a large call makes the full session");
    let full = first.embed(&texts).await.unwrap();
    for (i, t) in texts.iter().enumerate() {
        let c = embed::cosine(&quick[i], &full[i]);
        assert!(c >= 0.99999, "{t:?}: quick vs full cosine {c}");
    }

    let saved = saved_graphs(&dir).remove(0);
    let damaged = dir.join("onnxruntime").join("damaged");
    std::fs::write(&damaged, b"not a graph").unwrap();
    std::fs::rename(&damaged, &saved).unwrap();
    let second = OnnxMiniLm::load(&dir).unwrap();
    let again = second.embed(&texts).await.unwrap();
    assert!(!second.is_quick(), "a damaged graph is not used");
    assert!(embed::cosine(&again[0], &full[0]) >= 0.99999);
    let third = OnnxMiniLm::load(&dir).unwrap();
    third.embed(&texts[..1]).await.unwrap();
    assert!(third.is_quick(), "the graph was saved again");
    let graphs = saved_graphs(&dir);
    assert_eq!(graphs.len(), 1, "{graphs:?}");
    assert!(std::fs::metadata(&graphs[0]).unwrap().len() > 1_000_000);
}

/// With the weights but without ONNX Runtime (candle ran them until it
/// was removed), every runtime setting, `candle` from an old configuration
/// included, says what is missing and how to fetch it.
#[test]
fn without_onnx_runtime_the_minilm_embedder_says_what_to_fetch_whatever_the_runtime_setting() {
    use memd::config::Runtime;
    let tmp = tempfile::tempdir().unwrap();
    let files = ["model.safetensors", "config.json", "tokenizer.json"];
    crate::support::link_model_files(tmp.path(), &files);
    let old: memd::config::Embedder = toml::from_str("runtime = \"candle\"").unwrap();
    for runtime in [Runtime::Auto, Runtime::Onnx, old.runtime] {
        let cfg = memd::config::Embedder {
            runtime,
            model_dir: tmp.path().display().to_string(),
            ..Default::default()
        };
        let err = embed::from_config(&cfg)
            .err()
            .expect("no ONNX Runtime")
            .to_string();
        assert!(
            err.contains("model.onnx")
                && err.contains("libonnxruntime.so")
                && err.contains("memd setup"),
            "{err}"
        );
    }
}

/// memd runs offline (README): ONNX Runtime's own telemetry, on in
/// Microsoft's builds of the library, wrote a device id and an event queue
/// under `~/.cache/Microsoft/DeveloperTools/.onnxruntime` and looked up
/// `mobile.events.data.microsoft.com` to send them. It stays off in every
/// memd process. (Outside `CI`, where the library turns it off itself.)
#[test]
fn memd_with_onnx_runtime_writes_no_telemetry_and_no_device_id() {
    let (_mem, layout) = crate::support::memory_dir();
    let (_model, model_dir) = linked_model_dir();
    let config = format!(
        "[embedder]\nkind = \"minilm\"\nruntime = \"onnx\"\nmodel_dir = {:?}\n",
        model_dir.display().to_string()
    );
    std::fs::write(layout.root.join("memd.toml"), config).unwrap();
    let home = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        let out = std::process::Command::new(crate::support::memd_bin())
            .arg("--dir")
            .arg(&layout.root)
            .args(args)
            .env_remove("CI")
            .env_remove("ORT_DISABLE_TELEMETRY")
            .env_remove("MEMD_DIR")
            .env("HOME", home.path())
            .env("XDG_CACHE_HOME", home.path().join(".cache"))
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    run(&["add", "The user drinks oolong tea every afternoon"]);
    let found = run(&[
        "search",
        "which tea does the user drink",
        "--min-score",
        "0",
    ]);
    assert!(found.contains("oolong"), "{found}");
    let telemetry = home.path().join(".cache/Microsoft");
    assert!(
        !telemetry.exists(),
        "ONNX Runtime wrote {}",
        telemetry.display()
    );
}
