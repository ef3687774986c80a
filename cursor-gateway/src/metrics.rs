//! Counters for `GET /metrics`, in Prometheus' text format.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use cursor_agent::session::DebugSink;
use serde_json::Value;

use crate::conversations::lock;

/// How a turn reached Cursor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum RunKind {
    /// A new remote conversation with no earlier turns.
    Fresh,
    /// The stored remote conversation, from its checkpoint.
    Resume,
    /// A new remote conversation carrying the transcript.
    Rebuild,
    /// Tool results on the Run that waited for them.
    Continue,
}

impl RunKind {
    fn as_str(self) -> &'static str {
        match self {
            Self::Fresh => "fresh",
            Self::Resume => "resume",
            Self::Rebuild => "rebuild",
            Self::Continue => "continue",
        }
    }
}

/// The gateway's counters.
#[derive(Debug, Default)]
pub(crate) struct Metrics {
    requests: Mutex<BTreeMap<(&'static str, u16), u64>>,
    runs: Mutex<BTreeMap<RunKind, u64>>,
    errors: Mutex<BTreeMap<String, u64>>,
    open_runs: AtomicU64,
    expired_rounds: AtomicU64,
    refused_overload: AtomicU64,
}

impl Metrics {
    pub(crate) fn request(&self, route: &'static str, status: u16) {
        *lock(&self.requests).entry((route, status)).or_default() += 1;
    }

    pub(crate) fn run(&self, kind: RunKind) {
        *lock(&self.runs).entry(kind).or_default() += 1;
    }

    /// One failed turn, by its classification (`auth`, `network`, …).
    pub(crate) fn error(&self, class: &str) {
        *lock(&self.errors).entry(class.to_owned()).or_default() += 1;
    }

    pub(crate) fn run_opened(&self) {
        self.open_runs.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn run_closed(&self) {
        self.open_runs.fetch_sub(1, Ordering::Relaxed);
    }

    pub(crate) fn round_expired(&self) {
        self.expired_rounds.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn overloaded(&self) {
        self.refused_overload.fetch_add(1, Ordering::Relaxed);
    }

    /// Turns streaming now.
    pub(crate) fn open_runs(&self) -> u64 {
        self.open_runs.load(Ordering::Relaxed)
    }

    /// How many turns ran as `kind`.
    pub(crate) fn runs_of(&self, kind: RunKind) -> u64 {
        lock(&self.runs).get(&kind).copied().unwrap_or(0)
    }

    /// The exposition text; `conversations` and `waiting` are read from the registry.
    pub(crate) fn render(
        &self,
        conversations: usize,
        waiting: usize,
        connections: usize,
    ) -> String {
        let mut out = String::new();
        let mut family = |name: &str, kind: &str, help: &str| {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
        };
        family(
            "cursor_gateway_requests_total",
            "counter",
            "HTTP requests answered, by route and status.",
        );
        for ((route, status), n) in lock(&self.requests).iter() {
            let _ = writeln!(
                out,
                "cursor_gateway_requests_total{{route=\"{route}\",status=\"{status}\"}} {n}"
            );
        }
        let mut family = |name: &str, kind: &str, help: &str| {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
        };
        family(
            "cursor_gateway_runs_total",
            "counter",
            "Turns sent to Cursor, by how they continued the conversation.",
        );
        for (kind, n) in lock(&self.runs).iter() {
            let _ = writeln!(
                out,
                "cursor_gateway_runs_total{{kind=\"{}\"}} {n}",
                kind.as_str()
            );
        }
        let _ = writeln!(
            out,
            "# HELP cursor_gateway_errors_total Failed turns, by classification.\n\
             # TYPE cursor_gateway_errors_total counter"
        );
        for (class, n) in lock(&self.errors).iter() {
            let _ = writeln!(out, "cursor_gateway_errors_total{{class=\"{class}\"}} {n}");
        }
        let gauges: [(&str, &str, u64); 4] = [
            (
                "cursor_gateway_open_runs",
                "Turns streaming now.",
                self.open_runs.load(Ordering::Relaxed),
            ),
            (
                "cursor_gateway_conversations",
                "Conversations in memory.",
                conversations as u64,
            ),
            (
                "cursor_gateway_parked_tool_rounds",
                "Runs waiting for a client's tool results.",
                waiting as u64,
            ),
            (
                "cursor_gateway_connections",
                "Open client connections.",
                connections as u64,
            ),
        ];
        for (name, help, value) in gauges {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {value}"
            );
        }
        let counters: [(&str, &str, u64); 2] = [
            (
                "cursor_gateway_expired_tool_rounds_total",
                "Waiting Runs cancelled at the tool-round deadline.",
                self.expired_rounds.load(Ordering::Relaxed),
            ),
            (
                "cursor_gateway_overload_refusals_total",
                "Requests and connections refused with 503 (over --max-turns or --max-connections).",
                self.refused_overload.load(Ordering::Relaxed),
            ),
        ];
        for (name, help, value) in counters {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} counter\n{name} {value}"
            );
        }
        out
    }
}

/// Counts how each Run of one conversation continued it, from its session's debug records.
#[derive(Debug)]
pub(crate) struct RunSink {
    metrics: Arc<Metrics>,
    /// The next plan opens the conversation's first turn.
    fresh: AtomicBool,
}

impl RunSink {
    pub(crate) fn new(metrics: Arc<Metrics>) -> Self {
        Self {
            metrics,
            fresh: AtomicBool::new(false),
        }
    }

    /// Says whether the next planned Run is the conversation's first turn.
    pub(crate) fn expect_fresh(&self, fresh: bool) {
        self.fresh.store(fresh, Ordering::Relaxed);
    }
}

impl DebugSink for RunSink {
    fn record(&self, record: &Value) {
        let fresh = || self.fresh.swap(false, Ordering::Relaxed);
        let kind = match (record["event"].as_str(), record["run"].as_str()) {
            (Some("plan"), Some("agent-resume")) => RunKind::Resume,
            (Some("plan"), Some("agent-rebuild")) if fresh() => RunKind::Fresh,
            (Some("plan" | "staleRebuild"), Some("agent-rebuild")) => RunKind::Rebuild,
            _ => return,
        };
        self.metrics.run(kind);
    }
}
