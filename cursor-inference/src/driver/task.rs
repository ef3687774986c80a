//! The future that owns the stream and drives the run.

use std::fmt;
use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::time::Duration;

use cursor_proto::ir::Event;
use cursor_transport::{BidiCall, Client, Origin, RequestHeaders};
use futures::future::BoxFuture;
use tokio::sync::mpsc;

use super::{RUN_INFERENCE_PATH, now};
use crate::InferenceRun;

/// How long a finished turn waits for the server to end the stream after `finish_run`.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(5);

/// The work of one turn. Await it (or spawn it); it resolves to the finished run. Dropping it
/// resets the stream.
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
        sender: mpsc::UnboundedSender<Event>,
    ) -> Self {
        Self {
            future: Box::pin(drive(client, origin, headers, run, sender)),
        }
    }
}

impl IntoFuture for InferenceTask {
    type Output = InferenceRun;
    type IntoFuture = Pin<Box<dyn Future<Output = InferenceRun> + Send + 'static>>;

    fn into_future(self) -> Self::IntoFuture {
        self.future
    }
}

async fn drive(
    client: Client,
    origin: Origin,
    headers: RequestHeaders,
    mut run: InferenceRun,
    sender: mpsc::UnboundedSender<Event>,
) -> InferenceRun {
    // A turn refused before it began (an image the backend would not take) opens no call.
    if run.is_finished() {
        forward(&mut run, &sender);
        return run;
    }
    let mut call = match client.bidi(&origin, RUN_INFERENCE_PATH, headers).await {
        Ok(call) => call,
        Err(error) => {
            run.handle_transport_error(error);
            forward(&mut run, &sender);
            return run;
        }
    };
    loop {
        transmit(&mut run, &mut call).await;
        forward(&mut run, &sender);
        if run.is_finished() {
            break;
        }
        let deadline = run.poll_timeout();
        tokio::select! {
            biased;
            () = sender.closed() => run.cancel(),
            received = call.recv() => match received {
                Ok(Some(bytes)) => run.handle_server_bytes(&bytes, now()),
                Ok(None) => run.handle_end_of_stream(now()),
                Err(error) => run.handle_transport_error(error),
            },
            () = sleep_until(deadline), if deadline.is_some() => run.handle_timeout(now()),
        }
    }
    // The last frames (finish_run, a cancel) go out before the stream closes.
    transmit(&mut run, &mut call).await;
    forward(&mut run, &sender);
    drop(sender);
    let ended_well = run.failure().is_none() && call.close_send().is_ok();
    if ended_well {
        // Anything the server sends after the end of the invocation is not part of the turn.
        let _ = tokio::time::timeout(DRAIN_TIMEOUT, drain(&mut call)).await;
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

fn forward(run: &mut InferenceRun, sender: &mpsc::UnboundedSender<Event>) {
    while let Some(event) = run.poll_event() {
        // A closed receiver means the host gave up; the loop notices and cancels.
        let _ = sender.send(event);
    }
}

async fn drain(call: &mut BidiCall) {
    while let Ok(Some(_)) = call.recv().await {}
}

async fn sleep_until(deadline: Option<std::time::Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline.into()).await,
        None => std::future::pending().await,
    }
}
