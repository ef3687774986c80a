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
        sender: mpsc::Sender<Event>,
    ) -> Self {
        let outlet = Outlet {
            sender,
            pending: None,
            listening: true,
        };
        Self {
            future: Box::pin(drive(client, origin, headers, run, outlet)),
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
    mut outlet: Outlet,
) -> InferenceRun {
    // A turn refused before it began (an image the backend would not take) opens no call.
    if run.is_finished() {
        outlet.flush(&mut run).await;
        return run;
    }
    let mut call = match client.bidi(&origin, RUN_INFERENCE_PATH, headers).await {
        Ok(call) => call,
        Err(error) => {
            run.handle_transport_error(error);
            outlet.flush(&mut run).await;
            return run;
        }
    };
    loop {
        transmit(&mut run, &mut call).await;
        outlet.forward(&mut run);
        if run.is_finished() {
            break;
        }
        let deadline = run.poll_timeout();
        let blocked = outlet.pending.is_some();
        tokio::select! {
            biased;
            () = outlet.sender.closed() => run.cancel(),
            // The host's queue is full: nothing more is read until it takes an event.
            room = outlet.sender.reserve(), if blocked => {
                if room.is_err() {
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
    outlet.flush(&mut run).await;
    drop(outlet);
    let ended_well = run.failure().is_none() && call.close_send().is_ok();
    if ended_well {
        // Anything the server sends after the end of the invocation is not part of the turn.
        let _ = tokio::time::timeout(DRAIN_TIMEOUT, drain(&mut call)).await;
    }
    call.cancel();
    run
}

/// The host's bounded event queue, and the one event taken from the run that it had no room
/// for: while that event waits, the response is not read (backpressure).
struct Outlet {
    sender: mpsc::Sender<Event>,
    pending: Option<Event>,
    /// The event stream is still read.
    listening: bool,
}

impl Outlet {
    /// Hands the run's events to the host until its queue is full; once nobody listens they
    /// are dropped (the loop notices the closed queue and cancels).
    fn forward(&mut self, run: &mut InferenceRun) {
        while self.listening {
            let Some(event) = self.pending.take().or_else(|| run.poll_event()) else {
                return;
            };
            match self.sender.try_send(event) {
                Ok(()) => {}
                Err(mpsc::error::TrySendError::Full(event)) => {
                    self.pending = Some(event);
                    return;
                }
                Err(mpsc::error::TrySendError::Closed(_)) => self.listening = false,
            }
        }
        self.pending = None;
        while run.poll_event().is_some() {}
    }

    /// Waits until every event the run queued reached the host's queue (or nobody listens).
    async fn flush(&mut self, run: &mut InferenceRun) {
        loop {
            self.forward(run);
            if self.pending.is_none() {
                return;
            }
            if self.sender.reserve().await.is_err() {
                self.listening = false;
            }
        }
    }
}

async fn transmit(run: &mut InferenceRun, call: &mut BidiCall) {
    while let Some(frame) = run.poll_transmit() {
        if let Err(error) = call.send_message(&frame).await {
            run.handle_transport_error(error);
        }
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
