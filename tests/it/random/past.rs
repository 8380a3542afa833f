//! The oracle of memory as of a past time: after every step the world
//! notes the time and both files as that step left them; `show --as-of`
//! that time must give them back byte for byte, or say it cannot know
//! only where a change memd did not see, or an erasure, stands between, or
//! where a person deleted memd's record of the versions before it and memd
//! has not written the file since.

use memd::versions::Then;
use serde_json::Value;

use super::actions::{self, Action, Killed, Via};
use super::world::World;

/// The files as one step left them, and the time after it.
#[derive(Debug, Clone)]
pub struct Past {
    pub at: String,
    /// `consolidated/memory.md` (`None`: not readable as text).
    pub memory: Option<String>,
    /// MEMORY.md's generated lines (`None`: no markers, or no file).
    pub core: Option<String>,
    /// The step changed a file behind memd's back (a hand edit, a
    /// SIGKILL mid-write, a file put aside).
    pub unseen: bool,
    /// The step was an erasure.
    pub erase: bool,
    /// The step took memd's record of every earlier version away
    /// (`consolidated/versions.jsonl`, deleted with its folder).
    pub lost: bool,
}

/// How far a file's modification time may lag the write it dates, as
/// memd allows for it (`versions::written_by`, on a file system keeping
/// nanoseconds, as the test's temporary directories do).
const MTIME_LAG: chrono::Duration = chrono::Duration::milliseconds(20);

/// Whether `action` may change a file without memd recording it.
pub fn unseen(action: &Action) -> bool {
    matches!(
        action,
        Action::HandDeleteEntry { .. }
            | Action::HandEditEntry { .. }
            | Action::HandWriteEntry { .. }
            | Action::HandEditCore
            | Action::HandEditInPlace
            | Action::HandDeleteConsolidated
            | Action::Kill { .. }
            | Action::Unwritable { .. }
    )
}

impl Past {
    pub fn now(layout: &memd::Layout, action: Option<&Action>) -> Past {
        let at = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true);
        let memory = std::fs::read(layout.entries_file())
            .ok()
            .and_then(|b| String::from_utf8(b).ok());
        let core = std::fs::read(layout.memory_md())
            .ok()
            .and_then(|b| memd::core_md::CoreMd::parse(&b).ok())
            .and_then(|md| md.generated().map(str::to_string));
        Past {
            at,
            memory,
            core,
            // The memory as made (`None`): its files were written by
            // `memd init`, which records no version of them.
            unseen: action.is_none_or(unseen),
            erase: matches!(
                action,
                Some(
                    Action::Erase { .. }
                        | Action::Kill {
                            what: Killed::Erase,
                            ..
                        }
                )
            ),
            lost: matches!(action, Some(Action::HandDeleteConsolidated)),
        }
    }
}

impl World {
    /// [`Action::AsOf`]: both files as of step `pick`, then a search as of
    /// it (a failure is the oracle's, not an error of the action).
    pub(super) fn as_of(&mut self, via: Via, pick: u8, text: u8) -> anyhow::Result<()> {
        let i = pick as usize % self.past.len();
        let at = self.past[i].at.clone();
        let shown: (Then, Then) = match via {
            Via::Cli => {
                let out =
                    crate::support::memd(&self.layout.root, &["show", "--as-of", &at, "--json"]);
                anyhow::ensure!(out.status.success(), "{}", crate::support::stderr(&out));
                let v: Value = serde_json::from_slice(&out.stdout)?;
                (
                    serde_json::from_value(v["memory"].clone())?,
                    serde_json::from_value(v["core"].clone())?,
                )
            }
            _ => {
                let s = self.run(memd::request::Show {
                    as_of: Some(at.clone()),
                })?;
                (s.memory, s.core)
            }
        };
        let memory_known = self.judge_then(i, &shown.0, |p| &p.memory, "consolidated/memory.md");
        self.judge_then(i, &shown.1, |p| &p.core, "MEMORY.md's generated lines");
        self.search_then(i, actions::text(text), memory_known)
    }

    /// At the end of a sequence: both files as of every step (every run
    /// boundary of the history), in process.
    pub(super) fn every_past(&self) {
        for i in 0..self.past.len() {
            let asked = memd::request::Show {
                as_of: Some(self.past[i].at.clone()),
            };
            let shown = self.run(asked).unwrap_or_else(|e| {
                panic!(
                    "show as of step {i}: {e:#}\nafter:\n{}",
                    self.log.join("\n")
                )
            });
            self.judge_then(i, &shown.memory, |p| &p.memory, "consolidated/memory.md");
            self.judge_then(i, &shown.core, |p| &p.core, "MEMORY.md's generated lines");
        }
    }

