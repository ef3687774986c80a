//! Debug records: one JSON line per decision a session makes (DESIGN §3.1: labels, counts, timings, never content).
//!
//! Records carry plan decisions, exec decisions, leg summaries (event counts and timing),
//! error classifications and warning codes. They never carry tokens, prompt or answer text,
//! file contents, tool arguments or tool output: every field is a label, a count, a duration
//! or a classification the session chose itself.

use std::fmt;
use std::fs::{self, OpenOptions};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde_json::Value;

/// Where a session writes its debug records.
pub trait DebugSink: Send + Sync + fmt::Debug {
    /// Takes one record (a JSON object).
    fn record(&self, record: &Value);
}

/// A JSON-lines file that rotates at a fixed size: when it would grow past `max_bytes`, it is
/// renamed to `<name>.1` (replacing the previous one) and a new file starts. At most twice
/// `max_bytes` stay on disk.
#[derive(Debug)]
pub struct JsonLinesFile {
    path: PathBuf,
    max_bytes: u64,
    lock: Mutex<()>,
}

impl JsonLinesFile {
    /// The default rotation size: 1 MiB.
    pub const DEFAULT_MAX_BYTES: u64 = 1 << 20;

    /// A sink appending to `path` (its directory is created on the first record).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            max_bytes: Self::DEFAULT_MAX_BYTES,
            lock: Mutex::new(()),
        }
    }

    /// Sets the rotation size.
    #[must_use]
    pub fn with_max_bytes(mut self, max_bytes: u64) -> Self {
        self.max_bytes = max_bytes.max(1);
        self
    }

    /// The file written to.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn append(&self, line: &str) -> std::io::Result<()> {
        if let Some(dir) = self.path.parent() {
            fs::create_dir_all(dir)?;
        }
        let size = fs::metadata(&self.path).map_or(0, |m| m.len());
        if size > 0 && size + line.len() as u64 + 1 > self.max_bytes {
            let mut rotated = self.path.clone().into_os_string();
            rotated.push(".1");
            fs::rename(&self.path, rotated)?;
        }
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)?;
        writeln!(file, "{line}")
    }
}

impl DebugSink for JsonLinesFile {
    fn record(&self, record: &Value) {
        let _guard = self
            .lock
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // Debugging aids must never fail a turn: a record that cannot be written is dropped.
        let _ = self.append(&record.to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_rotates_at_its_size_and_keeps_one_previous_file() {
        let dir = tempfile::tempdir().unwrap();
        let sink = JsonLinesFile::new(dir.path().join("debug.jsonl")).with_max_bytes(64);
        for i in 0..20 {
            sink.record(&serde_json::json!({"n": i, "pad": "xxxxxxxxxxxxxxxx"}));
        }
        let current = fs::metadata(sink.path()).unwrap().len();
        let previous = fs::metadata(dir.path().join("debug.jsonl.1"))
            .unwrap()
            .len();
        assert!(current <= 64 && previous <= 64, "{current} {previous}");
        let last = fs::read_to_string(sink.path()).unwrap();
        assert!(
            last.trim_end()
                .ends_with(r#""n":19,"pad":"xxxxxxxxxxxxxxxx"}"#),
            "{last}"
        );
    }
}
