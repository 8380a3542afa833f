//! What the entries file and MEMORY.md's generated lines held at a time
//! (`--as-of`): read from the versions file.

use chrono::{DateTime, FixedOffset, Local, TimeZone};
use serde::{Deserialize, Serialize};

use super::on_disk::read_now;
use super::{By, File, History, Lost, name, sha, stamp};
use crate::error::Result;
use crate::layout::rel;
use crate::{Error, Layout};

/// What a file held at a time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Then {
    /// The file's content then (`None`: it could not be read as text: it
    /// was missing, not UTF-8, or MEMORY.md had no markers), held from
    /// `since`.
    Known { since: String, text: Option<String> },
    /// memd cannot tell, and says why; `known_until` and `known_from` are
    /// the nearest times it can show, when there are any.
    Unknowable {
        why: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        known_until: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        known_from: Option<String>,
    },
}

impl Then {
    /// The text when known (`None` too for a file unreadable then).
    pub fn text(&self) -> Option<&str> {
        match self {
            Then::Known { text, .. } => text.as_deref(),
            Then::Unknowable { .. } => None,
        }
    }
}

impl History {
    /// What `file` held at `at`, from its versions and, after the last,
    /// the file on disk. The history must be loaded for `at`
    /// ([`History::load`]).
    fn at(&self, layout: &Layout, file: File, at: DateTime<FixedOffset>) -> Result<Then> {
        let versions = self.versions(file);
        let what = name(file);
        let Some(i) = versions.iter().rposition(|v| v.ts <= at) else {
            return self.before_first(layout, file, at);
        };
        let v = &versions[i];
        let changed = |until: String, from: String| Then::Unknowable {
            why: format!(
                "{what} changed at a time memd does not know (by hand, or by a writer that did not record it) between {until} and {from}"
            ),
            known_until: Some(until),
            known_from: Some(from),
        };
        let next = versions.get(i + 1);
        if let Some(n) = next {
            let seen = n.by == By::Memd && n.from.as_deref() == Some(v.sha.as_str());
            if !seen && at > v.ts {
                return Ok(changed(stamp(&v.ts), stamp(&n.ts)));
            }
        } else {
            let (content, mtime) = read_now(layout, file)?;
            if sha(content.as_deref()) != v.sha {
                let m = mtime.unwrap_or_else(|| Local::now().fixed_offset());
                if m <= at {
                    return Ok(Then::Known {
                        since: stamp(&m),
                        text: content,
                    });
                }
                if at > v.ts {
                    return Ok(changed(stamp(&v.ts), stamp(&m)));
                }
            }
        }
        Ok(self.known(file, i))
    }

    /// Version `i` of `file`, known or why not.
    fn known(&self, file: File, i: usize) -> Then {
        let versions = self.versions(file);
        let (v, next) = (&versions[i], versions.get(i + 1));
        match self.content(file, i) {
            Ok(text) => Then::Known {
                since: stamp(&v.ts),
                text,
            },
            Err(lost) => Then::Unknowable {
                why: match lost {
                    Lost::Erased => format!("{} as of then held text erased since", name(file)),
                    Lost::Damaged => format!(
                        "the record of {} as of then is damaged ({} cannot rebuild it)",
                        name(file),
                        rel::VERSIONS
                    ),
                },
                known_until: None,
                known_from: next.map(|n| stamp(&n.ts)),
            },
        }
    }

    /// Before the first version: the file on disk when nothing since
    /// changed it, else unknowable.
    fn before_first(&self, layout: &Layout, file: File, at: DateTime<FixedOffset>) -> Result<Then> {
        let first = self.versions(file).first();
        if first.is_none() {
            let (content, mtime) = read_now(layout, file)?;
            if let Some(m) = mtime.filter(|m| *m <= at) {
                return Ok(Then::Known {
                    since: stamp(&m),
                    text: content,
                });
            }
        }
        let from = first.map(|v| stamp(&v.ts));
        Ok(Then::Unknowable {
            why: format!(
                "memd has no record of {} before {}",
                name(file),
                from.as_deref().unwrap_or("its last change")
            ),
            known_until: None,
            known_from: from,
        })
    }
}

/// Both files as of `at`.
pub fn as_of(layout: &Layout, at: DateTime<FixedOffset>) -> Result<(Then, Then)> {
    let history = History::load(layout, Some(at))?;
    Ok((
        history.at(layout, File::Memory, at)?,
        history.at(layout, File::Core, at)?,
    ))
}

/// A time as a person gives one: RFC 3339 (`2026-11-24T14:03:00+01:00`),
/// a local time (`2026-11-24T14:03`, `2026-11-24 14:03:05`), or a day
/// (`2026-11-24`: its end, local time).
pub fn parse_time(s: &str) -> Result<DateTime<FixedOffset>> {
    let s = s.trim();
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return Ok(t);
    }
    let local = |n: chrono::NaiveDateTime| {
        Local
            .from_local_datetime(&n)
            .earliest()
            .map(|t| t.fixed_offset())
    };
    for f in [
        "%Y-%m-%dT%H:%M:%S%.f",
        "%Y-%m-%d %H:%M:%S%.f",
        "%Y-%m-%dT%H:%M",
        "%Y-%m-%d %H:%M",
    ] {
        if let Some(t) = chrono::NaiveDateTime::parse_from_str(s, f)
            .ok()
            .and_then(local)
        {
            return Ok(t);
        }
    }
    if let Some(t) = chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d")
        .ok()
        .and_then(|d| d.and_hms_micro_opt(23, 59, 59, 999_999))
        .and_then(local)
    {
        return Ok(t);
    }
    Err(Error::Invalid(format!(
        "as_of is a time: RFC 3339 (2026-11-24T14:03:00Z), a local time (2026-11-24T14:03) or a day (2026-11-24, its end); got {s:?}"
    )))
}
