//! # cursor-agent (layer L4b)
//!
//! A sans-IO state machine for Cursor's `agent.v1.AgentService/Run`, with a sealed exec policy
//! that never runs anything locally.
//!
//! [`AgentRun`] holds everything one Run stream needs: the run request (root prompt blobs, MCP
//! catalog, current user turn), the KV blob store Cursor reads the prompt from, the exec policy
//! that answers every native tool request by translating it into a call of the host's own tool,
//! refusing it with a redirect to one, or throwing it (never by running anything), the MCP
//! bridge that lifts `mcp_args` into host tool calls, and the timers (heartbeat, first-frame and
//! idle watchdogs, tool-call debounce). It owns no socket, no runtime and no clock: bytes and
//! time come in through `handle_*`, frames and events go out through `poll_*`.
//!
//! ## A host in a few lines
//!
//! With the `driver` feature (default), [`prelude`] has everything a host needs besides a tokio
//! runtime: [`session::AgentSession`] plans, streams, resumes and keeps tool rounds on one
//! stream. `examples/tiny_host.rs` is a complete host in under 60 lines, with a tool round and
//! a resume across processes. The rest of this page is the sans-IO core underneath.
//!
//! ## The drain contract
//!
//! 1. Build the run with [`AgentRun::new`]; it queues the run request.
//! 2. Apply ONE input: bytes of the response body as they arrive
//!    ([`AgentRun::handle_server_data`], after [`AgentRun::handle_response_head`]; the fast
//!    way, and what the driver does), or one decoded server frame
//!    ([`AgentRun::handle_server_message`] or [`AgentRun::handle_server_bytes`]), the end of the stream
//!    ([`AgentRun::handle_end_of_stream`]), an expired deadline ([`AgentRun::handle_timeout`]),
//!    or a host command ([`AgentRun::submit_tool_results`], [`AgentRun::cancel`]).
//! 3. Drain [`AgentRun::poll_transmit`] until `None`, writing each frame to the stream in order.
//! 4. Drain [`AgentRun::poll_event`] until `None`, handing each event to the host.
//! 5. If [`AgentRun::is_finished`], close the stream. Otherwise wait for the next server frame,
//!    host command, or [`AgentRun::poll_timeout`], and go to 2.
//!
//! A leg of the turn ends with exactly one `Done`, `Error` or `Aborted` event. `Done` with
//! [`StopReason::ToolUse`](cursor_proto::ir::StopReason::ToolUse) keeps the stream open: run
//! the tools, then [`AgentRun::submit_tool_results`] starts the next leg on the same stream.
//!
//! ```
//! use std::time::{Duration, Instant};
//!
//! use cursor_agent::{AgentEvent, AgentRun, HostProfile, IdSeed, RunConfig};
//! use cursor_agent::wire::{
//!     AgentClientMessage, AgentServerMessage, InteractionUpdate, TextDeltaUpdate, TurnEndedUpdate,
//!     agent_client_message, agent_server_message, interaction_update,
//! };
//! use cursor_agent::ir::{Conversation, Event, Message, StopReason};
//! use cursor_agent::prost::Message as _;
//!
//! fn update(message: interaction_update::Message) -> Vec<u8> {
//!     AgentServerMessage {
//!         message: Some(agent_server_message::Message::InteractionUpdate(InteractionUpdate {
//!             message: Some(message),
//!             ..Default::default()
//!         })),
//!         ..Default::default()
//!     }
//!     .encode_to_vec()
//! }
//!
//! let start = Instant::now();
//! let conversation = Conversation::new("You are terse.").with_message(Message::user_text("ping"));
//! let profile = HostProfile::new("my-editor");
//! let config = RunConfig::new("composer-2.5", "file:///work", IdSeed::fixed([7; 16]))
//!     .with_profile(profile);
//! let mut run = AgentRun::new(config, &conversation, start)?;
//!
//! // The first frame to write is the run request, as wire bytes.
//! let first = AgentClientMessage::decode(run.poll_transmit().expect("run request").as_slice())?;
//! assert!(matches!(first.message, Some(agent_client_message::Message::RunRequest(_))));
//!
//! // A scripted server: one text delta, then the end of the turn.
//! let script = [
//!     update(interaction_update::Message::TextDelta(TextDeltaUpdate { text: "pong".into() })),
//!     update(interaction_update::Message::TurnEnded(TurnEndedUpdate::default())),
//! ];
//! let mut events = Vec::new();
//! for (i, frame) in script.iter().enumerate() {
//!     run.handle_server_bytes(frame, start + Duration::from_millis(10 * i as u64));
//!     while let Some(_frame) = run.poll_transmit() { /* write it to the stream */ }
//!     while let Some(event) = run.poll_event() {
//!         events.push(event);
//!     }
//! }
//!
//! assert_eq!(events[0], AgentEvent::Ir(Event::TextDelta { text: "pong".into() }));
//! assert!(matches!(&events[1], AgentEvent::Ir(Event::Usage(usage)) if usage.input_estimated));
//! assert_eq!(events[2], AgentEvent::Ir(Event::Done { reason: StopReason::Stop }));
//! assert!(run.is_finished());
//! assert_eq!(run.poll_timeout(), None);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ## The audit guarantee
//!
//! Nothing runs in this process because Cursor asked. Every `ExecServerMessage` goes through one
//! decision table whose decisions are: refuse with the arm's typed rejected/error result, throw,
//! report the workspace paths and tool list, lift an MCP call to the host, or translate a native
//! request (shell, read, write, delete, grep/glob, ls, the `pi_*` arms) into an ordinary call
//! of the host tool that has the capability. Host tool calls are decided by the host's own
//! permission system; a translated call's result is encoded back into the native result shape
//! (see [`ExecOutcome::Translated`]). Every answer ends with `stream_close`; every answer is
//! reported as an [`AgentEvent::Exec`] audit record.
//!
//! ## Resume
//!
//! A [`ResumePlanner`] plans each Run from the stored [`Handle`] of the host session: a resume of the
//! remote conversation when the [`Fingerprint`] of the completed user turns matches, a rebuild
//! otherwise, and exactly one rebuild (starting with `Reset`) when a resume turns out stale
//! ([`ResumePlanner::recover`]). [`HandleStore`] keeps handles on disk atomically and durably;
//! [`Handle::capture`] takes one from a Run that received a checkpoint.
//! [`AgentRun::poll_transmit`] hands out wire bytes, splicing a resumed Run's overlaid
//! checkpoint into the run request byte for byte.
#![cfg_attr(docsrs, feature(doc_cfg))]

