//! Ids are types, not strings (after jj's `lib/src/object_id.rs`): an
//! archive fact's id, an entry's, a run's, a proposal's and a row of the
//! index. Each is its text on disk and on the wire (serde transparent), so
//! files and the API read exactly as before; in the code a fact id can no
//! longer be passed where an entry id is meant, and the prefixes that once
//! decided logic (`core:`, `hand-`) are variants of [`RowId`].
//!
//! No string becomes an id by conversion. An id is made by its kind's
//! constructor (a new fact's, entry's, run's or proposal's), or parsed
//! ([`std::str::FromStr`]), which checks the kind's shape and says what
//! was expected ([`NotAnId`]): the command line parses the run, proposal
//! and row ids it takes that way. An entry's id parses from any one word
//! that is not a fact's ([`EntryId::may_name`]): memd keeps an id a person
//! wrote in an entry's metadata, and shows it. Read back from memd's own
//! files and from the index, an id is taken as stored (serde, and the
//! crate's `stored` for the journal, `MEMORY.md` and the index's column):
//! those hold only ids memd wrote or a person kept, and a file a person
//! edited is judged by `memd check`, not refused on read. Over HTTP and
//! MCP an id is taken as given and looked up: one that names nothing is
//! answered as not found.

use std::borrow::Borrow;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::clock::{Clock, is_day};
use crate::text;

/// A text that does not have the shape of the id it was given as.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{text}` is not {kind} ({shape})")]
pub struct NotAnId {
    /// What the text was meant to name ("a fact id", "a run id", …).
    pub kind: &'static str,
    /// The shape that kind of id has, with an example.
    pub shape: &'static str,
    pub text: String,
}

/// The common part of the string ids: a newtype over its text, parsed by
/// `$looks_like` (the shape, `$shape`, of a `$kind`).
macro_rules! string_id {
    ($(#[$doc:meta])* $name:ident, $kind:literal, $shape:literal, $looks_like:expr) => {
        $(#[$doc])*
        #[derive(
            Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
            schemars::JsonSchema,
        )]
        #[serde(transparent)]
        pub struct $name(String);

        impl $name {
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.pad(&self.0)
            }
        }

        impl std::ops::Deref for $name {
            type Target = str;
            fn deref(&self) -> &str {
                &self.0
            }
        }

        impl Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl std::str::FromStr for $name {
            type Err = NotAnId;
            /// The id `s` names (trimmed), if it has the kind's shape.
            fn from_str(s: &str) -> Result<$name, NotAnId> {
                let s = s.trim();
                let looks_like: fn(&str) -> bool = $looks_like;
                match looks_like(s) {
                    true => Ok($name(s.to_string())),
                    false => Err(NotAnId {
                        kind: $kind,
                        shape: $shape,
                        text: s.to_string(),
                    }),
                }
            }
        }

        impl From<$name> for String {
            fn from(id: $name) -> String {
                id.0
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.0 == *other
            }
        }

        impl PartialEq<String> for $name {
            fn eq(&self, other: &String) -> bool {
                &self.0 == other
            }
        }

        impl PartialEq<$name> for String {
            fn eq(&self, other: &$name) -> bool {
                *self == other.0
            }
        }

        impl PartialEq<&$name> for String {
            fn eq(&self, other: &&$name) -> bool {
                *self == other.0
            }
        }

        impl From<&$name> for $name {
            fn from(id: &$name) -> $name {
                id.clone()
            }
        }
    };
}

/// `stored` for the ids memd reads back from its own files and tables.
macro_rules! stored {
    ($($name:ident),*) => {$(
        impl $name {
            /// An id read back from a file or table memd wrote (the
            /// journal, `consolidated/memory.md`, the index's id column),
            /// taken as stored, as serde reads those files.
            pub(crate) fn stored(id: &str) -> $name {
                $name(id.to_string())
            }
        }
    )*};
}

stored!(EntryId, RowId);

string_id!(
    /// An archive fact: its day, a hash of its normalised text, and its
    /// occurrence that day past the first (`2026-11-22#a1b2c3d4`,
    /// `2026-11-22#a1b2c3d4.2`).
    FactId,
    "a fact id",
    "a day, `#` and a hash: 2026-11-22#a1b2c3d4",
    FactId::looks_like
);

string_id!(
    /// An entry of `consolidated/memory.md` (`e-3f9a2c…`).
    EntryId,
    "an entry id",
    "one word, `e-` and a hash as memd makes them, or a name a person gave: e-3f9a2c1b",
    EntryId::may_name
);

string_id!(
    /// A run in the journal: a consolidation, a forget or an undo
    /// (`r-20261122T140512-ab12`).
    RunId,
    "a run id",
    "`r-`, a time and a hash: r-20261122T140512-ab12",
    RunId::looks_like
);

string_id!(
    /// An op a run in review mode proposed: an item of
    /// `consolidated/REVIEW.md` (`p-1a2b3c4d`), from the run's id and the
    /// op's place in it.
    ProposalId,
    "a proposal id",
    "`p-` and 8 hex digits: p-1a2b3c4d",
    ProposalId::looks_like
);

