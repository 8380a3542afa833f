//! all-MiniLM-L6-v2 run in process with candle: BERT, mean pooling over the
//! attention mask, L2 normalisation, 384 dimensions. It reads
//! `model.safetensors`, `config.json` and `tokenizer.json` from a local
//! directory and never touches the network.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config as BertConfig};
use tokenizers::{PaddingParams, Tokenizer, TruncationParams};

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

impl MiniLm {
    pub fn load(dir: &Path) -> Result<MiniLm> {
        for f in ["model.safetensors", "config.json", "tokenizer.json"] {
            if !dir.join(f).is_file() {
                bail!(
                    "the minilm embedder needs {f} in {} (missing); fetch the model with ./scripts/fetch-model.sh \
                     (or set MEMD_MODEL_DIR / [embedder] model_dir to where it is), or use [embedder] kind = \"lexical\"",
                    dir.display()
                );
            }
        }
        let config: BertConfig = serde_json::from_slice(&std::fs::read(dir.join("config.json"))?)
            .context("reading config.json")?;
        let mut tokenizer = Tokenizer::from_file(dir.join("tokenizer.json"))
            .map_err(|e| err!("reading tokenizer.json: {e}"))?;
        tokenizer.with_padding(Some(PaddingParams::default()));
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: 256,
                ..Default::default()
            }))
            .map_err(|e| err!("{e}"))?;
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
        let mut out = Vec::with_capacity(texts.len());
        // Batches of similar cost: padding is to the longest text of a batch.
        for chunk in texts.chunks(32) {
            let enc = self
                .tokenizer
                .encode_batch(chunk.to_vec(), true)
                .map_err(|e| err!("tokenizing: {e}"))?;
            let ids: Vec<Tensor> = enc
                .iter()
                .map(|e| Tensor::new(e.get_ids(), &Device::Cpu))
                .collect::<candle_core::Result<_>>()?;
            let mask: Vec<Tensor> = enc
                .iter()
                .map(|e| Tensor::new(e.get_attention_mask(), &Device::Cpu))
                .collect::<candle_core::Result<_>>()?;
            let ids = Tensor::stack(&ids, 0)?;
            let mask = Tensor::stack(&mask, 0)?;
            let types = ids.zeros_like()?;
            let hidden = self.model.forward(&ids, &types, Some(&mask))?;
            let mask_f = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
            let summed = hidden.broadcast_mul(&mask_f)?.sum(1)?;
            let counts = mask_f.sum(1)?.clamp(1e-9, f64::MAX)?;
            let pooled = summed.broadcast_div(&counts)?;
            for mut v in pooled.to_vec2::<f32>()? {
                normalize(&mut v);
                out.push(v);
            }
        }
        Ok(out)
    }
}

#[async_trait::async_trait]
impl Embedder for MiniLm {
    fn id(&self) -> String {
        "minilm-l6-v2".into()
    }

    async fn dim(&self) -> Result<usize> {
        Ok(384)
    }

    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        let inner = self.inner.clone();
        let texts = texts.to_vec();
        tokio::task::spawn_blocking(move || inner.embed(&texts)).await?
    }
}
