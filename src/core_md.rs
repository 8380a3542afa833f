//! Tier 3: `MEMORY.md`, the core memory: small, and in every prompt.
//!
//! memd owns only the part between `<!-- memd:begin -->` and
//! `<!-- memd:end -->`; everything outside the markers is the user's and is
//! kept byte for byte. Each generated line says when its entry was last
//! stated (so an agent and a person can tell what is current) and names
//! the entry it came from:
//!
//! ```text
//! - Works at Microsoft since 2026-05 (previously: Google) · 2026-11-24 <!-- e-3f9a2c1d -->
//! ```
//!
//! Broken markers (an end before a begin, a begin without an end, two
//! begins) are an error rather than a guess: guessing could overwrite the
//! user's text.

use std::path::Path;

use crate::error::{Context, Error, Result, bail};
use crate::ids::EntryId;
use crate::text::{escape_comments, unescape_comments};
use crate::{atomic, clock};

pub const BEGIN: &str = "<!-- memd:begin -->";
pub const END: &str = "<!-- memd:end -->";

/// What `memd init` writes.
pub const EMPTY_FILE: &str = "# MEMORY\n\n\
Notes you write outside the memd markers are yours and are kept as they are.\n\n\
<!-- memd:begin -->\n<!-- memd:end -->\n";

/// One generated line: a promoted entry and the line shown for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    pub entry_id: EntryId,
    pub text: String,
    /// The day the entry was last stated (its `updated`), when known.
    pub date: Option<String>,
}

/// Between a line's text and its date.
const DATE_SEP: &str = " · ";

impl Line {
    fn render(&self) -> String {
        let text = escape_comments(self.text.replace(['\n', '\r'], " ").trim());
        format!("- {text}{} <!-- {} -->", self.dated(), self.entry_id)
    }

    /// What follows a line's text: ` · DAY`, or nothing without a day.
    fn dated(&self) -> String {
        self.date
            .as_deref()
            .filter(|d| clock::is_day(d))
            .map(|d| format!("{DATE_SEP}{d}"))
            .unwrap_or_default()
    }

    pub(crate) fn parse(line: &str) -> Option<Line> {
        let body = line.trim().strip_prefix("- ")?;
        let body = body.strip_suffix("-->")?;
        let at = body.rfind("<!--")?;
        let entry_id = EntryId::stored(body[at + 4..].trim());
        let mut text = body[..at].trim();
        let mut date = None;
        if let Some((rest, d)) = text.rsplit_once(DATE_SEP)
            && clock::is_day(d)
        {
            (text, date) = (rest.trim_end(), Some(d.to_string()));
        }
        Some(Line {
            entry_id,
            text: unescape_comments(text),
            date,
        })
    }
}

/// `MEMORY.md` split at its markers. The user's parts are kept as bytes:
/// a byte that is not UTF-8 there (a Latin-1 `é` pasted by hand) is
/// written back exactly as it was, never as U+FFFD.
#[derive(Debug, Clone, Default)]
pub struct CoreMd {
    /// Everything up to and including the begin marker's line (or the whole
    /// file when it has no markers).
    before: Vec<u8>,
    generated: String,
    /// The end marker's line and everything after it.
    after: Vec<u8>,
    has_markers: bool,
}

/// Where `needle` starts in `hay`, every time.
fn find_all(hay: &[u8], needle: &[u8]) -> Vec<usize> {
    hay.windows(needle.len())
        .enumerate()
        .filter(|(_, w)| *w == needle)
        .map(|(i, _)| i)
        .collect()
}

impl CoreMd {
    pub fn parse(src: &[u8]) -> Result<CoreMd> {
        let begins = find_all(src, BEGIN.as_bytes());
        let ends = find_all(src, END.as_bytes());
        let newline_after = |at: usize| {
            src[at..]
                .iter()
                .position(|&c| c == b'\n')
                .map(|i| at + i + 1)
        };
        match (begins.as_slice(), ends.as_slice()) {
            ([], []) => Ok(CoreMd {
                before: src.to_vec(),
                ..Default::default()
            }),
            ([b], [e]) if b < e => {
                let gen_start = newline_after(*b).unwrap_or(src.len()).min(*e);
                let line_start = src[..*e]
                    .iter()
                    .rposition(|&c| c == b'\n')
                    .map_or(0, |i| i + 1);
                let gen_end = line_start.max(gen_start);
                Ok(CoreMd {
                    before: src[..gen_start].to_vec(),
                    generated: String::from_utf8_lossy(&src[gen_start..gen_end]).into_owned(),
                    after: src[gen_end..].to_vec(),
                    has_markers: true,
                })
            }
            _ => bail!(
                "MEMORY.md has broken memd markers (expected one `{BEGIN}` followed by one `{END}`); fix them by hand, memd will not guess"
            ),
        }
    }

