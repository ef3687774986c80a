//! One scripted call on the server side.

use bytes::{Bytes, BytesMut};
use futures::future::poll_fn;
use http::{HeaderMap, Request, Response, StatusCode};
use tokio::sync::mpsc;

use super::ServerError;
use crate::{
    envelope::{Compression, ConnectError, Decoder, Encoder, EndStream, Frame},
    headers::{CONTENT_TYPE_STREAM, CONTENT_TYPE_UNARY},
};

/// What a script can ask of the connection a call arrived on.
#[derive(Debug)]
pub(crate) enum ConnCommand {
    GoAway(tokio::sync::oneshot::Sender<()>),
    GoAwayWithError,
    GoAwayHttp11Required,
    Sever,
    Stall,
}

/// How a call reaches its client.
#[derive(Debug)]
enum Wire {
    /// One HTTP/2 stream.
    H2 {
        body: h2::RecvStream,
        respond: Option<h2::server::SendResponse<Bytes>>,
        send: Option<h2::SendStream<Bytes>>,
    },
    /// RunSSE and its BidiAppends over HTTP/1.1 (docs/PROTOCOL-AGENT.md §13.8).
    Http1(Http1Wire),
}

/// The server side of an emulated bidi call: client messages arrive whole from BidiAppend,
/// response parts go to the task writing the RunSSE connection.
#[derive(Debug)]
pub(crate) struct Http1Wire {
    pub(crate) body: Bytes,
    pub(crate) inbound: mpsc::UnboundedReceiver<Result<Bytes, ServerError>>,
    pub(crate) out: mpsc::UnboundedSender<Http1Out>,
    pub(crate) started: bool,
    /// Set when the client closed the RunSSE connection.
    pub(crate) gone: tokio::sync::watch::Receiver<bool>,
}

/// What the RunSSE writer puts on the wire.
#[derive(Debug)]
pub(crate) enum Http1Out {
    /// A 200 streaming head (chunked), with the Connect encoding if any.
    Head(Option<&'static str>),
    /// Body bytes, one chunk.
    Data(Bytes),
    /// The terminating chunk; the connection then closes.
    End,
    /// A whole response of any status; the connection then closes.
    Whole {
        status: u16,
        content_type: String,
        body: Bytes,
    },
    /// Close the socket without ending the body (a reset or a severed connection).
    Abort,
}

/// A call a client opened, for the test to script.
///
/// Responses start lazily: the first [`send`](Self::send) sends a 200 head with the Connect
/// streaming content type (and `connect-content-encoding: gzip` after
/// [`set_compression`](Self::set_compression)). [`respond`](Self::respond) answers with any
/// status instead.
#[derive(Debug)]
pub struct ServerCall {
    method: http::Method,
    path: String,
    headers: HeaderMap,
    wire: Wire,
    decoder: Decoder,
    compression: Compression,
    commands: mpsc::UnboundedSender<ConnCommand>,
}

impl ServerCall {
    pub(crate) fn new(
        request: Request<h2::RecvStream>,
        respond: h2::server::SendResponse<Bytes>,
        commands: mpsc::UnboundedSender<ConnCommand>,
    ) -> Self {
        let (parts, body) = request.into_parts();
        let request_compression = parts
            .headers
            .get("connect-content-encoding")
            .and_then(|v| v.to_str().ok())
            .and_then(Compression::from_header_value)
            .unwrap_or_default();
        Self {
            method: parts.method,
            path: parts.uri.path().to_owned(),
            headers: parts.headers,
            wire: Wire::H2 {
                body,
                respond: Some(respond),
                send: None,
            },
            decoder: Decoder::new(request_compression),
            compression: Compression::Identity,
            commands,
        }
    }

    /// A call that arrived as RunSSE over HTTP/1.1; its client messages come from BidiAppend.
    pub(crate) fn http1(
        parts: http::request::Parts,
        wire: Http1Wire,
        commands: mpsc::UnboundedSender<ConnCommand>,
    ) -> Self {
        Self {
            method: parts.method,
            path: parts.uri.path().to_owned(),
            headers: parts.headers,
            wire: Wire::Http1(wire),
            decoder: Decoder::new(Compression::Identity),
            compression: Compression::Identity,
            commands,
        }
    }

