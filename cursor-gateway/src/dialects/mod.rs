//! The APIs the gateway speaks, each a dialect of the one turn engine: its typed wire structs,
//! the translation of its request into a [`TurnRequest`](crate::engine::TurnRequest), and the
//! rendering of the engine's output in its response and stream shapes.
//!
//! Request bodies are parsed straight into typed structs; lists of content blocks are folded as
//! they are read (a run of text blocks becomes one text, as Cursor joins them anyway), so a body
//! of a million tiny blocks costs its text, not a million objects. Values that must become JSON
//! trees (tool schemas, tool-call arguments) are kept as their text until the request's share of
//! the body budget has grown by what the tree will cost.
//!
//! A fourth API is a new folder here and a route in [`crate::server`]; the engine does not
//! change.

pub(crate) mod anthropic;
pub(crate) mod chat;
pub(crate) mod content;
pub(crate) mod models;
pub(crate) mod openai;
pub(crate) mod responses;
#[cfg(test)]
mod tests;

use bytes::Bytes;

use crate::engine::BodyPermit;

/// What the server hands a dialect with a request's body.
#[derive(Debug)]
pub(crate) struct Incoming {
    /// The client key's namespace.
    pub(crate) namespace: String,
    /// The session hint the client sent as a header, if any.
    pub(crate) header_hint: Option<String>,
    /// The body, read whole under the size limit.
    pub(crate) body: Bytes,
    /// The body's share of the body budget (its length, so far).
    pub(crate) permit: BodyPermit,
}

impl Incoming {
    /// Parses the body with `parse` (on the blocking pool when it is large) and lets it go,
    /// then grows the request's share of the body budget by what its JSON trees will cost
    /// (`trees`) before anything builds them.
    pub(crate) async fn parse<R: Send + 'static>(
        self,
        parse: fn(&[u8]) -> Result<R, crate::ApiError>,
        trees: fn(&R) -> usize,
    ) -> Result<Parsed<R>, crate::ApiError> {
        let Self {
            namespace,
            header_hint,
            body,
            mut permit,
        } = self;
        let size = body.len();
        let request = crate::engine::blocking::run_sized(size, move || parse(&body)).await??;
        permit.grow(trees(&request)).await?;
        Ok(Parsed {
            namespace,
            header_hint,
            size,
            request,
            permit,
        })
    }
}

/// A request parsed, its body gone.
#[derive(Debug)]
pub(crate) struct Parsed<R> {
    pub(crate) namespace: String,
    pub(crate) header_hint: Option<String>,
    /// The body's length: work on the request is as large as it.
    pub(crate) size: usize,
    pub(crate) request: R,
    pub(crate) permit: BodyPermit,
}

/// The 400 for a body that did not parse: `invalid_json` when it is not JSON at all, else
/// `shape_code` saying it does not fit `shape` (serde's message names the field and where).
pub(crate) fn unparsed(
    error: &serde_json::Error,
    shape_code: &str,
    shape: &str,
) -> crate::ApiError {
    match error.classify() {
        serde_json::error::Category::Data => crate::ApiError::bad_request(
            shape_code,
            format!("the request does not fit the {shape} shape: {error}"),
        ),
        _ => crate::ApiError::bad_request("invalid_json", format!("the body is not JSON: {error}")),
    }
}

/// An SSE frame with only a `data:` line.
pub(crate) fn sse_data(json: &impl serde::Serialize) -> Bytes {
    let json = serde_json::to_string(json).unwrap_or_else(|_| "{}".into());
    Bytes::from(format!("data: {json}\n\n"))
}

/// An SSE frame with an `event:` line and a `data:` line.
pub(crate) fn sse_event(kind: &str, json: &impl serde::Serialize) -> Bytes {
    let json = serde_json::to_string(json).unwrap_or_else(|_| "{}".into());
    Bytes::from(format!("event: {kind}\ndata: {json}\n\n"))
}
