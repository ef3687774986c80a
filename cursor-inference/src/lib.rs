//! # cursor-inference (layer L4a)
//!
//! The `aiserver.v1.InferenceService/RunInference` session: request assembly from the
//! host-neutral [`ir`] and mapping of the server's stream back to
//! [`ir::Event`]s. It has no exec branch: a tool call is handed to
//! the host and ends the turn; the result comes back as a TOOL message in the next turn.
//!
//! - [`InferenceRun`] is the sans-IO state machine of one turn: it yields the frames to send
//!   (`run_request`, then `invoke_model` once `run_ready` arrived, then `finish_run`), reads the
//!   server's frames, assembles tool calls from their chunks, classifies errors, and keeps the
//!   watchdogs (`run_ready` 65 s, first token 30 s, 120 s between work frames).
//! - [`driver`] runs an [`InferenceRun`] over [`cursor_transport`], as a future the caller
//!   drives.
//! - `testing` (feature `testing`) is a loopback replica of the RPC.
//!
//! ```
//! use std::time::Instant;
//!
//! use cursor_inference::{InferenceConfig, InferenceRun};
//! use cursor_inference::wire::{
//!     InferenceStreamResponse, InferenceTextStreamPart, RunInferenceInvocationEnd,
//!     RunInferenceInvocationResponse, RunInferenceRunReady, RunInferenceServerMessage,
//!     inference_stream_response::Response, run_inference_client_message::Message as Client,
//!     run_inference_server_message::Message as Server,
//! };
//! use cursor_inference::ir::{Conversation, Event, Message, StopReason};
//!
//! let conversation = Conversation::new("Be brief.").with_message(Message::user_text("ping"));
//! let config = InferenceConfig::with_ids("composer-2.5", "conv-1", "inv-1");
//! let now = Instant::now();
//! let mut run = InferenceRun::open(config, &conversation, now);
//!
//! // The run opens with run_request; the model call waits for run_ready.
//! assert!(matches!(run.poll_transmit().and_then(|m| m.message), Some(Client::RunRequest(_))));
//! assert!(run.poll_transmit().is_none());
//!
//! let server = |arm| RunInferenceServerMessage { message: Some(arm) };
//! run.handle_server_message(server(Server::RunReady(RunInferenceRunReady::default())), now);
//! let Some(Client::InvokeModel(invoke)) = run.poll_transmit().and_then(|m| m.message) else {
//!     panic!("invoke_model follows run_ready");
//! };
//! assert_eq!(invoke.request.unwrap().messages.len(), 2); // the system prompt and "ping"
//!
//! let text = Response::TextPart(InferenceTextStreamPart { text: "pong".into(), is_final: true });
//! run.handle_server_message(
//!     server(Server::InvocationResponse(RunInferenceInvocationResponse {
//!         invocation_id: "inv-1".into(),
//!         response: Some(InferenceStreamResponse { response: Some(text) }),
//!     })),
//!     now,
//! );
//! run.handle_server_message(
//!     server(Server::InvocationEnd(RunInferenceInvocationEnd {
//!         invocation_id: "inv-1".into(),
//!         error: None,
//!     })),
//!     now,
//! );
//!
//! assert_eq!(run.poll_event(), Some(Event::TextDelta { text: "pong".into() }));
//! assert_eq!(run.poll_event(), Some(Event::Done { reason: StopReason::Stop }));
//! assert!(run.is_finished());
//! // The run is closed politely.
//! assert!(matches!(run.poll_transmit().and_then(|m| m.message), Some(Client::FinishRun(_))));
//! ```
#![cfg_attr(docsrs, feature(doc_cfg))]

mod config;
pub mod driver;
mod error;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
mod json;
pub mod request;
mod run;
mod shape;
mod tool_calls;

#[cfg(feature = "testing")]
#[cfg_attr(docsrs, doc(cfg(feature = "testing")))]
pub mod testing;

pub use config::{
    FIRST_TOKEN_TIMEOUT, IDLE_TIMEOUT, InferenceConfig, InferenceTimers, MAX_TIMEOUT,
    RUN_READY_TIMEOUT, fresh_id,
};
/// The `aiserver.v1` wire types this crate speaks (cursor-proto's), so callers need no import
/// of cursor-proto.
pub use cursor_proto::aiserver::v1 as wire;
/// The host-neutral conversation model (cursor-proto's).
pub use cursor_proto::ir;
pub use error::{InferenceError, StreamRefusal};
pub use run::InferenceRun;
