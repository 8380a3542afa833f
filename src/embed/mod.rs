//! Embedders: text → unit vectors, behind one trait with three real
//! implementations.
//!
//! - [`minilm`] (default): all-MiniLM-L6-v2 in process with candle, offline;
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
pub mod openai;

use std::sync::Arc;

use anyhow::Result;

use crate::config::{self, EmbedderKind};

#[async_trait::async_trait]
pub trait Embedder: Send + Sync {
    /// Names the model and its settings: vectors of different ids never mix.
    fn id(&self) -> String;
    /// Vector length (for HTTP embedders, learned from the first reply).
    async fn dim(&self) -> Result<usize>;
    /// One unit vector per text, in order.
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>>;
}

/// The embedder the configuration asks for.
pub fn from_config(cfg: &config::Embedder) -> Result<Arc<dyn Embedder>> {
    Ok(match cfg.kind {
        EmbedderKind::Minilm => Arc::new(minilm::MiniLm::load(&minilm::model_dir(cfg))?),
        EmbedderKind::Openai => Arc::new(openai::OpenAi::new(cfg)?),
        EmbedderKind::Lexical => Arc::new(lexical::Lexical),
    })
}

/// Scale `v` to unit length (a zero vector stays zero).
pub fn normalize(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
}

/// Cosine similarity of two unit vectors.
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}
