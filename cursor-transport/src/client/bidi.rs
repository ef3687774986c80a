//! A bidirectional streaming Connect call.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use h2::client::ResponseFuture;
use http::HeaderMap;

use super::http1::{Dialer, Http1Run};
use super::{body, connection::DeadSignal, connection::Pool, connection::StreamGuard, h2_error};
use crate::origin::Origin;
use crate::{
    envelope::{Compression, Decoder, Encoder, EndStream, Frame},
    error::CursorError,
    headers::CONTENT_TYPE_STREAM,
};

/// The two ways to read a call's body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Reading {
    /// Whole messages, decoded by the call (`recv`).
    Messages,
    /// Raw body chunks, framed by the caller (`recv_data`).
    Chunks,
}

/// A non-200 response head and what its body said so far.
#[derive(Debug)]
struct Refused {
    status: u16,
    headers: HeaderMap,
    body: h2::RecvStream,
    text: BytesMut,
}

/// How long a failed send waits for the response that may explain the failure (a 401, say).
const EXPLAIN_SEND_FAILURE: Duration = Duration::from_millis(500);

/// How long a stream that lost its connection waits to learn whether a GOAWAY asked for
/// HTTP/1.1.
const GOAWAY_GRACE: Duration = Duration::from_millis(100);

/// Where a call stands, as `recv` and `send` see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CallState {
    Open,
    /// The server ended the stream successfully.
    Ended,
    /// `recv` returned an error; the stream was reset.
    Failed,
    /// This client canceled the call.
    Canceled,
}

/// What a Run needs to move to HTTP/1.1 if its HTTP/2 attempt is refused
/// (docs/PROTOCOL-AGENT.md §13.8).
pub(crate) struct Fallback {
    pub(crate) pool: Arc<Pool>,
    pub(crate) dialer: Dialer,
    pub(crate) origin: Origin,
    pub(crate) headers: HeaderMap,
    /// Messages sent before the response head, replayed as the first BidiAppends.
    pub(crate) sent: Vec<Bytes>,
}

impl std::fmt::Debug for Fallback {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fallback")
            .field("origin", &self.origin)
            .field("sent", &self.sent.len())
            .finish_non_exhaustive()
    }
}

/// The move to HTTP/1.1 under way: RunSSE sent and the kept messages appended. Kept in the
/// call so a dropped wait resumes it rather than losing it.
struct Switching(Pin<Box<dyn Future<Output = Result<Http1Run, CursorError>> + Send>>);

impl std::fmt::Debug for Switching {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Switching")
    }
}

/// Whether an HTTP/2 failure is the server asking for HTTP/1.1 (`HTTP_1_1_REQUIRED`, 0xd).
fn requires_http1(err: &h2::Error) -> bool {
    err.reason() == Some(h2::Reason::HTTP_1_1_REQUIRED)
}

/// Statuses that refuse the HTTP/2 request before anything ran: 421 Misdirected Request, and
/// 464, a load balancer's "incompatible protocol".
fn refuses_h2(status: u16) -> bool {
    status == 421 || status == 464
}

fn already_failed() -> CursorError {
    CursorError::invalid("the call already failed; its first error said why")
}

/// One bidi (or client/server streaming) Connect call.
///
/// Send with [`send`](Self::send) or [`send_message`](Self::send_message), half-close with
/// [`close_send`](Self::close_send), receive with [`recv`](Self::recv) until it returns
/// `Ok(None)` (success) or an error (an end-of-stream error arrives as
/// [`CursorError::Connect`]). Dropping the call, or [`cancel`](Self::cancel), resets the
/// HTTP/2 stream (`RST_STREAM CANCEL`) and frees it; the connection stays up.
#[derive(Debug)]
pub struct BidiCall {
    send: Option<h2::SendStream<Bytes>>,
    response: Option<ResponseFuture>,
    /// A non-200 response whose error body is being read (kept here so a cancelled read
    /// resumes where it stopped).
    refused: Option<Refused>,
    body: Option<h2::RecvStream>,
    headers: Option<HeaderMap>,
    decoder: Option<Decoder>,
    encoder: Encoder,
    end: Option<EndStream>,
    state: CallState,
    /// How the body is read: messages (`recv`) or raw chunks (`recv_data`), never both.
    reading: Option<Reading>,
    max_message_size: usize,
    dead: DeadSignal,
    /// Set on the Run path while an HTTP/1.1 fallback is still possible (before the head).
    fallback: Option<Fallback>,
    switching: Option<Switching>,
    /// The Run over HTTP/1.1 (RunSSE plus BidiAppend), once the call moved there.
    http1: Option<Box<Http1Run>>,
    _guard: Option<StreamGuard>,
}

