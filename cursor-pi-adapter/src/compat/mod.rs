//! Every assumption this crate makes about pi's JSON shapes, in one place.
//!
//! pi (the `@earendil-works/pi-coding-agent` CLI) calls a provider's
//! `streamSimple(model, context, options)` and consumes a stream of `AssistantMessageEvent`s.
//! This module maps both directions between those shapes and the host-neutral model of
//! [`cursor_proto::ir`]:
//!
//! - [`conversation_from_json`] / [`conversation_from_value`]: pi's `context` → [`Conversation`].
//!   Both context shapes are read: the `TranscriptContext` of pi ≥ 0.86 (system prompt and tools
//!   carried by `role: "system"` messages, collapsed the way pi's `collapseSystemMessages` does)
//!   and the `{systemPrompt, messages, tools}` `Context` of pi 0.73–0.85.
//! - [`EventMapper`]: the channel's [`Event`]s → pi's `start` / `text_*` / `thinking_*` /
//!   `toolcall_*` / `done` / `error` objects, keeping the `partial` assistant message
//!   consistent and pricing its usage from [`ModelInfo`].
//!
//! Nothing here does I/O, spawns, or panics on bad input: a shape no tested pi version produces
//! is a [`CompatError`] (convert it to [`ErrorInfo`](cursor_proto::ir::ErrorInfo) for the host).
//! The tested versions are [`TESTED_PI_VERSIONS`]; the fixtures under `fixtures/pi-<version>/`
//! are contexts captured from those real pi builds.
//!
//! ```
//! use cursor_pi_adapter::compat::{EventMapper, ModelInfo, conversation_from_json};
//! use cursor_pi_adapter::ir::{Event, Message, StopReason};
//!
//! // What pi ≥ 0.86 passes as `context`: the prompt and tools ride in a system message.
//! let context = r#"{"messages": [
//!     {"role": "system", "content": "You are terse.", "timestamp": 0,
//!      "toolsAdded": [{"name": "bash", "description": "Run a command", "parameters": {"type": "object"}}]},
//!     {"role": "user", "content": [{"type": "text", "text": "ping"}], "timestamp": 0}
//! ]}"#;
//! let conversation = conversation_from_json(context)?;
//! assert_eq!(conversation.system_prompt, "You are terse.");
//! assert_eq!(conversation.tools[0].name, "bash");
//! assert_eq!(conversation.messages, [Message::user_text("ping")]);
//!
//! // The answer streams back as pi events.
//! let mut mapper = EventMapper::new(ModelInfo::new("cursor-agent", "cursor", "auto"), 1_700_000_000_000);
//! let mut events = mapper.map(Event::TextDelta { text: "pong".into() });
//! events.extend(mapper.map(Event::Done { reason: StopReason::Stop }));
//! let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
//! assert_eq!(kinds, ["start", "text_start", "text_delta", "text_end", "done"]);
//! assert_eq!(events[4]["message"]["content"][0]["text"], "pong");
//! # Ok::<(), cursor_pi_adapter::compat::CompatError>(())
//! ```
//!
//! # What does not cross
//!
//! Kept out on purpose, because the conversation model has no slot for them (pi 0.99.1–1.6.0):
//! message `timestamp`s; an assistant message's `api`, `provider`, `model`, `usage`,
//! `stopReason`, `errorMessage`, `thinkingLevel` and `durationMs`; `textSignature` on text
//! blocks and `thoughtSignature` / `namespace` on tool calls; a thinking block's `redacted` flag
//! (its opaque payload and signature do cross); a tool's `constrainedSampling`; a tool result's
//! `details` and `durationMs`. Assistant turns that ended in `error` or `aborted` are mapped like
//! any other: dropping or repairing them is the channel's call, not a shape question.
//!
//! In the other direction, the events carry no `thinkingSignature`, because
//! [`Event`] has no signature of its own.
//!
//! [`Conversation`]: cursor_proto::ir::Conversation
//! [`Event`]: cursor_proto::ir::Event

mod context;
mod error;
mod events;
mod model;
mod partial;
mod system;
mod wire;

pub use context::{conversation_from_json, conversation_from_value};
pub use error::CompatError;
pub use events::EventMapper;
pub use model::{CostRates, CostTier, ModelInfo};

/// The pi releases whose shapes this module was checked against with captured fixtures.
pub const TESTED_PI_VERSIONS: &str = "0.99.1, 1.0.3, 1.6.0";
