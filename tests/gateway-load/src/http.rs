//! Raw HTTP/1.1 over a fresh loopback connection per request (`Connection: close`): the body
//! is written while the response is read, so an early answer (a 413 before the body is in) is
//! still seen; chunked bodies are undone as they arrive, and a streamed chat completion's
//! first content chunk is timed.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

/// One request to send.
#[derive(Clone, Debug)]
pub(crate) struct Request {
    pub(crate) path: &'static str,
    /// Extra header lines, `(name, value)`.
    pub(crate) headers: Vec<(&'static str, String)>,
    /// Shared, so one large body can go to many sockets without copies.
    pub(crate) body: Bytes,
}

/// What came back.
#[derive(Debug, Default)]
pub(crate) struct Response {
    pub(crate) status: u16,
    /// From the start of the connect to the first non-empty `delta.content` of a streamed chat
    /// completion (`None` when there was none).
    pub(crate) first_content: Option<Duration>,
    /// From the start of the connect to the end of the body.
    pub(crate) total: Duration,
    /// The start of the (de-chunked) body, at most the `keep` bytes asked for.
    pub(crate) body_start: Vec<u8>,
    /// The whole body's length.
    pub(crate) body_len: usize,
    /// The concatenated `delta.content` of a streamed chat completion.
    pub(crate) streamed_text: String,
    /// A streamed body ended with `data: [DONE]`.
    pub(crate) done: bool,
    /// Writing the request body failed after the response had begun (an early answer).
    pub(crate) write_error: Option<String>,
}

/// Why there is no response.
#[derive(Debug)]
pub(crate) enum Failure {
    /// The whole exchange took longer than the timeout.
    Timeout,
    /// Connect, write or read failed before a status line arrived, or the response was cut.
    Io(String),
}

impl Failure {
    /// A short key for counting (`timeout`, `io: connection reset`, …).
    pub(crate) fn key(&self) -> String {
        match self {
            Self::Timeout => "timeout".into(),
            Self::Io(e) => format!("io: {e}"),
        }
    }
}

/// Sends `request` to `addr` and reads the whole response within `timeout`; `sse` parses a
/// streamed chat completion as it arrives; `keep` bytes of the body are kept.
pub(crate) async fn send(
    addr: SocketAddr,
    request: &Request,
    timeout: Duration,
    sse: bool,
    keep: usize,
) -> Result<Response, Failure> {
    match tokio::time::timeout(timeout, exchange(addr, request, sse, keep)).await {
        Ok(result) => result,
        Err(_) => Err(Failure::Timeout),
    }
}

async fn exchange(
    addr: SocketAddr,
    request: &Request,
    sse: bool,
    keep: usize,
) -> Result<Response, Failure> {
    let started = Instant::now();
    let stream = TcpStream::connect(addr)
        .await
        .map_err(|e| Failure::Io(format!("connect: {}", e.kind())))?;
    stream
        .set_nodelay(true)
        .map_err(|e| Failure::Io(e.kind().to_string()))?;
    let (mut reader, mut writer) = stream.into_split();
    let mut head = format!(
        "POST {} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n",
        request.path,
        request.body.len()
    );
    for (name, value) in &request.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    let body = request.body.clone();
    let write = async move {
        writer.write_all(head.as_bytes()).await?;
        writer.write_all(&body).await?;
        writer.flush().await?;
        // Keep the write half open (no FIN): some servers treat a half-close as an abort.
        Ok::<_, std::io::Error>(writer)
    };
    let read = read_response(&mut reader, started, sse, keep);
    tokio::pin!(write, read);
    let mut written = None;
    let read = loop {
        tokio::select! {
            response = &mut read => break response,
            result = &mut write, if written.is_none() => written = Some(result),
        }
    };
    let mut response = read?;
    response.write_error = match written {
        Some(Ok(_writer)) => None,
        Some(Err(e)) => Some(e.kind().to_string()),
        None => Some("answered before the body was sent".into()),
    };
    Ok(response)
}

async fn read_response(
    reader: &mut tokio::net::tcp::OwnedReadHalf,
    started: Instant,
    sse: bool,
    keep: usize,
) -> Result<Response, Failure> {
    let mut raw = Vec::with_capacity(16 * 1024);
    let mut buffer = vec![0u8; 64 * 1024];
    // The head.
    let head_end = loop {
        let n = reader
            .read(&mut buffer)
            .await
            .map_err(|e| Failure::Io(e.kind().to_string()))?;
        if n == 0 {
            return Err(Failure::Io(if raw.is_empty() {
                "closed before a response".into()
            } else {
                "closed inside the response head".into()
            }));
        }
        raw.extend_from_slice(&buffer[..n]);
        if let Some(end) = find(&raw, b"\r\n\r\n") {
            break end + 4;
        }
    };
    let head = String::from_utf8_lossy(&raw[..head_end]).to_ascii_lowercase();
    let status: u16 = head
        .get(9..12)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| Failure::Io("no status line".into()))?;
    let chunked = head.contains("transfer-encoding: chunked");
    let length: Option<usize> = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok());
    let mut body = Body::new(chunked, sse, keep, started);
    body.feed(&raw[head_end..]);
    let mut cut = false;
    while !body.finished(length) {
        match reader.read(&mut buffer).await {
            Ok(0) => {
                cut = chunked || length.is_some_and(|l| body.len < l);
                break;
            }
            Ok(n) => body.feed(&buffer[..n]),
            Err(e) => {
                return Err(Failure::Io(format!("{} after status {status}", e.kind())));
            }
        }
    }
    if cut {
        return Err(Failure::Io(format!("body cut after status {status}")));
    }
    Ok(Response {
        status,
        first_content: body.first_content,
        total: started.elapsed(),
        body_start: body.kept,
        body_len: body.len,
        streamed_text: body.text,
        done: body.done_event,
        write_error: None,
    })
}

