//! The agent Run over HTTP/1.1, for networks that refuse HTTP/2 (docs/PROTOCOL-AGENT.md §13.8):
//! `RunSSE` carries the server's frames as a chunked body, each client message goes as a unary
//! `BidiAppend`. A minimal HTTP/1.1 client (request writer, head parser, chunked decoder) keeps
//! the transport free of a second HTTP stack.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Buf as _, Bytes, BytesMut};
use cursor_proto::aiserver::v1::{BidiAppendRequest, BidiRequestId};
use http::{HeaderMap, HeaderName, HeaderValue};
use prost::Message as _;
use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite, AsyncWriteExt as _, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

use super::{AGENT_RUN_SSE_PATH, BIDI_APPEND_PATH, ClientConfig, body};
use crate::envelope::{Compression, Encoder};
use crate::error::CursorError;
use crate::headers::{CONTENT_TYPE_STREAM, CONTENT_TYPE_UNARY};
use crate::origin::{Origin, Scheme};

/// The largest response head read.
const MAX_HEAD: usize = 64 * 1024;
/// The longest chunk-size or trailer line accepted.
const MAX_LINE: usize = 4096;

/// Where and how HTTP/1.1 connections are dialed.
#[derive(Clone, Debug)]
pub(crate) struct Dialer {
    tls: Arc<rustls::ClientConfig>,
    connect_timeout: Duration,
    request_timeout: Duration,
    max_message_size: usize,
}

impl Dialer {
    /// Dials over `tls` (a configuration offering ALPN `http/1.1`) within the bounds of
    /// `config`. Built here rather than by the HTTP/2 pool, so the pool needs nothing of
    /// HTTP/1.1.
    pub(crate) fn new(config: &ClientConfig, tls: Arc<rustls::ClientConfig>) -> Self {
        Self {
            tls,
            connect_timeout: config.connect_timeout,
            request_timeout: config.request_timeout,
            max_message_size: config.max_message_size,
        }
    }
}

/// A plain (loopback) or TLS connection.
#[derive(Debug)]
enum Io {
    Plain(TcpStream),
    Tls(Box<TlsStream<TcpStream>>),
}

