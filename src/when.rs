//! The days a query names: "on 3 June, 2023", "June 3rd 2023",
//! "2023-06-03" (that day), "in June 2023", "2023-06" (that month).
//! Search adds the rows of those days nearest the query as a third list
//! of its fusion ([`crate::index`]): a question about what was said on a
//! day prefers what was said that day, and never loses a hit for it.
//!
//! Days counted back from today are read too: "today", "yesterday",
//! "3 days ago" (today as the caller's clock gives it).
//!
//! Only a date with its year is read: "June 3" alone could be any year,
//! "last week" any of seven days, and a bare year ("in 2023") names too
//! much to tell rows apart. English month names, in full or cut to three
//! letters ("Sept" too), any case; ordinals ("3rd", "8th") read as their
//! number.

use chrono::NaiveDate;

/// A run of whole days, both ends included.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub from: NaiveDate,
    pub to: NaiveDate,
}

impl Span {
    /// Whether `day` (`YYYY-MM-DD`) falls in the span.
    pub fn holds(&self, day: &str) -> bool {
        NaiveDate::parse_from_str(day, "%Y-%m-%d").is_ok_and(|d| self.from <= d && d <= self.to)
    }

    fn day(d: NaiveDate) -> Span {
        Span { from: d, to: d }
    }

    fn month(year: i32, month: u32) -> Option<Span> {
        let from = NaiveDate::from_ymd_opt(year, month, 1)?;
        let next = match month {
            12 => NaiveDate::from_ymd_opt(year + 1, 1, 1)?,
            _ => NaiveDate::from_ymd_opt(year, month + 1, 1)?,
        };
        Some(Span {
            from,
            to: next.pred_opt()?,
        })
    }
}

/// A query as search reads it ([`read`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Asked {
    /// The spans it names, in the order it names them.
    pub spans: Vec<Span>,
    /// The query without the words that name them (nor the "on", "in",
    /// "during" or "of" before each): what it asks about, for the words
    /// and the meaning a row is matched by. The query as it is when it
    /// names no span, or nothing but one.
    pub about: String,
}

/// What `query` asks about, and the days it names, `today` being today.
pub fn read(query: &str, today: NaiveDate) -> Asked {
    let words: Vec<(std::ops::Range<usize>, Word)> = words(query);
    let only: Vec<Word> = words.iter().map(|(_, w)| *w).collect();
    let mut spans = Vec::new();
    let mut cut: Vec<std::ops::Range<usize>> = Vec::new();
    let mut i = 0;
    while i < words.len() {
        match span_at(&only[i..], today) {
            Some((span, used)) => {
                spans.push(span);
                let before = i.checked_sub(1).filter(|&b| only[b] == Word::Before);
                let from = words[before.unwrap_or(i)].0.start;
                cut.push(from..words[i + used - 1].0.end);
                i += used;
            }
            None => i += 1,
        }
    }
    let mut rest = query.to_string();
    for r in cut.into_iter().rev() {
        rest.replace_range(r, "");
    }
    let rest = rest.split_whitespace().collect::<Vec<_>>().join(" ");
    let about = match rest.chars().any(char::is_alphanumeric) {
        true => rest,
        // Nothing but a date: the date is what it asks about.
        false => query.to_string(),
    };
    Asked { spans, about }
}

/// The words of `query` with their byte ranges.
fn words(query: &str) -> Vec<(std::ops::Range<usize>, Word)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in query.char_indices().chain([(query.len(), ' ')]) {
        let part = c.is_alphanumeric() || c == '-';
        match (part, start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                if let Some(w) = Word::read(&query[s..i]) {
                    out.push((s..i, w));
                }
                start = None;
            }
            _ => {}
        }
    }
    out
}

/// One word of a query, as dates read it.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Word {
    Number(u32),
    Month(u32),
    /// `YYYY-MM-DD` or `YYYY-MM`.
    Iso(Span),
    /// "on", "in", "during", "of": the word before a date.
    Before,
    /// "today" (0), "yesterday" (1).
    DaysBack(u32),
    /// "day", "days".
    Days,
    Ago,
    Other,
}