/// A response body as it arrives.
struct Body {
    chunked: bool,
    sse: bool,
    keep: usize,
    started: Instant,
    /// Raw bytes not yet de-chunked.
    pending: Vec<u8>,
    /// The last chunk came.
    last_chunk: bool,
    /// De-chunked bytes seen.
    len: usize,
    kept: Vec<u8>,
    /// SSE text not yet split into lines.
    line: Vec<u8>,
    first_content: Option<Duration>,
    text: String,
    done_event: bool,
}

impl Body {
    fn new(chunked: bool, sse: bool, keep: usize, started: Instant) -> Self {
        Self {
            chunked,
            sse,
            keep,
            started,
            pending: Vec::new(),
            last_chunk: false,
            len: 0,
            kept: Vec::new(),
            line: Vec::new(),
            first_content: None,
            text: String::new(),
            done_event: false,
        }
    }

    fn finished(&self, length: Option<usize>) -> bool {
        if self.chunked {
            self.last_chunk
        } else {
            length.is_some_and(|l| self.len >= l)
        }
    }

    fn feed(&mut self, data: &[u8]) {
        if !self.chunked {
            self.payload(data);
            return;
        }
        self.pending.extend_from_slice(data);
        let mut at = 0;
        while !self.last_chunk {
            let Some(line_end) = find(&self.pending[at..], b"\r\n") else {
                break;
            };
            let size_text = String::from_utf8_lossy(&self.pending[at..at + line_end]);
            let size_text = size_text.split(';').next().unwrap_or("").trim();
            let Ok(size) = usize::from_str_radix(size_text, 16) else {
                // Not chunked after all: take the rest as is.
                self.last_chunk = true;
                break;
            };
            let start = at + line_end + 2;
            if size == 0 {
                self.last_chunk = true;
                at = start;
                break;
            }
            if self.pending.len() < start + size + 2 {
                break;
            }
            let chunk = self.pending[start..start + size].to_vec();
            self.payload(&chunk);
            at = start + size + 2;
        }
        self.pending.drain(..at.min(self.pending.len()));
    }

    fn payload(&mut self, data: &[u8]) {
        self.len += data.len();
        let room = self.keep.saturating_sub(self.kept.len());
        self.kept.extend_from_slice(&data[..room.min(data.len())]);
        if !self.sse {
            return;
        }
        self.line.extend_from_slice(data);
        let mut at = 0;
        while let Some(end) = find(&self.line[at..], b"\n") {
            let line = &self.line[at..at + end];
            at += end + 1;
            let Some(data) = line.strip_prefix(b"data: ") else {
                continue;
            };
            if data == b"[DONE]" {
                self.done_event = true;
                continue;
            }
            let Ok(event) = serde_json::from_slice::<serde_json::Value>(data) else {
                continue;
            };
            if let Some(content) = event["choices"][0]["delta"]["content"].as_str()
                && !content.is_empty()
            {
                if self.first_content.is_none() {
                    self.first_content = Some(self.started.elapsed());
                }
                self.text.push_str(content);
            }
        }
        self.line.drain(..at);
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_split_anywhere_are_joined_and_sse_content_is_collected() {
        let events = "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n\
                      data: {\"choices\":[{\"delta\":{\"content\":\"po\"}}]}\n\n\
                      data: {\"choices\":[{\"delta\":{\"content\":\"ng\"}}]}\n\ndata: [DONE]\n\n";
        let mut wire = Vec::new();
        for piece in events.as_bytes().chunks(7) {
            wire.extend_from_slice(format!("{:x}\r\n", piece.len()).as_bytes());
            wire.extend_from_slice(piece);
            wire.extend_from_slice(b"\r\n");
        }
        wire.extend_from_slice(b"0\r\n\r\n");
        let mut body = Body::new(true, true, 10, Instant::now());
        for byte in wire.chunks(3) {
            body.feed(byte);
        }
        assert!(body.finished(None));
        assert_eq!(body.len, events.len());
        assert_eq!(body.kept, &events.as_bytes()[..10]);
        assert_eq!(body.text, "pong");
        assert!(body.done_event && body.first_content.is_some());
    }
}
