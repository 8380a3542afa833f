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
    chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d").is_ok() && s.len() == 10
}
