//! HTTP/1.1 on the test server's port: unary calls (docs/PROTOCOL.md §1: unary calls work over
//! HTTP/1.1 or HTTP/2) go to the builder's handler, and the agent Run's HTTP/1.1 form
//! (docs/PROTOCOL-AGENT.md §13.8) is served here: `RunSSE` becomes a [`ServerCall`] whose
//! client messages are the `BidiAppend`s of its request id, in `append_seqno` order. Other
//! streaming calls need HTTP/2 and get a 505. Only what clients send here is understood: a
//! `Content-Length` body (no chunked uploads), keep-alive until `Connection: close`.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError};

use bytes::{Bytes, BytesMut};
use cursor_proto::aiserver::v1::{BidiAppendRequest, BidiAppendResponse, BidiRequestId};
use http::{HeaderName, HeaderValue, Request, Response, StatusCode};
use prost::Message as _;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, watch};

use super::call::{ConnCommand, Http1Out, Http1Wire, ServerCall};
use super::{Handler, ServerError};
use crate::client::{AGENT_RUN_SSE_PATH, BIDI_APPEND_PATH};
use crate::envelope::{Compression, Decoder, Frame};
use crate::headers::{CONTENT_TYPE_STREAM, CONTENT_TYPE_UNARY};

type Inbound = Result<Bytes, ServerError>;

/// One emulated bidi call's client side as BidiAppend fills it: created by whichever of RunSSE
/// and the first BidiAppend arrives first.
#[derive(Debug)]
struct Appends {
    tx: mpsc::UnboundedSender<Inbound>,
    rx: Option<mpsc::UnboundedReceiver<Inbound>>,
    next_seqno: i64,
    /// Messages that arrived ahead of their turn, by sequence number.
    early: BTreeMap<i64, Bytes>,
}

impl Default for Appends {
    fn default() -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        Self {
            tx,
            rx: Some(rx),
            next_seqno: 0,
            early: BTreeMap::new(),
        }
    }
}

/// The emulated bidi calls of one server, by request id.
#[derive(Debug, Default)]
pub(crate) struct BidiRegistry {
    calls: Mutex<HashMap<String, Appends>>,
}

impl BidiRegistry {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Appends>> {
        self.calls.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Hands `message` to its call in sequence order; an append seen before is ignored.
    fn append(&self, id: &str, seqno: i64, message: Bytes) {
        let mut calls = self.lock();
        let call = calls.entry(id.to_owned()).or_default();
        if seqno < call.next_seqno {
            return;
        }
        call.early.insert(seqno, message);
        while let Some(message) = call.early.remove(&call.next_seqno) {
            let _ = call.tx.send(Ok(message));
            call.next_seqno += 1;
        }
    }

    fn take_inbound(&self, id: &str) -> Option<mpsc::UnboundedReceiver<Inbound>> {
        self.lock().entry(id.to_owned()).or_default().rx.take()
    }

