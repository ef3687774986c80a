//! `cursor-gateway`: the OpenAI API (chat completions and Responses) on Cursor's agent, as a
//! service several clients can share.
//!
//! Each conversation runs on its own `cursor_agent::session::AgentSession`: tool results
//! continue the Run that waits for them, a new user turn resumes the remote conversation from
//! its handle (under `--state`), and anything else rebuilds once. A request continues only a
//! conversation of the same client key and session hint whose stored history is an exact
//! prefix of its own ([`history`]). Sockets, bodies, turns and waiting tool rounds are bounded
//! and expire ([`Limits`]). Cursor's native execs become calls of the client's own function
//! tools or are refused; the gateway never runs anything itself.
//!
//! See `docs/OPENAI-GATEWAY.md` for the endpoints, the limits and how to point clients at it.

mod anthropic;
mod anthropic_serve;
mod app;
mod chat;
mod chat_serve;
mod cli;
mod conversations;
mod credentials;
mod error;
mod gateway;
pub mod history;
mod honour;
mod keys;
mod limits;
mod metrics;
mod models;
mod outlet;
mod responses;
mod responses_wire;
mod run;
mod serve;
mod signature;
mod stored;
mod wire;

pub use cli::{DEFAULT_LISTEN, LogFormat, Options, USAGE};
pub use credentials::{CredentialSource, GatewayTokens};
pub use error::{ApiError, GatewayError};
pub use gateway::{Gateway, GatewayConfig};
pub use keys::{ClientKeys, OPEN_NAMESPACE};
pub use limits::Limits;
pub use run::cli_main;

/// The crate version and the git revision it was built from (when known), for `--version`.
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (",
    env!("CURSOR_GATEWAY_GIT_REV"),
    ")"
);
