//! The async driver: one Run stream over [`cursor_transport`], driven by a thin `select!` loop.
//!
//! [`start`] splits a Run into three parts:
//!
//! - a [`RunTask`], the future that owns the HTTP/2 stream and the [`AgentRun`] and does all
//!   the work. The driver never spawns: the caller drives it (`tokio::spawn`, napi's spawn, or
//!   `select!` beside its own work). It resolves to the finished [`AgentRun`], from which the
//!   host captures its resume [`Handle`](crate::Handle).
//! - a [`RunEvents`] stream of the run's [`AgentEvent`](crate::AgentEvent)s, in order, across
//!   every leg of the turn. It ends once the run is finished and every event was delivered.
//! - a [`RunHandle`] for host commands: tool results for a leg that ended with
//!   [`StopReason::ToolUse`](cursor_proto::ir::StopReason::ToolUse) (written on the same
//!   stream, which stays open meanwhile), tool-set updates, and cancel.
//!
//! The task writes every frame [`AgentRun::poll_transmit`] yields, forwards every event,
//! sleeps until [`AgentRun::poll_timeout`] (so heartbeats keep flowing while the host runs its
//! tools), and once the run is finished half-closes the stream (or resets it after a failure or
//! cancel). Dropping the task resets the stream (`RST_STREAM CANCEL`); dropping the event
//! stream cancels the run, and so does dropping every handle while the run waits for tool
//! results.
//!
//! Time comes from tokio's clock (so tests can pause it): open runs with [`now`].
//!
//! One run against the loopback replica (feature `testing`):
//!
//! ```
//! # #[cfg(feature = "testing")]
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use cursor_agent::testing::Replica;
//! use cursor_agent::driver::{self, Client, RequestHeaders};
//! use cursor_agent::ir::{Conversation, Event, Message};
//! use cursor_agent::{AgentEvent, RunConfig};
//! use futures::StreamExt as _;
//!
//! let replica = Replica::start().await?;
//! let conversation = Conversation::new("").with_message(Message::user_text("ping"));
//! let config = RunConfig::new("composer-2.5", "file:///work", cursor_agent::IdSeed::fixed([1; 16]));
//! let (_handle, mut events, task) =
//!     driver::open(Client::new()?, replica.origin(), RequestHeaders::new(), config, &conversation)?;
//! let task = tokio::spawn(task);
//!
//! let mut text = String::new();
//! while let Some(event) = events.next().await {
//!     if let AgentEvent::Ir(Event::TextDelta { text: delta }) = event {
//!         text.push_str(&delta);
//!     }
//! }
//! assert_eq!(text, "pong");
//! assert!(task.await?.is_finished());
//! # Ok(())
//! # }
//! # #[cfg(not(feature = "testing"))]
//! # fn main() {}
//! ```

mod events;
mod handle;
mod task;

use std::sync::{Arc, OnceLock};
use std::time::Instant;

use cursor_proto::ir::Conversation;
// Re-exported: what `open` takes, so a host needs no import of cursor-transport.
pub use cursor_transport::{Client, Origin, RequestHeaders};
use tokio::sync::mpsc;

use crate::{AgentError, AgentRun, RunConfig};

pub use events::RunEvents;
pub use handle::RunHandle;
pub use task::RunTask;

/// The current time on tokio's clock, as the `now` to open an [`AgentRun`] with: the driver
/// measures deadlines on the same clock, so paused-time tests stay consistent.
pub fn now() -> Instant {
    tokio::time::Instant::now().into_std()
}

/// Opens a Run for `conversation`'s last user message with `config` and starts it (see
/// [`start`]); a Run that cannot be built fails here, before anything is sent.
pub fn open(
    client: Client,
    origin: Origin,
    headers: RequestHeaders,
    config: RunConfig,
    conversation: &Conversation,
) -> Result<(RunHandle, RunEvents, RunTask), AgentError> {
    let run = AgentRun::new(config, conversation, now())?;
    Ok(start(client, origin, headers, run))
}

/// Events the driver queues for a host that is not reading. A full queue stops the driver
/// reading the response, so HTTP/2 flow control stops the server: memory stays bounded by
/// this queue (each event holds at most one 64 KiB read burst, about 10 MiB in all) plus the
/// stream's flow-control window (1 MiB), whatever the server sends.
pub const EVENT_QUEUE: usize = 128;

/// Opens `run` as `POST /agent.v1.AgentService/Run` on `origin` with `headers` and splits it
/// into its command handle, its event stream and the task that drives it.
///
/// Nothing happens until the [`RunTask`] is polled; the stream is opened by the task, so a
/// failure to connect arrives as the run's `Error` event like any other.
pub fn start(
    client: Client,
    origin: Origin,
    headers: RequestHeaders,
    run: AgentRun,
) -> (RunHandle, RunEvents, RunTask) {
    let (command_tx, command_rx) = mpsc::unbounded_channel();
    let (event_tx, event_rx) = mpsc::channel(EVENT_QUEUE);
    let failure = Arc::new(OnceLock::new());
    let task = RunTask::new(task::Driver {
        client,
        origin,
        headers,
        run,
        commands: command_rx,
        events: event_tx,
        failure: Arc::clone(&failure),
    });
    let events = RunEvents::new(event_rx, failure);
    (RunHandle::new(command_tx), events, task)
}
