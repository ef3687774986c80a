//! What the next Run does instead of (or besides) the model.

use cursor_proto::agent::v1::AgentServerMessage;

use super::ToolNaming;

/// A scripted behaviour for one Run; queued with [`Replica::script`](super::Replica::script)
/// and consumed in order, one per Run opened. Runs without a script use the model.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq)]
pub enum Script {
    /// Serve the Run with the deterministic model (the default).
    Model,
    /// Serve the Run with the model, naming the host tools it calls this way (overrides
    /// [`Replica::set_tool_naming`](super::Replica::set_tool_naming) for one Run).
    ToolNaming(ToolNaming),
    /// Answer the open with HTTP 401 and a Connect `unauthenticated` error.
    Unauthenticated,
    /// After the run request, send one frame whose payload is not a protobuf message.
    MalformedFrame,
    /// Ask for a blob nobody stored before the root prompt (a resume then turns stale).
    BlobMiss,
    /// End the stream with a Connect `not_found` error after reading the run request.
    NotFound,
    /// Send exactly these frames after the run request, then end the stream successfully.
    Frames(Vec<AgentServerMessage>),
    /// Like `Frames`, but all of them in one write (one DATA frame when they fit), the way a
    /// server that batches its output sends them.
    Burst(Vec<AgentServerMessage>),
    /// Read the run request and then send nothing, keeping the stream open until the client
    /// gives up.
    Silent,
    /// Serve the Run with the model up to the results of its exec requests, then end with
    /// Connect `not_found` instead of answering: the conversation expired mid-turn, so a
    /// resumed Run is stale in its second leg.
    StaleAfterTools,
    /// After the run request, end the stream the way Cursor reports a rate limit or a used-up
    /// quota: HTTP 200, then an end-of-stream `resource_exhausted` with this message
    /// (docs/PROTOCOL-AGENT.md §12.5).
    ResourceExhausted(String),
    /// After the run request, refuse the Run with the `resource_exhausted` of one of its four
    /// meanings, worded as Cursor words it (PROTOCOL-AGENT §13.2).
    Exhausted(Exhaustion),
    /// After the run request, fail the Run the way the backend reports this lost state,
    /// whatever conversation it names (a loss the client cannot avoid by rebuilding).
    LoseState(StateLoss),
    /// After the run request and before any frame, break the transport this way (the faults
    /// a client may retry once, transparently, because its host saw nothing yet).
    FaultBeforeFirstFrame(Fault),
    /// Send these frames after the run request, then a `request_context` exec whose answer
    /// proves the client read them, then break the transport this way (a fault after the host
    /// has seen something, which must not be retried). With no frames, that exec's audit is
    /// all the host saw.
    FramesThenFault(Vec<AgentServerMessage>, Fault),
    /// Serve the Run with the model, first sending an `InteractionQuery` whose arm has this
    /// field number (any, known or not) and resetting the stream when it is not answered
    /// within the interaction idle time ([`Replica::set_interaction_probe`](super::Replica::set_interaction_probe),
    /// 1 s when unset; PROTOCOL-AGENT §13.6).
    InteractionQuery(u32),
    /// Read the run request, send nothing for this long, then act as the inner script (a slow
    /// backend: a host's keep-alives go out before anything else happens).
    Delayed(std::time::Duration, Box<Self>),
}

/// A transport fault the replica can inject.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// `RST_STREAM` with `INTERNAL_ERROR` on the Run's stream.
    ResetStream,
    /// The TCP connection closes under the stream.
    CloseConnection,
    /// `GOAWAY` with an error code, which fails the streams in flight.
    GoawayWithError,
}

/// The four meanings of an end-of-stream `resource_exhausted` (see [`Script::Exhausted`]).
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exhaustion {
    /// The account's usage is spent; the message says so and when it resets.
    Quota,
    /// The plan does not include the requested model.
    PlanModel,
    /// Transient capacity: the next Run may succeed.
    Capacity,
    /// The prompt is larger than the model's context window: the root prompt is read, then a
    /// bare `Error` arrives before any token.
    ContextOverflow,
}

impl Exhaustion {
    /// The end-of-stream message for a Run of `model`.
    pub fn message(self, model: &str) -> String {
        match self {
            Self::Quota => "You've hit your usage limit for this billing cycle. Your usage resets on Nov 1, 2026.".into(),
            Self::PlanModel => format!("{model} is not available on your plan. Upgrade to Pro+ or choose another model."),
            Self::Capacity => format!("We're experiencing high demand for {model} right now. Please try again later."),
            Self::ContextOverflow => "Error".into(),
        }
    }
}

/// Server state the backend can lose (PROTOCOL-AGENT §13.3), and how it then fails a Run.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StateLoss {
    /// The conversation's data is gone: `Conversation data missing`.
    ConversationData,
    /// A blob the conversation references is gone: `Blob not found`.
    Blob,
    /// The tool session of a Run waiting for tool results is gone (the backend restarted):
    /// `tool session not found`.
    ToolSession,
}

impl StateLoss {
    /// The end-of-stream error the backend sends.
    pub(super) fn error(self) -> cursor_transport::envelope::ConnectError {
        use cursor_transport::envelope::{Code, ConnectError};
        match self {
            Self::ConversationData => {
                ConnectError::new(Code::FailedPrecondition, "Conversation data missing")
            }
            Self::Blob => ConnectError::new(Code::Internal, "Blob not found [internal]"),
            Self::ToolSession => ConnectError::new(Code::NotFound, "tool session not found"),
        }
    }
}
