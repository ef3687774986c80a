//! Body plumbing shared by every call: flow-controlled writes, bounded reads, and the
//! classification of a non-200 response.

use bytes::{Bytes, BytesMut};
use futures::future::poll_fn;
use http::HeaderMap;

use super::{connection::DeadSignal, h2_error};
use crate::{
    envelope::{Code, ConnectError},
    error::CursorError,
};

/// Largest error body read from a non-200 response.
pub(crate) const MAX_ERROR_BODY: usize = 64 * 1024;

/// Writes `data` as the peer's flow-control window allows; ends the stream if `end_of_stream`.
pub(crate) async fn send_all(
    stream: &mut h2::SendStream<Bytes>,
    mut data: Bytes,
    end_of_stream: bool,
) -> Result<(), h2::Error> {
    if data.is_empty() {
        if end_of_stream {
            stream.send_data(Bytes::new(), true)?;
        }
        return Ok(());
    }
    while !data.is_empty() {
        stream.reserve_capacity(data.len());
        let granted = match poll_fn(|cx| stream.poll_capacity(cx)).await {
            Some(granted) => granted?,
            // The stream can no longer send; send_data reports why.
            None => return stream.send_data(data, end_of_stream),
        };
        if granted == 0 {
            continue;
        }
        let chunk = data.split_to(granted.min(data.len()));
        stream.send_data(chunk, end_of_stream && data.is_empty())?;
    }
    Ok(())
}

/// The next chunk of a body, releasing its flow-control capacity, or the connection's death.
pub(crate) async fn next_chunk(
    body: &mut h2::RecvStream,
    dead: &mut DeadSignal,
) -> Result<Option<Bytes>, CursorError> {
    let chunk = tokio::select! {
        biased;
        chunk = body.data() => Some(chunk),
        _ = dead.wait_for(Option::is_some) => None,
    };
    match chunk {
        Some(None) => Ok(None),
        Some(Some(Ok(chunk))) => {
            // Released as the caller takes a chunk, which it does only when it can handle one:
            // a caller that stops reading stops the peer at the window (backpressure).
            let _ = body.flow_control().release_capacity(chunk.len());
            Ok(Some(chunk))
        }
        // A connection killed on purpose (no PONG) says why better than the h2 error.
        Some(Some(Err(err))) => match dead_reason(dead) {
            Some(reason) => Err(CursorError::network(reason, err)),
            None => Err(h2_error::network("receiving", err)),
        },
        None => Err(CursorError::network_msg(
            dead_reason(dead).unwrap_or_else(|| "connection closed".to_owned()),
        )),
    }
}

fn dead_reason(dead: &DeadSignal) -> Option<String> {
    dead.borrow().as_deref().map(str::to_owned)
}

/// Reads a whole body, refusing one longer than `max`.
pub(crate) async fn read_to_end(
    body: &mut h2::RecvStream,
    dead: &mut DeadSignal,
    max: usize,
) -> Result<Bytes, CursorError> {
    let mut out = BytesMut::new();
    while let Some(chunk) = next_chunk(body, dead).await? {
        if out.len() + chunk.len() > max {
            return Err(CursorError::drift(format!(
                "response body exceeds the {max}-byte limit"
            )));
        }
        out.extend_from_slice(&chunk);
    }
    Ok(out.freeze())
}

/// The error a non-200 response stands for, from its status and (JSON) body: never parsed as
/// frames. Cursor sends Connect's `{"code","message"}` body; anything else falls back to the
/// Connect HTTP-to-code table with the body's text as the message.
pub(crate) fn status_error_from_body(status: u16, headers: &HeaderMap, body: &[u8]) -> CursorError {
    let mut error = ConnectError::parse_unary_body(body)
        .unwrap_or_else(|_| ConnectError::new(Code::from_http_status(status), summarize(body)));
    for (name, value) in headers {
        if let Ok(value) = value.to_str() {
            error
                .metadata
                .entry(name.as_str().to_owned())
                .or_default()
                .push(value.to_owned());
        }
    }
    CursorError::connect(error, Some(status))
}

/// A short, printable excerpt of a body for an error message.
fn summarize(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    let mut out: String = text.chars().take(200).filter(|c| !c.is_control()).collect();
    if text.chars().count() > 200 {
        out.push('…');
    }
    out
}

/// The media type of a response (`content-type` without parameters), lower-cased.
pub(crate) fn media_type(headers: &HeaderMap) -> String {
    headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| {
            v.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use cursor_proto::ir::Classify as _;
    use cursor_proto::ir::ErrorKind;

    #[test]
    fn json_error_bodies_keep_their_code() {
        let err = status_error_from_body(
            429,
            &HeaderMap::new(),
            br#"{"code":"resource_exhausted","message":"usage limit"}"#,
        );
        assert_eq!(err.code(), Some(Code::ResourceExhausted));
        assert_eq!(err.http_status(), Some(429));
        assert_eq!(err.kind(), ErrorKind::RemoteRefusal);
        assert_eq!(err.refusal(), Some(crate::Refusal::Quota));
    }

    #[test]
    fn other_bodies_fall_back_to_the_status_table() {
        let err = status_error_from_body(401, &HeaderMap::new(), b"<html>Unauthorized</html>");
        assert_eq!(err.code(), Some(Code::Unauthenticated));
        assert_eq!(err.kind(), ErrorKind::Auth);
        let err = status_error_from_body(502, &HeaderMap::new(), b"\x00\x00\x00\x00\x05hello");
        assert_eq!(err.kind(), ErrorKind::Network);
    }

    #[test]
    fn media_type_ignores_parameters() {
        let mut headers = HeaderMap::new();
        headers.insert(
            "content-type",
            "Application/Proto; charset=x".parse().unwrap(),
        );
        assert_eq!(media_type(&headers), "application/proto");
    }
}