impl ProposalId {
    /// The id of the `n`th op `run` proposed.
    pub fn new(run: &RunId, n: usize) -> ProposalId {
        ProposalId(format!("p-{}", text::short_hash(&format!("{run}/{n}"), 8)))
    }

    /// Whether `s` has the shape of a proposal's id: `p-` and 8 hex digits.
    pub fn looks_like(s: &str) -> bool {
        s.strip_prefix("p-")
            .is_some_and(|h| h.len() == 8 && h.bytes().all(|b| b.is_ascii_hexdigit()))
    }
}

impl EntryId {
    /// The entry id of hash (or name) `hash`: `e-` and it.
    pub fn hashed(hash: &str) -> EntryId {
        EntryId(format!("e-{hash}"))
    }

    /// Whether `s` has the shape of an entry id: `e-` and a hash (or a
    /// name a person gave: letters, digits, `-`, `_`; at most 64).
    pub fn looks_like(s: &str) -> bool {
        s.strip_prefix("e-").is_some_and(|h| {
            !h.is_empty()
                && h.len() <= 64
                && h.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        })
    }

    /// Whether `s` may name an entry, as an id is parsed: one that has
    /// the shape memd gives ([`EntryId::looks_like`]), or any id a person
    /// wrote in an entry's metadata by hand, which memd keeps and shows
    /// as it is: one word, neither a fact's (no `#`) nor a `MEMORY.md`
    /// line's (`core:`).
    pub fn may_name(s: &str) -> bool {
        !s.is_empty()
            && !s.starts_with(CORE_PREFIX)
            && !s
                .chars()
                .any(|c| c.is_whitespace() || c.is_control() || c == '#')
    }
}

impl RunId {
    /// Whether `s` has the shape of a run's id: `r-`, then letters,
    /// digits and `-` (the time and the hash [`RunId::new`] gives).
    pub fn looks_like(s: &str) -> bool {
        s.strip_prefix("r-").is_some_and(|rest| {
            !rest.is_empty() && rest.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        })
    }

    /// A new run's id: the time `clock` gives, and a hash that keeps two
    /// runs in one second apart.
    pub fn new(clock: &Clock) -> RunId {
        let now = clock.now();
        let salt = format!(
            "{:?}{:?}{}",
            now,
            std::time::Instant::now(),
            std::process::id()
        );
        RunId(format!(
            "r-{}-{}",
            now.format("%Y%m%dT%H%M%S"),
            text::short_hash(&salt, 4)
        ))
    }
}

impl FactId {
    /// The id of the `occurrence`th fact (from 1) with text hash `hash`
    /// on `day`.
    pub fn new(day: &str, hash: &str, occurrence: usize) -> FactId {
        match occurrence {
            0 | 1 => FactId(format!("{day}#{hash}")),
            n => FactId(format!("{day}#{hash}.{n}")),
        }
    }

    /// The id without the count of the same text said earlier that day:
    /// `DAY#HASH` of `DAY#HASH.2` (what a line parsed alone is called).
    pub fn first_of_text(&self) -> &str {
        self.0.split_once('.').map_or(&self.0, |(h, _)| h)
    }

    /// The day the fact was written on (`YYYY-MM-DD`).
    pub fn day(&self) -> &str {
        self.0.split('#').next().unwrap_or_default()
    }

    /// Whether `s` has the shape of a fact id (a day, `#`, a hash).
    pub fn looks_like(s: &str) -> bool {
        s.split_once('#')
            .is_some_and(|(day, hash)| is_day(day) && !hash.is_empty())
    }
}

/// An id as a request takes it (`forget`, `erase`, `unforget`, `history`,
/// getting and editing an entry): an entry, or an archive fact. Read once
/// where the request is read ([`ItemId::given`]: by serde on the wire and
/// over MCP, by clap on the command line), so every id memd prints names
/// its item, a search hit on a `MEMORY.md` line (`core:e-…`) its entry.
/// On the wire it is the id's text.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ItemId {
    Entry(EntryId),
    Fact(FactId),
}

impl Default for ItemId {
    fn default() -> ItemId {
        ItemId::Entry(EntryId::default())
    }
}

impl std::str::FromStr for ItemId {
    type Err = std::convert::Infallible;
    fn from_str(s: &str) -> Result<ItemId, Self::Err> {
        Ok(ItemId::given(s))
    }
}

impl Serialize for ItemId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ItemId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<ItemId, D::Error> {
        Ok(ItemId::given(&String::deserialize(d)?))
    }
}

impl ItemId {
    /// An id as a person or an agent gives it ([`given`], then
    /// [`ItemId::parse`]).
    pub fn given(s: &str) -> ItemId {
        ItemId::parse(given(s))
    }

    /// An id as a person or an agent gives it: a fact id has a day and a
    /// `#`; anything else names an entry.
    pub fn parse(s: &str) -> ItemId {
        let s = s.trim();
        match FactId::looks_like(s) {
            true => ItemId::Fact(FactId(s.to_string())),
            false => ItemId::Entry(EntryId(s.to_string())),
        }
    }

