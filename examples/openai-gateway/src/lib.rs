//! An OpenAI-compatible HTTP gateway on `cursor_agent::session::AgentSession`.
//!
//! Clients re-send the whole history with every request; the gateway derives the conversation
//! from the request's stable prefix (system text and first user message) and lets one
//! `AgentSession` per conversation plan each turn: tool results for the waiting Run continue it
//! on the same stream, a new user turn resumes the remote conversation from its handle (under
//! `--state`), anything else rebuilds once. Cursor's native execs become calls of the client's
//! own function tools or are refused; the gateway never runs anything itself.
//!
//! See `docs/OPENAI-GATEWAY.md` for the endpoints and how to point clients at it.

mod chat;
mod cli;
mod credentials;
mod error;
mod outlet;
mod responses;
mod server;

use cursor_agent::ir::Message;
use sha2::{Digest as _, Sha256};

pub use cli::{DEFAULT_LISTEN, Options, USAGE};
pub use credentials::{CredentialSource, GatewayTokens};
pub use error::{ApiError, GatewayError};
pub use server::{DEFAULT_MAX_SESSIONS, Gateway, GatewayConfig, MAX_BODY_BYTES};

/// The conversation a request belongs to: a hash of its system text and first user message,
/// so every later request of the same client conversation lands on the same session (a
/// changed tool list does not start a new one).
pub fn conversation_key(system_prompt: &str, first_user: &Message) -> String {
    let mut hasher = Sha256::new();
    hasher.update((system_prompt.len() as u64).to_le_bytes());
    hasher.update(system_prompt.as_bytes());
    hasher.update(serde_json::to_vec(first_user).unwrap_or_default());
    let digest = hasher.finalize();
    let hex: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
    format!("chat-{hex}")
}
