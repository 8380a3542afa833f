//! Tier 3: `MEMORY.md`, the small always-in-prompt memory.
//!
//! memd owns only the part between `<!-- memd:begin -->` and
//! `<!-- memd:end -->`; everything outside the markers is the user's and is
//! kept byte for byte. Each generated line names the entry it came from:
//!
//! ```text
//! - Works at Microsoft since 2026-05 (previously Google) <!-- e-3f9a2c1d -->
//! ```
//!
//! Broken markers (an end before a begin, a begin without an end, two
//! begins) are an error rather than a guess: guessing could overwrite the
//! user's text.

use std::path::Path;

use crate::error::{Context, Result, bail};

pub const BEGIN: &str = "<!-- memd:begin -->";
pub const END: &str = "<!-- memd:end -->";

/// What `memd init` writes.
pub(crate) const EMPTY_FILE: &str = "# MEMORY\n\n\
Notes you write outside the memd markers are yours and are kept as they are.\n\n\
<!-- memd:begin -->\n<!-- memd:end -->\n";

/// One generated line: a promoted entry and the line shown for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    pub entry_id: String,
    pub text: String,
}

impl Line {
    fn render(&self) -> String {
        let text = self.text.replace(['\n', '\r'], " ");
        format!("- {} <!-- {} -->", text.trim(), self.entry_id)
    }

    fn parse(line: &str) -> Option<Line> {
        let body = line.trim().strip_prefix("- ")?;
        let body = body.strip_suffix("-->")?;
        let at = body.rfind("<!--")?;
        let entry_id = body[at + 4..].trim().to_string();
        Some(Line {
            entry_id,
            text: body[..at].trim().to_string(),
        })
    }
}

/// `MEMORY.md` split at its markers.
#[derive(Debug, Clone, Default)]
pub struct MemoryMd {
    /// Everything up to and including the begin marker's line (or the whole
    /// file when it has no markers).
    before: String,
    generated: String,
    /// The end marker's line and everything after it.
    after: String,
    has_markers: bool,
}

impl MemoryMd {
    pub fn parse(src: &str) -> Result<MemoryMd> {
        let begins: Vec<usize> = src.match_indices(BEGIN).map(|(i, _)| i).collect();
        let ends: Vec<usize> = src.match_indices(END).map(|(i, _)| i).collect();
        match (begins.as_slice(), ends.as_slice()) {
            ([], []) => Ok(MemoryMd {
                before: src.to_string(),
                ..Default::default()
            }),
            ([b], [e]) if b < e => {
                let gen_start = src[*b..].find('\n').map(|i| b + i + 1).unwrap_or(src.len());
                let gen_start = gen_start.min(*e);
                let line_start = src[..*e].rfind('\n').map(|i| i + 1).unwrap_or(0);
                let gen_end = line_start.max(gen_start);
                Ok(MemoryMd {
                    before: src[..gen_start].to_string(),
                    generated: src[gen_start..gen_end].to_string(),
                    after: src[gen_end..].to_string(),
                    has_markers: true,
                })
            }
            _ => bail!(
                "MEMORY.md has broken memd markers (expected one `{BEGIN}` followed by one `{END}`); fix them by hand, memd will not guess"
            ),
        }
    }

    pub fn read(path: &Path) -> Result<MemoryMd> {
        let read = crate::atomic::read_if_exists(path);
        let Some(b) = read.with_context(|| format!("reading {}", path.display()))? else {
            return Ok(MemoryMd::default());
        };
        MemoryMd::parse(&String::from_utf8_lossy(&b)).map_err(|e| crate::Error::Corrupt {
            path: path.to_path_buf(),
            line: None,
            message: e.to_string(),
        })
    }

    /// The generated lines currently in the file.
    pub fn lines(&self) -> Vec<Line> {
        self.generated.lines().filter_map(Line::parse).collect()
    }

    /// The file with its generated part replaced by `lines`. A file without
    /// markers gets them appended after the user's text.
    pub fn with_lines(&self, lines: &[Line]) -> String {
        let mut generated = String::new();
        for l in lines {
            generated.push_str(&l.render());
            generated.push('\n');
        }
        if self.has_markers {
            let mut before = self.before.clone();
            if !before.ends_with('\n') {
                before.push('\n');
            }
            format!("{before}{generated}{}", self.after)
        } else {
            let mut out = self.before.clone();
            if !out.is_empty() && !out.ends_with('\n') {
                out.push('\n');
            }
            if !out.is_empty() && !out.ends_with("\n\n") {
                out.push('\n');
            }
            format!("{out}{BEGIN}\n{generated}{END}\n")
        }
    }
}

/// Replace the generated part of the `MEMORY.md` at `path` with `lines`,
/// atomically. Returns whether the file changed.
pub fn write_lines(path: &Path, lines: &[Line]) -> Result<bool> {
    let current = std::fs::read(path).ok();
    let parsed = MemoryMd::read(path)?;
    let next = parsed.with_lines(lines);
    if current.as_deref() == Some(next.as_bytes()) {
        return Ok(false);
    }
    crate::atomic::write(path, next.as_bytes())
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(true)
}
