//! The future that owns the stream and drives the run.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use cursor_proto::ir::Event;
use cursor_transport::client::drive::{Outlet, close_gracefully, sleep_until};
use cursor_transport::{BidiCall, Client, Origin, RequestHeaders};
use futures::future::BoxFuture;
use tokio::sync::mpsc;

use super::{RUN_INFERENCE_PATH, now};
use crate::InferenceRun;

/// The work of one turn: a future that resolves to the finished run. Await it or spawn it;
/// dropping it resets the stream.
#[must_use = "the turn makes no progress unless its task is polled"]
pub struct InferenceTask {
    future: BoxFuture<'static, InferenceRun>,
}

impl fmt::Debug for InferenceTask {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InferenceTask").finish_non_exhaustive()
    }
}

impl InferenceTask {
    pub(crate) fn new(
        client: Client,
        origin: Origin,
        headers: RequestHeaders,
        run: InferenceRun,
        sender: mpsc::Sender<Event>,
    ) -> Self {
        Self {
            future: Box::pin(drive(client, origin, headers, run, Outlet::new(sender))),
        }
    }
}

impl Future for InferenceTask {
    type Output = InferenceRun;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<InferenceRun> {
        self.future.as_mut().poll(cx)
    }
}

async fn drive(
    client: Client,
    origin: Origin,
    headers: RequestHeaders,
    mut run: InferenceRun,
    mut outlet: Outlet<Event>,
) -> InferenceRun {
    // A turn refused before it began (an image the backend would not take) opens no call.
    if run.is_finished() {
        outlet.flush(|| run.poll_event()).await;
        return run;
    }
    let mut call = match client.bidi(&origin, RUN_INFERENCE_PATH, headers).await {
        Ok(call) => call,
        Err(error) => {
            run.handle_transport_error(error);
            outlet.flush(|| run.poll_event()).await;
            return run;
        }
    };
    loop {
        transmit(&mut run, &mut call).await;
        outlet.forward(|| run.poll_event());
        if run.is_finished() {
            break;
        }
        let deadline = run.poll_timeout();
        let blocked = outlet.is_blocked();
        tokio::select! {
            biased;
            () = outlet.closed() => run.cancel(),
            // The host's queue is full: nothing more is read until it takes an event.
            room = outlet.has_room(), if blocked => {
                if !room {
                    run.cancel();
                }
            }
            received = call.recv(), if !blocked => match received {
                Ok(Some(bytes)) => run.handle_server_bytes(&bytes, now()),
                Ok(None) => run.handle_end_of_stream(now()),
                Err(error) => run.handle_transport_error(error),
            },
            () = sleep_until(deadline), if deadline.is_some() => run.handle_timeout(now()),
        }
    }
    // The last frames (finish_run, a cancel) go out before the stream closes.
    transmit(&mut run, &mut call).await;
    outlet.flush(|| run.poll_event()).await;
    // The event stream ends here, before any grace period: the turn is not held open.
    outlet.close();
    if run.failure().is_none() {
        // Anything the server sends after the end of the invocation is not part of the turn.
        close_gracefully(&mut call).await;
    }
    call.cancel();
    run
}

async fn transmit(run: &mut InferenceRun, call: &mut BidiCall) {
    while let Some(frame) = run.poll_transmit() {
        if let Err(error) = call.send_message(&frame).await {
            run.handle_transport_error(error);
        }
    }
}
