//! `cursor-gateway`: the OpenAI (chat completions, Responses) and Anthropic (Messages) APIs on
//! Cursor's agent, as a service several clients can share.
//!
//! Three layers, each importing only the ones below it:
//!
//! - [`server`](Gateway): listeners, connection caps, timeouts, the key checks, the body read
//!   under the body budget, the admin listener, the expiry sweeper, shutdown;
//! - dialects (`dialects/`): each API's typed wire structs, the translation of its request into
//!   the engine's terms, and the rendering of the engine's output in its own shapes;
//! - the turn engine (`engine/`): finding or starting the conversation, admission (body budget,
//!   turn slots per key), running the turn on the conversation's
//!   `cursor_agent::session::AgentSession`, clipping, reply formats, streaming with keep-alives,
//!   recording where the history now ends, parked tool rounds, expiry.
//!
//! Each conversation runs on its own session: tool results continue the Run that waits for
//! them, a new user turn resumes the remote conversation from its handle (under `--state`), and
//! anything else rebuilds once. A request continues only a conversation of the same client key
//! and session hint whose stored history is an exact prefix of its own ([`history`]). Memory,
//! sockets, turns, waiting tool rounds and state on disk are bounded and expire ([`Limits`]).
//! Cursor's native execs become calls of the client's own function tools or are refused; the
//! gateway never runs anything itself.
//!
//! See `docs/OPENAI-GATEWAY.md` and `docs/ANTHROPIC-GATEWAY.md` for the endpoints, the limits
//! and how to point clients at it.

mod cli;
mod credentials;
mod dialects;
mod engine;
mod error;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
pub mod history;
mod ids;
mod keys;
mod limits;
mod metrics;
mod program;
mod server;
mod state;
mod sync;

pub use cli::{Command, DEFAULT_LISTEN, LogFormat, Options, Process, Source, Surroundings};
pub use credentials::{CredentialSource, GatewayTokens};
pub use engine::{GatewayConfig, SweepReport};
pub use error::{ApiError, GatewayError};
pub use keys::{ClientKeys, OPEN_NAMESPACE};
pub use limits::Limits;
pub use program::cli_main;
pub use server::Gateway;

/// The crate version and the git revision it was built from (when known), for `--version`.
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (",
    env!("CURSOR_GATEWAY_GIT_REV"),
    ")"
);
