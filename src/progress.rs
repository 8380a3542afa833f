//! Progress of long work: a bar on a terminal (indicatif, with rate and
//! ETA), plain log lines otherwise (target `memd::progress`, shown by the
//! default log filter), so that neither a person nor a log reader waits in
//! silence.
//!
//! Work under [`Progress::MIN_SHOWN`] items shows nothing: a sync of a few
//! appended facts happens on every search and must stay quiet.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

/// How often a log line is written when stderr is not a terminal.
const LOG_EVERY: Duration = Duration::from_secs(5);

pub struct Progress {
    what: &'static str,
    total: u64,
    done: u64,
    started: Instant,
    shown: Shown,
}

enum Shown {
    Nothing,
    Bar(ProgressBar),
    Log { last: Instant },
}

impl Progress {
    /// Below this many items (about a second of embedding on the slower
    /// runtime, `memd bench embed`) nothing is shown.
    pub const MIN_SHOWN: u64 = 200;

    /// `total` items of `what` (a plural noun: "texts embedded"), shown
    /// from [`Progress::MIN_SHOWN`] items.
    pub fn new(what: &'static str, total: u64) -> Progress {
        Progress::shown_from(what, total, Self::MIN_SHOWN)
    }

    /// `total` steps of `what` that each take seconds (sessions
    /// consolidated, sets evaluated): shown from two.
    pub fn steps(what: &'static str, total: u64) -> Progress {
        Progress::shown_from(what, total, 2)
    }

    fn shown_from(what: &'static str, total: u64, min: u64) -> Progress {
        let shown = if total < min {
            Shown::Nothing
        } else if std::io::stderr().is_terminal() {
            let bar = ProgressBar::new(total);
            let style = ProgressStyle::with_template(
                "{msg} [{bar:30}] {pos}/{len} ({per_sec}, {eta} left)",
            )
            .map(|s| s.progress_chars("=> "));
            if let Ok(style) = style {
                bar.set_style(style);
            }
            bar.set_message(what);
            Shown::Bar(bar)
        } else {
            tracing::info!(target: "memd::progress", "{what}: 0/{total}");
            Shown::Log {
                last: Instant::now(),
            }
        };
        Progress {
            what,
            total,
            done: 0,
            started: Instant::now(),
            shown,
        }
    }

    /// `n` more items done.
    pub fn inc(&mut self, n: u64) {
        self.done = (self.done + n).min(self.total);
        match &mut self.shown {
            Shown::Nothing => {}
            Shown::Bar(bar) => bar.set_position(self.done),
            Shown::Log { last } if last.elapsed() >= LOG_EVERY => {
                *last = Instant::now();
                tracing::info!(target: "memd::progress", "{}", self.line());
            }
            Shown::Log { .. } => {}
        }
    }

    /// "what: done/total (rate/s, ~N s left)".
    fn line(&self) -> String {
        let secs = self.started.elapsed().as_secs_f64().max(1e-3);
        let rate = self.done as f64 / secs;
        let left = match rate > 0.0 && self.done < self.total {
            true => format!(", ~{:.0} s left", (self.total - self.done) as f64 / rate),
            false => String::new(),
        };
        format!(
            "{}: {}/{} ({rate:.0}/s{left})",
            self.what, self.done, self.total
        )
    }
}

impl Drop for Progress {
    /// Clears the bar, or logs the last line, however the work ended.
    fn drop(&mut self) {
        match &self.shown {
            Shown::Nothing => {}
            Shown::Bar(bar) => bar.finish_and_clear(),
            Shown::Log { .. } => tracing::info!(target: "memd::progress", "{}", self.line()),
        }
    }
}
