//! Streaming a turn: the one loop every API streams through, and the [`Render`] a dialect gives
//! it to word the output in its own events.
//!
//! The HTTP head waits for the turn's first output, so a failure before it is an ordinary error
//! response with its status, and one after it ends the stream in the API's own words. A stream
//! quiet for the ping interval gets a keep-alive (which sends the head if it had not gone out).
//! A transparent rebuild (the resume went stale, the Run started over) is invisible to the
//! client as long as no content went out, keep-alives or not; after content it ends the stream
//! with an error, since the client saw part of an answer the rebuilt conversation does not
//! continue.
//!
//! The turn runs on a task of its own and stops as soon as the client is gone: the response
//! body is dropped (the connection closed, or a write made no progress for the write timeout)
//! and the Run is cancelled within moments, not at the next send.

use std::convert::Infallible;
use std::time::Duration;

use axum::body::Body;
use axum::response::{IntoResponse as _, Response};
use bytes::Bytes;
use cursor_agent::AgentEvent;
use cursor_agent::ir::{Conversation, Event, ToolCall};
use cursor_agent::session::ModelChoice;
use futures::StreamExt as _;
use http::{StatusCode, header};
use tokio::sync::{mpsc, oneshot};

use super::clip::Clip;
use super::turn_request::{stale_after_answer, turn_vanished};
use super::{Engine, Finish, Leg, TurnGuard, TurnRequest, Whole, blocking};
use crate::ApiError;

/// How many frames wait for a slow client before the turn stops being read.
const QUEUE: usize = 32;

