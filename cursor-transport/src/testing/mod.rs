//! A scriptable loopback Connect server for tests (feature `testing`).
//!
//! [`TestServer`] listens on `127.0.0.1` on a random port and speaks HTTP/2 with prior
//! knowledge (h2c). Each streaming call a client opens arrives through
//! [`TestServer::accept`] as a [`ServerCall`], which the test scripts step by step: read the
//! client's decoded messages, send messages or raw bytes, end with OK or an error, or
//! misbehave (sever the connection, reset the stream, send GOAWAY, stall). Unary and plain
//! HTTP requests can be answered by a handler closure instead
//! ([`TestServerBuilder::handler`]); with a handler, a connection that opens without the
//! HTTP/2 preface is served as HTTP/1.1 (unary requests to the handler, keep-alive; a
//! streaming request gets 505), as Cursor's unary endpoints answer both.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use cursor_transport::{Client, RequestHeaders, testing::TestServer};
//!
//! let mut server = TestServer::start().await?;
//! let client = Client::new()?;
//! let mut call = client.bidi(&server.origin(), "/echo.v1.Echo/Chat", RequestHeaders::new()).await?;
//! call.send(b"ping").await?;
//! call.close_send()?;
//!
//! let mut incoming = server.accept().await.expect("a call");
//! assert_eq!(incoming.path(), "/echo.v1.Echo/Chat");
//! let ping = incoming.recv().await?.expect("a message");
//! incoming.send(&[b"echo:".as_slice(), &ping].concat()).await?;
//! incoming.finish_ok().await?;
//!
//! assert_eq!(call.recv().await?.as_deref(), Some(b"echo:ping".as_slice()));
//! assert_eq!(call.recv().await?, None);
//! # Ok(())
//! # }
//! ```

mod call;
mod error;
mod http1;
mod server;

use std::sync::Arc;

use bytes::Bytes;
use http::{Request, Response};

pub use call::ServerCall;
pub use error::ServerError;
pub use server::{H2Refusal, TestServer, TestServerBuilder};

/// Answers a non-streaming request (unary Connect or plain HTTP) with a whole response.
// Here rather than in `server`: the HTTP/1.1 side (`http1`) serves requests with it too, and
// `server` hands connections to `http1`, so `http1` must not need `server`.
pub type Handler = Arc<dyn Fn(Request<Bytes>) -> Response<Bytes> + Send + Sync>;

/// HTTP/2 error code `CANCEL`, which the client sends when a call is dropped or canceled.
pub const REASON_CANCEL: u32 = 0x8;

/// HTTP/2 error code `INTERNAL_ERROR`.
pub const REASON_INTERNAL_ERROR: u32 = 0x2;