    pub fn as_str(&self) -> &str {
        match self {
            ItemId::Entry(e) => e.as_str(),
            ItemId::Fact(f) => f.as_str(),
        }
    }
}

impl fmt::Display for ItemId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

string_id!(
    /// The id of a row of the index: what a search hit names. A pending
    /// fact's row has the fact's id and an entry's row the entry's; the
    /// other two kinds are made here, and only here: a line of `MEMORY.md`
    /// is `core:` and its entry's id, a hand-written block memd has not
    /// saved yet is `hand-` and the hash of its text. Ordered as text, so
    /// ties in a ranking fall the same way whatever the kind.
    RowId,
    "an id a search hit gives",
    "a fact id, an entry id, `core:` and an entry id, or `hand-` and a hash",
    RowId::looks_like
);

/// A fact's row has the fact's id.
impl PartialEq<FactId> for RowId {
    fn eq(&self, other: &FactId) -> bool {
        self.0 == other.0
    }
}

/// An entry's row has the entry's id.
impl PartialEq<EntryId> for RowId {
    fn eq(&self, other: &EntryId) -> bool {
        self.0 == other.0
    }
}

const CORE_PREFIX: &str = "core:";
const HAND_PREFIX: &str = "hand-";

/// The id a user or an agent gives a command, as the command takes it: a
/// search hit on a `MEMORY.md` line (`core:e-…`) names its entry, so every
/// id a hit carries works with forget, forget --undo and history.
pub fn given(id: &str) -> &str {
    let id = id.trim();
    id.strip_prefix(CORE_PREFIX).unwrap_or(id)
}

impl RowId {
    pub fn fact(id: &FactId) -> RowId {
        RowId(id.0.clone())
    }

    pub fn entry(id: &EntryId) -> RowId {
        RowId(id.0.clone())
    }

    /// The row of entry `id`'s line in `MEMORY.md`.
    pub fn core(id: &EntryId) -> RowId {
        RowId(format!("{CORE_PREFIX}{id}"))
    }

    /// The row of a hand-written block whose text hashes to `hash`.
    pub fn hand(hash: &str) -> RowId {
        RowId(format!("{HAND_PREFIX}{hash}"))
    }

    /// The entry whose `MEMORY.md` line this row is, if it is one.
    pub fn core_entry(&self) -> Option<EntryId> {
        (self.0.strip_prefix(CORE_PREFIX)).map(|e| EntryId(e.to_string()))
    }

    /// Whether `s` has the shape of a row's id: a fact's or an entry's
    /// ([`EntryId::may_name`]), `core:` and an entry's, or `hand-` and a
    /// hash.
    pub fn looks_like(s: &str) -> bool {
        FactId::looks_like(s)
            || EntryId::may_name(s)
            || s.strip_prefix(CORE_PREFIX).is_some_and(EntryId::may_name)
            || (s.strip_prefix(HAND_PREFIX))
                .is_some_and(|h| !h.is_empty() && h.bytes().all(|b| b.is_ascii_alphanumeric()))
    }

    /// Whether the row is a hand-written block awaiting its id.
    pub fn is_hand(&self) -> bool {
        self.0.starts_with(HAND_PREFIX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_is_parsed_only_from_text_of_its_kinds_shape() {
        assert!("2026-11-22#a1b2c3d4.2".parse::<FactId>().is_ok());
        assert!(" e-3f9a2c1b ".parse::<EntryId>().is_ok());
        assert!("r-20261122T140512-ab12".parse::<RunId>().is_ok());
        assert!("p-1a2b3c4d".parse::<ProposalId>().is_ok());
        // An entry a person named by hand is named as memd shows it.
        assert!("acme".parse::<EntryId>().is_ok());
        assert!("core:acme".parse::<RowId>().is_ok());
        // An entry's id is no fact's, a fact's no run's, and so on.
        assert!("e-3f9a2c1b".parse::<FactId>().is_err());
        assert!("2026-11-22#a1b2c3d4".parse::<EntryId>().is_err());
        assert!("e-3f9a2c1b".parse::<RunId>().is_err());
        assert!("p-1a2b3c4".parse::<ProposalId>().is_err());
        // Each row id as a search hit gives it, and text that is none.
        for (row, is) in [
            ("2026-11-22#a1b2c3d4", true),
            ("e-3f9a2c1b", true),
            ("core:e-3f9a2c1b", true),
            ("hand-0a1b", true),
            ("", false),
            ("core:", false),
            ("core:2026-11-22#a1", false),
            ("2026-11-22#", false),
            ("hand-a b", false),
            ("Acme Corp", false),
        ] {
            assert_eq!(row.parse::<RowId>().is_ok(), is, "{row}");
        }
    }

    #[test]
    fn text_of_another_shape_is_refused_with_the_shape_expected() {
        let err = "e-1".parse::<RunId>().unwrap_err();
        assert_eq!(err.text, "e-1");
        assert_eq!(
            err.to_string(),
            "`e-1` is not a run id (`r-`, a time and a hash: r-20261122T140512-ab12)"
        );
    }
}
