//! Normalisation and hashing that every module must agree on.
//!
//! Fact ids, free merging of exact restatements and tombstone matching all
//! compare *normalised* text, so the rule lives in one place: Unicode NFKC
//! (full-width letters, ligatures and the like become their plain form),
//! invisible format characters dropped (a zero-width space must not make a
//! forgotten fact new again), whitespace folded to single spaces, trailing
//! punctuation dropped, lowercase. A text left with no letter or digit
//! (`---`, `!!!`) is compared by its own characters instead, so that such
//! facts stay distinct and no tombstone can cover them all.

use sha2::{Digest, Sha256};
use unicode_normalization::UnicodeNormalization;

/// Characters that show nothing: format characters (zero-width space and
/// joiners, directional marks and isolates, word joiner, soft hyphen, the
/// byte-order mark) and variation selectors.
fn invisible(c: char) -> bool {
    matches!(c,
        '\u{00AD}' | '\u{061C}' | '\u{180E}' | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}'
        | '\u{2060}'..='\u{2064}' | '\u{2066}'..='\u{206F}' | '\u{FE00}'..='\u{FE0F}'
        | '\u{FEFF}' | '\u{FFF9}'..='\u{FFFB}')
}

/// NFKC, invisible characters dropped, whitespace folded, lowercase: the
/// base of [`normalize`], and what a search for a normalised text inside a
/// longer one must run over.
pub(crate) fn fold(text: &str) -> String {
    plain_lines(text)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

/// [`fold`] of `before` followed by `after`, from `fold(before)`, when
/// `before` is empty or ends with a line break: a day file's fold grows
/// with what was appended to it instead of being made again whole. Exact,
/// because no step of a fold reaches across a line break (NFKC composes
/// nothing with it, and lowercasing looks only within a word).
pub(crate) fn fold_extended(folded_before: &str, after: &str) -> String {
    let tail = fold(after);
    match (folded_before.is_empty(), tail.is_empty()) {
        (true, _) => tail,
        (false, true) => folded_before.to_string(),
        (false, false) => format!("{folded_before} {tail}"),
    }
}

/// `text` with each line that is not ASCII made [`plain`]: ASCII is its
/// own NFKC form and has no invisible character, so most lines skip the
/// Unicode pass (the slowest part of a daemon's sync and append, which
/// fold whole day files), and one line with a curly quote does not send
/// the whole file through it. Line by line is the same as whole: a line
/// break is a starter that composes with nothing.
fn plain_lines(text: &str) -> std::borrow::Cow<'_, str> {
    if text.is_ascii() {
        return text.into();
    }
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        match line.is_ascii() {
            true => out.push_str(line),
            false => out.push_str(&plain(line)),
        }
    }
    out.into()
}

/// NFKC with the invisible characters dropped.
fn plain(text: &str) -> String {
    text.nfkc().filter(|c| !invisible(*c)).collect()
}

/// The comparison form of a fact or entry text.
pub fn normalize(text: &str) -> String {
    let folded = fold(text);
    if !folded.chars().any(char::is_alphanumeric) {
        return folded;
    }
    folded
        .trim_end_matches(|c: char| c.is_ascii_punctuation() || c == '…' || c == '。')
        .to_string()
}

/// Hex SHA-256 of `data`, cut to `len` hex digits.
pub fn short_hash(data: &str, len: usize) -> String {
    short_hex(Sha256::new_with_prefix(data.as_bytes()), len)
}

/// [`short_hash`] of what `hasher` was given.
pub fn short_hex(hasher: Sha256, len: usize) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let digest = hasher.finalize();
    // Hex digits written directly: a `format!` per byte was most of the
    // cost of hashing every fact of a day file on each sync.
    let mut hex = String::with_capacity(64);
    for b in digest.iter() {
        hex.push(DIGITS[usize::from(b >> 4)] as char);
        hex.push(DIGITS[usize::from(b & 15)] as char);
    }
    hex.truncate(len);
    hex
}

/// The 8-hex-digit hash of a text's normalised form; the middle of a fact id.
pub(crate) fn norm_hash(text: &str) -> String {
    short_hash(&normalize(text), 8)
}

/// The 32-hex-digit hash of a text's normalised form: what an erased
/// text is kept out by (`memd forget --erase`), in place of the text.
pub fn erased_hash(text: &str) -> String {
    short_hash(&normalize(text), 32)
}

/// Words too common to say what a text is about.
const STOP: &[&str] = &[
    "the", "and", "for", "with", "that", "this", "from", "has", "have", "had", "was", "were",
    "are", "is", "am", "be", "been", "user", "user's", "users", "their", "they", "them", "his",
    "her", "she", "him", "its", "our", "you", "your", "not", "but", "will", "would", "about",
    "into", "now", "at", "in", "on", "of", "to", "a", "an", "as", "by", "or", "it", "my", "me",
    "we", "i", "so", "do", "does", "did", "very", "also", "just", "some", "any", "all", "which",
    "who", "whom", "both", "once", "though", "there", "then", "than",
];