impl Word {
    fn read(w: &str) -> Option<Word> {
        let w = w.trim_matches('-');
        if w.is_empty() {
            return None;
        }
        if let Some(span) = iso(w) {
            return Some(Word::Iso(span));
        }
        if w.contains('-') {
            return Some(Word::Other);
        }
        let lower = w.to_lowercase();
        let digits = lower.trim_end_matches(['s', 't', 'n', 'd', 'r', 'h']);
        if !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit()) && digits.len() <= 4 {
            return Some(Word::Number(digits.parse().ok()?));
        }
        match lower.as_str() {
            "on" | "in" | "during" | "of" => return Some(Word::Before),
            "today" => return Some(Word::DaysBack(0)),
            "yesterday" => return Some(Word::DaysBack(1)),
            "day" | "days" => return Some(Word::Days),
            "ago" => return Some(Word::Ago),
            _ => {}
        }
        Some(month(&lower).map_or(Word::Other, Word::Month))
    }
}

/// The month a word names: in full, or its first three letters ("sept"
/// too).
fn month(w: &str) -> Option<u32> {
    const MONTHS: [&str; 12] = [
        "january",
        "february",
        "march",
        "april",
        "may",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
    ];
    let at = |m: &str| MONTHS.iter().position(|full| *full == m);
    let short = |m: &str| MONTHS.iter().position(|full| full[..3] == *m);
    let found = match w.len() {
        3 => short(w),
        4 if w == "sept" => Some(8),
        _ => at(w),
    };
    found.map(|i| i as u32 + 1)
}

/// `YYYY-MM-DD` or `YYYY-MM`.
fn iso(w: &str) -> Option<Span> {
    let parts: Vec<&str> = w.split('-').collect();
    let number = |s: &str, len: usize| -> Option<u32> {
        (s.len() == len && s.chars().all(|c| c.is_ascii_digit())).then(|| s.parse().ok())?
    };
    match parts.as_slice() {
        [y, m, d] => Some(Span::day(NaiveDate::from_ymd_opt(
            number(y, 4)? as i32,
            number(m, 2)?,
            number(d, 2)?,
        )?)),
        [y, m] => Span::month(number(y, 4)? as i32, number(m, 2)?),
        _ => None,
    }
}

