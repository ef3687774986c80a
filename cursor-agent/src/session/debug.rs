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
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, OnceLock};

use serde_json::Value;

/// Where a session writes its debug records.
///
/// The session calls [`record`](Self::record) on its async runtime, between two events of a
/// turn: an implementation must return at once and do any slow work (files, sockets)
/// elsewhere, as [`JsonLinesFile`] does.
pub trait DebugSink: Send + Sync + fmt::Debug {
    /// Takes one record (a JSON object).
    fn record(&self, record: &Value);
}

/// A JSON-lines file that rotates at a fixed size: when it would grow past `max_bytes`, it is
/// renamed to `<name>.1` (replacing the previous one) and a new file starts. At most twice
/// `max_bytes` stay on disk.
///
/// Records are written by the sink's own thread (started with the first record), never on the
/// caller's: [`record`](DebugSink::record) only queues the line. Each line is written whole in
/// one append, in the order recorded. While [`QUEUE`](Self::QUEUE) lines wait for a stuck file,
/// further records are dropped and counted, and a `debugRecordsDropped` record says how many.
#[derive(Debug)]
pub struct JsonLinesFile {
    path: PathBuf,
    max_bytes: u64,
    writer: OnceLock<Writer>,
}

/// The queue to the writer thread, and what it could not take.
#[derive(Debug)]
struct Writer {
    queue: SyncSender<Job>,
    dropped: Arc<AtomicU64>,
}

#[derive(Debug)]
enum Job {
    Line(String),
    /// Answered once every line queued before it was written.
    Flush(SyncSender<()>),
}

impl JsonLinesFile {
    /// The default rotation size: 1 MiB.
    pub const DEFAULT_MAX_BYTES: u64 = 1 << 20;

    /// Lines that may wait for the writer thread before records are dropped.
    pub const QUEUE: usize = 1024;

    /// A sink appending to `path` (its directory is created on the first record).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            max_bytes: Self::DEFAULT_MAX_BYTES,
            writer: OnceLock::new(),
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

    /// Blocks until every record taken so far is written (or failed to be). For hosts at
    /// shutdown and for tests; never call it on an async runtime's thread.
    pub fn flush(&self) {
        let Some(writer) = self.writer.get() else {
            return;
        };
        let (done_tx, done_rx) = mpsc::sync_channel(1);
        if writer.queue.send(Job::Flush(done_tx)).is_ok() {
            // The writer thread is gone only if it panicked: nothing left to wait for.
            let _ = done_rx.recv();
        }
    }

    fn writer(&self) -> &Writer {
        self.writer.get_or_init(|| {
            let (queue, jobs) = mpsc::sync_channel(Self::QUEUE);
            let dropped = Arc::new(AtomicU64::new(0));
            let file = RotatingFile {
                path: self.path.clone(),
                max_bytes: self.max_bytes,
            };
            let counted = Arc::clone(&dropped);
            // Detached: it ends once the last handle dropped the queue. Without a thread the
            // queue has no receiver and every record is dropped.
            let _detached = std::thread::Builder::new()
                .name("cursor-agent-debug".into())
                .spawn(move || file.run(&jobs, &counted));
            Writer { queue, dropped }
        })
    }
}

impl DebugSink for JsonLinesFile {
    fn record(&self, record: &Value) {
        let writer = self.writer();
        // Debugging aids must never fail or stall a turn: a record the queue cannot take now
        // is dropped and counted.
        if let Err(TrySendError::Full(_)) = writer.queue.try_send(Job::Line(record.to_string())) {
            writer.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// The writer thread's side: the file and its rotation.
struct RotatingFile {
    path: PathBuf,
    max_bytes: u64,
}

impl RotatingFile {
    /// Writes the queued lines until every [`JsonLinesFile`] handle is gone. Records dropped
    /// meanwhile are counted in a note once the queue is drained, after the lines queued
    /// before them.
    fn run(&self, jobs: &Receiver<Job>, dropped: &AtomicU64) {
        while let Ok(job) = jobs.recv() {
            self.handle(job);
            while let Ok(job) = jobs.try_recv() {
                self.handle(job);
            }
            let lost = dropped.swap(0, Ordering::Relaxed);
            if lost > 0 {
                let note = serde_json::json!({"event": "debugRecordsDropped", "count": lost});
                let _ = self.append(&note.to_string());
            }
        }
    }

    fn handle(&self, job: Job) {
        match job {
            // A line that cannot be written is dropped, like one the queue refused.
            Job::Line(line) => drop(self.append(&line)),
            Job::Flush(done) => drop(done.send(())),
        }
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
        // One write of the whole line: an append of it is never interleaved with another.
        let mut whole = String::with_capacity(line.len() + 1);
        whole.push_str(line);
        whole.push('\n');
        file.write_all(whole.as_bytes())
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
        sink.flush();
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