mod blobs;
mod config;
mod error;
mod event;
mod event_queue;
pub mod file_uri;
mod frames;
mod hot;
mod ids;
mod intent;
mod interaction;
mod json_value;
mod mcp;
mod policy;
mod ranking;
mod redirect;
mod request;
mod resume;
mod root_prompt;
mod run;
mod shell;
mod text_window;
mod trace;
mod translate;
mod usage;

#[cfg(feature = "driver")]
#[cfg_attr(docsrs, doc(cfg(feature = "driver")))]
pub mod driver;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
#[cfg(feature = "driver")]
#[cfg_attr(docsrs, doc(cfg(feature = "driver")))]
pub mod session;
#[cfg(feature = "testing")]
#[cfg_attr(docsrs, doc(cfg(feature = "testing")))]
pub mod testing;

/// What [`AgentRun::handle_response_head`] and [`AgentRun::handle_server_data`] take, so the
/// sans-IO path needs only this crate.
pub use bytes::Bytes;
/// The agent protocol's wire messages (re-exported from cursor-proto), for hosts that drive
/// [`AgentRun`] themselves.
pub use cursor_proto::agent::v1 as wire;
/// The host-neutral conversation model (re-exported from cursor-proto), so a host needs only
/// this crate.
pub use cursor_proto::ir;
pub use cursor_transport::envelope::Compression;
/// The protobuf runtime of [`wire`]: `prost::Message` encodes and decodes its messages.
pub use prost;
/// JSON values, for tool schemas and arguments ([`ir::Tool::new`]).
pub use serde_json::{self, Value, json};

#[cfg(feature = "driver")]
#[cfg_attr(docsrs, doc(cfg(feature = "driver")))]
pub mod prelude;

pub use blobs::{BlobId, BlobStore};
pub use config::{
    ALLOWED_TOOLS_HEADER, FRAME_OVERHEAD, HostProfile, IdSeed, Limits, MAX_TIMER, MCP_TOOL_GROUP,
    RunConfig, Timers,
};
pub use error::{AgentError, RemoteMissing, StreamOutcome};
pub use event::{AgentEvent, EventRef, ExecAudit, ExecOutcome, ResumePoint};
pub use policy::ExecArm;
pub use resume::{
    Fingerprint, HANDLE_FORMAT_VERSION, Handle, HandleFileError, HandleRepository, HandleStore,
    KEPT_BRANCH_POINTS, KEPT_TURNS, Loaded, Plan, ResumeFrom, ResumePlanner, RunLabel, StaleReason,
    StoreError, StoreWarning, ToolsetKey, TurnPoint,
};
pub use root_prompt::root_prompt_json;
pub use run::AgentRun;
