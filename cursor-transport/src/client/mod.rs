//! The Connect client over HTTP/2: a few connections per origin, many streams on each.

mod bidi;
pub(crate) mod body;
mod connection;
pub mod drive;
mod h2_error;
pub(crate) mod http1;
mod tls;
#[cfg(test)]
mod tls_loopback_tests;

use std::{sync::Arc, time::Duration};

use bytes::Bytes;
use http::{Method, Request, Response};

pub use bidi::BidiCall;

use crate::{
    envelope::{DEFAULT_MAX_MESSAGE_SIZE, compression},
    error::CursorError,
    headers::{CONTENT_TYPE_STREAM, CONTENT_TYPE_UNARY, RequestHeaders},
    origin::Origin,
};
use connection::Pool;

/// The one RPC whose frames must never be compressed: the agent host ignores gzip there
/// and the turn parks (PROTOCOL-AGENT §1).
pub const AGENT_RUN_PATH: &str = "/agent.v1.AgentService/Run";

/// The Run's server half over HTTP/1.1: a server stream opened with a `BidiRequestId`
/// (docs/PROTOCOL-AGENT.md §13.8).
pub const AGENT_RUN_SSE_PATH: &str = "/agent.v1.AgentService/RunSSE";

/// The Run's client half over HTTP/1.1: one unary `BidiAppendRequest` per client message
/// (docs/PROTOCOL-AGENT.md §13.8).
pub const BIDI_APPEND_PATH: &str = "/aiserver.v1.BidiService/BidiAppend";

/// Tunables of a [`Client`].
#[non_exhaustive]
#[derive(Clone, Debug)]
pub struct ClientConfig {
    /// Interval of HTTP/2 PINGs while a stream is open (20 s).
    pub ping_interval: Duration,
    /// How long a PING may wait for its PONG before the connection counts as dead (20 s).
    pub ping_timeout: Duration,
    /// Bound on TCP connect and on the TLS handshake (10 s).
    pub connect_timeout: Duration,
    /// Bound on a whole unary call or plain HTTP request (60 s). Streams have no overall
    /// deadline here: their watchdogs belong to the layer that knows the protocol.
    pub request_timeout: Duration,
    /// Bound on one message or response body (16 MiB).
    pub max_message_size: usize,
    /// Most HTTP/2 connections kept to one origin (8; 0 counts as 1). A stream goes to a
    /// pooled connection with a free slot under the server's `SETTINGS_MAX_CONCURRENT_STREAMS`,
    /// else to a newly dialed one; when this many are all full, opening a stream fails at once
    /// with a network error instead of waiting for a slot. Connections retired after GOAWAY
    /// do not count: their open streams finish outside the pool.
    pub max_connections_per_origin: usize,
    /// Whether an agent Run ([`AGENT_RUN_PATH`]) whose HTTP/2 stream is refused with HTTP
    /// 421, 464 or `HTTP_1_1_REQUIRED` moves to the Run's HTTP/1.1 form, RunSSE plus
    /// BidiAppend ([`AGENT_RUN_SSE_PATH`], [`BIDI_APPEND_PATH`]; true). Such a refusal proves
    /// no Run started; a timeout or a lost connection never falls back (the Run may have
    /// started). The client then remembers the origin and opens its later Runs over HTTP/1.1
    /// directly. docs/PROTOCOL-AGENT.md §13.8.
    pub http1_fallback: bool,
}

impl Default for ClientConfig {
    fn default() -> Self {
        Self {
            ping_interval: Duration::from_secs(20),
            ping_timeout: Duration::from_secs(20),
            connect_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(60),
            max_message_size: DEFAULT_MAX_MESSAGE_SIZE,
            max_connections_per_origin: 8,
            http1_fallback: true,
        }
    }
}