    /// Whether the call arrived over HTTP/1.1 (RunSSE plus BidiAppend) rather than as an
    /// HTTP/2 stream.
    pub fn is_http1(&self) -> bool {
        matches!(self.wire, Wire::Http1(_))
    }

    /// The request method.
    pub fn method(&self) -> &http::Method {
        &self.method
    }

    /// The request path, for example `/agent.v1.AgentService/Run`.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The request headers.
    pub fn headers(&self) -> &HeaderMap {
        &self.headers
    }

    /// A request header as text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// Compresses outgoing messages of 1 KiB or more with gzip, announced in the response
    /// head. Must be called before the first send.
    pub fn set_compression(&mut self, compression: Compression) {
        self.compression = compression;
    }

    /// The next decoded client message; `Ok(None)` once the client half-closed.
    pub async fn recv(&mut self) -> Result<Option<Bytes>, ServerError> {
        let body = match &mut self.wire {
            Wire::H2 { body, .. } => body,
            Wire::Http1(wire) => return wire.inbound.recv().await.transpose(),
        };
        loop {
            if let Some(frame) = self.decoder.next_frame()? {
                return match frame {
                    Frame::Message(bytes) => Ok(Some(bytes)),
                    // Clients never send an end-of-stream frame.
                    Frame::End(_) => Err(ServerError::Misuse("client sent an end-of-stream frame")),
                };
            }
            match body.data().await {
                Some(Ok(chunk)) => {
                    let _ = body.flow_control().release_capacity(chunk.len());
                    self.decoder.push_bytes(chunk);
                }
                Some(Err(err)) => return Err(ServerError::from_h2(err)),
                None => {
                    self.decoder.finish()?;
                    return Ok(None);
                }
            }
        }
    }

    /// Receives and decodes the next protobuf message.
    pub async fn recv_message<M: prost::Message + Default>(
        &mut self,
    ) -> Result<Option<M>, ServerError> {
        match self.recv().await? {
            None => Ok(None),
            Some(bytes) => M::decode(bytes)
                .map(Some)
                .map_err(|_| ServerError::Misuse("message does not decode")),
        }
    }

    /// The whole request body, undecoded (for unary and plain HTTP requests).
    pub async fn read_body(&mut self) -> Result<Bytes, ServerError> {
        let body = match &mut self.wire {
            Wire::H2 { body, .. } => body,
            Wire::Http1(wire) => return Ok(wire.body.clone()),
        };
        let mut out = BytesMut::new();
        while let Some(chunk) = body.data().await {
            let chunk = chunk.map_err(ServerError::from_h2)?;
            let _ = body.flow_control().release_capacity(chunk.len());
            out.extend_from_slice(&chunk);
        }
        Ok(out.freeze())
    }

    /// Sends the 200 response head now (sending does it implicitly).
    pub fn send_headers(&mut self) -> Result<(), ServerError> {
        let encoding = self.compression.header_value();
        let (respond, send) = match &mut self.wire {
            Wire::H2 { respond, send, .. } => (respond, send),
            Wire::Http1(wire) => {
                if !wire.started {
                    wire.started = true;
                    let _ = wire.out.send(Http1Out::Head(encoding));
                }
                return Ok(());
            }
        };
        if send.is_some() {
            return Ok(());
        }
        let mut respond = respond
            .take()
            .ok_or(ServerError::Misuse("response already started"))?;
        let mut head = Response::builder()
            .status(StatusCode::OK)
            .header("content-type", CONTENT_TYPE_STREAM);
        if let Some(encoding) = encoding {
            head = head.header("connect-content-encoding", encoding);
        }
        let head = head
            .body(())
            .map_err(|_| ServerError::Misuse("invalid response head"))?;
        *send = Some(
            respond
                .send_response(head, false)
                .map_err(ServerError::from_h2)?,
        );
        Ok(())
    }