impl BidiCall {
    pub(crate) fn new(
        response: ResponseFuture,
        send: h2::SendStream<Bytes>,
        guard: StreamGuard,
        compression: Compression,
        max_message_size: usize,
    ) -> Self {
        Self {
            send: Some(send),
            response: Some(response),
            refused: None,
            body: None,
            headers: None,
            decoder: None,
            encoder: Encoder::new(compression).with_max_message_size(max_message_size),
            end: None,
            state: CallState::Open,
            reading: None,
            max_message_size,
            dead: guard.dead_signal(),
            fallback: None,
            switching: None,
            http1: None,
            _guard: Some(guard),
        }
    }

    /// Lets the call move to HTTP/1.1 if the server refuses its HTTP/2 stream.
    pub(crate) fn with_fallback(mut self, fallback: Fallback) -> Self {
        self.fallback = Some(fallback);
        self
    }

    /// A Run over HTTP/1.1 from the start (the origin refused HTTP/2 before).
    pub(crate) fn over_http1(run: Http1Run, max_message_size: usize) -> Self {
        // Never awaited over HTTP/1.1: its own reads report a dead connection.
        let (_, dead) = tokio::sync::watch::channel(None);
        Self {
            send: None,
            response: None,
            refused: None,
            body: None,
            headers: None,
            decoder: None,
            encoder: Encoder::new(Compression::Identity).with_max_message_size(max_message_size),
            end: None,
            state: CallState::Open,
            reading: None,
            max_message_size,
            dead,
            fallback: None,
            switching: None,
            http1: Some(Box::new(run)),
            _guard: None,
        }
    }

    /// Whether the call runs over HTTP/1.1 (RunSSE plus BidiAppend) rather than HTTP/2.
    pub fn is_http1(&self) -> bool {
        self.http1.is_some() || self.switching.is_some()
    }

    /// Sends one message (already serialized protobuf bytes).
    ///
    /// # Cancel safety
    ///
    /// Not cancel-safe: a dropped send may have written part of the message, and the stream then
    /// carries a torn envelope. After dropping one, [`cancel`](Self::cancel) the call.
    pub async fn send(&mut self, message: &[u8]) -> Result<(), CursorError> {
        match self.state {
            CallState::Canceled => return Err(CursorError::Canceled),
            CallState::Failed => return Err(already_failed()),
            CallState::Open | CallState::Ended => {}
        }
        if let Some(switching) = self.switching.as_mut() {
            let run = switching.0.as_mut().await;
            self.switching = None;
            self.http1 = Some(Box::new(run?));
        }
        if let Some(run) = self.http1.as_mut() {
            // The server ended the Run; nothing reads appends any more.
            if self.state == CallState::Ended {
                return Ok(());
            }
            return run.append(message).await;
        }
        if let Some(fallback) = self.fallback.as_mut() {
            fallback.sent.push(Bytes::copy_from_slice(message));
        }
        let frame = self
            .encoder
            .encode_to_bytes(message)
            .map_err(CursorError::from)?;
        let Some(stream) = self.send.as_mut() else {
            return Err(CursorError::invalid(
                "send after close_send or the end of the call",
            ));
        };
        let result = tokio::select! {
            biased;
            result = body::send_all(stream, frame, false) => result,
            _ = self.dead.wait_for(Option::is_some) => {
                return Err(CursorError::network_msg("connection died while sending"));
            }
        };
        match result {
            Ok(()) => Ok(()),
            Err(err) => {
                let error = self.explain_send_failure(err).await;
                // Refused for HTTP/1.1: the message was kept and goes as a BidiAppend.
                if self.is_http1() { Ok(()) } else { Err(error) }
            }
        }
    }

    /// Serializes and sends one protobuf message.
    ///
    /// # Cancel safety
    ///
    /// As for [`send`](Self::send): not cancel-safe.
    pub async fn send_message<M: prost::Message>(
        &mut self,
        message: &M,
    ) -> Result<(), CursorError> {
        self.send(&message.encode_to_vec()).await
    }

    /// Half-closes: tells the server no more messages follow. Receiving goes on.
    pub fn close_send(&mut self) -> Result<(), CursorError> {
        // Over HTTP/1.1 the client half has no end: the server ends the Run.
        match self.send.as_mut() {
            Some(stream) => {
                let result = stream.send_data(Bytes::new(), true);
                self.send = None;
                result.map_err(|err| h2_error::network("half-closing", err))
            }
            None => Ok(()),
        }
    }