/// A Connect client. Cheap to clone; clones share connections.
///
/// Every call names an allowlisted [`Origin`]; the client multiplexes streams on an HTTP/2
/// connection to it (TLS with ALPN `h2`, or h2c with prior knowledge for loopback). When the
/// server's `SETTINGS_MAX_CONCURRENT_STREAMS` is reached, a new stream goes to another
/// connection, up to [`ClientConfig::max_connections_per_origin`]; past that, opening fails
/// at once with a network error rather than waiting for a slot. An extra connection closes
/// once it is idle and another has room. After the server sends GOAWAY, new calls go to
/// another connection while streams already open finish on the old one; no call is ever
/// replayed.
///
/// Must be used inside a tokio runtime (it spawns the connection tasks).
#[derive(Clone, Debug)]
pub struct Client {
    pool: Arc<Pool>,
}

impl Client {
    /// A client with the default configuration.
    pub fn new() -> Result<Self, CursorError> {
        Self::with_config(ClientConfig::default())
    }

    /// A client with `config`.
    pub fn with_config(config: ClientConfig) -> Result<Self, CursorError> {
        let tls = tls::client_config()?;
        let tls_http1 = tls::client_config_http1()?;
        Ok(Self {
            pool: Arc::new(Pool::new(config, tls, tls_http1)),
        })
    }

    /// The configuration.
    pub fn config(&self) -> &ClientConfig {
        self.pool.config()
    }

    /// How HTTP/1.1 connections for the Run's fallback are dialed.
    fn http1_dialer(&self) -> http1::Dialer {
        http1::Dialer::new(self.config(), self.pool.tls_http1())
    }

    /// Opens a streaming call to `path` on `origin`.
    ///
    /// Returns once the request head is sent; the response head is awaited by the first
    /// [`BidiCall::recv`] (so a 401 surfaces there). Message compression follows the
    /// `connect-content-encoding` of `headers`, except on [`AGENT_RUN_PATH`], which is always
    /// sent uncompressed.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future before it resolves abandons the request; once it resolved, the
    /// [`BidiCall`] owns the stream (dropping it resets the stream).
    pub async fn bidi(
        &self,
        origin: &Origin,
        path: &str,
        headers: RequestHeaders,
    ) -> Result<BidiCall, CursorError> {
        let mut headers = headers;
        if path == AGENT_RUN_PATH {
            headers.remove("connect-content-encoding");
        }
        let compression = headers.request_compression()?;
        let template = RequestTemplate::new(origin, path, headers, CONTENT_TYPE_STREAM)?;
        let max = self.config().max_message_size;
        let fallback = path == AGENT_RUN_PATH && self.config().http1_fallback;
        if fallback && self.pool.prefers_http1(origin) {
            let run = http1::Http1Run::open(self.http1_dialer(), origin, &template.headers).await?;
            return Ok(BidiCall::over_http1(run, max));
        }
        let opened = self.pool.open(origin, || template.build(), false).await?;
        let call = BidiCall::new(opened.response, opened.send, opened.guard, compression, max);
        if !fallback {
            return Ok(call);
        }
        Ok(call.with_fallback(bidi::Fallback {
            pool: Arc::clone(&self.pool),
            dialer: self.http1_dialer(),
            origin: origin.clone(),
            headers: template.headers.clone(),
            sent: Vec::new(),
        }))
    }

    /// A unary Connect call: `body` is the serialized request, the result the serialized
    /// response. A non-200 answer is classified from its status and JSON body.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future resets the request's stream; the server may or may not have acted
    /// on it.
    pub async fn unary(
        &self,
        origin: &Origin,
        path: &str,
        headers: RequestHeaders,
        body: Bytes,
    ) -> Result<Bytes, CursorError> {
        let template = RequestTemplate::new(origin, path, headers, CONTENT_TYPE_UNARY)?;
        let response = self.exchange(origin, &|| template.build(), body).await?;
        let (parts, body) = response.into_parts();
        if parts.status != http::StatusCode::OK {
            return Err(body::status_error_from_body(
                parts.status.as_u16(),
                &parts.headers,
                &body,
            ));
        }
        let media_type = body::media_type(&parts.headers);
        if media_type != CONTENT_TYPE_UNARY {
            return Err(CursorError::drift(format!(
                "unary response has content type {media_type:?}, expected {CONTENT_TYPE_UNARY}"
            )));
        }
        match parts
            .headers
            .get(http::header::CONTENT_ENCODING)
            .map(|v| v.as_bytes())
        {
            None | Some(b"identity") => Ok(body),
            Some(b"gzip") => Ok(compression::gunzip(&body, self.config().max_message_size)?),
            Some(other) => Err(CursorError::drift(format!(
                "unsupported content-encoding {:?}",
                String::from_utf8_lossy(other)
            ))),
        }
    }

