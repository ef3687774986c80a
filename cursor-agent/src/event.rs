//! What a Run reports to its host.

use std::borrow::Cow;

use cursor_proto::ir::Event;

use crate::ExecArm;

/// One output of [`AgentRun::poll_event`](crate::AgentRun::poll_event).
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq)]
pub enum AgentEvent {
    /// A host-neutral event of the current leg. A leg ends with exactly one of `Done`, `Error`
    /// or `Aborted`; after `Done { reason: ToolUse }` the next leg starts when the host submits
    /// its tool results.
    Ir(Event),
    /// The server's latest conversation checkpoint: opaque bytes the host persists as the resume
    /// handle (never interpreted or re-encoded).
    Checkpoint(Vec<u8>),
    /// One exec request was answered: the audit record of what Cursor asked and what the client
    /// did. Nothing in [`ExecOutcome`] executes locally.
    Exec(ExecAudit),
    /// The turn completed with a checkpoint in hand: everything a resume handle needs, emitted
    /// right before the final `Done` so a host persists the handle before it reports the turn
    /// done (a server that keeps the stream open afterwards cannot delay or lose it).
    Resumable(Box<ResumePoint>),
}

/// One output of [`AgentRun::poll_event_ref`](crate::AgentRun::poll_event_ref): the events of
/// [`AgentEvent`], with the text of a streamed delta lent from the Run's buffer when it is still
/// there, so a host that copies the text into its own buffer allocates nothing per delta.
#[non_exhaustive]
#[derive(Debug, PartialEq)]
pub enum EventRef<'a> {
    /// [`Event::TextDelta`]'s text: lent, or owned when a later event had already closed it.
    TextDelta(Cow<'a, str>),
    /// [`Event::ThinkingDelta`]'s text, lent or owned as above.
    ThinkingDelta(Cow<'a, str>),
    /// Any other event, as [`AgentRun::poll_event`](crate::AgentRun::poll_event) gives it.
    Other(AgentEvent),
}

/// The remote state a completed turn leaves behind (see
/// [`Handle::from_point`](crate::Handle::from_point)).
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResumePoint {
    /// The remote conversation id.
    pub conversation_id: String,
    /// The last checkpoint, verbatim.
    pub checkpoint: Vec<u8>,
    /// The run's blobs, sorted by id.
    pub blobs: Vec<(crate::BlobId, Vec<u8>)>,
}

/// The audit record of one answered exec request.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExecAudit {
    /// The exec's numeric id.
    pub id: u32,
    /// Which arm Cursor used.
    pub arm: ExecArm,
    /// What the client answered.
    pub outcome: ExecOutcome,
}

/// How one exec request was answered.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ExecOutcome {
    /// Answered with the arm's typed refusal (or error) and a redirect to a host tool.
    Refused,
    /// Answered with `throw` and a redirect (unknown arms, arms without a refusal shape).
    Thrown,
    /// `request_context` answered with the workspace paths and tool list only.
    ContextReported,
    /// `mcp_state_exec_args` answered with the host's MCP projection: the tools the run
    /// advertised, under the host's provider identifier, and nothing else.
    McpStateReported {
        /// How many servers the answer listed (one, or none when the request named other
        /// servers or only asked for a refresh).
        servers: usize,
        /// How many tools the answer listed.
        tools: usize,
    },
    /// A native request translated into a call of the host tool `tool`; the host's result will
    /// be encoded back into the native result shape.
    Translated {
        /// The id of the [`ToolCall`](cursor_proto::ir::ToolCall) handed to the host.
        tool_call_id: String,
        /// The host tool chosen by capability.
        tool: String,
    },
    /// Lifted to a host tool call; the host's result will answer it.
    HostToolCall {
        /// The id of the [`ToolCall`](cursor_proto::ir::ToolCall) handed to the host.
        tool_call_id: String,
    },
    /// An MCP call naming a tool the host does not have, answered `tool_not_found`.
    ToolNotFound {
        /// The requested tool name, prefix stripped.
        name: String,
    },
}
