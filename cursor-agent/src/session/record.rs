//! Typed debug records (DESIGN §3.1: labels, counts, timings, never content): what a session
//! records, kept typed until a sink takes it.

use cursor_proto::ir::{ErrorKind, StopReason, WarningCode};
use serde::Serialize;
use serde_json::Value;

use crate::{Plan, StaleReason};

/// One debug record as the session makes it: typed until it reaches the sink, where it is
/// serialized once (the `event` tag names the variant).
#[derive(Debug, Serialize)]
#[serde(tag = "event", rename_all = "camelCase")]
pub(crate) enum Record<'a> {
    /// A Run was planned.
    Plan(PlanRecord),
    /// A stale resume or lost server state is rebuilt.
    StaleRebuild(PlanRecord),
    /// A session without a handle found the turn it branched from in another session's.
    BranchFound { turns: usize },
    /// An exec request was answered.
    Exec { arm: String, outcome: &'static str },
    /// A warning reached the host.
    Warning { code: WarningCode },
    /// A leg ended.
    #[serde(rename_all = "camelCase")]
    LegEnd {
        run: &'static str,
        ms: u64,
        text_deltas: usize,
        thinking_deltas: usize,
        tool_calls: usize,
        execs: usize,
        #[serde(skip_serializing_if = "Option::is_none")]
        done: Option<StopReason>,
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<ErrorRecord>,
        #[serde(skip_serializing_if = "Option::is_none")]
        aborted: Option<bool>,
    },
    /// The refused token is refreshed and the Run replayed.
    AuthReplay,
    /// A network failure before anything streamed is retried.
    NetworkRetry { run: &'static str, failure: &'a str },
    /// A capacity refusal before anything streamed is retried after a backoff.
    #[serde(rename_all = "camelCase")]
    CapacityRetry { run: &'static str, backoff_ms: u64 },
    /// The model's other id form is tried.
    ModelRetry {
        refused: &'a str,
        retry: &'a str,
        failure: &'a str,
    },
}

impl Record<'_> {
    /// The record as the JSON object a debug sink takes: the one place it is serialized.
    pub(crate) fn to_value(&self) -> Value {
        // Labels, counts and strings only: serializing cannot fail.
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

/// A plan decision: the label, why a stored handle was not resumed, whether `mcp_tools` is
/// sent, how many blobs were resumed, whether the Run resets what streamed.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PlanRecord {
    run: &'static str,
    stale: &'static str,
    mcp_tools: bool,
    resumed_blobs: usize,
    reset: bool,
    /// The stored turn a resume starts from, and whether it is a branch (absent on a rebuild).
    #[serde(skip_serializing_if = "Option::is_none")]
    turn: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    branch: Option<bool>,
}

impl PlanRecord {
    pub(crate) fn of(plan: &Plan) -> Self {
        let stale = plan.stale_reason().map_or("none", StaleReason::as_str);
        Self {
            run: plan.label().as_str(),
            stale,
            mcp_tools: plan.sends_mcp_tools(),
            resumed_blobs: plan.resumed_blobs(),
            reset: plan.emits_reset(),
            turn: plan.resume_from().map(|from| from.turn),
            branch: plan.resume_from().map(|from| from.branch),
        }
    }
}

/// A failed leg's classification (never its message).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ErrorRecord {
    pub(crate) kind: ErrorKind,
    pub(crate) next_step: String,
    pub(crate) http_status: Option<u16>,
    pub(crate) code: Option<String>,
}