    /// A unary call with prost messages on both sides.
    ///
    /// # Cancel safety
    ///
    /// As for [`unary`](Self::unary).
    pub async fn unary_message<Req, Resp>(
        &self,
        origin: &Origin,
        path: &str,
        headers: RequestHeaders,
        request: &Req,
    ) -> Result<Resp, CursorError>
    where
        Req: prost::Message,
        Resp: prost::Message + Default,
    {
        let bytes = self
            .unary(origin, path, headers, Bytes::from(request.encode_to_vec()))
            .await?;
        Resp::decode(bytes)
            .map_err(|err| CursorError::drift(format!("response does not decode: {err}")))
    }

    /// A plain HTTP/2 request and its whole response, for endpoints outside Connect (login,
    /// token refresh). The URI must be absolute and on the allowlist. The status is returned
    /// as is: only transport failures are errors.
    ///
    /// # Cancel safety
    ///
    /// As for [`unary`](Self::unary).
    pub async fn send_http(&self, request: Request<Bytes>) -> Result<Response<Bytes>, CursorError> {
        let origin = Origin::from_uri(request.uri())?;
        let (parts, body) = request.into_parts();
        let build = || {
            let mut request = Request::new(());
            *request.method_mut() = parts.method.clone();
            *request.uri_mut() = parts.uri.clone();
            *request.headers_mut() = parts.headers.clone();
            request
        };
        self.exchange(&origin, &build, body).await
    }

    /// Sends one request with a whole body and reads the whole response, within the timeout.
    async fn exchange(
        &self,
        origin: &Origin,
        build: &(dyn Fn() -> Request<()> + Sync),
        body: Bytes,
    ) -> Result<Response<Bytes>, CursorError> {
        let max = self.config().max_message_size;
        let exchange = async {
            let end_now = body.is_empty();
            let opened = self.pool.open(origin, build, end_now).await?;
            let mut dead = opened.guard.dead_signal();
            let mut send = opened.send;
            if !end_now {
                body::send_all(&mut send, body, true)
                    .await
                    .map_err(|err| h2_error::network("sending", err))?;
            }
            let response = tokio::select! {
                biased;
                response = opened.response => response.map_err(|err| h2_error::network("awaiting the response", err))?,
                _ = dead.wait_for(Option::is_some) => {
                    return Err(CursorError::network_msg("connection died before the response"));
                }
            };
            let (parts, mut recv) = response.into_parts();
            let bytes = body::read_to_end(&mut recv, &mut dead, max).await?;
            drop(opened.guard);
            Ok(Response::from_parts(parts, bytes))
        };
        tokio::time::timeout(self.config().request_timeout, exchange)
            .await
            .map_err(|_| CursorError::network_msg(format!("request to {origin} timed out")))?
    }
}

/// What is needed to rebuild a request head if the first connection refuses it.
struct RequestTemplate {
    uri: http::Uri,
    headers: http::HeaderMap,
}

impl RequestTemplate {
    fn new(
        origin: &Origin,
        path: &str,
        headers: RequestHeaders,
        content_type: &str,
    ) -> Result<Self, CursorError> {
        let uri = origin.uri(path)?;
        let mut headers = headers;
        if !headers.contains("content-type") {
            headers.insert("content-type", content_type)?;
        }
        if !headers.contains("connect-protocol-version") {
            headers.insert("connect-protocol-version", "1")?;
        }
        if content_type == CONTENT_TYPE_STREAM && !headers.contains("te") {
            headers.insert("te", "trailers")?;
        }
        Ok(Self {
            uri,
            headers: headers.into_map(),
        })
    }

    fn build(&self) -> Request<()> {
        let mut request = Request::new(());
        *request.method_mut() = Method::POST;
        *request.uri_mut() = self.uri.clone();
        *request.headers_mut() = self.headers.clone();
        request
    }
}