impl AsyncRead for Io {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Self::Plain(io) => Pin::new(io).poll_read(cx, buf),
            Self::Tls(io) => Pin::new(io.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Io {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        match self.get_mut() {
            Self::Plain(io) => Pin::new(io).poll_write(cx, buf),
            Self::Tls(io) => Pin::new(io.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Self::Plain(io) => Pin::new(io).poll_flush(cx),
            Self::Tls(io) => Pin::new(io.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Self::Plain(io) => Pin::new(io).poll_shutdown(cx),
            Self::Tls(io) => Pin::new(io.as_mut()).poll_shutdown(cx),
        }
    }
}

/// A response head.
#[derive(Debug)]
pub(crate) struct Head {
    pub(crate) status: u16,
    pub(crate) headers: HeaderMap,
    framing: Framing,
    close: bool,
}

/// How a response body is delimited.
#[derive(Debug)]
enum Framing {
    Chunked(ChunkedDecoder),
    Length(usize),
    UntilClose,
}

/// One HTTP/1.1 connection and the bytes read from it but not yet used.
#[derive(Debug)]
struct Conn {
    io: Io,
    buffer: BytesMut,
}

impl Conn {
    async fn dial(dialer: &Dialer, origin: &Origin) -> Result<Self, CursorError> {
        let address = (origin.dial_host().to_owned(), origin.port());
        let tcp = tokio::time::timeout(dialer.connect_timeout, TcpStream::connect(address))
            .await
            .map_err(|_| CursorError::network_msg(format!("connecting to {origin} timed out")))?
            .map_err(|err| CursorError::network(format!("connecting to {origin}"), err))?;
        let _ = tcp.set_nodelay(true);
        let io = match origin.scheme() {
            Scheme::Http => Io::Plain(tcp),
            _ => {
                let server_name =
                    rustls::pki_types::ServerName::try_from(origin.dial_host().to_owned())
                        .map_err(|err| {
                            CursorError::invalid(format!("TLS server name for {origin}: {err}"))
                        })?;
                let connector = TlsConnector::from(Arc::clone(&dialer.tls));
                let tls = tokio::time::timeout(
                    dialer.connect_timeout,
                    connector.connect(server_name, tcp),
                )
                .await
                .map_err(|_| {
                    CursorError::network_msg(format!("TLS handshake with {origin} timed out"))
                })?
                .map_err(|err| CursorError::network(format!("TLS handshake with {origin}"), err))?;
                Io::Tls(Box::new(tls))
            }
        };
        Ok(Self {
            io,
            buffer: BytesMut::new(),
        })
    }

    async fn write_request(
        &mut self,
        origin: &Origin,
        path: &str,
        headers: &HeaderMap,
        body: &[u8],
    ) -> Result<(), CursorError> {
        let request = encode_request(origin, path, headers, body);
        self.io
            .write_all(&request)
            .await
            .map_err(|err| CursorError::network(format!("sending {path}"), err))?;
        self.io
            .flush()
            .await
            .map_err(|err| CursorError::network(format!("sending {path}"), err))
    }

    /// Reads more bytes into the buffer; cancel-safe (a read either completes or takes nothing).
    async fn fill(&mut self) -> Result<usize, CursorError> {
        self.io
            .read_buf(&mut self.buffer)
            .await
            .map_err(|err| CursorError::network("receiving over HTTP/1.1", err))
    }

    /// The response head; cancel-safe: bytes read stay in the buffer.
    async fn head(&mut self) -> Result<Head, CursorError> {
        loop {
            if let Some(head) = parse_head(&mut self.buffer)? {
                return Ok(head);
            }
            if self.buffer.len() > MAX_HEAD {
                return Err(CursorError::drift("HTTP/1.1 response head too large"));
            }
            if self.fill().await? == 0 {
                return Err(CursorError::network_msg(
                    "the connection closed before the response head",
                ));
            }
        }
    }

    /// The next piece of the body, `None` at its end; cancel-safe.
    async fn next_chunk(&mut self, framing: &mut Framing) -> Result<Option<Bytes>, CursorError> {
        loop {
            match framing {
                Framing::Chunked(decoder) => match decoder.decode(&mut self.buffer)? {
                    Chunk::Data(data) => return Ok(Some(data)),
                    Chunk::End => return Ok(None),
                    Chunk::NeedMore => {}
                },
                Framing::Length(0) => return Ok(None),
                Framing::Length(left) if !self.buffer.is_empty() => {
                    let take = (*left).min(self.buffer.len());
                    *left -= take;
                    return Ok(Some(self.buffer.split_to(take).freeze()));
                }
                Framing::UntilClose if !self.buffer.is_empty() => {
                    return Ok(Some(self.buffer.split().freeze()));
                }
                Framing::Length(_) | Framing::UntilClose => {}
            }
            if self.fill().await? == 0 {
                return match framing {
                    Framing::UntilClose => Ok(None),
                    _ => Err(CursorError::network_msg(
                        "the connection closed in the middle of a response body",
                    )),
                };
            }
        }
    }

    async fn read_to_end(
        &mut self,
        framing: &mut Framing,
        max: usize,
    ) -> Result<Bytes, CursorError> {
        let mut out = BytesMut::new();
        while let Some(chunk) = self.next_chunk(framing).await? {
            if out.len() + chunk.len() > max {
                return Err(CursorError::drift(format!(
                    "response body exceeds the {max}-byte limit"
                )));
            }
            out.extend_from_slice(&chunk);
        }
        Ok(out.freeze())
    }
}

fn encode_request(origin: &Origin, path: &str, headers: &HeaderMap, body: &[u8]) -> Vec<u8> {
    let mut out = format!("POST {path} HTTP/1.1\r\nhost: {}\r\n", origin.authority()).into_bytes();
    for (name, value) in headers {
        // HTTP/2-only or recomputed here.
        if name == http::header::TE
            || name == http::header::CONTENT_LENGTH
            || name == http::header::CONNECTION
            || name == http::header::HOST
            || name == http::header::TRANSFER_ENCODING
        {
            continue;
        }
        out.extend_from_slice(name.as_str().as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(format!("content-length: {}\r\n\r\n", body.len()).as_bytes());
    out.extend_from_slice(body);
    out
}

/// Takes a whole response head off `buffer`, `None` while it is incomplete.
fn parse_head(buffer: &mut BytesMut) -> Result<Option<Head>, CursorError> {
    let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") else {
        return Ok(None);
    };
    let raw = buffer.split_to(end + 4);
    let text = std::str::from_utf8(&raw[..end])
        .map_err(|_| CursorError::drift("HTTP/1.1 response head is not text"))?;
    let mut lines = text.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let mut parts = status_line.splitn(3, ' ');
    let version = parts.next().unwrap_or_default();
    let status = parts
        .next()
        .and_then(|code| code.parse::<u16>().ok())
        .filter(|_| version.starts_with("HTTP/1."))
        .ok_or_else(|| {
            CursorError::drift(format!("not an HTTP/1.1 status line: {status_line:?}"))
        })?;
    let mut headers = HeaderMap::new();
    let mut close = version == "HTTP/1.0";
    let mut framing = Framing::UntilClose;
    for line in lines {
        let (name, value) = line
            .split_once(':')
            .ok_or_else(|| CursorError::drift(format!("malformed header line {line:?}")))?;
        let (name, value) = (name.trim(), value.trim());
        if name.eq_ignore_ascii_case("transfer-encoding") {
            if value.eq_ignore_ascii_case("chunked") {
                framing = Framing::Chunked(ChunkedDecoder::default());
            } else {
                return Err(CursorError::drift(format!(
                    "unsupported transfer-encoding {value:?}"
                )));
            }
        } else if name.eq_ignore_ascii_case("content-length")
            && !matches!(framing, Framing::Chunked(_))
        {
            let length = value
                .parse()
                .map_err(|_| CursorError::drift(format!("bad content-length {value:?}")))?;
            framing = Framing::Length(length);
        } else if name.eq_ignore_ascii_case("connection") {
            close = value.eq_ignore_ascii_case("close");
        }
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) {
            headers.append(name, value);
        }
    }
    // A status without a body.
    if status == 204 || status == 304 || (100..200).contains(&status) {
        framing = Framing::Length(0);
    }
    if matches!(framing, Framing::UntilClose) {
        close = true;
    }
    Ok(Some(Head {
        status,
        headers,
        framing,
        close,
    }))
}

/// What the chunked decoder has for its caller.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Chunk {
    /// Body bytes (a chunk or part of one).
    Data(Bytes),
    /// The buffer holds no more of the body yet.
    NeedMore,
    /// The last chunk and the trailers were read.
    End,
}

/// A sans-IO decoder of `Transfer-Encoding: chunked` (RFC 9112 §7.1).
#[derive(Debug, Default)]
pub(crate) struct ChunkedDecoder {
    state: ChunkState,
}

#[derive(Debug, Default, Clone, Copy)]
enum ChunkState {
    #[default]
    Size,
    Data(usize),
    DataEnd,
    Trailers,
    Done,
}

impl ChunkedDecoder {
    /// Takes what it can from `buffer`: body bytes as they come (a chunk may be returned in
    /// parts), or the end. Chunk extensions and trailers are skipped.
    pub(crate) fn decode(&mut self, buffer: &mut BytesMut) -> Result<Chunk, CursorError> {
        loop {
            match self.state {
                ChunkState::Size => {
                    let Some(line) = take_line(buffer)? else {
                        return Ok(Chunk::NeedMore);
                    };
                    let size = line.split(';').next().unwrap_or_default().trim();
                    let size = usize::from_str_radix(size, 16)
                        .map_err(|_| CursorError::drift(format!("bad chunk size line {line:?}")))?;
                    self.state = if size == 0 {
                        ChunkState::Trailers
                    } else {
                        ChunkState::Data(size)
                    };
                }
                ChunkState::Data(left) => {
                    if buffer.is_empty() {
                        return Ok(Chunk::NeedMore);
                    }
                    let take = left.min(buffer.len());
                    self.state = if take == left {
                        ChunkState::DataEnd
                    } else {
                        ChunkState::Data(left - take)
                    };
                    return Ok(Chunk::Data(buffer.split_to(take).freeze()));
                }
                ChunkState::DataEnd => {
                    if buffer.len() < 2 {
                        return Ok(Chunk::NeedMore);
                    }
                    if &buffer[..2] != b"\r\n" {
                        return Err(CursorError::drift("a chunk does not end with CRLF"));
                    }
                    buffer.advance(2);
                    self.state = ChunkState::Size;
                }
                ChunkState::Trailers => {
                    let Some(line) = take_line(buffer)? else {
                        return Ok(Chunk::NeedMore);
                    };
                    if line.is_empty() {
                        self.state = ChunkState::Done;
                    }
                }
                ChunkState::Done => return Ok(Chunk::End),
            }
        }
    }
}

/// A CRLF-terminated line off `buffer` (without the CRLF), `None` while incomplete.
fn take_line(buffer: &mut BytesMut) -> Result<Option<String>, CursorError> {
    match buffer.windows(2).position(|w| w == b"\r\n") {
        Some(at) => {
            let line = buffer.split_to(at + 2);
            Ok(Some(String::from_utf8_lossy(&line[..at]).into_owned()))
        }
        None if buffer.len() > MAX_LINE => Err(CursorError::drift("chunk line too long")),
        None => Ok(None),
    }
}

/// A BidiAppend body: the message as lowercase hex in `data`, as public clients send it.
pub(crate) fn bidi_append(request_id: &str, seqno: i64, message: &[u8]) -> Vec<u8> {
    BidiAppendRequest {
        data: cursor_proto::hex::encode(message),
        request_id: Some(BidiRequestId {
            request_id: request_id.to_owned(),
        }),
        append_seqno: seqno,
        data_binary: Vec::new(),
    }
    .encode_to_vec()
}

/// One Run over HTTP/1.1: the RunSSE response being read and the connection BidiAppends go
/// on (kept alive between messages, so they arrive in order).
#[derive(Debug)]
pub(crate) struct Http1Run {
    dialer: Dialer,
    origin: Origin,
    append_headers: HeaderMap,
    request_id: String,
    next_seqno: i64,
    sse: Conn,
    head: Option<Head>,
    append: Option<Conn>,
}

impl Http1Run {
    /// Sends the RunSSE request; the head is read by [`head`](Self::head) (the server may
    /// answer only after the first BidiAppend).
    pub(crate) async fn open(
        dialer: Dialer,
        origin: &Origin,
        headers: &HeaderMap,
    ) -> Result<Self, CursorError> {
        let request_id = crate::headers::RequestId::generate()?.as_str().to_owned();
        let mut sse = Conn::dial(&dialer, origin).await?;
        let message = BidiRequestId {
            request_id: request_id.clone(),
        }
        .encode_to_vec();
        let body = Encoder::new(Compression::Identity)
            .encode_to_bytes(&message)
            .map_err(CursorError::from)?;
        let mut sse_headers = headers.clone();
        sse_headers.insert(
            http::header::CONTENT_TYPE,
            HeaderValue::from_static(CONTENT_TYPE_STREAM),
        );
        sse_headers.remove("connect-content-encoding");
        sse.write_request(origin, AGENT_RUN_SSE_PATH, &sse_headers, &body)
            .await?;
        let mut append_headers = headers.clone();
        append_headers.insert(
            http::header::CONTENT_TYPE,
            HeaderValue::from_static(CONTENT_TYPE_UNARY),
        );
        for name in ["connect-content-encoding", "connect-accept-encoding"] {
            append_headers.remove(name);
        }
        Ok(Self {
            dialer,
            origin: origin.clone(),
            append_headers,
            request_id,
            next_seqno: 0,
            sse,
            head: None,
            append: None,
        })
    }

    /// Sends one client message as the next BidiAppend and waits for its answer.
    pub(crate) async fn append(&mut self, message: &[u8]) -> Result<(), CursorError> {
        let body = bidi_append(&self.request_id, self.next_seqno, message);
        let timeout = self.dialer.request_timeout;
        match tokio::time::timeout(timeout, self.post_append(&body)).await {
            Ok(Ok(())) => {
                self.next_seqno += 1;
                Ok(())
            }
            Ok(Err(error)) => Err(error),
            Err(_) => {
                self.append = None;
                Err(CursorError::network_msg(format!(
                    "BidiAppend to {} timed out",
                    self.origin
                )))
            }
        }
    }

    async fn post_append(&mut self, body: &[u8]) -> Result<(), CursorError> {
        // A kept-alive connection the server closed fails before any answer: that append is
        // sent once more on a fresh one (the sequence number makes a repeat harmless).
        let reused = self.append.is_some();
        match self.try_append(body).await {
            Err(CursorError::Network { .. }) if reused => {
                self.append = None;
                self.try_append(body).await
            }
            other => other,
        }
    }

    async fn try_append(&mut self, body: &[u8]) -> Result<(), CursorError> {
        let mut conn = match self.append.take() {
            Some(conn) => conn,
            None => Conn::dial(&self.dialer, &self.origin).await?,
        };
        conn.write_request(&self.origin, BIDI_APPEND_PATH, &self.append_headers, body)
            .await?;
        let mut head = conn.head().await?;
        let text = conn
            .read_to_end(&mut head.framing, self.dialer.max_message_size)
            .await?;
        if head.status != 200 {
            let text = &text[..text.len().min(body::MAX_ERROR_BODY)];
            return Err(body::status_error_from_body(
                head.status,
                &head.headers,
                text,
            ));
        }
        if !head.close {
            self.append = Some(conn);
        }
        Ok(())
    }

    /// The RunSSE response head; cancel-safe. A non-200 head is classified from its body.
    pub(crate) async fn head(&mut self) -> Result<HeaderMap, CursorError> {
        if self.head.is_none() {
            self.head = Some(self.sse.head().await?);
        }
        let Some(head) = self.head.as_mut() else {
            return Err(CursorError::Canceled);
        };
        if head.status != 200 {
            let status = head.status;
            let text = self
                .sse
                .read_to_end(&mut head.framing, body::MAX_ERROR_BODY)
                .await?;
            return Err(body::status_error_from_body(status, &head.headers, &text));
        }
        Ok(head.headers.clone())
    }

    /// The next piece of the RunSSE body, `None` at its end; cancel-safe.
    pub(crate) async fn next_chunk(&mut self) -> Result<Option<Bytes>, CursorError> {
        let Some(head) = self.head.as_mut() else {
            return Err(CursorError::invalid("the RunSSE head was not read yet"));
        };
        self.sse.next_chunk(&mut head.framing).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_all(decoder: &mut ChunkedDecoder, buffer: &mut BytesMut) -> (Vec<u8>, bool) {
        let mut out = Vec::new();
        loop {
            match decoder.decode(buffer).unwrap() {
                Chunk::Data(data) => out.extend_from_slice(&data),
                Chunk::NeedMore => return (out, false),
                Chunk::End => return (out, true),
            }
        }
    }

    #[test]
    fn chunked_body_decodes_across_any_split_of_its_bytes() {
        let wire = b"5;ext=1\r\nhello\r\n1\r\n \r\n5\r\nworld\r\n0\r\ntrailer: x\r\n\r\n";
        for split in 0..wire.len() {
            let mut decoder = ChunkedDecoder::default();
            let mut buffer = BytesMut::from(&wire[..split]);
            let (mut body, done) = decode_all(&mut decoder, &mut buffer);
            assert!(!done, "split {split}");
            buffer.extend_from_slice(&wire[split..]);
            let (rest, done) = decode_all(&mut decoder, &mut buffer);
            body.extend_from_slice(&rest);
            assert!(done, "split {split}");
            assert_eq!(body, b"hello world", "split {split}");
        }
    }

    #[test]
    fn chunked_decoder_refuses_a_bad_size_and_a_missing_crlf() {
        let mut buffer = BytesMut::from(&b"zz\r\n"[..]);
        assert!(ChunkedDecoder::default().decode(&mut buffer).is_err());
        let mut decoder = ChunkedDecoder::default();
        let mut buffer = BytesMut::from(&b"2\r\nabXY"[..]);
        assert_eq!(
            decoder.decode(&mut buffer).unwrap(),
            Chunk::Data(Bytes::from_static(b"ab"))
        );
        assert!(decoder.decode(&mut buffer).is_err());
    }

    #[test]
    fn bidi_append_carries_the_message_as_lowercase_hex() {
        let body = bidi_append("id-1", 3, &[0x0a, 0xff, 0x00]);
        let decoded = BidiAppendRequest::decode(body.as_slice()).unwrap();
        assert_eq!(decoded.data, "0aff00");
        assert_eq!(decoded.append_seqno, 3);
        assert_eq!(decoded.request_id.unwrap().request_id, "id-1");
        assert!(decoded.data_binary.is_empty());
    }

    #[test]
    fn response_heads_give_status_framing_and_keep_alive() {
        let mut buffer =
            BytesMut::from(&b"HTTP/1.1 421 Misdirected\r\nContent-Length: 2\r\n\r\nhi"[..]);
        let head = parse_head(&mut buffer).unwrap().unwrap();
        assert_eq!(head.status, 421);
        assert!(matches!(head.framing, Framing::Length(2)));
        assert!(!head.close);
        assert_eq!(&buffer[..], b"hi");
        let mut buffer = BytesMut::from(
            &b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n"[..],
        );
        let head = parse_head(&mut buffer).unwrap().unwrap();
        assert!(matches!(head.framing, Framing::Chunked(_)));
        assert!(head.close);
        assert!(
            parse_head(&mut BytesMut::from(&b"HTTP/1.1 200 OK\r\n"[..]))
                .unwrap()
                .is_none()
        );
    }
}