/// Whether `word` (lowercase, one word) is too common to say what a text
/// is about: what [`content_words`] leaves out.
pub(crate) fn is_stop(word: &str) -> bool {
    let w = word.trim_matches('\'');
    let w = w.strip_suffix("'s").unwrap_or(w);
    w.is_empty() || STOP.contains(&w)
}

/// The words that carry a text's content: lowercased, apostrophes kept
/// inside words, stop words dropped. Used where code must judge whether one
/// text still says what another said (never whether two facts are the
/// same: that is the judge's call).
pub(crate) fn content_words(text: &str) -> std::collections::HashSet<String> {
    content_word_list(text).into_iter().collect()
}

/// Whether `text` says one of `words` (lowercase), as a word of its own.
pub(crate) fn says_word(text: &str, words: &[&str]) -> bool {
    text.split(|c: char| !c.is_alphanumeric() && c != '\'')
        .any(|w| words.contains(&w.to_lowercase().as_str()))
}

/// [`content_words`] in the order `text` says them, repeats kept.
pub(crate) fn content_word_list(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric() && c != '\'')
        .map(|w| {
            let w = w.trim_matches('\'').to_lowercase();
            // "manager's" says "manager".
            w.strip_suffix("'s").map(String::from).unwrap_or(w)
        })
        .filter(|w| !w.is_empty() && !STOP.contains(&w.as_str()))
        .collect()
}

/// The share of `of`'s content words that `within` also has (1.0 when `of`
/// has none).
pub(crate) fn coverage(of: &str, within: &str) -> f32 {
    let words = content_words(of);
    if words.is_empty() {
        return 1.0;
    }
    let have = content_words(within);
    words.iter().filter(|w| have.contains(*w)).count() as f32 / words.len() as f32
}

/// Where `bytes` stop being UTF-8: the byte offset and its 1-based line;
/// `None` when they are UTF-8 throughout.
pub(crate) fn first_bad_byte(bytes: &[u8]) -> Option<(usize, usize)> {
    let at = std::str::from_utf8(bytes).err()?.valid_up_to();
    let line = bytes[..at].iter().filter(|&&b| b == b'\n').count() + 1;
    Some((at, line))
}

/// What memd inserts to break a comment opener in text it writes.
const BREAK: char = '\u{200B}';

/// Text made safe to write into a markdown file whose comments memd
/// reads (entry metadata, MEMORY.md's markers and line ids): `<!`, any
/// number of zero-width spaces, `--` gets one zero-width space more, so
/// written text never holds `<!--` and can never open a comment. Nothing
/// visible changes, and [`normalize`] drops the zero-width spaces, so ids,
/// restatements and tombstones compare the same. [`unescape_comments`]
/// takes exactly one away again: for every text,
/// `unescape_comments(escape_comments(t)) == t`.
pub(crate) fn escape_comments(text: &str) -> String {
    rewrite_openers(text, |breaks| breaks + 1)
}

/// The inverse of [`escape_comments`].
pub(crate) fn unescape_comments(text: &str) -> String {
    rewrite_openers(text, |breaks| breaks.saturating_sub(1))
}

/// `text` with the zero-width spaces inside each `<!` … `--` opener
/// (`<!--` included) counted and rewritten by `count`.
fn rewrite_openers(text: &str, count: impl Fn(usize) -> usize) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    let mut rest = text;
    while let Some(at) = rest.find("<!") {
        out.push_str(&rest[..at + 2]);
        rest = &rest[at + 2..];
        let breaks = rest.chars().take_while(|&c| c == BREAK).count();
        let after = &rest[breaks * BREAK.len_utf8()..];
        if after.starts_with("--") {
            out.extend(std::iter::repeat_n(BREAK, count(breaks)));
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Pieces whose fold is easy to get wrong: ligatures and full-width
    /// letters (NFKC), combining marks at a line's start, a capital sigma
    /// at a word's end, invisible characters, every kind of white space.
    const PIECES: &[&str] = &[
        "User",
        "likes",
        "ﬁsh",
        "ＴＥＡ",
        "\u{301}",
        "e\u{301}",
        "ΟΔΟΣ",
        "Σ",
        "\u{200B}",
        "\u{FEFF}",
        "café",
        "K",
        "\u{212A}",
        " ",
        "  ",
        "\t",
        "\n",
        "\n\n",
        "\r\n",
        "-",
        "## 10:00:00",
        "İ",
    ];

    fn text() -> impl Strategy<Value = String> {
        prop::collection::vec(prop::sample::select(PIECES), 0..24).prop_map(|p| p.concat())
    }

    /// The fold as it was first written: the whole text through NFKC.
    fn fold_whole(text: &str) -> String {
        plain(text)
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .to_lowercase()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]

        #[test]
        fn a_fold_line_by_line_equals_one_of_the_whole_text(t in text()) {
            prop_assert_eq!(fold(&t), fold_whole(&t));
        }

        #[test]
        fn a_fold_extended_by_an_append_equals_a_fold_from_the_top(a in text(), b in text()) {
            let before = format!("{a}\n");
            prop_assert_eq!(fold_extended(&fold(&before), &b), fold(&format!("{before}{b}")));
        }
    }
}