/// The span the words from the first on name, and how many words it
/// took: `D MONTH YYYY`, `MONTH D YYYY`, `MONTH YYYY`, or an ISO date.
fn span_at(w: &[Word], today: NaiveDate) -> Option<(Span, usize)> {
    let year = |x: &Word| match x {
        Word::Number(y) if (1000..=9999).contains(y) => Some(*y as i32),
        _ => None,
    };
    let day = |x: &Word| match x {
        Word::Number(d) if (1..=31).contains(d) => Some(*d),
        _ => None,
    };
    let on = |y: i32, m: u32, d: u32| NaiveDate::from_ymd_opt(y, m, d).map(Span::day);
    let back = |n: u32| {
        today
            .checked_sub_days(chrono::Days::new(n.into()))
            .map(Span::day)
    };
    match w {
        [Word::Iso(s), ..] => Some((*s, 1)),
        [Word::DaysBack(n), ..] => Some((back(*n)?, 1)),
        [Word::Number(n), Word::Days, Word::Ago, ..] if *n <= 3650 => Some((back(*n)?, 3)),
        [d, Word::Month(m), y, ..] if day(d).is_some() && year(y).is_some() => {
            Some((on(year(y)?, *m, day(d)?)?, 3))
        }
        [Word::Month(m), d, y, ..] if day(d).is_some() && year(y).is_some() => {
            Some((on(year(y)?, *m, day(d)?)?, 3))
        }
        [Word::Month(m), y, ..] if year(y).is_some() => Some((Span::month(year(y)?, *m)?, 2)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The days of `span` as `YYYY-MM-DD`.
    fn ends(span: &Span) -> (String, String) {
        let f = |d: NaiveDate| d.format("%Y-%m-%d").to_string();
        (f(span.from), f(span.to))
    }

    fn today() -> NaiveDate {
        NaiveDate::from_ymd_opt(2026, 3, 1).unwrap()
    }

    fn days(q: &str) -> Vec<(String, String)> {
        read(q, today()).spans.iter().map(ends).collect()
    }

    fn one(day: &str) -> (String, String) {
        (day.to_string(), day.to_string())
    }

    #[test]
    fn a_day_is_read_in_each_order_people_write_it() {
        for q in [
            "What did Theo do for Amira on 25 May, 2022?",
            "what did I say on May 25th, 2022",
            "notes from 25th may 2022",
            "What happened on 2022-05-25?",
            "on MAY 25 2022 we met",
        ] {
            assert_eq!(days(q), vec![one("2022-05-25")], "{q}");
        }
    }

    #[test]
    fn a_month_with_its_year_is_the_whole_month() {
        let feb = ("2024-02-01".to_string(), "2024-02-29".to_string());
        assert_eq!(
            days("What did Karim share in February 2024?"),
            vec![feb.clone()]
        );
        assert_eq!(days("anything from 2024-02"), vec![feb]);
        let sept = ("2022-09-01".to_string(), "2022-09-30".to_string());
        assert_eq!(days("the first half of Sept 2022"), vec![sept]);
        let dec = ("2023-12-01".to_string(), "2023-12-31".to_string());
        assert_eq!(days("in december, 2023"), vec![dec]);
        // A day the month does not have: the month still holds.
        let feb = ("2023-02-01".to_string(), "2023-02-28".to_string());
        assert_eq!(days("on 31 February 2023"), vec![feb]);
    }

    #[test]
    fn words_that_name_no_dated_day_name_none() {
        for q in [
            "What did the user say last week?",
            "When did Elif bake a lemon tart?",
            "where was the user on June 3",
            "Which personal bests did Karim set in 2023?",
            "May I ask what the user likes?",
            "User has 3 cats and 2024 stamps",
            "version 1.2.3-rc4",
        ] {
            assert_eq!(days(q), Vec::<(String, String)>::new(), "{q}");
        }
    }

    #[test]
    fn days_counted_back_from_today_are_read() {
        assert_eq!(days("what did I say today"), vec![one("2026-03-01")]);
        assert_eq!(
            days("What did we discuss yesterday?"),
            vec![one("2026-02-28")]
        );
        assert_eq!(days("the plan from 3 days ago"), vec![one("2026-02-26")]);
        assert_eq!(
            read("What did we discuss yesterday?", today()).about,
            "What did we discuss ?"
        );
        assert_eq!(
            days("a day ago, or days later"),
            Vec::<(String, String)>::new()
        );
    }

    #[test]
    fn each_of_two_dates_is_named() {
        assert_eq!(
            days("Where was Karim between August 11, 2023 and August 15 2023?"),
            vec![one("2023-08-11"), one("2023-08-15")]
        );
    }

    #[test]
    fn the_rest_of_a_question_is_what_it_asks_about() {
        let rest = |q: &str| read(q, today()).about;
        assert_eq!(
            rest("What did Theo do for Amira on 25 May, 2022?"),
            "What did Theo do for Amira ?"
        );
        assert_eq!(
            rest("where did the user work in March 2026"),
            "where did the user work"
        );
        assert_eq!(rest("notes of 2024-02: the plan"), "notes : the plan");
        assert_eq!(rest("May I ask in May?"), "May I ask in May?");
        assert_eq!(rest("on 2024-02-03?"), "on 2024-02-03?");
    }

    #[test]
    fn a_span_holds_its_days_and_no_other() {
        let s = read("in June 2023", today()).spans[0];
        assert!(s.holds("2023-06-01") && s.holds("2023-06-30"));
        assert!(!s.holds("2023-05-31") && !s.holds("2023-07-01") && !s.holds("June"));
    }
}
