//! An entry's text with the history it keeps, dated: what is true now
//! first, then what was before, newest first, each with the day it was
//! first stated.
//!
//! ```text
//! User now works at Initech (since 2026-11-22; previously: User now works at Globex, since 2026-11-20; User works at Acme, since 2026-11-18)
//! ```
//!
//! The current statement comes first and alone, so that a search for the
//! current value matches it as the new fact alone would
//! ([`crate::update::current_part`] cuts here), and the old values stay in
//! the text, so that a question about the past finds them. A day is
//! written where it is known: the facts' archive day for what the run
//! folds in; for an entry, the day its text says, else the day it was
//! first seen. Texts written before dates were kept (`new (previously:
//! old)`), by a model's REPLACE, or by hand are read the same way with no
//! day; nothing here needs a day to be there.

use crate::clock::is_day;

/// Opens the history of a text whose current statement is not dated.
const OPEN: &str = " (previously: ";
/// Between the current statement's day and its history.
const DATED_OPEN: &str = "; previously: ";
/// Before the day of a history item.
const ITEM_DAY: &str = ", since ";

/// One statement: its text and the day it was first stated, if known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stated {
    pub text: String,
    pub day: Option<String>,
}

impl Stated {
    pub fn new(text: &str, day: Option<&str>) -> Stated {
        Stated {
            text: text.split_whitespace().collect::<Vec<_>>().join(" "),
            day: day.filter(|d| is_day(d)).map(str::to_string),
        }
    }

    fn item(&self) -> String {
        match &self.day {
            Some(d) => format!("{}{ITEM_DAY}{d}", self.text),
            None => self.text.clone(),
        }
    }
}

/// `text` split into what it states now and its history (newest first),
/// each flattened to one list: an entry whose old value had history of
/// its own gives one list, never parentheses in parentheses.
pub fn split(text: &str) -> (Stated, Vec<Stated>) {
    let text = text.trim();
    let Some((at, day, rest)) = opening(text) else {
        return (Stated::new(text, None), Vec::new());
    };
    let body = &rest[..rest.len() - 1];
    let history = body.split("; ").map(item).collect();
    (Stated::new(&text[..at], day), history)
}

/// Where `text`'s history opens, the current statement's day, and what
/// follows the opening (the items and the closing parenthesis). `None`
/// for a text that keeps no history in this form.
fn opening(text: &str) -> Option<(usize, Option<&str>, &str)> {
    if !text.ends_with(')') {
        return None;
    }
    if let Some(at) = text.find(OPEN) {
        return Some((at, None, &text[at + OPEN.len()..]));
    }
    let at = text.find(" (since ")?;
    let after = &text[at + " (since ".len()..];
    let (day, rest) = after.split_once(DATED_OPEN)?;
    is_day(day).then_some((at, Some(day), rest))
}

/// One history item: "text, since DAY" or "text".
fn item(s: &str) -> Stated {
    match s.rsplit_once(ITEM_DAY) {
        Some((text, day)) if is_day(day.trim()) => Stated::new(text, Some(day.trim())),
        _ => Stated::new(s, None),
    }
}

/// Where the history of `text` opens, as [`split`] reads it: the byte at
/// which its current statement ends.
pub fn opens_at(text: &str) -> Option<usize> {
    opening(text.trim_end()).map(|(at, _, _)| at)
}

/// The text of `now` with `olds` kept as history (newest first), each
/// old flattened with its own history: "now (since DAY; previously: old,
/// since DAY; …)", or "now (previously: …)" when `now` has no day.
pub fn write(now: &Stated, olds: &[Stated]) -> String {
    let items: Vec<String> = olds.iter().map(Stated::item).collect();
    match &now.day {
        Some(d) => format!("{} (since {d}{DATED_OPEN}{})", now.text, items.join("; ")),
        None => format!("{}{OPEN}{})", now.text, items.join("; ")),
    }
}

/// `old` (an entry's or a fact's text; `day`: the day it was first
/// stated, used when its text neither says a day nor keeps history: the
/// day an entry was first seen is its current value's only when nothing
/// replaced it since) as history items: its current statement, then its
/// own history.
pub fn flatten(old: &str, day: Option<&str>) -> Vec<Stated> {
    let (mut now, mut rest) = split(old);
    if now.day.is_none() && rest.is_empty() {
        now.day = day.filter(|d| is_day(d)).map(str::to_string);
    }
    rest.insert(0, now);
    rest
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dated_history_reads_back_as_it_was_written() {
        let olds = [
            Stated::new("User now works at Globex", Some("2026-11-20")),
            Stated::new("User works at Acme", Some("2026-11-18")),
        ];
        let text = write(
            &Stated::new("User now works at Initech", Some("2026-11-22")),
            &olds,
        );
        assert_eq!(
            text,
            "User now works at Initech (since 2026-11-22; previously: User now works at Globex, since 2026-11-20; User works at Acme, since 2026-11-18)"
        );
        let (now, history) = split(&text);
        assert_eq!(
            now,
            Stated::new("User now works at Initech", Some("2026-11-22"))
        );
        assert_eq!(history, olds);
        assert_eq!(opens_at(&text), Some("User now works at Initech".len()));
    }

    #[test]
    fn an_old_value_with_history_of_its_own_is_flattened_into_one_list() {
        let old = "User now works at Globex (since 2026-11-20; previously: User works at Acme)";
        let text = write(
            &Stated::new("User now works at Initech", Some("2026-11-22")),
            &flatten(old, Some("2026-11-01")),
        );
        assert_eq!(
            text,
            "User now works at Initech (since 2026-11-22; previously: User now works at Globex, since 2026-11-20; User works at Acme)"
        );
    }

    #[test]
    fn an_undated_history_and_a_text_without_one_are_read_as_they_are() {
        let (now, history) =
            split("Works at Microsoft (previously: Google; IBM, since 2019-01-01)");
        assert_eq!(now, Stated::new("Works at Microsoft", None));
        assert_eq!(
            history,
            [
                Stated::new("Google", None),
                Stated::new("IBM", Some("2019-01-01"))
            ]
        );
        for plain in [
            "Has lived in Paris (since 2019)",
            "Likes tea",
            "Uses vim (since 2026-01-01)",
        ] {
            assert_eq!(split(plain), (Stated::new(plain, None), Vec::new()));
            assert_eq!(opens_at(plain), None);
        }
    }
}
