//! Provider orchestration (layer L7): the `cursor` provider as pi sees it.
//!
//! - [`Provider`] answers one `streamSimple` call: it reads pi's model, context and options,
//!   sends the turn to the one [`Channel`] chosen by `CURSOR_PROVIDER_CHANNEL`
//!   ([`ChannelKind`]), maps the channel's events to pi events with
//!   [`EventMapper`](crate::compat::EventMapper), and honours an abort.
//! - A failure is always a classified pi error with a next step ([`for_pi`]): an auth failure
//!   says `/login cursor`, and a failure retrying cannot fix carries none of the wording that
//!   makes pi retry.
//! - [`InferenceChannel`] is the inference channel over cursor-inference's driver, chosen only
//!   by `CURSOR_PROVIDER_CHANNEL=inference`: one RunInference stream per turn, IDE identity,
//!   calls to the API origin. A failure on either channel never falls back to the other.
//! - [`AgentChannel`] is the agent channel over cursor-agent's driver: a session's Run stays
//!   open across a tool round ([`Sessions`]), and with a handle store a later process resumes
//!   the remote conversation. A Run refused with 401 refreshes the token once and is replayed
//!   once ([`AgentChannel::with_token_refresh`]).
//! - [`api_origin_from_env`] is where the catalog and token refreshes go: `api2.cursor.sh`, or
//!   the allowlisted `CURSOR_PROVIDER_API_ORIGIN` ([`API_ORIGIN_ENV`]).
//! - [`CursorOAuth`] and [`api_key`] are pi's OAuth callbacks; [`pi_models`] and
//!   [`refresh_catalog`] serve pi's model list; [`diagnose`] is the `/cursor-doctor` report.
//!
//! ```
//! use std::cell::Cell;
//! use std::sync::Arc;
//!
//! use cursor_pi_adapter::provider::{AbortSignal, Channel, ChannelKind, Provider, UnavailableChannel};
//! use cursor_pi_adapter::ir::{ErrorInfo, ErrorKind, NextStep};
//!
//! // An inference channel that cannot answer on this host, and an agent channel that must
//! // never be asked: the choice is explicit, with no fallback.
//! let agent_built = Cell::new(false);
//! let provider = Provider::select(
//!     ChannelKind::parse(Some("inference")),
//!     || -> Arc<dyn Channel> {
//!         agent_built.set(true);
//!         Arc::new(UnavailableChannel::new(ChannelKind::Agent, ErrorInfo::new(ErrorKind::Local, "unused", NextStep::Retry)))
//!     },
//!     || Arc::new(UnavailableChannel::new(
//!         ChannelKind::Inference,
//!         ErrorInfo::new(
//!             ErrorKind::Local,
//!             "no machine id on this host",
//!             NextStep::fix_config("unset CURSOR_PROVIDER_CHANNEL"),
//!         ),
//!     )),
//! );
//! assert_eq!(provider.channel().kind(), ChannelKind::Inference);
//!
//! let model = r#"{"id": "composer-2.5", "api": "cursor-agent", "provider": "cursor",
//!                 "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}}"#;
//! let context = r#"{"messages": [{"role": "user", "content": "hi", "timestamp": 0}]}"#;
//! let mut events = Vec::new();
//! futures::executor::block_on(provider.stream(
//!     model,
//!     context,
//!     r#"{"apiKey": "token"}"#,
//!     AbortSignal::never(),
//!     |event| events.push(event),
//! ));
//!
//! // One error from the inference channel; the agent channel was never even built.
//! assert_eq!(events.len(), 1);
//! assert_eq!(events[0]["type"], "error");
//! let text = events[0]["error"]["errorMessage"].as_str().unwrap();
//! assert!(text.contains("no machine id"), "{text}");
//! assert!(!agent_built.get());
//! ```

mod abort;
mod agent;
mod api_origin;
mod auth;
mod backend;
mod catalog;
mod channel;
mod doctor;
mod headless;
mod inference;
mod models;
mod orchestrator;
mod profile;
#[cfg(test)]
mod test_env;
mod turn;
mod turn_log;
mod unavailable;
mod usage;

pub use crate::pi_words::CHANNEL_ENV;
pub use crate::pi_words::{
    LOGIN_NEXT_STEP, PiError, for_pi, is_transient, pi_next_step, pi_would_compact, pi_would_retry,
};
pub use abort::{AbortHandle, AbortSignal, abort_pair};
pub use agent::{AgentChannel, Sessions, Spawner};
pub use api_origin::{API_ORIGIN_ENV, api_origin, api_origin_from_env, auth_config};
pub use auth::{CursorOAuth, access_token_for, api_key};
pub use backend::Channel;
pub use catalog::{CatalogRefresh, SNAPSHOT_KEY, refresh_catalog};
pub use channel::ChannelKind;
pub use doctor::{DoctorInput, diagnose, doctor_text};
pub use headless::{ACCESS_TOKEN_ENV, API_KEY_ENV, HeadlessTokens, REFRESH_TOKEN_ENV};
pub use inference::InferenceChannel;
pub use models::{pi_model, pi_models};
pub use orchestrator::Provider;
pub use profile::{
    AGENT_ORIGIN_ENV, CLI_VERSION_ENV, DEBUG_ENV, FIRST_TOKEN_MS_ENV, HANDLE_DIR_ENV, IDLE_MS_ENV,
    PiEnv, RESEND_MCP_ENV, pi_profile,
};
pub use turn::{Turn, TurnOptions};
pub use turn_log::{LastTurn, TurnLog};
pub use unavailable::UnavailableChannel;
pub use usage::{account_usage, usage_text, usage_token};

/// The provider id pi knows this provider by (`--model cursor/<id>`, `/login cursor`).
pub const PROVIDER_ID: &str = "cursor";

/// The API name the provider registers, so pi routes its models to this provider's stream.
pub const API: &str = "cursor-agent";