    /// The response headers, waiting for them if needed. A non-200 status is an error here.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: the response future and a refusal's partly read body stay in the call.
    pub async fn response_headers(&mut self) -> Result<&HeaderMap, CursorError> {
        self.ensure_open().await?;
        self.headers
            .as_ref()
            .ok_or_else(|| CursorError::invalid("the call has already failed"))
    }

    /// The next message, `Ok(None)` once the server ended the stream successfully.
    ///
    /// An error ends the call (the stream is reset unless the server already ended it); later
    /// calls return a local error rather than repeat it.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: received bytes wait in the call's decoder, so a dropped call loses no
    /// message (use it in `select!`).
    pub async fn recv(&mut self) -> Result<Option<Bytes>, CursorError> {
        self.read_as(Reading::Messages)?;
        if let Some(settled) = self.settled() {
            return settled;
        }
        let result = self.recv_inner().await;
        self.settle(&result);
        result
    }

    /// Reads and drops the rest of the body, the way the call read it so far (messages or
    /// chunks), until the server ends the stream or the call fails.
    pub(crate) async fn discard_rest(&mut self) {
        if self.reading == Some(Reading::Messages) {
            while let Ok(Some(_)) = self.recv().await {}
        } else {
            while let Ok(Some(_)) = self.recv_data().await {}
        }
    }

    /// Holds the call to one way of reading its body: a chunk read raw is gone from the
    /// message decoder, so mixing the two would lose or split frames.
    fn read_as(&mut self, reading: Reading) -> Result<(), CursorError> {
        match self.reading {
            Some(current) if current != reading => Err(CursorError::invalid(match reading {
                Reading::Messages => "recv after recv_data on one call (use one or the other)",
                Reading::Chunks => "recv_data after recv on one call (use one or the other)",
            })),
            _ => {
                self.reading = Some(reading);
                Ok(())
            }
        }
    }

    /// What a receive returns once the call is over, `None` while it is open.
    fn settled(&self) -> Option<Result<Option<Bytes>, CursorError>> {
        match self.state {
            CallState::Open => None,
            CallState::Ended => Some(Ok(None)),
            CallState::Failed => Some(Err(already_failed())),
            CallState::Canceled => Some(Err(CursorError::Canceled)),
        }
    }

    /// Records how a receive ended the call, if it did: the end, or a failure (stream reset).
    fn settle(&mut self, result: &Result<Option<Bytes>, CursorError>) {
        match result {
            Ok(Some(_)) => {}
            Ok(None) => self.state = CallState::Ended,
            Err(_) => {
                self.abandon();
                self.state = CallState::Failed;
            }
        }
    }

    /// The response body's next chunk as it arrived (one HTTP/2 DATA frame's bytes), its
    /// Connect envelopes not taken apart: for callers that frame the body themselves
    /// (cursor-agent's `AgentRun::handle_server_data`) rather than receive messages with
    /// [`recv`](Self::recv). `Ok(None)` once the body ended; how the call ended is in the body's
    /// end-of-stream frame, which such a caller reads itself (a body that ends without one is
    /// protocol drift). Use either `recv` or `recv_data` on one call, not both.
    ///
    /// Like `recv`, an error ends the call.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: a chunk is returned in the poll that takes it from the stream; the response
    /// head wait is cancel-safe too.
    pub async fn recv_data(&mut self) -> Result<Option<Bytes>, CursorError> {
        self.read_as(Reading::Chunks)?;
        if let Some(settled) = self.settled() {
            return settled;
        }
        let result = match self.ensure_open().await {
            Ok(()) => self.next_body_chunk().await,
            Err(error) => Err(error),
        };
        self.settle(&result);
        result
    }

    /// The response's `connect-content-encoding`, once its head arrived and while the call
    /// has not failed: what compressed frames of the body are compressed with (for callers of
    /// [`recv_data`](Self::recv_data)).
    pub fn response_compression(&self) -> Option<Compression> {
        self.decoder.as_ref().map(Decoder::compression)
    }

    /// The largest message this call accepts (the client's
    /// [`max_message_size`](super::ClientConfig::max_message_size)), for callers that frame the
    /// body themselves.
    pub fn max_message_size(&self) -> usize {
        self.max_message_size
    }

    /// Receives and decodes the next protobuf message.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe, as [`recv`](Self::recv).
    pub async fn recv_message<M: prost::Message + Default>(
        &mut self,
    ) -> Result<Option<M>, CursorError> {
        match self.recv().await? {
            None => Ok(None),
            Some(bytes) => M::decode(bytes)
                .map(Some)
                .map_err(|err| CursorError::drift(format!("message does not decode: {err}"))),
        }
    }

