//! Embedders: text → unit vectors, behind one trait with three real
//! implementations.
//!
//! - [`minilm`] (default): all-MiniLM-L6-v2 in process, offline, on ONNX
//!   Runtime ([`onnx`]) when it is installed beside the model, else on
//!   candle;
//! - [`openai`]: any OpenAI-compatible `/v1/embeddings` endpoint;
//! - [`lexical`]: hashed word and character n-grams, no model at all. It
//!   finds shared words, not shared meaning: weaker, for tiny machines.
//!
//! Every vector is L2-normalised, so cosine similarity is a dot product.
//! [`cache`] keeps embeddings by (embedder id, text hash) so a rebuild never
//! re-embeds a text it embedded before.

pub mod cache;
pub mod lexical;
pub mod minilm;
pub mod onnx;
pub mod openai;

use std::sync::Arc;

use crate::Result;
use crate::config::{self, EmbedderKind};

#[async_trait::async_trait]
pub trait Embedder: Send + Sync {
    /// Names the model and its settings: vectors of different ids never mix.
    fn id(&self) -> String;
    /// Vector length (for HTTP embedders, learned from the first reply).
    async fn dim(&self) -> Result<usize>;
    /// One unit vector per text, in order.
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>>;
    /// For a process that will embed texts for a long time (a daemon,
    /// `memd mcp`): make ready now what makes the steady state fastest,
    /// even if it costs more to make ([`onnx`]).
    fn warm(&self) {}
}

/// The embedder the configuration asks for.
pub fn from_config(cfg: &config::Embedder) -> Result<Arc<dyn Embedder>> {
    Ok(match cfg.kind {
        EmbedderKind::Minilm => minilm_on(cfg.runtime, &minilm::model_dir(cfg))?,
        EmbedderKind::Openai => Arc::new(openai::OpenAi::new(cfg)?),
        EmbedderKind::Lexical => Arc::new(lexical::Lexical),
    })
}

/// The embedder in force, as `memd status` reports it.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Model {
    pub kind: EmbedderKind,
    /// The minilm model's directory.
    pub dir: Option<String>,
    /// What runs the minilm model (`onnx` or `candle`), once resolved.
    pub runtime: Option<config::Runtime>,
    /// The HTTP embedder's model name.
    pub name: Option<String>,
    /// Why it cannot start (files missing), and how to mend that.
    pub missing: Option<String>,
}

impl Model {
    /// The embedder `cfg` names, looked at without loading it.
    pub fn of(cfg: &config::Embedder) -> Model {
        let dir = (cfg.kind == EmbedderKind::Minilm).then(|| minilm::model_dir(cfg));
        Model {
            kind: cfg.kind,
            runtime: dir.as_deref().map(|d| resolve_runtime(cfg.runtime, d)),
            dir: dir.map(|d| d.display().to_string()),
            name: (cfg.kind == EmbedderKind::Openai).then(|| cfg.model.clone()),
            missing: missing(cfg),
        }
    }
}

/// Why the configured embedder cannot start, when that is known without
/// starting it (the minilm model's files are missing).
pub fn missing(cfg: &config::Embedder) -> Option<String> {
    match cfg.kind {
        EmbedderKind::Minilm => {
            let dir = minilm::model_dir(cfg);
            match resolve_runtime(cfg.runtime, &dir) {
                config::Runtime::Onnx => onnx::missing(&dir),
                _ => minilm::missing(&dir),
            }
        }
        EmbedderKind::Openai | EmbedderKind::Lexical => None,
    }
}

/// What `runtime` means for the model in `dir`: `auto` is ONNX Runtime
/// when its files are there, else candle.
pub fn resolve_runtime(runtime: config::Runtime, dir: &std::path::Path) -> config::Runtime {
    use config::Runtime;
    match runtime {
        Runtime::Auto if onnx::available(dir) => Runtime::Onnx,
        Runtime::Auto => Runtime::Candle,
        other => other,
    }
}

/// The minilm model in `dir` on `runtime` ([`resolve_runtime`]).
pub fn minilm_on(runtime: config::Runtime, dir: &std::path::Path) -> Result<Arc<dyn Embedder>> {
    use config::Runtime;
    Ok(match resolve_runtime(runtime, dir) {
        Runtime::Onnx => Arc::new(onnx::OnnxMiniLm::load(dir)?),
        _ => Arc::new(minilm::MiniLm::load(dir)?),
    })
}

/// Scale `v` to unit length (a zero vector stays zero).
pub(crate) fn normalize(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
}

/// Cosine similarity of two unit vectors.
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// For each of `queries` (indices into `vectors`), the `k` most similar of
/// the first `candidates` vectors (never itself), best first, as (index,
/// cosine).
///
/// All pairs are scored at once as a matrix product (candle's gemm, built
/// with full optimisation and using every core), in blocks of queries so
/// that memory stays bounded: consolidation asks this for thousands of
/// facts against tens of thousands of entries, where one index search per
/// fact would take minutes.
pub(crate) fn nearest(
    vectors: &[Vec<f32>],
    queries: &[usize],
    candidates: usize,
    k: usize,
) -> Result<Vec<Vec<(usize, f32)>>> {
    use candle_core::{Device, Tensor};
    let candidates = candidates.min(vectors.len());
    let dim = vectors.first().map_or(0, Vec::len);
    if dim == 0 || candidates == 0 || k == 0 {
        return Ok(vec![Vec::new(); queries.len()]);
    }
    let flat: Vec<f32> = vectors[..candidates].iter().flatten().copied().collect();
    let cand = Tensor::from_vec(flat, (candidates, dim), &Device::Cpu)?
        .t()?
        .contiguous()?;
    let mut out = Vec::with_capacity(queries.len());
    for block in queries.chunks(256) {
        let q: Vec<f32> = block
            .iter()
            .flat_map(|&i| vectors[i].iter().copied())
            .collect();
        let q = Tensor::from_vec(q, (block.len(), dim), &Device::Cpu)?;
        let sims: Vec<Vec<f32>> = q.matmul(&cand)?.to_vec2()?;
        for (row, &qi) in sims.iter().zip(block) {
            out.push(top_k(row, k, qi));
        }
    }
    Ok(out)
}

/// The `k` best (index, score) of `scores` other than `skip`, best first
/// (ties to the lower index), in one pass without sorting the row.
pub(crate) fn top_k(scores: &[f32], k: usize, skip: usize) -> Vec<(usize, f32)> {
    let mut best: Vec<(usize, f32)> = Vec::with_capacity(k + 1);
    for (j, &s) in scores.iter().enumerate() {
        if j == skip || (best.len() == k && s <= best[k - 1].1) {
            continue;
        }
        let at = best.partition_point(|&(_, b)| b >= s);
        best.insert(at, (j, s));
        best.truncate(k);
    }
    best
}
