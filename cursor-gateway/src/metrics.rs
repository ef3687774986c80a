//! Counters for `GET /metrics`, in Prometheus' text format. They count traffic, never who sent
//! it: no label names a key, a conversation or a client.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use cursor_agent::session::DebugSink;
use serde_json::Value;

use crate::sync::lock;

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

/// Why a request was refused before its turn ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Refusal {
    /// Over `--max-connections`.
    Connections,
    /// Over `--max-connections-per-peer`.
    PeerConnections,
    /// Over `--max-turns`.
    Turns,
    /// Over `--max-turns-per-key`.
    KeyTurns,
    /// No room in the body budget within `--body-wait`.
    BodyBudget,
}

impl Refusal {
    fn as_str(self) -> &'static str {
        match self {
            Self::Connections => "connections",
            Self::PeerConnections => "peer_connections",
            Self::Turns => "turns",
            Self::KeyTurns => "key_turns",
            Self::BodyBudget => "body_budget",
        }
    }
}

/// Why a conversation left memory or disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Eviction {
    /// An idle conversation made room in memory (its handle stays on disk).
    Idle,
    /// A parked tool round was cancelled to make room (its late results rebuild).
    Parked,
    /// A conversation idle past `--conversation-retention` was deleted from disk.
    Expired,
}

impl Eviction {
    fn as_str(self) -> &'static str {
        match self {
            Self::Idle => "idle",
            Self::Parked => "parked",
            Self::Expired => "expired",
        }
    }
}

/// The gateway's counters.
#[derive(Debug, Default)]
pub(crate) struct Metrics {
    requests: Mutex<BTreeMap<(&'static str, u16), u64>>,
    runs: Mutex<BTreeMap<RunKind, u64>>,
    errors: Mutex<BTreeMap<&'static str, u64>>,
    refusals: Mutex<BTreeMap<Refusal, u64>>,
    evictions: Mutex<BTreeMap<Eviction, u64>>,
    open_runs: AtomicU64,
    expired_rounds: AtomicU64,
    deleted_responses: AtomicU64,
}

/// What other parts of the gateway know now, for the gauges.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Gauges {
    pub(crate) conversations: usize,
    pub(crate) parked: usize,
    pub(crate) connections: usize,
    pub(crate) body_bytes: usize,
}

impl Metrics {
    pub(crate) fn request(&self, route: &'static str, status: u16) {
        *lock(&self.requests).entry((route, status)).or_default() += 1;
    }

    pub(crate) fn run(&self, kind: RunKind) {
        *lock(&self.runs).entry(kind).or_default() += 1;
    }

    /// One failed turn, by its classification (`auth`, `network`, …).
    pub(crate) fn error(&self, class: &'static str) {
        *lock(&self.errors).entry(class).or_default() += 1;
    }

    pub(crate) fn refused(&self, why: Refusal) {
        *lock(&self.refusals).entry(why).or_default() += 1;
    }

    pub(crate) fn evicted(&self, why: Eviction, count: u64) {
        if count > 0 {
            *lock(&self.evictions).entry(why).or_default() += count;
        }
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

    pub(crate) fn responses_deleted(&self, count: u64) {
        self.deleted_responses.fetch_add(count, Ordering::Relaxed);
    }

    /// Turns streaming now.
    pub(crate) fn open_runs(&self) -> u64 {
        self.open_runs.load(Ordering::Relaxed)
    }

    /// How many turns ran as `kind`.
    pub(crate) fn runs_of(&self, kind: RunKind) -> u64 {
        lock(&self.runs).get(&kind).copied().unwrap_or(0)
    }

    /// The exposition text.
    pub(crate) fn render(&self, gauges: Gauges) -> String {
        let mut out = String::new();
        let family = |out: &mut String, name: &str, kind: &str, help: &str| {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
        };
        family(
            &mut out,
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
        family(
            &mut out,
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
        family(
            &mut out,
            "cursor_gateway_errors_total",
            "counter",
            "Failed turns, by classification.",
        );
        for (class, n) in lock(&self.errors).iter() {
            let _ = writeln!(out, "cursor_gateway_errors_total{{class=\"{class}\"}} {n}");
        }
        family(
            &mut out,
            "cursor_gateway_refusals_total",
            "counter",
            "Requests and connections refused before a turn ran, by the bound they met.",
        );
        for (why, n) in lock(&self.refusals).iter() {
            let _ = writeln!(
                out,
                "cursor_gateway_refusals_total{{bound=\"{}\"}} {n}",
                why.as_str()
            );
        }
        family(
            &mut out,
            "cursor_gateway_evictions_total",
            "counter",
            "Conversations dropped from memory or deleted from disk, by why.",
        );
        for (why, n) in lock(&self.evictions).iter() {
            let _ = writeln!(
                out,
                "cursor_gateway_evictions_total{{reason=\"{}\"}} {n}",
                why.as_str()
            );
        }
        let gauges: [(&str, &str, u64); 5] = [
            (
                "cursor_gateway_open_runs",
                "Turns streaming now.",
                self.open_runs.load(Ordering::Relaxed),
            ),
            (
                "cursor_gateway_conversations",
                "Conversations in memory.",
                gauges.conversations as u64,
            ),
            (
                "cursor_gateway_parked_tool_rounds",
                "Runs waiting for a client's tool results.",
                gauges.parked as u64,
            ),
            (
                "cursor_gateway_connections",
                "Open client connections.",
                gauges.connections as u64,
            ),
            (
                "cursor_gateway_body_budget_bytes",
                "Request bytes held by requests being read, parsed or run.",
                gauges.body_bytes as u64,
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
                "cursor_gateway_deleted_responses_total",
                "Stored responses deleted (expired, or over the size cap).",
                self.deleted_responses.load(Ordering::Relaxed),
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