    /// One file as of step `i`: exact, or unknowable where allowed.
    fn judge_then(
        &self,
        i: usize,
        then: &Then,
        file: impl Fn(&Past) -> &Option<String>,
        name: &str,
    ) -> bool {
        let strict = !self.skewed;
        match then {
            Then::Known { text, .. } => {
                let ok = match strict {
                    true => text == file(&self.past[i]),
                    // Clocks moved by hours: whatever memd gives is a
                    // version the file really had.
                    false => self.past.iter().any(|p| file(p) == text),
                };
                assert!(
                    ok,
                    "{name} as of step {i} ({}) is not what that step left:\nshown {text:?}\nwas {:?}\nafter:\n{}{}",
                    self.past[i].at,
                    file(&self.past[i]),
                    self.log.join("\n"),
                    self.dump()
                );
                true
            }
            Then::Unknowable { why, .. } => {
                assert!(
                    !strict || self.may_not_know(i, &file),
                    "{name} as of step {i} ({}) said unknowable ({why}) though memd wrote every change around it\nafter:\n{}",
                    self.past[i].at,
                    self.log.join("\n")
                );
                false
            }
        }
    }

    /// Whether memd may not know a file as of step `i`: a change it did
    /// not see comes after `i` before memd itself changed the file, or an
    /// erasure (or a SIGKILL, which may stop one) comes after `i`.
    fn may_not_know(&self, i: usize, file: &impl Fn(&Past) -> &Option<String>) -> bool {
        let later = &self.past[i + 1..];
        if later.iter().any(|p| p.erase || p.lost) || self.unrecorded(i, file) {
            return true;
        }
        if self.just_after_unseen(i) {
            return true;
        }
        let mut before = file(&self.past[i]);
        for p in later {
            if p.unseen {
                return true;
            }
            if file(p) != before {
                return false;
            }
            before = file(p);
        }
        false
    }

    /// Whether step `i` came less than [`MTIME_LAG`] after a step that
    /// changed a file behind memd's back: memd dates such a change by the
    /// file's modification time, which may lag the write by that much, so
    /// it cannot tell whether the change was made by then.
    fn just_after_unseen(&self, i: usize) -> bool {
        let time = |p: &Past| chrono::DateTime::parse_from_rfc3339(&p.at).unwrap();
        let at = time(&self.past[i]);
        self.past[..=i]
            .iter()
            .any(|p| p.unseen && at < time(p) + MTIME_LAG)
    }

    /// Whether memd's record of the versions was deleted at or before
    /// step `i`, and memd wrote no version of the file from then to `i`.
    fn unrecorded(&self, i: usize, file: &impl Fn(&Past) -> &Option<String>) -> bool {
        let Some(lost) = self.past[..=i].iter().rposition(|p| p.lost) else {
            return false;
        };
        let mut before = file(&self.past[lost]);
        for p in &self.past[lost + 1..=i] {
            if file(p) != before && !p.unseen {
                return false;
            }
            before = file(p);
        }
        true
    }

    /// A search as of step `i`: its entry hits are entries of the file as
    /// it was (when memd knows it), and no hit is a fact forgotten since.
    fn search_then(&mut self, i: usize, text: &str, known: bool) -> anyhow::Result<()> {
        let req = memd::request::Search {
            query: Some(text.to_string()),
            k: Some(10),
            min_score: Some(0.0),
            as_of: Some(self.past[i].at.clone()),
            ..Default::default()
        };
        let hits = match self.run(req) {
            Ok(found) => found.hits(),
            // Refused exactly when the entries then are unknowable.
            Err(e) if e.kind() == memd::error::Kind::Invalid && !known => return Ok(()),
            Err(e) => return Err(e.into()),
        };
        let then = memd::entries::Document::parse(self.past[i].memory.as_deref().unwrap_or(""));
        for h in hits
            .iter()
            .filter(|h| h.kind == memd::index::RowKind::Entry)
        {
            let was = then.entries().any(|e| e.text == h.text);
            assert!(
                was || self.skewed,
                "a search as of step {i} gave entry {} ({:?}), which the file did not hold then\nafter:\n{}",
                h.id,
                h.text,
                self.log.join("\n")
            );
        }
        // As the oracle after each step: facts whose forgetting is memd's
        // to decide are left to `memd check`.
        let forgotten = self.ledger.forgotten_ids();
        for h in &hits {
            let fact = h.id.as_str();
            assert!(
                !forgotten.contains(fact) || self.ledger.uncertain.contains(fact),
                "a search as of step {i} gave fact {fact}, forgotten since\nafter:\n{}",
                self.log.join("\n")
            );
        }
        Ok(())
    }
}
