//! The gate: whether a run may start. The time gate needs only the last
//! run's time ([`crate::state::State::last_run`], read without the watermark), so it is
//! checked first and a run it holds back reads nothing else and writes
//! nothing; the volume gate needs the pending facts. `--force`
//! skips both, never the lock.

use chrono::{DateTime, FixedOffset};

use crate::config::Config;

/// Why the time gate holds the run back (`min_hours` since the last run,
/// `last_run` ([`crate::state::State::last_run`]), as of `now`).
pub fn time(last_run: Option<&str>, config: &Config, now: DateTime<FixedOffset>) -> Option<String> {
    let min_hours = config.consolidation.min_hours;
    let last = parsed(last_run)?;
    let hours = (now - last).num_seconds() as f64 / 3600.0;
    (hours < min_hours).then(|| format!("last run {hours:.1} h ago, min_hours is {min_hours}"))
}

/// The last run, when the state records it later than `now` (the clock
/// was ahead then, or is behind now). Such a run is taken as now: a run
/// saves `now` in its place ([`super::run_with`]), and until one does,
/// the gate is open (so a daemon's loop comes to save it), never shut
/// until that date.
pub fn future(last_run: Option<&str>, now: DateTime<FixedOffset>) -> Option<DateTime<FixedOffset>> {
    let last = parsed(last_run)?;
    (last > now).then_some(last)
}

/// Why the volume gate holds the run back (`min_facts` pending).
pub fn volume(pending: usize, config: &Config) -> Option<String> {
    let min_facts = config.consolidation.min_facts;
    ((pending as u64) < min_facts as u64)
        .then(|| format!("{pending} pending facts, min_facts is {min_facts}"))
}

/// The last run's time, when it reads as one.
fn parsed(last_run: Option<&str>) -> Option<DateTime<FixedOffset>> {
    last_run.and_then(|t| DateTime::parse_from_rfc3339(t).ok())
}
