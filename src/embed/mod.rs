//! Embedders: text → unit vectors, behind one trait with three real
//! implementations.
//!
//! - [`minilm`] (default): all-MiniLM-L6-v2 in process, offline, on ONNX
//!   Runtime's CPU kernels ([`onnx`]), loaded from the library `memd setup`
//!   installs beside the model;
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
use crate::error::bail;

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
        EmbedderKind::Minilm => Arc::new(onnx::OnnxMiniLm::load(&minilm::model_dir(cfg))?),
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
    /// What runs the minilm model (`onnx`), once resolved.
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
            // Every `runtime` setting runs minilm on ONNX Runtime.
            runtime: dir.is_some().then_some(config::Runtime::Onnx),
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
        EmbedderKind::Minilm => onnx::missing(&minilm::model_dir(cfg)),
        EmbedderKind::Openai | EmbedderKind::Lexical => None,
    }
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
/// All pairs are scored at once as matrix products (`matrixmultiply`'s
/// sgemm, which LanceDB's tree already builds, with its own SIMD kernels),
/// in blocks of [`QUERY_BLOCK`] queries shared out over the cores, so that
/// memory stays bounded: consolidation asks this for thousands of facts
/// against tens of thousands of entries, where one index search per fact
/// would take minutes.
pub(crate) fn nearest(
    vectors: &[Vec<f32>],
    queries: &[usize],
    candidates: usize,
    k: usize,
) -> Result<Vec<Vec<(usize, f32)>>> {
    let candidates = candidates.min(vectors.len());
    let dim = vectors.first().map_or(0, Vec::len);
    if dim == 0 || candidates == 0 || k == 0 {
        return Ok(vec![Vec::new(); queries.len()]);
    }
    if let Some(v) = vectors.iter().find(|v| v.len() != dim) {
        bail!("vectors of {} and {dim} dimensions mixed", v.len());
    }
    let cand: Vec<f32> = vectors[..candidates].iter().flatten().copied().collect();
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let per_thread = queries.len().div_ceil(threads).max(1);
    let parts: Vec<Vec<Vec<(usize, f32)>>> = std::thread::scope(|s| {
        let handles: Vec<_> = queries
            .chunks(per_thread)
            .map(|part| s.spawn(|| nearest_in(vectors, part, &cand, dim, k)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a scoring thread panicked"))
            .collect()
    });
    Ok(parts.into_iter().flatten().collect())
}

/// Queries scored together: a block of 256 against 20,000 candidates is a
/// 20 MB score matrix.
const QUERY_BLOCK: usize = 256;

/// [`nearest`] for one thread's share of the queries.
fn nearest_in(
    vectors: &[Vec<f32>],
    queries: &[usize],
    cand: &[f32],
    dim: usize,
    k: usize,
) -> Vec<Vec<(usize, f32)>> {
    let n = cand.len() / dim;
    let mut out = Vec::with_capacity(queries.len());
    let mut scores = Vec::new();
    for block in queries.chunks(QUERY_BLOCK) {
        let q: Vec<f32> = block
            .iter()
            .flat_map(|&i| vectors[i].iter().copied())
            .collect();
        scores.clear();
        scores.resize(block.len() * n, 0.0);
        dot_all(&q, cand, dim, &mut scores);
        for (row, &qi) in scores.chunks(n).zip(block) {
            out.push(top_k(row, k, qi));
        }
    }
    out
}

/// `out[i * n + j]` = the dot product of row `i` of `a` and row `j` of `b`
/// (both row-major with `dim` columns; `n` = rows of `b`).
fn dot_all(a: &[f32], b: &[f32], dim: usize, out: &mut [f32]) {
    let (m, n) = (a.len() / dim, b.len() / dim);
    assert!(
        a.len() == m * dim && b.len() == n * dim && out.len() == m * n,
        "matrix shapes"
    );
    // Safety: `a` is m × dim (row stride dim), `b` read as its transpose
    // dim × n (row stride 1, column stride dim) and `out` m × n (row
    // stride n): every index the strides reach is inside its slice, as
    // the assertion above checks; `out` does not alias the inputs.
    unsafe {
        matrixmultiply::sgemm(
            m,
            dim,
            n,
            1.0,
            a.as_ptr(),
            dim as isize,
            1,
            b.as_ptr(),
            1,
            dim as isize,
            0.0,
            out.as_mut_ptr(),
            n as isize,
            1,
        );
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Vectors that are not unit length and share no pattern: each value
    /// from a small linear congruential generator.
    fn vectors(n: usize, dim: usize) -> Vec<Vec<f32>> {
        let mut x: u64 = 7;
        (0..n)
            .map(|_| {
                (0..dim)
                    .map(|_| {
                        x = x
                            .wrapping_mul(6364136223846793005)
                            .wrapping_add(1442695040888963407);
                        ((x >> 33) as f32 / (1u64 << 31) as f32) - 0.5
                    })
                    .collect()
            })
            .collect()
    }

    #[test]
    fn nearest_gives_what_one_dot_product_per_pair_gives_over_blocks_and_threads() {
        // More queries than a block on each thread, in no particular order.
        let v = vectors(1300, 37);
        let queries: Vec<usize> = (0..v.len()).rev().collect();
        let got = nearest(&v, &queries, 600, 5).unwrap();
        assert_eq!(got.len(), queries.len());
        for (row, &q) in got.iter().zip(&queries) {
            let mut want: Vec<(usize, f32)> = (0..600)
                .filter(|&j| j != q)
                .map(|j| (j, cosine(&v[q], &v[j])))
                .collect();
            want.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            let ids: Vec<usize> = row.iter().map(|p| p.0).collect();
            let want_ids: Vec<usize> = want[..5].iter().map(|p| p.0).collect();
            assert_eq!(ids, want_ids, "query {q}");
            for (g, w) in row.iter().zip(&want) {
                assert!((g.1 - w.1).abs() < 1e-4, "query {q}: {g:?} vs {w:?}");
            }
        }
    }

    #[test]
    fn nearest_refuses_vectors_of_mixed_lengths_and_answers_empty_inputs() {
        let mut v = vectors(4, 8);
        assert_eq!(nearest(&v, &[0, 1], 4, 0).unwrap(), vec![vec![]; 2]);
        assert_eq!(nearest(&v, &[0], 0, 3).unwrap(), vec![vec![]]);
        v[2].push(1.0);
        assert!(nearest(&v, &[0], 4, 2).is_err());
    }
}