    /// The person's own text: everything outside memd's markers.
    pub fn notes(&self) -> String {
        let mut out = String::from_utf8_lossy(&self.before).into_owned();
        out.push('\n');
        out.push_str(&String::from_utf8_lossy(&self.after));
        out
    }

    /// MEMORY.md as an agent reads it in a prompt, in few tokens: the
    /// person's notes (without what `memd init` wrote or the markers) and
    /// one line per promoted entry, dated, its id in brackets (what
    /// `forget` and `supersedes` take). The file itself is unchanged.
    pub fn compact(&self) -> String {
        let init: Vec<&str> = EMPTY_FILE.lines().filter(|l| !l.is_empty()).collect();
        let theirs = format!(
            "{}\n{}",
            String::from_utf8_lossy(&self.before),
            String::from_utf8_lossy(&self.after)
        );
        let mut notes = String::new();
        for line in theirs.lines().filter(|l| !init.contains(&l.trim())) {
            if line.trim().is_empty() && (notes.is_empty() || notes.ends_with("\n\n")) {
                continue;
            }
            notes.push_str(line.trim_end());
            notes.push('\n');
        }
        let mut out = notes.trim_end().to_string();
        if !out.is_empty() {
            out.push_str("\n\n");
        }
        let lines = self.lines();
        if lines.is_empty() {
            out.push_str("(no entries promoted yet)\n");
        }
        for l in lines {
            out.push_str(&format!("- {}{} [{}]\n", l.text, l.dated(), l.entry_id));
        }
        out
    }

    pub fn read(path: &Path) -> Result<CoreMd> {
        let read = atomic::read_if_exists(path);
        let Some(b) = read.with_context(|| format!("reading {}", path.display()))? else {
            return Ok(CoreMd::default());
        };
        CoreMd::parse(&b).map_err(|e| Error::Corrupt {
            path: path.to_path_buf(),
            line: None,
            message: e.to_string(),
        })
    }

    /// The generated part, when the file has its markers.
    pub fn generated(&self) -> Option<&str> {
        self.has_markers.then_some(self.generated.as_str())
    }

    /// The generated lines currently in the file.
    pub fn lines(&self) -> Vec<Line> {
        self.generated.lines().filter_map(Line::parse).collect()
    }

    /// The file with its generated part replaced by `lines`. A file without
    /// markers gets them appended after the user's text.
    pub fn with_lines(&self, lines: &[Line]) -> Vec<u8> {
        let mut generated = String::new();
        for l in lines {
            generated.push_str(&l.render());
            generated.push('\n');
        }
        self.with_generated(&generated)
    }

    /// The file with its generated part replaced by `generated`, whole
    /// lines (sync's merge of MEMORY.md).
    pub(crate) fn with_generated(&self, generated: &str) -> Vec<u8> {
        let mut out = self.before.clone();
        if self.has_markers {
            if !out.ends_with(b"\n") {
                out.push(b'\n');
            }
            out.extend_from_slice(generated.as_bytes());
            out.extend_from_slice(&self.after);
            return out;
        }
        if !out.is_empty() && !out.ends_with(b"\n") {
            out.push(b'\n');
        }
        if !out.is_empty() && !out.ends_with(b"\n\n") {
            out.push(b'\n');
        }
        out.extend_from_slice(format!("{BEGIN}\n{generated}{END}\n").as_bytes());
        out
    }
}

/// Replace the generated part of the `MEMORY.md` at `path` with `lines`,
/// atomically. Returns whether the file changed.
pub fn write_lines(path: &Path, lines: &[Line]) -> Result<bool> {
    let current = std::fs::read(path).ok();
    let parsed = CoreMd::read(path)?;
    let next = parsed.with_lines(lines);
    if current.as_deref() == Some(next.as_slice()) {
        return Ok(false);
    }
    atomic::write(path, &next).with_context(|| format!("writing {}", path.display()))?;
    Ok(true)
}

/// `MEMORY.md` without the generated lines of entries `gone` (unchanged
/// when it has none of them). What takes an entry out of
/// `consolidated/memory.md` calls it first, so that no line ever names an
/// entry that is not in the file, even when a later step fails.
pub fn drop_lines(path: &Path, gone: &std::collections::HashSet<&str>) -> Result<()> {
    if gone.is_empty() {
        return Ok(());
    }
    let all = CoreMd::read(path)?.lines();
    let kept: Vec<Line> = all
        .iter()
        .filter(|l| !gone.contains(l.entry_id.as_str()))
        .cloned()
        .collect();
    if kept.len() == all.len() {
        return Ok(());
    }
    write_lines(path, &kept).map(drop)
}
