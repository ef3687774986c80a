//! A streamed answer whose HTTP head waits for the turn's first output, so a failure before it
//! is an ordinary error response with its status, and one after it ends the stream in the
//! protocol's own words. Chat completions and Responses both stream through it.
//!
//! The turn runs on a task of its own and stops as soon as the client is gone: the response
//! body is dropped (the connection closed, or a write made no progress for the write timeout)
//! and [`Outlet::closed`] fires, so the Run is cancelled within moments, not at the next send.

use std::convert::Infallible;
use std::future::Future;

use axum::body::Body;
use axum::response::{IntoResponse as _, Response};
use bytes::Bytes;
use futures::StreamExt as _;
use http::{StatusCode, header};
use tokio::sync::{mpsc, oneshot};

use crate::ApiError;
use crate::gateway::turn_vanished;

/// How many frames wait for a slow client before the turn stops being read.
const QUEUE: usize = 32;

/// The sending side of one streamed answer.
pub(crate) struct Outlet {
    head: Option<oneshot::Sender<Result<(), ApiError>>>,
    frames: mpsc::Sender<Bytes>,
}

impl Outlet {
    /// Whether output has begun (the HTTP head went out).
    pub(crate) fn started(&self) -> bool {
        self.head.is_none()
    }

    /// Completes once the client is gone (before or after the head went out).
    pub(crate) async fn closed(&mut self) {
        match &mut self.head {
            // Before the head, the request handler waiting for it is the client's side.
            Some(head) => head.closed().await,
            None => self.frames.closed().await,
        }
    }

    /// Sends `frames`; the first non-empty batch sends the head and `opening()` before them.
    /// False once the client went away (dropping the turn then cancels the Run).
    pub(crate) async fn send(
        &mut self,
        frames: Vec<Bytes>,
        opening: impl FnOnce() -> Vec<Bytes>,
    ) -> bool {
        if frames.is_empty() {
            return true;
        }
        let mut all = Vec::new();
        if let Some(head) = self.head.take() {
            if head.send(Ok(())).is_err() {
                return false;
            }
            all = opening();
        }
        all.extend(frames);
        for frame in all {
            if self.frames.send(frame).await.is_err() {
                return false;
            }
        }
        true
    }

    /// Ends the answer with `error`: as the response itself before output began, else as the
    /// last frame, `last(&error)`.
    pub(crate) async fn fail(mut self, error: ApiError, last: impl FnOnce(&ApiError) -> Bytes) {
        match self.head.take() {
            Some(head) => {
                let _ = head.send(Err(error));
            }
            None => {
                let _ = self.frames.send(last(&error)).await;
            }
        }
    }
}

/// Runs `pump` on a task of its own and answers with its stream once it produced output, or
/// with the error it failed with before that.
pub(crate) async fn respond<F, Fut>(pump: F) -> Result<Response, ApiError>
where
    F: FnOnce(Outlet) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let (head, head_rx) = oneshot::channel();
    let (frames, rx) = mpsc::channel::<Bytes>(QUEUE);
    drop(tokio::spawn(pump(Outlet {
        head: Some(head),
        frames,
    })));
    match head_rx.await {
        Ok(Ok(())) => Ok(sse_response(rx)),
        Ok(Err(error)) => Err(error),
        Err(_) => Err(turn_vanished()),
    }
}

/// A `text/event-stream` response over `rx`; unbuffered by proxies.
pub(crate) fn sse_response(rx: mpsc::Receiver<Bytes>) -> Response {
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|bytes| (Ok::<_, Infallible>(bytes), rx))
    });
    (
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
            (header::HeaderName::from_static("x-accel-buffering"), "no"),
        ],
        Body::from_stream(stream.boxed()),
    )
        .into_response()
}
