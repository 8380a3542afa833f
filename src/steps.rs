//! Where a request's time goes, step by step, as memd runs it: for `memd
//! bench search-path` (issue 28), which serves from its own process and
//! turns the recording on. Off everywhere else, where a timed step costs
//! one relaxed load of a flag.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

static ON: AtomicBool = AtomicBool::new(false);
static TIMES: Mutex<BTreeMap<&'static str, Vec<Duration>>> = Mutex::new(BTreeMap::new());

/// Start (or stop) recording the steps of this process.
pub fn record(on: bool) {
    ON.store(on, Ordering::Relaxed);
}

/// The steps recorded since the last take, each with every time it took.
pub fn take() -> BTreeMap<&'static str, Vec<Duration>> {
    std::mem::take(&mut *TIMES.lock().unwrap_or_else(|e| e.into_inner()))
}

fn note(step: &'static str, took: Duration) {
    let mut times = TIMES.lock().unwrap_or_else(|e| e.into_inner());
    times.entry(step).or_default().push(took);
}

/// `f`, timed as `step` when recording.
pub async fn timed<F: Future>(step: &'static str, f: F) -> F::Output {
    if !ON.load(Ordering::Relaxed) {
        return f.await;
    }
    let t = Instant::now();
    let out = f.await;
    note(step, t.elapsed());
    out
}

/// `f()`, timed as `step` when recording.
pub fn timed_now<T>(step: &'static str, f: impl FnOnce() -> T) -> T {
    if !ON.load(Ordering::Relaxed) {
        return f();
    }
    let t = Instant::now();
    let out = f();
    note(step, t.elapsed());
    out
}