    /// The call ended: its BidiAppends have nowhere to go; a gone client fails its reads.
    fn remove(&self, id: &str, client_gone: bool) {
        if let Some(call) = self.lock().remove(id)
            && client_gone
        {
            let _ = call.tx.send(Err(ServerError::Stream {
                message: "the client closed the RunSSE connection".to_owned(),
                reason: Some(super::REASON_CANCEL),
            }));
        }
    }
}

/// Where the HTTP/1.1 side of a server sends what it cannot answer itself.
pub(crate) struct Http1Routes {
    pub(crate) handler: Option<Handler>,
    pub(crate) calls: mpsc::UnboundedSender<ServerCall>,
    pub(crate) bidi: Arc<BidiRegistry>,
}

/// The largest request head read (a real client's is well under this).
const MAX_HEAD: usize = 64 * 1024;
/// The largest request body read.
const MAX_BODY: usize = 16 * 1024 * 1024;

/// Whether the connection's first bytes are not the HTTP/2 preface: an HTTP/1.1 client.
pub(crate) async fn is_http1(tcp: &TcpStream) -> bool {
    let mut first = [0_u8; 3];
    loop {
        match tcp.peek(&mut first).await {
            Ok(0) | Err(_) => return false,
            Ok(n) if n < first.len() => tokio::task::yield_now().await,
            Ok(_) => return &first != b"PRI",
        }
    }
}

/// Serves HTTP/1.1 requests on `tcp` until the client closes, calling `on_request` for each.
/// A RunSSE request takes the connection over until its call ends.
pub(crate) async fn serve(mut tcp: TcpStream, routes: Http1Routes, on_request: impl Fn()) {
    let mut buffer = BytesMut::new();
    loop {
        let Some((request, close)) = read_request(&mut tcp, &mut buffer).await else {
            return;
        };
        on_request();
        let is_stream = crate::client::body::media_type(request.headers()) == CONTENT_TYPE_STREAM;
        let path = request.uri().path().to_owned();
        let response = if is_stream && path == AGENT_RUN_SSE_PATH {
            match open_run_sse(request, &routes) {
                Ok((call, id, out, gone)) => {
                    if routes.calls.send(call).is_err() {
                        routes.bidi.remove(&id, false);
                        return;
                    }
                    let client_gone = stream_response(&mut tcp, out, gone).await;
                    routes.bidi.remove(&id, client_gone);
                    return;
                }
                Err(response) => *response,
            }
        } else if is_stream {
            plain(
                StatusCode::HTTP_VERSION_NOT_SUPPORTED,
                "streaming calls need HTTP/2 on this server",
            )
        } else if path == BIDI_APPEND_PATH {
            bidi_append(request.body(), &routes.bidi)
        } else if let Some(handler) = &routes.handler {
            handler(request)
        } else {
            plain(StatusCode::NOT_FOUND, "no handler on this server")
        };
        if tcp.write_all(&encode(&response, close)).await.is_err() || close {
            return;
        }
    }
}

fn plain(status: StatusCode, text: &'static str) -> Response<Bytes> {
    let mut response = Response::new(Bytes::from_static(text.as_bytes()));
    *response.status_mut() = status;
    response
}

fn unary_error(status: StatusCode, code: &str, message: &str) -> Response<Bytes> {
    let body = serde_json::json!({ "code": code, "message": message }).to_string();
    let mut response = Response::new(Bytes::from(body));
    *response.status_mut() = status;
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// A BidiAppend: the message goes to its call, the answer is an empty BidiAppendResponse.
fn bidi_append(body: &Bytes, bidi: &BidiRegistry) -> Response<Bytes> {
    let Ok(append) = BidiAppendRequest::decode(body.clone()) else {
        return unary_error(
            StatusCode::BAD_REQUEST,
            "invalid_argument",
            "not a BidiAppendRequest",
        );
    };
    let id = append
        .request_id
        .map(|id| id.request_id)
        .unwrap_or_default();
    if id.is_empty() {
        return unary_error(StatusCode::BAD_REQUEST, "invalid_argument", "no request_id");
    }
    let message = if append.data.is_empty() {
        Bytes::from(append.data_binary)
    } else {
        match cursor_proto::hex::decode(&append.data) {
            Some(bytes) => Bytes::from(bytes),
            None => {
                return unary_error(
                    StatusCode::BAD_REQUEST,
                    "invalid_argument",
                    "data is not hex",
                );
            }
        }
    };
    bidi.append(&id, append.append_seqno, message);
    let mut response = Response::new(Bytes::from(BidiAppendResponse {}.encode_to_vec()));
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static(CONTENT_TYPE_UNARY),
    );
    response
}

type Opened = (
    ServerCall,
    String,
    mpsc::UnboundedReceiver<Http1Out>,
    watch::Sender<bool>,
);

/// A RunSSE request as a [`ServerCall`]: its one message names the call's BidiAppends.
fn open_run_sse(
    request: Request<Bytes>,
    routes: &Http1Routes,
) -> Result<Opened, Box<Response<Bytes>>> {
    let (parts, body) = request.into_parts();
    let mut decoder = Decoder::new(Compression::Identity);
    decoder.push_bytes(body.clone());
    let id = match decoder.next_frame() {
        Ok(Some(Frame::Message(message))) => BidiRequestId::decode(message)
            .map(|id| id.request_id)
            .unwrap_or_default(),
        _ => String::new(),
    };
    if id.is_empty() {
        return Err(Box::new(unary_error(
            StatusCode::BAD_REQUEST,
            "invalid_argument",
            "RunSSE needs one BidiRequestId message",
        )));
    }
    let Some(inbound) = routes.bidi.take_inbound(&id) else {
        return Err(Box::new(unary_error(
            StatusCode::CONFLICT,
            "already_exists",
            "a RunSSE with this request_id is already open",
        )));
    };
    let (out_tx, out) = mpsc::unbounded_channel();
    let (gone_tx, gone) = watch::channel(false);
    let (commands, mut command_rx) = mpsc::unbounded_channel();
    // Connection-level commands (sever, GOAWAY) mean the same on one HTTP/1.1 connection.
    let aborts = out_tx.clone();
    tokio::spawn(async move {
        while let Some(command) = command_rx.recv().await {
            match command {
                ConnCommand::GoAway(done) => {
                    let _ = done.send(());
                }
                ConnCommand::GoAwayWithError
                | ConnCommand::GoAwayHttp11Required
                | ConnCommand::Sever
                | ConnCommand::Stall => {
                    let _ = aborts.send(Http1Out::Abort);
                }
            }
        }
    });
    let wire = Http1Wire {
        body,
        inbound,
        out: out_tx,
        started: false,
        gone,
    };
    Ok((ServerCall::http1(parts, wire, commands), id, out, gone_tx))
}

/// Writes the RunSSE response as the call produces it (a chunked body), watching for the
/// client closing the connection. Returns whether the client went away first.
async fn stream_response(
    tcp: &mut TcpStream,
    mut out: mpsc::UnboundedReceiver<Http1Out>,
    gone: watch::Sender<bool>,
) -> bool {
    let (mut reader, mut writer) = tcp.split();
    let mut scratch = [0_u8; 512];
    loop {
        let bytes = tokio::select! {
            next = out.recv() => match next {
                Some(Http1Out::Head(encoding)) => {
                    let mut head = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: {CONTENT_TYPE_STREAM}\r\ntransfer-encoding: chunked\r\nconnection: close\r\n"
                    );
                    if let Some(encoding) = encoding {
                        head.push_str(&format!("connect-content-encoding: {encoding}\r\n"));
                    }
                    head.push_str("\r\n");
                    head.into_bytes()
                }
                Some(Http1Out::Data(data)) if data.is_empty() => continue,
                Some(Http1Out::Data(data)) => {
                    let mut chunk = format!("{:x}\r\n", data.len()).into_bytes();
                    chunk.extend_from_slice(&data);
                    chunk.extend_from_slice(b"\r\n");
                    chunk
                }
                Some(Http1Out::End) => {
                    let _ = writer.write_all(b"0\r\n\r\n").await;
                    return false;
                }
                Some(Http1Out::Whole { status, content_type, body }) => {
                    let mut response = Response::new(body);
                    *response.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
                    if let Ok(value) = HeaderValue::from_str(&content_type) {
                        response.headers_mut().insert(http::header::CONTENT_TYPE, value);
                    }
                    let _ = writer.write_all(&encode(&response, true)).await;
                    return false;
                }
                // A reset, or the call dropped without ending: close mid-body.
                Some(Http1Out::Abort) | None => return false,
            },
            read = reader.read(&mut scratch) => match read {
                // The client sends nothing more on this connection; closing it is its cancel.
                Ok(0) | Err(_) => {
                    let _ = gone.send(true);
                    return true;
                }
                Ok(_) => continue,
            },
        };
        if writer.write_all(&bytes).await.is_err() {
            let _ = gone.send(true);
            return true;
        }
    }
}

