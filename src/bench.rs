//! Benchmarks behind `memd bench`. Speed is measured here, never asserted
//! in tests.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Result;
use serde::Serialize;

use crate::archive::{self, NewFact};
use crate::layout;

#[derive(Debug, Serialize)]
pub struct AppendReport {
    pub dir: String,
    pub single_appends: usize,
    pub single_p50_ms: f64,
    pub single_p99_ms: f64,
    pub single_max_ms: f64,
    pub batch_size: usize,
    pub batches: usize,
    pub batch_facts_per_second: f64,
}

/// Single-fact appends (lock, read, write, fsync: what `memd add` does
/// after start-up) and batch appends (what `memd add --stdin` does), in a
/// fresh memory directory created under `parent`.
pub fn append(
    parent: &Path,
    singles: usize,
    batch_size: usize,
    batches: usize,
) -> Result<AppendReport> {
    let tmp = tempfile::tempdir_in(parent)?;
    let layout = layout::init(tmp.path())?;
    let mut lat = Vec::with_capacity(singles);
    for i in 0..singles {
        let fact = NewFact {
            text: format!("Benchmark fact number {i} about topic {}", i % 17),
            session: Some("bench".into()),
            ..Default::default()
        };
        let t = Instant::now();
        archive::append(&layout, "2026-01-01", "00:00:00", &[fact])?;
        lat.push(t.elapsed());
    }
    lat.sort();
    let pct = |p: f64| -> f64 {
        if lat.is_empty() {
            return 0.0;
        }
        let i = ((lat.len() as f64 - 1.0) * p).round() as usize;
        ms(lat[i])
    };

    let mut total = Duration::ZERO;
    for b in 0..batches {
        let facts: Vec<NewFact> = (0..batch_size)
            .map(|i| NewFact {
                text: format!(
                    "Batch {b} fact {i}: the user mentioned item {}",
                    i * 7 % 1000
                ),
                session: Some(format!("batch-{b}")),
                ..Default::default()
            })
            .collect();
        let day = format!("2026-02-{:02}", b % 28 + 1);
        let t = Instant::now();
        archive::append(&layout, &day, "00:00:00", &facts)?;
        total += t.elapsed();
    }
    let facts = (batch_size * batches) as f64;
    Ok(AppendReport {
        dir: parent.display().to_string(),
        single_appends: singles,
        single_p50_ms: pct(0.50),
        single_p99_ms: pct(0.99),
        single_max_ms: lat.last().map(|d| ms(*d)).unwrap_or(0.0),
        batch_size,
        batches,
        batch_facts_per_second: if total.is_zero() {
            0.0
        } else {
            facts / total.as_secs_f64()
        },
    })
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
