//! HTTP/1.1 on the test server's port, for unary calls (docs/PROTOCOL.md §1: unary calls work
//! over HTTP/1.1 or HTTP/2). Requests go to the builder's handler; streaming calls need
//! HTTP/2 and get a 505. Only what clients of unary endpoints send is understood: a
//! `Content-Length` body (no chunked uploads), keep-alive until `Connection: close`.

use bytes::{Bytes, BytesMut};
use http::{HeaderName, HeaderValue, Request, Response, StatusCode};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

use super::server::Handler;
use crate::headers::CONTENT_TYPE_STREAM;

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

/// Serves HTTP/1.1 requests on `tcp` with `handler` until the client closes, calling
/// `on_request` for each.
pub(crate) async fn serve(mut tcp: TcpStream, handler: Handler, on_request: impl Fn()) {
    let mut buffer = BytesMut::new();
    loop {
        let Some((request, close)) = read_request(&mut tcp, &mut buffer).await else {
            return;
        };
        on_request();
        let is_stream = crate::client::body::media_type(request.headers()) == CONTENT_TYPE_STREAM;
        let response = if is_stream {
            let mut response = Response::new(Bytes::from_static(
                b"streaming calls need HTTP/2 on this server",
            ));
            *response.status_mut() = StatusCode::HTTP_VERSION_NOT_SUPPORTED;
            response
        } else {
            handler(request)
        };
        if tcp.write_all(&encode(&response, close)).await.is_err() || close {
            return;
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