    /// The end-of-stream frame, once received: trailing metadata and any error.
    pub fn end_stream(&self) -> Option<&EndStream> {
        self.end.as_ref()
    }

    /// Cancels the call: resets the HTTP/2 stream so the server sees the cancel and the stream
    /// is freed. Later `recv` and `send` calls report [`CursorError::Canceled`].
    pub fn cancel(&mut self) {
        // Over HTTP/1.1 closing the RunSSE connection (in `abandon`) is the cancel.
        if let Some(stream) = self.send.as_mut() {
            stream.send_reset(h2::Reason::CANCEL);
        }
        self.abandon();
        self.state = CallState::Canceled;
    }

    async fn recv_inner(&mut self) -> Result<Option<Bytes>, CursorError> {
        self.ensure_open().await?;
        loop {
            let decoder = self.decoder.as_mut().ok_or(CursorError::Canceled)?;
            if let Some(frame) = decoder.next_frame()? {
                return match frame {
                    Frame::Message(bytes) => Ok(Some(bytes)),
                    Frame::End(end) => {
                        let error = end.error.clone();
                        self.end = Some(end);
                        match error {
                            Some(error) => Err(CursorError::connect(error, None)),
                            None => Ok(None),
                        }
                    }
                };
            }
            let chunk = match (self.http1.as_mut(), self.body.as_mut()) {
                (Some(run), _) => run.next_chunk().await?,
                (None, Some(body)) => body::next_chunk(body, &mut self.dead).await?,
                (None, None) => return Err(CursorError::Canceled),
            };
            match chunk {
                Some(chunk) => decoder.push_bytes(chunk),
                None => {
                    decoder.finish()?;
                    return Err(CursorError::drift(
                        "the stream ended without an end-of-stream frame",
                    ));
                }
            }
        }
    }

    /// Awaits the response head once and checks it: 200, a Connect streaming content type,
    /// a supported encoding. Anything else is classified from status and body.
    ///
    /// Cancel-safe: the response future and a refusal's partly read body stay in `self`
    /// across every await, so a dropped wait loses nothing.
    async fn ensure_open(&mut self) -> Result<(), CursorError> {
        if self.headers.is_some() {
            return Ok(());
        }
        if let Some(switching) = self.switching.as_mut() {
            let run = switching.0.as_mut().await;
            self.switching = None;
            self.http1 = Some(Box::new(run?));
        }
        if let Some(run) = self.http1.as_mut() {
            let headers = run.head().await?;
            let compression = check_head(&headers)?;
            self.decoder =
                Some(Decoder::new(compression).with_max_message_size(self.max_message_size));
            self.headers = Some(headers);
            return Ok(());
        }
        if self.refused.is_none() {
            let pending = self.response.as_mut().ok_or(CursorError::Canceled)?;
            // `None`: refused with HTTP_1_1_REQUIRED, by the stream or the whole connection.
            let response = tokio::select! {
                biased;
                response = pending => response.map_err(|err| {
                    (!requires_http1(&err)).then(|| h2_error::network("awaiting the response", err))
                }),
                dead = self.dead.wait_for(Option::is_some) => {
                    let reason = dead
                        .ok()
                        .and_then(|reason| reason.as_deref().map(str::to_owned))
                        .unwrap_or_default();
                    Err((!reason.contains("HTTP_1_1_REQUIRED"))
                        .then(|| CursorError::network_msg("connection died before the response")))
                }
            };
            self.response = None;
            let response = match response {
                Ok(response) => response,
                // A GOAWAY(HTTP_1_1_REQUIRED) can reach this stream as the lost connection it
                // was followed by; the connection's own end says which.
                Err(Some(error)) if self.fallback.is_some() && self.goaway_wants_http1().await => {
                    return self.fall_back(error).await;
                }
                Err(Some(error)) => return Err(error),
                Err(None) => {
                    return self
                        .fall_back(CursorError::network_msg(
                            "the server requires HTTP/1.1 (HTTP_1_1_REQUIRED) and \
                             ClientConfig::http1_fallback is off",
                        ))
                        .await;
                }
            };
            let (parts, body) = response.into_parts();
            if refuses_h2(parts.status.as_u16()) && self.fallback.is_some() {
                let status = parts.status.as_u16();
                return self
                    .fall_back(CursorError::network_msg(format!("HTTP {status}")))
                    .await;
            }
            // The head settles the protocol: nothing more to keep for a replay.
            self.fallback = None;
            if parts.status != http::StatusCode::OK {
                self.refused = Some(Refused {
                    status: parts.status.as_u16(),
                    headers: parts.headers,
                    body,
                    text: BytesMut::new(),
                });
            } else {
                return self.accept_head(parts.headers, body);
            }
        }
        let refused = self.refused.as_mut().ok_or(CursorError::Canceled)?;
        // Read what the refusal says (bounded); a broken body still leaves the status.
        while refused.text.len() < body::MAX_ERROR_BODY {
            match body::next_chunk(&mut refused.body, &mut self.dead).await {
                Ok(Some(chunk)) => refused.text.extend_from_slice(&chunk),
                Ok(None) | Err(_) => break,
            }
        }
        let refused = self.refused.take().ok_or(CursorError::Canceled)?;
        let text = &refused.text[..refused.text.len().min(body::MAX_ERROR_BODY)];
        Err(body::status_error_from_body(
            refused.status,
            &refused.headers,
            text,
        ))
    }

