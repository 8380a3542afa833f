//! Normalisation and hashing that every module must agree on.
//!
//! Fact ids, free merging of exact restatements and tombstone matching all
//! compare *normalised* text, so the rule lives in one place: lowercase,
//! whitespace folded to single spaces, trailing punctuation dropped.

use sha2::{Digest, Sha256};

/// The comparison form of a fact or entry text.
pub fn normalize(text: &str) -> String {
    let folded = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let trimmed =
        folded.trim_end_matches(|c: char| c.is_ascii_punctuation() || c == '…' || c == '。');
    trimmed.to_lowercase()
}

/// Hex SHA-256 of `data`, cut to `len` hex digits.
pub fn short_hash(data: &str, len: usize) -> String {
    let digest = Sha256::digest(data.as_bytes());
    let mut hex = String::with_capacity(64);
    for b in digest.iter() {
        hex.push_str(&format!("{b:02x}"));
    }
    hex.truncate(len);
    hex
}

/// The 8-hex-digit hash of a text's normalised form; the middle of a fact id.
pub fn norm_hash(text: &str) -> String {
    short_hash(&normalize(text), 8)
}