    /// Sends one message frame.
    pub async fn send(&mut self, message: &[u8]) -> Result<(), ServerError> {
        let frame = Encoder::new(self.compression).encode_to_bytes(message)?;
        self.send_raw(frame).await
    }

    /// Sends several message frames in one write, so they arrive in one DATA frame (as a
    /// server that batches its output sends them).
    pub async fn send_batch<'m>(
        &mut self,
        messages: impl IntoIterator<Item = &'m [u8]>,
    ) -> Result<(), ServerError> {
        let encoder = Encoder::new(self.compression);
        let mut batch = BytesMut::new();
        for message in messages {
            encoder.encode(message, &mut batch)?;
        }
        self.send_raw(batch.freeze()).await
    }

    /// Serializes and sends one protobuf message.
    pub async fn send_message<M: prost::Message>(
        &mut self,
        message: &M,
    ) -> Result<(), ServerError> {
        self.send(&message.encode_to_vec()).await
    }

    /// Sends raw bytes as response body: malformed frames, oversize headers, partial frames.
    pub async fn send_raw(&mut self, bytes: impl Into<Bytes>) -> Result<(), ServerError> {
        self.send_headers()?;
        let stream = match &mut self.wire {
            Wire::H2 { send, .. } => send
                .as_mut()
                .ok_or(ServerError::Misuse("response already ended"))?,
            Wire::Http1(wire) => return wire.push(Http1Out::Data(bytes.into())),
        };
        crate::client::body::send_all(stream, bytes.into(), false)
            .await
            .map_err(ServerError::from_h2)
    }

    /// Sends only an envelope header: `flags` and a declared length, no payload. With a length
    /// past the client's bound this is the oversize-frame attack; otherwise the frame is left
    /// partial until more bytes follow.
    pub async fn send_frame_header(
        &mut self,
        flags: u8,
        declared_len: u32,
    ) -> Result<(), ServerError> {
        let mut header = [0u8; crate::envelope::HEADER_LEN];
        header[0] = flags;
        header[1..].copy_from_slice(&declared_len.to_be_bytes());
        self.send_raw(Bytes::copy_from_slice(&header)).await
    }

    /// Ends the call successfully: an end-of-stream frame `{}` and END_STREAM.
    pub async fn finish_ok(self) -> Result<(), ServerError> {
        self.finish(EndStream::ok()).await
    }

    /// Ends the call with a Connect error in the end-of-stream frame.
    pub async fn finish_error(self, error: ConnectError) -> Result<(), ServerError> {
        self.finish(EndStream::from_error(error)).await
    }

    /// Ends the call with the given end-of-stream frame.
    pub async fn finish(mut self, end: EndStream) -> Result<(), ServerError> {
        let mut frame = BytesMut::new();
        Encoder::new(Compression::Identity).encode_end_stream(&end, &mut frame)?;
        self.send_raw(frame.freeze()).await?;
        self.end_body()
    }

    /// Ends the HTTP/2 stream (END_STREAM) without an end-of-stream frame.
    pub fn end_body(mut self) -> Result<(), ServerError> {
        self.send_headers()?;
        let stream = match &mut self.wire {
            Wire::H2 { send, .. } => send
                .as_mut()
                .ok_or(ServerError::Misuse("response already ended"))?,
            Wire::Http1(wire) => return wire.push(Http1Out::End),
        };
        stream
            .send_data(Bytes::new(), true)
            .map_err(ServerError::from_h2)
    }

    /// Answers with a whole response of any status, for example a 401 with a JSON body.
    pub async fn respond(
        mut self,
        status: u16,
        content_type: &str,
        body: impl Into<Bytes>,
    ) -> Result<(), ServerError> {
        let body = body.into();
        let respond = match &mut self.wire {
            Wire::H2 { respond, .. } => respond,
            Wire::Http1(wire) => {
                if wire.started {
                    return Err(ServerError::Misuse("response already started"));
                }
                wire.started = true;
                return wire.push(Http1Out::Whole {
                    status,
                    content_type: content_type.to_owned(),
                    body,
                });
            }
        };
        let mut respond = respond
            .take()
            .ok_or(ServerError::Misuse("response already started"))?;
        let head = Response::builder()
            .status(status)
            .header("content-type", content_type)
            .body(())
            .map_err(|_| ServerError::Misuse("invalid status or content type"))?;
        let mut stream = respond
            .send_response(head, body.is_empty())
            .map_err(ServerError::from_h2)?;
        if !body.is_empty() {
            crate::client::body::send_all(&mut stream, body, true)
                .await
                .map_err(ServerError::from_h2)?;
        }
        Ok(())
    }