    /// Moves the Run to HTTP/1.1 after its HTTP/2 stream was refused before it started;
    /// `error` when no fallback is allowed. Cancel-safe: the move lives in `self.switching`.
    async fn fall_back(&mut self, error: CursorError) -> Result<(), CursorError> {
        let Some(fallback) = self.fallback.take() else {
            return Err(error);
        };
        self.send = None;
        self.body = None;
        self.refused = None;
        self._guard = None;
        fallback.pool.prefer_http1(&fallback.origin);
        tracing::info!(origin = %fallback.origin, "HTTP/2 refused; the Run goes over HTTP/1.1 (RunSSE + BidiAppend)");
        let Fallback {
            dialer,
            origin,
            headers,
            sent,
            ..
        } = fallback;
        self.switching = Some(Switching(Box::pin(async move {
            let mut run = Http1Run::open(dialer, &origin, &headers).await?;
            for message in &sent {
                run.append(message).await?;
            }
            Ok(run)
        })));
        Box::pin(self.ensure_open()).await
    }

    /// Whether the connection ended with GOAWAY `HTTP_1_1_REQUIRED` (waiting briefly for its
    /// end to be recorded).
    async fn goaway_wants_http1(&mut self) -> bool {
        let ended = tokio::time::timeout(GOAWAY_GRACE, self.dead.wait_for(Option::is_some)).await;
        matches!(ended, Ok(Ok(reason)) if reason.as_deref().is_some_and(|r| r.contains("HTTP_1_1_REQUIRED")))
    }

    /// The next raw body chunk, from whichever protocol carries the call.
    async fn next_body_chunk(&mut self) -> Result<Option<Bytes>, CursorError> {
        match (self.http1.as_mut(), self.body.as_mut()) {
            (Some(run), _) => run.next_chunk().await,
            (None, Some(body)) => body::next_chunk(body, &mut self.dead).await,
            (None, None) => Err(CursorError::Canceled),
        }
    }

    /// Checks a 200 head and starts reading its body.
    fn accept_head(&mut self, headers: HeaderMap, body: h2::RecvStream) -> Result<(), CursorError> {
        let compression = check_head(&headers)?;
        self.decoder = Some(Decoder::new(compression).with_max_message_size(self.max_message_size));
        self.body = Some(body);
        self.headers = Some(headers);
        Ok(())
    }

    /// A send failed; if the server already answered (a 401, a reset with a reason), that
    /// answer is the better error.
    async fn explain_send_failure(&mut self, err: h2::Error) -> CursorError {
        let fallback = h2_error::network("sending", err);
        if self.headers.is_some() {
            return fallback;
        }
        match tokio::time::timeout(EXPLAIN_SEND_FAILURE, self.ensure_open()).await {
            Ok(Err(explained)) => explained,
            _ => fallback,
        }
    }

    /// Stops using the stream; dropping the h2 handles resets it if still open (over
    /// HTTP/1.1, dropping the RunSSE connection closes it).
    fn abandon(&mut self) {
        self.http1 = None;
        self.switching = None;
        self.fallback = None;
        self.send = None;
        self.body = None;
        self.response = None;
        self.refused = None;
        self.decoder = None;
    }
}

/// Checks a 200 streaming head: a Connect streaming content type and a supported encoding.
fn check_head(headers: &HeaderMap) -> Result<Compression, CursorError> {
    let media_type = body::media_type(headers);
    if media_type != CONTENT_TYPE_STREAM {
        return Err(CursorError::drift(format!(
            "streaming response has content type {media_type:?}, expected {CONTENT_TYPE_STREAM}"
        )));
    }
    match headers.get("connect-content-encoding") {
        None => Ok(Compression::Identity),
        Some(value) => value
            .to_str()
            .ok()
            .and_then(Compression::from_header_value)
            .ok_or_else(|| {
                CursorError::drift(format!("unsupported connect-content-encoding {value:?}"))
            }),
    }
}
