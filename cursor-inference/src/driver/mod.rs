//! The async driver: one RunInference stream over [`cursor_transport`], driven by a thin
//! `select!` loop.
//!
//! [`start`] (or [`open`]) splits a turn into
//!
//! - an [`InferenceTask`], the future that owns the HTTP/2 stream and the [`InferenceRun`].
//!   The driver never spawns: the caller drives it (`tokio::spawn`, napi's spawn, or `select!`
//!   beside its own work). It resolves to the finished run.
//! - an [`InferenceEvents`] stream of the turn's [`Event`]s, in order, ending after the last.
//!
//! The task writes every frame the run yields, forwards every event, and sleeps until
//! [`InferenceRun::poll_timeout`]. Once the turn is done it sends `finish_run`, half-closes,
//! and waits briefly for the server to end the stream; after a failure or a cancel it resets
//! the stream instead. Dropping the event stream cancels the turn; dropping the task resets the
//! stream (`RST_STREAM CANCEL`).
//!
//! A turn is one stream: a tool call ends it with
//! [`StopReason::ToolUse`](cursor_proto::ir::StopReason::ToolUse), and the host sends the
//! results as TOOL messages in the next turn's conversation. Nothing stays open across a tool
//! round, because RunInference has no way to hand results to a running invocation.
//!
//! Time comes from tokio's clock (so tests can pause it): open runs with [`now`].

mod events;
mod task;

use std::time::Instant;

use cursor_proto::ir::{Conversation, Event};
use cursor_transport::{Client, Origin, RequestHeaders};
use tokio::sync::mpsc;

use crate::{InferenceConfig, InferenceRun};

pub use events::InferenceEvents;
pub use task::InferenceTask;

/// The RPC path.
pub const RUN_INFERENCE_PATH: &str = "/aiserver.v1.InferenceService/RunInference";

/// The current time on tokio's clock, as the `now` to open an [`InferenceRun`] with.
pub fn now() -> Instant {
    tokio::time::Instant::now().into_std()
}

/// Opens a turn answering `conversation` with `config` and starts it (see [`start`]).
/// `headers` should be the IDE identity
/// ([`RequestHeaders::ide`](cursor_transport::RequestHeaders::ide)).
pub fn open(
    client: Client,
    origin: Origin,
    headers: RequestHeaders,
    config: InferenceConfig,
    conversation: &Conversation,
) -> (InferenceEvents, InferenceTask) {
    start(
        client,
        origin,
        headers,
        InferenceRun::open(config, conversation, now()),
    )
}

/// Events the driver queues for a host that is not reading (as `cursor_agent::driver` does).
/// A full queue stops the driver reading the response, so HTTP/2 flow control stops the
/// server: memory stays bounded by this queue plus the stream's flow-control window, whatever
/// the server sends.
pub const EVENT_QUEUE: usize = 128;

/// Starts `run` on a new RunInference call to `origin`.
pub fn start(
    client: Client,
    origin: Origin,
    headers: RequestHeaders,
    run: InferenceRun,
) -> (InferenceEvents, InferenceTask) {
    let (sender, receiver) = mpsc::channel::<Event>(EVENT_QUEUE);
    let task = InferenceTask::new(client, origin, headers, run, sender);
    (InferenceEvents::new(receiver), task)
}
