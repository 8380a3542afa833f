//! `consolidated/REVIEW.md`: the ops a run in review mode proposed, as a
//! markdown task list a person edits. Each item is one line at the start
//! of a line, `- [ ] p-1a2b3c4d …` (open) or `- [x] p-1a2b3c4d …`
//! (accepted), followed by lines indented under it (its facts, its diff);
//! deleting an item rejects it. Everything else in the file (headings,
//! prose, a person's notes) is left as it is.
//!
//! A line at the start of a line that looks like an item and is not one
//! memd can read (`- [?] …`, a checkbox without an id, an id without a
//! checkbox) is *unreadable*: it is reported, and while one is there no
//! missing item is taken as rejected (it may be that item, broken).
//!
//! memd changes the file in two ways only, each a replacement made only
//! if the file is still byte for byte what it read (else it reads again):
//! it takes out the lines of items it carried out (and a run heading left
//! with nothing under it), and it appends the items of new proposals.

use std::collections::HashSet;
use std::path::Path;

use crate::atomic;
use crate::error::{Context, Error, Result};
use crate::ids::ProposalId;

/// What the file says at its top when memd creates it.
pub(crate) const HEADER: &str = "# Review

Ops that consolidation proposed (`[consolidation] review = \"manual\"`), waiting for you:
- mark an item `[x]` to accept it;
- delete an item (its line and the lines under it) to reject it: its facts are then kept word for word, as entries of their own;
- leave it `[ ]` to decide later.

`memd review apply`, or the next run, carries out what you decided. Text of your own outside the items stays as you wrote it.
";

/// The heading of a run's items.
pub(crate) const RUN_HEADING: &str = "## Run ";

/// What a person said of an item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mark {
    /// `[ ]`: not decided yet.
    Open,
    /// `[x]`: accepted.
    Accepted,
}

/// One item of the file.
#[derive(Debug, Clone)]
pub struct Item {
    pub id: ProposalId,
    pub mark: Mark,
    /// Its first line (0-based), and the line after its block.
    pub line: usize,
    pub end: usize,
}

/// The file as read: its lines, its items, its unreadable lines.
#[derive(Debug, Default)]
pub struct Sheet {
    lines: Vec<String>,
    pub items: Vec<Item>,
    /// Lines that look like items and are not (1-based line, the line).
    pub unreadable: Vec<(usize, String)>,
    /// The bytes read (`None`: no file), for a save only if unchanged.
    original: Option<Vec<u8>>,
}

impl Sheet {
    /// The file at `path` (no file: an empty sheet). Invalid UTF-8 is an
    /// error memd will not guess about: the person fixes the file.
    pub fn read(path: &Path) -> Result<Sheet> {
        let original =
            atomic::read_if_exists(path).with_context(|| format!("reading {}", path.display()))?;
        let text = match &original {
            None => String::new(),
            Some(bytes) => match std::str::from_utf8(bytes) {
                Ok(t) => t.to_string(),
                Err(e) => {
                    let line = bytes[..e.valid_up_to()]
                        .iter()
                        .filter(|b| **b == b'\n')
                        .count();
                    return Err(Error::Corrupt {
                        path: path.to_path_buf(),
                        line: Some(line + 1),
                        message:
                            "not valid UTF-8: memd reads no decision from it until it is fixed"
                                .into(),
                    });
                }
            },
        };
        let mut sheet = Sheet::parse(&text);
        sheet.original = original;
        Ok(sheet)
    }

    /// The sheet of `text`.
    pub fn parse(text: &str) -> Sheet {
        let lines: Vec<String> = text.lines().map(String::from).collect();
        let mut sheet = Sheet {
            lines,
            ..Sheet::default()
        };
        sheet.index();
        sheet
    }

