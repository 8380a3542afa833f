//! The model-free embedder: signed feature hashing of lowercased words,
//! word bigrams and character trigrams into 512 dimensions.
//!
//! It needs no files and no network and embeds ~100k texts a second, but it
//! only sees shared surface forms ("coffee" ~ "coffee"), never meaning
//! ("coffee" ≁ "espresso"). Use it on machines too small for `minilm`.

use super::{Embedder, normalize};
use crate::Result;

pub(crate) const DIM: usize = 512;

pub struct Lexical;

#[async_trait::async_trait]
impl Embedder for Lexical {
    fn id(&self) -> String {
        "lexical-v1".into()
    }

    async fn dim(&self) -> Result<usize> {
        Ok(DIM)
    }

    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        Ok(texts.iter().map(|t| embed_one(t)).collect())
    }
}

fn embed_one(text: &str) -> Vec<f32> {
    let mut v = vec![0.0f32; DIM];
    let lower = text.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    for w in &words {
        add(&mut v, w.as_bytes(), 1.0);
    }
    for pair in words.windows(2) {
        add(&mut v, format!("{} {}", pair[0], pair[1]).as_bytes(), 0.7);
    }
    for w in &words {
        let padded: Vec<char> = format!(" {w} ").chars().collect();
        for tri in padded.windows(3) {
            add(&mut v, tri.iter().collect::<String>().as_bytes(), 0.3);
        }
    }
    normalize(&mut v);
    v
}

/// Signed hashing: one bucket per feature, the sign from another hash bit,
/// so collisions cancel out on average instead of piling up.
fn add(v: &mut [f32], feature: &[u8], weight: f32) {
    // FNV-1a: tiny, stable across versions and platforms.
    let mut h: u64 = 0xcbf29ce484222325;
    for b in feature {
        h ^= *b as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    let bucket = (h % DIM as u64) as usize;
    let sign = if (h >> 63) == 0 { 1.0 } else { -1.0 };
    v[bucket] += sign * weight;
}
