//! # cursor-auth (layer L1)
//!
//! Login and token refresh for Cursor accounts, sans-IO.
//!
//! Cursor's login is not standard OAuth: the user opens a deep link carrying a PKCE challenge
//! and a fresh uuid, and the client polls `GET /auth/poll?uuid=…&verifier=…` every 500 ms
//! (404 while pending) for up to 180 s until the tokens arrive. Refresh is
//! `POST /oauth/token` with a fixed client id. [`Credentials`] have the shape of the OAuth
//! entry coding-agent hosts keep in their `auth.json`, with `expires` pulled five minutes ahead of the JWT's `exp`.
//!
//! The protocol lives in two state machines that never touch a socket or a clock:
//! [`LoginFlow`] and the [`refresh_request`] / [`handle_refresh_response`] pair. The async
//! drivers [`login()`] and [`refresh()`] run them over any [`HttpClient`] with any [`Clock`], and
//! [`AuthedClient`] refreshes expired tokens and replays a request once after a 401. This
//! crate stores nothing: persisting credentials is the host's job.
//!
//! Every failure is an [`AuthError`] with a [`kind`](cursor_proto::ir::Classify::kind) and a
//! [`next_step`](cursor_proto::ir::Classify::next_step); no message ever contains a token.
//!
//! ```
//! use std::sync::Mutex;
//! use std::time::{Duration, Instant};
//! use bytes::Bytes;
//! use cursor_auth::{login, AuthConfig, Clock, HttpClient, HttpError};
//!
//! /// Answers "pending" once, then the tokens.
//! struct FakeCursor { polls: Mutex<u32> }
//!
//! #[async_trait::async_trait]
//! impl HttpClient for FakeCursor {
//!     async fn send(&self, request: http::Request<Bytes>) -> Result<http::Response<Bytes>, HttpError> {
//!         assert_eq!(request.uri().path(), "/auth/poll");
//!         let mut polls = self.polls.lock().unwrap();
//!         *polls += 1;
//!         let (status, body) = if *polls == 1 {
//!             (404, "")
//!         } else {
//!             (200, r#"{"accessToken":"opaque-access","refreshToken":"opaque-refresh"}"#)
//!         };
//!         Ok(http::Response::builder().status(status).body(Bytes::from(body)).unwrap())
//!     }
//! }
//!
//! /// Simulated time: sleeping just moves the clock.
//! struct FakeClock { start: Instant, elapsed: Mutex<Duration> }
//!
//! #[async_trait::async_trait]
//! impl Clock for FakeClock {
//!     fn now(&self) -> Instant { self.start + *self.elapsed.lock().unwrap() }
//!     fn unix_time_ms(&self) -> u64 { 1_700_000_000_000 }
//!     async fn sleep_until(&self, deadline: Instant) {
//!         *self.elapsed.lock().unwrap() = deadline - self.start;
//!     }
//! }
//!
//! let client = FakeCursor { polls: Mutex::new(0) };
//! let clock = FakeClock { start: Instant::now(), elapsed: Mutex::new(Duration::ZERO) };
//! let mut shown = String::new();
//! let credentials = futures::executor::block_on(login(
//!     &client,
//!     &clock,
//!     &AuthConfig::default(),
//!     |url| shown = url.to_owned(),
//! ))?;
//! assert!(shown.starts_with("https://cursor.com/loginDeepControl?challenge="));
//! assert_eq!(credentials.access, "opaque-access");
//! assert_eq!(*client.polls.lock().unwrap(), 2);
//! // Tokens never show up in logs.
//! assert!(!format!("{credentials:?}").contains("opaque-access"));
//! # Ok::<(), cursor_auth::AuthError>(())
//! ```
#![cfg_attr(docsrs, feature(doc_cfg))]

mod api_key;
mod authed;
mod client;
mod config;
mod credentials;
mod driver;
mod error;
pub mod jwt;
mod login;
mod pkce;
mod refresh;
#[cfg(test)]
mod test_support;

pub use api_key::{
    USER_API_KEY_PREFIX, UserApiKey, exchange_request, exchange_user_api_key,
    handle_exchange_response, is_user_api_key,
};
pub use authed::{AccessToken, Attempt, AuthedClient};
pub use client::{Clock, HttpClient, HttpError, system_unix_time_ms};
pub use config::{
    AuthConfig, CLIENT_ID, DEFAULT_API_BASE, DEFAULT_WEBSITE_BASE, EXPIRY_MARGIN, LOGIN_TIMEOUT,
    POLL_INTERVAL,
};
pub use credentials::{Credentials, FALLBACK_LIFETIME};
pub use driver::{login, refresh};
pub use error::AuthError;
pub use login::{LoginFlow, LoginProgress, LoginStep, MAX_CONSECUTIVE_SEND_FAILURES};
pub use pkce::{Pkce, random_uuid};
pub use refresh::{handle_refresh_response, refresh_request};
