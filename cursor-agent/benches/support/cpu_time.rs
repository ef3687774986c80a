//! A criterion measurement of the bench thread's own CPU time (Linux `schedstat`), so a bench
//! on a shared, loaded machine is not inflated by time other processes held the core.
//! Elsewhere (no `/proc/thread-self/schedstat`) it falls back to wall time.

use std::sync::OnceLock;
use std::time::Instant;

use criterion::measurement::{Measurement, ValueFormatter, WallTime};

/// Thread CPU time in nanoseconds.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct CpuTime;

static WALL: WallTime = WallTime;

fn now_ns() -> u64 {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    let on_cpu = std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|line| line.split_whitespace().next()?.parse().ok());
    on_cpu.unwrap_or_else(|| {
        let since = EPOCH.get_or_init(Instant::now).elapsed();
        u64::try_from(since.as_nanos()).unwrap_or(u64::MAX)
    })
}

impl Measurement for CpuTime {
    type Intermediate = u64;
    type Value = u64;

    fn start(&self) -> u64 {
        now_ns()
    }

    fn end(&self, started: u64) -> u64 {
        now_ns().saturating_sub(started)
    }

    fn add(&self, a: &u64, b: &u64) -> u64 {
        a + b
    }

    fn zero(&self) -> u64 {
        0
    }

    fn to_f64(&self, value: &u64) -> f64 {
        *value as f64
    }

    fn formatter(&self) -> &dyn ValueFormatter {
        WALL.formatter()
    }
}