/// One piece of an answer's output.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Piece<'a> {
    /// More reasoning.
    Thinking(&'a str),
    /// More answer text (already clipped).
    Text(&'a str),
    /// A whole tool call.
    ToolCall(&'a ToolCall),
}

/// Work to do, off the async workers, once an answer completed (before its last frames go out).
pub(crate) type OnComplete = Box<dyn FnOnce() + Send>;

/// How a dialect words a streamed answer.
pub(crate) trait Render: Send + 'static {
    /// The frames a stream opens with, sent with its first output or keep-alive.
    fn opening(&mut self) -> Vec<Bytes>;

    /// The frames of one piece of output.
    fn piece(&mut self, piece: Piece<'_>, out: &mut Vec<Bytes>);

    /// The frames that end an answer (completed, or cut by the engine).
    fn end(&mut self, whole: &Whole, out: &mut Vec<Bytes>);

    /// A keep-alive: an SSE comment, which every SSE client skips, unless the API has its own.
    fn keep_alive(&mut self) -> Bytes {
        Bytes::from_static(b": keep-alive\n\n")
    }

    /// The last frame of a stream that failed after its head went out.
    fn failure(&mut self, error: &ApiError, leg: &Leg) -> Bytes;

    /// Forgets everything rendered since the opening: the turn started over before any
    /// content went out.
    fn reset(&mut self) {}

    /// Work for a completed answer (storing it), run before its last frames go out.
    fn completed(&mut self, whole: &Whole) -> Option<OnComplete> {
        let _ = whole;
        None
    }
}

impl Engine {
    /// Streams `turn` through `render`: the response once output began, or the error the turn
    /// failed with before that. A reply format is checked before anything streams, so such an
    /// answer is sent whole, as one delta.
    pub(crate) async fn stream<R: Render>(
        &self,
        mut turn: TurnRequest,
        mut render: R,
    ) -> Result<Response, ApiError> {
        if turn.format.is_some() {
            let whole = self.answer(turn).await?;
            if let Some(job) = render.completed(&whole) {
                blocking::run(job).await?;
            }
            let frames = replay(&mut render, &whole);
            let (tx, rx) = mpsc::channel(frames.len().max(1));
            for frame in frames {
                let _ = tx.try_send(frame);
            }
            return Ok(sse_response(rx));
        }
        let permit = std::mem::replace(
            &mut turn.permit,
            self.admission().permit(&turn.scope.namespace),
        );
        let guard = self.begin(&turn.scope, &turn.conversation, permit).await?;
        let ping = self.limits().ping_interval;
        let TurnRequest {
            conversation,
            model,
            clip,
            ..
        } = turn;
        respond(move |outlet| pump(guard, conversation, model, clip, render, ping, outlet)).await
    }
}

/// A whole answer as the frames of a stream: its text as one delta.
pub(crate) fn replay<R: Render>(render: &mut R, whole: &Whole) -> Vec<Bytes> {
    let mut frames = render.opening();
    let leg = &whole.leg;
    if !leg.thinking.is_empty() {
        render.piece(Piece::Thinking(&leg.thinking), &mut frames);
    }
    if !leg.text.is_empty() {
        render.piece(Piece::Text(&leg.text), &mut frames);
    }
    for call in &leg.calls {
        render.piece(Piece::ToolCall(call), &mut frames);
    }
    render.end(whole, &mut frames);
    frames
}

/// Streams one leg; see the module doc.
async fn pump<R: Render>(
    guard: TurnGuard,
    conversation: Conversation,
    model: ModelChoice,
    mut clip: Clip,
    mut render: R,
    ping: Duration,
    mut outlet: Outlet,
) {
    let view = guard.agent_view(&conversation);
    let mut turn = guard.session().turn(&view, &model);
    let mut leg = Leg::default();
    // Content went out (not just the opening or keep-alives): a restart can no longer be hidden.
    let mut content_sent = false;
    let mut quiet = tokio::time::interval_at(tokio::time::Instant::now() + ping, ping);
    quiet.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let next = tokio::select! {
            event = turn.next() => Some(event),
            _ = quiet.tick() => None,
            () = outlet.closed() => return,
        };
        let Some(event) = next else {
            // A quiet model: the head and the opening go out with the first keep-alive, so a
            // client (or proxy) that kills silent streams keeps this one.
            let alive = vec![render.keep_alive()];
            if !outlet.send(alive, || render.opening()).await {
                return;
            }
            continue;
        };
        let Some(event) = event else { break };
        let ir = match event {
            AgentEvent::Ir(ir) => ir,
            other => {
                guard.side_event(&other);
                continue;
            }
        };
        if matches!(ir, Event::Reset) {
            if content_sent {
                let error = stale_after_answer();
                guard.failed(&error);
                return outlet.fail(error, |e| render.failure(e, &leg)).await;
            }
            leg = Leg::default();
            clip.reset();
            render.reset();
            continue;
        }
        if let Some(error) = leg.absorb(&ir) {
            guard.failed(&error);
            return outlet.fail(error, |e| render.failure(e, &leg)).await;
        }
        let mut frames = Vec::new();
        match &ir {
            Event::TextDelta { text } => {
                let (out, cut) = clip.push(text);
                if !out.is_empty() {
                    render.piece(Piece::Text(&out), &mut frames);
                }
                if let Some(cut) = cut {
                    // Cut here: the Run is cancelled (dropped) and the conversation handed back
                    // unrecorded, as when a client goes.
                    leg.text = clip.text().to_owned();
                    let whole = Whole {
                        finish: Finish::of(&leg, Some(cut)),
                        stop_sequence: clip.matched().map(str::to_owned),
                        leg,
                    };
                    render.end(&whole, &mut frames);
                    drop(turn);
                    let _ = outlet.send(frames, || render.opening()).await;
                    return;
                }
            }
            Event::ThinkingDelta { text } => render.piece(Piece::Thinking(text), &mut frames),
            Event::ToolCall(call) => {
                let tail = clip.flush();
                if !tail.is_empty() {
                    render.piece(Piece::Text(&tail), &mut frames);
                }
                render.piece(Piece::ToolCall(call), &mut frames);
            }
            Event::Done { .. } => {
                let tail = clip.flush();
                if !tail.is_empty() {
                    render.piece(Piece::Text(&tail), &mut frames);
                }
                drop(turn);
                let whole = Whole {
                    finish: Finish::of(&leg, None),
                    stop_sequence: None,
                    leg,
                };
                // Recorded (and stored) before the client reads the end, so its next request
                // finds it.
                guard
                    .finish(&whole.leg, clip.text(), &whole.leg.calls, None)
                    .await;
                if let Some(job) = render.completed(&whole) {
                    let _ = blocking::run(job).await;
                }
                render.end(&whole, &mut frames);
                let _ = outlet.send(frames, || render.opening()).await;
                return;
            }
            _ => {}
        }
        if !frames.is_empty() {
            content_sent = true;
            quiet.reset();
        }
        if !outlet.send(frames, || render.opening()).await {
            return;
        }
    }
    let error = turn_vanished();
    guard.failed(&error);
    outlet.fail(error, |e| render.failure(e, &leg)).await;
}

/// The sending side of one streamed answer.
pub(crate) struct Outlet {
    head: Option<oneshot::Sender<Result<(), ApiError>>>,
    frames: mpsc::Sender<Bytes>,
}

impl Outlet {
    /// Completes once the client is gone (before or after the head went out).
    async fn closed(&mut self) {
        match &mut self.head {
            // Before the head, the request handler waiting for it is the client's side.
            Some(head) => head.closed().await,
            None => self.frames.closed().await,
        }
    }

    /// Sends `frames`; the first non-empty batch sends the head and `opening()` before them.
    /// False once the client went away (dropping the turn then cancels the Run).
    async fn send(&mut self, frames: Vec<Bytes>, opening: impl FnOnce() -> Vec<Bytes>) -> bool {
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
    async fn fail(mut self, error: ApiError, last: impl FnOnce(&ApiError) -> Bytes) {
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
async fn respond<F, Fut>(pump: F) -> Result<Response, ApiError>
where
    F: FnOnce(Outlet) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    use tracing::Instrument as _;
    let (head, head_rx) = oneshot::channel();
    let (frames, rx) = mpsc::channel::<Bytes>(QUEUE);
    // The turn's log lines carry the request's span (its id), though it outlives the handler.
    let turn = pump(Outlet {
        head: Some(head),
        frames,
    });
    drop(tokio::spawn(turn.instrument(tracing::Span::current())));
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