    /// Answers a unary call with a 200 and `message` as the `application/proto` body.
    pub async fn respond_unary(self, message: impl Into<Bytes>) -> Result<(), ServerError> {
        self.respond(200, CONTENT_TYPE_UNARY, message).await
    }

    /// Answers a unary call with a Connect error: the HTTP status and JSON body Connect uses.
    pub async fn respond_unary_error(
        self,
        status: u16,
        error: &ConnectError,
    ) -> Result<(), ServerError> {
        self.respond(status, "application/json", error.to_unary_json())
            .await
    }

    /// Resets the stream with HTTP/2 error code `reason` (for example [`super::REASON_INTERNAL_ERROR`]).
    pub fn reset(mut self, reason: u32) {
        let reason = h2::Reason::from(reason);
        let (send, respond) = match &mut self.wire {
            Wire::H2 { send, respond, .. } => (send, respond),
            // HTTP/1.1 has no stream reset: the connection closes mid-body.
            Wire::Http1(wire) => {
                let _ = wire.out.send(Http1Out::Abort);
                return;
            }
        };
        match (send.as_mut(), respond.as_mut()) {
            (Some(stream), _) => stream.send_reset(reason),
            (None, Some(respond)) => respond.send_reset(reason),
            (None, None) => {}
        }
    }

    /// Waits until the client resets the stream and returns its HTTP/2 error code (`None` if
    /// the stream ended otherwise).
    pub async fn wait_for_reset(&mut self) -> Option<u32> {
        let (send, respond) = match &mut self.wire {
            Wire::H2 { send, respond, .. } => (send, respond),
            // A client that gives up closes the RunSSE connection: counted as its CANCEL.
            Wire::Http1(wire) => {
                return wire
                    .gone
                    .wait_for(|gone| *gone)
                    .await
                    .ok()
                    .map(|_| super::REASON_CANCEL);
            }
        };
        if let Some(stream) = send.as_mut() {
            return poll_fn(|cx| stream.poll_reset(cx))
                .await
                .ok()
                .map(u32::from);
        }
        if let Some(respond) = respond.as_mut() {
            return poll_fn(|cx| respond.poll_reset(cx))
                .await
                .ok()
                .map(u32::from);
        }
        None
    }

    /// Closes the whole TCP connection at once, under every stream on it.
    pub fn sever(self) {
        let _ = self.commands.send(ConnCommand::Sever);
    }

    /// Sends a graceful GOAWAY on this call's connection: streams already open (this one
    /// included) go on, new ones must use another connection. Returns once the GOAWAY is
    /// queued, so frames this call sends afterwards follow it on the wire.
    pub async fn goaway(&self) {
        let (done, queued) = tokio::sync::oneshot::channel();
        if self.commands.send(ConnCommand::GoAway(done)).is_ok() {
            let _ = queued.await;
        }
    }

    /// Sends GOAWAY with `INTERNAL_ERROR` and closes the connection.
    pub fn goaway_with_error(&self) {
        let _ = self.commands.send(ConnCommand::GoAwayWithError);
    }

    /// Stops serving this call's connection entirely (no frames, no PONGs) while keeping the
    /// socket open, as a dead peer behind a load balancer would.
    pub fn stall_connection(&self) {
        let _ = self.commands.send(ConnCommand::Stall);
    }
}

impl Http1Wire {
    fn push(&self, out: Http1Out) -> Result<(), ServerError> {
        self.out.send(out).map_err(|_| ServerError::Stream {
            message: "the client closed the RunSSE connection".to_owned(),
            reason: None,
        })
    }
}