    /// Find the items and the unreadable lines again.
    fn index(&mut self) {
        self.items.clear();
        self.unreadable.clear();
        let mut i = 0;
        while i < self.lines.len() {
            let line = &self.lines[i];
            match item_line(line) {
                Some(Ok((id, mark))) => {
                    let mut end = i + 1;
                    while end < self.lines.len() && indented(&self.lines[end]) {
                        end += 1;
                    }
                    self.items.push(Item {
                        id,
                        mark,
                        line: i,
                        end,
                    });
                    i = end;
                    continue;
                }
                Some(Err(())) => self.unreadable.push((i + 1, line.clone())),
                None => {}
            }
            i += 1;
        }
    }

    /// The ids of every readable item.
    pub fn ids(&self) -> HashSet<&ProposalId> {
        self.items.iter().map(|i| &i.id).collect()
    }

    /// The marks given to `id` (more than one when its item is there
    /// twice).
    pub fn marks(&self, id: &str) -> Vec<Mark> {
        self.items
            .iter()
            .filter(|i| i.id == id)
            .map(|i| i.mark)
            .collect()
    }

    /// Mark every item of `id`; whether it has one.
    pub fn set_mark(&mut self, id: &str, mark: Mark) -> bool {
        let lines: Vec<usize> = self
            .items
            .iter()
            .filter(|i| i.id == id)
            .map(|i| i.line)
            .collect();
        for &l in &lines {
            let box_ = match mark {
                Mark::Open => "- [ ]",
                Mark::Accepted => "- [x]",
            };
            let line = &mut self.lines[l];
            line.replace_range(..5, box_);
        }
        self.index();
        !lines.is_empty()
    }

    /// Take out the items of `ids` (their whole blocks), then the run
    /// headings left with nothing under them.
    pub fn remove(&mut self, ids: &HashSet<&str>) {
        let gone: HashSet<usize> = self
            .items
            .iter()
            .filter(|i| ids.contains(i.id.as_str()))
            .flat_map(|i| i.line..i.end)
            .collect();
        if gone.is_empty() {
            return;
        }
        let mut kept: Vec<String> = std::mem::take(&mut self.lines)
            .into_iter()
            .enumerate()
            .filter(|(n, _)| !gone.contains(n))
            .map(|(_, l)| l)
            .collect();
        let mut i = 0;
        while i < kept.len() {
            if !kept[i].starts_with(RUN_HEADING) {
                i += 1;
                continue;
            }
            let mut end = i + 1;
            while end < kept.len() && kept[end].trim().is_empty() {
                end += 1;
            }
            if end == kept.len() || kept[end].starts_with('#') {
                kept.drain(i..end);
            } else {
                i = end;
            }
        }
        while kept.last().is_some_and(|l| l.trim().is_empty()) {
            kept.pop();
        }
        self.lines = kept;
        self.index();
    }

    /// Append `block` (whole lines), after the header when the file is new.
    pub fn append(&mut self, block: &str) {
        if self.lines.iter().all(|l| l.trim().is_empty()) {
            self.lines = HEADER.lines().map(String::from).collect();
        }
        if self.lines.last().is_some_and(|l| !l.trim().is_empty()) {
            self.lines.push(String::new());
        }
        self.lines.extend(block.lines().map(String::from));
        self.index();
    }

    pub fn render(&self) -> String {
        if self.lines.is_empty() {
            return String::new();
        }
        let mut out = self.lines.join("\n");
        out.push('\n');
        out
    }

    /// Replace the file with this sheet, only if it is still byte for
    /// byte what was read; `false` when it changed (read it again).
    pub fn save(&self, path: &Path) -> Result<bool> {
        let text = self.render();
        if self.original.as_deref() == Some(text.as_bytes())
            || (self.original.is_none() && text.is_empty())
        {
            return Ok(true);
        }
        let conflict = std::cell::Cell::new(false);
        let result = atomic::write_with_hook(path, text.as_bytes(), || {
            let now = atomic::read_if_exists(path)?;
            if now != self.original {
                conflict.set(true);
                return Err(std::io::Error::other("changed while memd edited it"));
            }
            Ok(())
        });
        match result {
            Ok(()) => Ok(true),
            Err(_) if conflict.get() => Ok(false),
            Err(e) => Err(e).with_context(|| format!("writing {}", path.display())),
        }
    }
}