/// Reads one request; `None` at a clean end of the connection or on a request it cannot read.
/// The flag says whether the client asked to close after it.
async fn read_request(
    tcp: &mut TcpStream,
    buffer: &mut BytesMut,
) -> Option<(Request<Bytes>, bool)> {
    let head_end = loop {
        if let Some(at) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break at;
        }
        if buffer.len() > MAX_HEAD || tcp.read_buf(buffer).await.ok()? == 0 {
            return None;
        }
    };
    let head = buffer.split_to(head_end + 4);
    let head = std::str::from_utf8(&head).ok()?;
    let mut lines = head.split("\r\n");
    let mut request_line = lines.next()?.split(' ');
    let (method, target, version) = (
        request_line.next()?,
        request_line.next()?,
        request_line.next()?,
    );
    if !version.starts_with("HTTP/1.") {
        return None;
    }
    let mut builder = Request::builder().method(method).uri(target);
    let mut length = 0_usize;
    let mut close = version == "HTTP/1.0";
    for line in lines.filter(|line| !line.is_empty()) {
        let (name, value) = line.split_once(':')?;
        let (name, value) = (name.trim(), value.trim());
        if name.eq_ignore_ascii_case("content-length") {
            length = value.parse().ok()?;
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            // Chunked uploads are not something a unary client sends here.
            return None;
        } else if name.eq_ignore_ascii_case("connection") {
            close = value.eq_ignore_ascii_case("close");
        }
        builder = builder.header(
            HeaderName::from_bytes(name.as_bytes()).ok()?,
            HeaderValue::from_str(value).ok()?,
        );
    }
    if length > MAX_BODY {
        return None;
    }
    while buffer.len() < length {
        if tcp.read_buf(buffer).await.ok()? == 0 {
            return None;
        }
    }
    let body = buffer.split_to(length).freeze();
    Some((builder.body(body).ok()?, close))
}

fn encode(response: &Response<Bytes>, close: bool) -> Vec<u8> {
    let status = response.status();
    let mut out = format!(
        "HTTP/1.1 {} {}\r\n",
        status.as_u16(),
        status.canonical_reason().unwrap_or("")
    )
    .into_bytes();
    for (name, value) in response.headers() {
        if name == http::header::CONTENT_LENGTH || name == http::header::CONNECTION {
            continue;
        }
        out.extend_from_slice(name.as_str().as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(format!("content-length: {}\r\n", response.body().len()).as_bytes());
    if close {
        out.extend_from_slice(b"connection: close\r\n");
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(response.body());
    out
}
