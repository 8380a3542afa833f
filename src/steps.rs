//! Where a request's time goes, step by step, as memd runs it: for `memd
//! bench search-path`, which serves from its own process and turns the
//! recording on. Off everywhere else, where a timed step costs one relaxed
//! load of a flag.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

static ON: AtomicBool = AtomicBool::new(false);
static SPANS: Mutex<Vec<Span>> = Mutex::new(Vec::new());

/// One run of a step: when it began and ended. Steps run side by side
/// (an append's sync beside the next request), so the spans of one
/// append → searchable show what waited for what, which the times alone
/// do not (`memd bench search-path`'s timeline).
#[derive(Debug, Clone, Copy)]
pub struct Span {
    pub step: &'static str,
    pub from: Instant,
    pub to: Instant,
}

/// Start (or stop) recording the steps of this process.
pub fn record(on: bool) {
    ON.store(on, Ordering::Relaxed);
}

/// The steps recorded since the last take, in the order they ended.
pub fn take() -> Vec<Span> {
    std::mem::take(&mut *SPANS.lock().unwrap_or_else(|e| e.into_inner()))
}

/// Each step of `spans`, with every time it took.
pub fn times(spans: &[Span]) -> BTreeMap<&'static str, Vec<Duration>> {
    let mut out: BTreeMap<&'static str, Vec<Duration>> = BTreeMap::new();
    for s in spans {
        out.entry(s.step).or_default().push(s.to - s.from);
    }
    out
}

fn note(step: &'static str, from: Instant) {
    let span = Span {
        step,
        from,
        to: Instant::now(),
    };
    SPANS.lock().unwrap_or_else(|e| e.into_inner()).push(span);
}

/// `f`, timed as `step` when recording.
pub async fn timed<F: Future>(step: &'static str, f: F) -> F::Output {
    if !ON.load(Ordering::Relaxed) {
        return f.await;
    }
    let t = Instant::now();
    let out = f.await;
    note(step, t);
    out
}

/// `f()`, timed as `step` when recording.
pub fn timed_now<T>(step: &'static str, f: impl FnOnce() -> T) -> T {
    if !ON.load(Ordering::Relaxed) {
        return f();
    }
    let t = Instant::now();
    let out = f();
    note(step, t);
    out
}