/// How many times an edit of the file is tried again when a person saves
/// it meanwhile.
const ATTEMPTS: usize = 10;

/// Read the file, change it with `edit`, and save it if it did not change
/// meanwhile (else read it again and redo the edit). `edit` returns what
/// the caller wants back.
pub(crate) fn edit<T>(path: &Path, mut edit: impl FnMut(&mut Sheet) -> Result<T>) -> Result<T> {
    for _ in 0..ATTEMPTS {
        let mut sheet = Sheet::read(path)?;
        let out = edit(&mut sheet)?;
        if sheet.save(path)? {
            return Ok(out);
        }
    }
    Err(Error::Busy {
        what: format!("an editor saving {} again and again", path.display()),
        pid: None,
    })
}

fn indented(line: &str) -> bool {
    line.starts_with([' ', '\t']) && !line.trim().is_empty()
}

/// An item line: `Some(Ok)` with its id and mark; `Some(Err)` for a line
/// that looks like an item and is not one memd can read; `None` for
/// anything else.
fn item_line(line: &str) -> Option<std::result::Result<(ProposalId, Mark), ()>> {
    let listed = ["- ", "* ", "+ ", "-["].iter().any(|p| line.starts_with(p));
    if !listed {
        return None;
    }
    let names_one = line
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
        .any(ProposalId::looks_like);
    let boxed = line.starts_with("- [") || line.starts_with("* [") || line.starts_with("-[");
    if !boxed && !names_one {
        return None;
    }
    Some(parse_item(line).ok_or(()))
}

fn parse_item(line: &str) -> Option<(ProposalId, Mark)> {
    let rest = line.strip_prefix("- [")?;
    let mut chars = rest.chars();
    let mark = match chars.next()? {
        ' ' => Mark::Open,
        'x' | 'X' => Mark::Accepted,
        _ => return None,
    };
    let rest = chars.as_str().strip_prefix("] ")?;
    let id = rest.split_whitespace().next()?.trim_matches('`');
    Some((id.parse().ok()?, mark))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHEET: &str = "# Review\n\n## Run r-1\n\n- [ ] p-0000000a add \"x\"\n  - from a\n- [x] p-0000000b merge\n  ```diff\n  - y\n  ```\n- [?] p-0000000c broken\n- p-0000000d no box\n- a note of mine\n\n## Run r-2\n\n- [X] `p-0000000e` keep\n";

    #[test]
    fn items_their_marks_and_blocks_are_read_and_broken_ones_reported() {
        let s = Sheet::parse(SHEET);
        let got: Vec<(&str, Mark, usize, usize)> = s
            .items
            .iter()
            .map(|i| (i.id.as_str(), i.mark, i.line, i.end))
            .collect();
        assert_eq!(
            got,
            vec![
                ("p-0000000a", Mark::Open, 4, 6),
                ("p-0000000b", Mark::Accepted, 6, 10),
                ("p-0000000e", Mark::Accepted, 16, 17),
            ]
        );
        let lines: Vec<usize> = s.unreadable.iter().map(|u| u.0).collect();
        assert_eq!(lines, vec![11, 12]);
    }

    #[test]
    fn removing_items_takes_their_blocks_and_empty_run_headings_and_nothing_else() {
        let mut s = Sheet::parse(SHEET);
        s.remove(&HashSet::from(["p-0000000a", "p-0000000b", "p-0000000e"]));
        assert_eq!(
            s.render(),
            "# Review\n\n## Run r-1\n\n- [?] p-0000000c broken\n- p-0000000d no box\n- a note of mine\n"
        );
        assert!(s.items.is_empty());
    }

    #[test]
    fn marking_an_item_changes_its_box_only() {
        let mut s = Sheet::parse(SHEET);
        assert!(s.set_mark("p-0000000a", Mark::Accepted));
        assert!(!s.set_mark("p-00000099", Mark::Accepted));
        assert!(s.render().contains("- [x] p-0000000a add \"x\"\n"));
        assert_eq!(s.marks("p-0000000a"), vec![Mark::Accepted]);
    }
}
