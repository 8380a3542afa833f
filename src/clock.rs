//! The time a consolidation run reads: the system clock, or a fixed
//! instant. A memory carries one ([`crate::Memory::at`]), so that a run's
//! gate ("hours since the last run") is testable without waiting and a run
//! can be replayed as of a given time.

use chrono::{DateTime, FixedOffset, Local, SecondsFormat};

#[derive(Debug, Clone, Copy, Default)]
pub enum Clock {
    /// The system's local time.
    #[default]
    System,
    /// Always this instant.
    Fixed(DateTime<FixedOffset>),
}

impl Clock {
    pub fn now(&self) -> DateTime<FixedOffset> {
        match self {
            Clock::System => Local::now().fixed_offset(),
            Clock::Fixed(t) => *t,
        }
    }

    /// The day (`YYYY-MM-DD`) in the clock's own offset.
    pub fn today(&self) -> String {
        self.now().format("%Y-%m-%d").to_string()
    }

    /// The time as RFC 3339, to the second (the state's `last_run`).
    pub(crate) fn timestamp(&self) -> String {
        self.now().to_rfc3339_opts(SecondsFormat::Secs, true)
    }
}

/// Whether `s` is a day as memd writes one (`YYYY-MM-DD`).
pub(crate) fn is_day(s: &str) -> bool {
    // By hand, not chrono's format parser: a daemon asks it of every day
    // file's name before every search.
    let b = s.as_bytes();
    let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' || !digits(0..4) || !digits(5..7) {
        return false;
    }
    if !digits(8..10) {
        return false;
    }
    let n = |r: std::ops::Range<usize>| s[r].parse::<u32>().unwrap_or(0);
    chrono::NaiveDate::from_ymd_opt(n(0..4) as i32, n(5..7), n(8..10)).is_some()
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_day_is_a_real_date_written_yyyy_mm_dd() {
        for good in ["2026-11-26", "2024-02-29", "0001-01-01"] {
            assert!(super::is_day(good), "{good}");
        }
        for bad in [
            "2026-02-30",
            "2025-02-29",
            "2026-13-01",
            "2026-00-10",
            "2026-1-01",
            "2026-11-261",
            "2026/11/26",
            "２０２６-11-26",
            "+2026-11-2",
            "",
            "2026-11-2a",
        ] {
            assert!(!super::is_day(bad), "{bad}");
        }
    }
}
