//! The words pi users see and act on: failures worded for pi (a next step always, retry
//! wording only where a retry helps), the login command, the channel switch. Shared by the pi
//! shapes ([`crate::compat`]) and the provider, so neither names the other for them.

mod error_text;
mod retry_words;

pub use error_text::{
    PiError, for_pi, is_transient, pi_next_step, pi_would_compact, pi_would_retry,
};

/// The environment variable that picks the channel (`agent` or `inference`).
pub const CHANNEL_ENV: &str = "CURSOR_PROVIDER_CHANNEL";

/// The next step of every authentication failure.
pub const LOGIN_NEXT_STEP: &str = "run /login cursor";
