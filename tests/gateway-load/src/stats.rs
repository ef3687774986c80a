//! Small summaries: percentiles, counts, units.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Value, json};

/// `x` rounded to `digits` decimals.
pub(crate) fn round(x: f64, digits: i32) -> f64 {
    let scale = 10f64.powi(digits);
    (x * scale).round() / scale
}

/// Milliseconds with three decimals.
pub(crate) fn ms(d: Duration) -> f64 {
    round(d.as_secs_f64() * 1e3, 3)
}

/// KiB as MiB with one decimal.
pub(crate) fn mib(kib: u64) -> f64 {
    round(kib as f64 / 1024.0, 1)
}

/// p50, p99 and max of `samples` (nearest rank), in ms, as JSON; null when empty.
pub(crate) fn percentiles(samples: &[Duration]) -> Value {
    if samples.is_empty() {
        return Value::Null;
    }
    let mut sorted = samples.to_vec();
    sorted.sort();
    json!({
        "n": sorted.len(),
        "p50_ms": ms(rank(&sorted, 0.50)),
        "p99_ms": ms(rank(&sorted, 0.99)),
        "max_ms": ms(sorted[sorted.len() - 1]),
    })
}

fn rank(sorted: &[Duration], p: f64) -> Duration {
    let index = ((sorted.len() as f64) * p).ceil() as usize;
    sorted[index.clamp(1, sorted.len()) - 1]
}

/// Counts of each key, sorted.
pub(crate) fn counts<I: IntoIterator<Item = String>>(keys: I) -> BTreeMap<String, u64> {
    let mut counts = BTreeMap::new();
    for key in keys {
        *counts.entry(key).or_insert(0) += 1;
    }
    counts
}

/// `200×8, 503×2`.
pub(crate) fn counts_text(counts: &BTreeMap<String, u64>) -> String {
    if counts.is_empty() {
        return "-".into();
    }
    counts
        .iter()
        .map(|(k, n)| format!("{k}×{n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Reads `key_ms` of a percentiles object for a table cell.
pub(crate) fn cell(value: &Value, key: &str) -> String {
    value[key]
        .as_f64()
        .map_or_else(|| "-".into(), |v| format!("{v:.2}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let samples: Vec<Duration> = (1..=100).map(Duration::from_millis).collect();
        let p = percentiles(&samples);
        assert_eq!(p["p50_ms"], 50.0);
        assert_eq!(p["p99_ms"], 99.0);
        assert_eq!(p["max_ms"], 100.0);
        let one = percentiles(&[Duration::from_millis(7)]);
        assert_eq!(one["p99_ms"], 7.0);
        assert_eq!(
            counts_text(&counts(["b".into(), "a".into(), "b".into()])),
            "a×1, b×2"
        );
    }
}
