//! all-MiniLM-L6-v2 run in process with candle: BERT, mean pooling over the
//! attention mask, L2 normalisation, 384 dimensions. The tokenizing,
//! batching and pooling here are shared with [`super::onnx`], which runs
//! the same model on ONNX Runtime. It reads
//! `model.safetensors`, `config.json` and `tokenizer.json` from a local
//! directory and never touches the network.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config as BertConfig};
use tokenizers::{Tokenizer, TruncationParams};

use super::{Embedder, normalize};
use crate::config;
use crate::error::{Context, Result, bail, err};

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

pub struct MiniLm {
    inner: Arc<Inner>,
}

struct Inner {
    model: BertModel,
    tokenizer: Tokenizer,
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

/// Why the minilm model in `dir` cannot load, if a file it needs is
/// missing: what `memd serve` and `memd status` say before anything else.
pub fn missing(dir: &Path) -> Option<String> {
    let f = ["model.safetensors", "config.json", "tokenizer.json"]
        .into_iter()
        .find(|f| !dir.join(f).is_file())?;
    Some(format!(
        "the minilm embedder needs {f} in {} (missing); fetch the model with `memd setup` \
         (or set MEMD_MODEL_DIR / [embedder] model_dir to where it is), or use [embedder] kind = \"lexical\"",
        dir.display()
    ))
}

impl MiniLm {
    pub fn load(dir: &Path) -> Result<MiniLm> {
        if let Some(why) = missing(dir) {
            bail!("{why}");
        }
        let config: BertConfig = serde_json::from_slice(&std::fs::read(dir.join("config.json"))?)
            .context("reading config.json")?;
        let tokenizer = tokenizer(dir)?;
        // Safety: the file is memory-mapped read-only; memd never writes it.
        let vb = unsafe {
            VarBuilder::from_mmaped_safetensors(
                &[dir.join("model.safetensors")],
                DType::F32,
                &Device::Cpu,
            )?
        };
        let model = BertModel::load(vb, &config).context("loading model.safetensors")?;
        Ok(MiniLm {
            inner: Arc::new(Inner { model, tokenizer }),
        })
    }
}

impl Inner {
    fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        in_batches(&self.tokenizer, texts, |ids, mask, [b, s]| {
            let ids = Tensor::from_vec(ids, (b, s), &Device::Cpu)?;
            let mask = Tensor::from_vec(mask, (b, s), &Device::Cpu)?;
            let types = ids.zeros_like()?;
            let hidden = self.model.forward(&ids, &types, Some(&mask))?;
            Ok(hidden.flatten_all()?.to_vec1::<f32>()?)
        })
    }
}

#[async_trait::async_trait]
impl Embedder for MiniLm {
    fn id(&self) -> String {
        ID.into()
    }

    async fn dim(&self) -> Result<usize> {
        Ok(DIM)
    }

    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        let inner = self.inner.clone();
        let texts = texts.to_vec();
        tokio::task::spawn_blocking(move || inner.embed(&texts)).await?
    }
}
