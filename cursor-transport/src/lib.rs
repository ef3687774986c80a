//! # cursor-transport (layer L3)
//!
//! Connect over HTTP/2 for Cursor's backend: the envelope codec, an h2 + rustls client, the
//! header stack, the origin allowlist and classified errors.
//!
//! - [`envelope`]: the sans-IO Connect framing (`[flags][u32 length][payload]`), gzip,
//!   end-of-stream JSON and the sixteen Connect [`envelope::Code`]s.
//! - [`Client`]: HTTP/2 connections per [`Origin`] (TLS with ALPN `h2`, or h2c for
//!   loopback tests), many streams on each and another connection when the server's stream
//!   limit is reached, PING keepalive, a new connection after GOAWAY.
//!   Calls: [`Client::bidi`] ([`BidiCall`]), [`Client::unary`] and [`Client::send_http`].
//! - [`headers`]: the CLI identity (AgentService/Run, catalog) and the IDE identity
//!   (RunInference, with `x-cursor-checksum`); the only code that reads an [`AccessToken`].
//! - [`origin`]: the allowlist; an [`Origin`] off the list cannot be built.
//! - [`CursorError`]: every failure, with its [`kind`](cursor_proto::ir::Classify::kind) (auth, network, protocol
//!   drift, remote refusal, local) and a typed [`next_step`](cursor_proto::ir::Classify::next_step) for the user.
//! - `testing` (feature): a scriptable loopback Connect server for the crates above.
//!
//! ## Example
//!
//! A bidi call against the loopback test server (feature `testing`):
//!
//! ```
//! # #[cfg(feature = "testing")]
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use cursor_transport::{
//!     AccessToken, Classify as _, CallKind, CliIdentity, Client, RequestHeaders, RequestId,
//!     envelope::{Code, ConnectError},
//!     testing::TestServer,
//! };
//!
//! let mut server = TestServer::start().await?;
//! let client = Client::new()?;
//!
//! // The header builder is the only code that reads the token.
//! let headers = RequestHeaders::cli(
//!     &AccessToken::new("access-token"),
//!     &CliIdentity::new("cli-2026.09.02-fa0c06e"),
//!     CallKind::Stream,
//!     &RequestId::generate()?,
//! )?;
//! let mut call = client.bidi(&server.origin(), "/agent.v1.AgentService/Run", headers).await?;
//! call.send(b"request bytes").await?;
//!
//! // The server side, scripted.
//! let mut incoming = server.accept().await.expect("the call arrives");
//! assert_eq!(incoming.header("x-cursor-client-type"), Some("cli"));
//! assert_eq!(incoming.recv().await?.as_deref(), Some(b"request bytes".as_slice()));
//! incoming.send(b"reply bytes").await?;
//! incoming.finish_error(ConnectError::new(Code::ResourceExhausted, "usage limit reached")).await?;
//!
//! // The client side: messages, then the classified end-of-stream error.
//! assert_eq!(call.recv().await?.as_deref(), Some(b"reply bytes".as_slice()));
//! let err = call.recv().await.unwrap_err();
//! assert_eq!(err.kind(), cursor_proto::ir::ErrorKind::RemoteRefusal);
//! assert_eq!(err.refusal(), Some(cursor_transport::Refusal::Quota));
//! println!("{err} — next step: {}", err.next_step());
//! # Ok(())
//! # }
//! # #[cfg(not(feature = "testing"))]
//! # fn main() {}
//! ```
//!
//! ## Runtime
//!
//! The client needs a tokio runtime: it spawns one driver task and one keepalive task per
//! connection. The envelope codec, headers, origins and errors need no runtime.
#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(feature = "client")]
mod auth;
#[cfg(feature = "client")]
#[cfg_attr(docsrs, doc(cfg(feature = "client")))]
pub mod client;
pub mod envelope;
pub mod error;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
pub mod headers;
pub mod origin;
// The crate's own unit tests use the server too, whatever features `cargo test` was given.
#[cfg(any(feature = "testing", all(test, feature = "client")))]
#[cfg_attr(docsrs, doc(cfg(feature = "testing")))]
pub mod testing;

#[cfg(feature = "client")]
pub use auth::TokioClock;
#[cfg(feature = "client")]
pub use client::{BidiCall, Client, ClientConfig};
/// How every error of the family is classified ([`CursorError`] implements it), so a caller
/// reads `kind()` and `next_step()` with this crate alone.
pub use cursor_proto::ir::{Classify, ErrorKind, NextStep};
pub use error::{CursorError, Refusal};
pub use headers::{AccessToken, CallKind, CliIdentity, IdeIdentity, RequestHeaders, RequestId};
pub use origin::Origin;
