//! `tracing` spans beside the session's debug records: one per Run
//! (`cursor_agent.run`) and one per exec request (`cursor_agent.exec`, a child of its Run).
//!
//! Fields are identifiers and outcomes only (conversation id, model, exec id, arm as its
//! oneof field name, outcome,
//! host tool name), never tokens, prompts, tool arguments or results: a subscriber that logs
//! every field leaks nothing the debug records would not.

use tracing::Span;

use crate::event::ExecOutcome;
use crate::policy::ExecArm;

/// The span of one Run; its `outcome` is recorded when the Run finishes.
pub(crate) fn run_span(conversation_id: &str, model: &str, resumed: bool) -> Span {
    tracing::info_span!(
        "cursor_agent.run",
        conversation_id,
        model,
        resumed,
        outcome = tracing::field::Empty,
    )
}

/// The span of one exec request, opened when it is answered or handed to the host. A
/// request the host answers stays open until its result is sent (`answered`).
pub(crate) fn exec_span(run: &Span, id: u32, arm: ExecArm, outcome: &ExecOutcome) -> Span {
    let tool = match outcome {
        ExecOutcome::Translated { tool, .. } => Some(tool.as_str()),
        _ => None,
    };
    tracing::info_span!(
        parent: run,
        "cursor_agent.exec",
        exec = id,
        arm = arm.field_name().unwrap_or("unknown"),
        outcome = outcome_label(outcome),
        tool,
        answered = tracing::field::Empty,
    )
}

/// A short stable name of how an exec was answered.
pub(crate) fn outcome_label(outcome: &ExecOutcome) -> &'static str {
    match outcome {
        ExecOutcome::Refused => "refused",
        ExecOutcome::Thrown => "thrown",
        ExecOutcome::ContextReported => "context_reported",
        ExecOutcome::McpStateReported { .. } => "mcp_state_reported",
        ExecOutcome::Translated { .. } => "translated",
        ExecOutcome::HostToolCall { .. } => "host_tool_call",
        ExecOutcome::ToolNotFound { .. } => "tool_not_found",
    }
}
