//! [`RunTask`]: the `select!` loop that owns the stream and the state machine.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};

use bytes::Bytes;
use cursor_proto::ir::Event;
use cursor_transport::client::AGENT_RUN_PATH;
use cursor_transport::client::drive::{Outlet, close_gracefully, sleep_until};
use cursor_transport::envelope::Compression;
use cursor_transport::{BidiCall, Client, CursorError, Origin, RequestHeaders};
use futures::FutureExt as _;
use tokio::sync::mpsc;
use tracing::Instrument as _;

use super::handle::Command;
use super::now;
use crate::error::outcome_of;
use crate::{AgentError, AgentEvent, AgentRun};

/// Body chunks (DATA frames) handled per wake-up at most before events are forwarded and
/// commands looked at.
const MAX_BURST: usize = 64;
/// Body bytes handled per wake-up at most: deltas of one burst merge into one event, so this
/// bounds an event's size and, with [`EVENT_QUEUE`](super::EVENT_QUEUE), what a host that
/// stops reading can have queued.
const MAX_BURST_BYTES: usize = 64 << 10;

/// The future that drives one Run; it resolves to the finished [`AgentRun`].
///
/// Poll it to completion on any executor that provides tokio's reactor and timer (the
/// transport's requirement). Dropping it resets the stream.
#[must_use = "the run makes no progress unless its task is polled"]
pub struct RunTask {
    inner: Pin<Box<dyn Future<Output = AgentRun> + Send>>,
}

impl RunTask {
    pub(super) fn new(driver: Driver) -> Self {
        // The transport's own events nest under the Run's span.
        let span = driver.run.span().clone();
        Self {
            inner: Box::pin(driver.drive().instrument(span)),
        }
    }
}

impl std::fmt::Debug for RunTask {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunTask").finish_non_exhaustive()
    }
}

impl Future for RunTask {
    type Output = AgentRun;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<AgentRun> {
        self.inner.as_mut().poll(cx)
    }
}

/// Everything the task owns.
pub(super) struct Driver {
    pub(super) client: Client,
    pub(super) origin: Origin,
    pub(super) headers: RequestHeaders,
    pub(super) run: AgentRun,
    pub(super) commands: mpsc::UnboundedReceiver<Command>,
    pub(super) events: mpsc::Sender<AgentEvent>,
    pub(super) failure: Arc<OnceLock<AgentError>>,
}

/// What the loop has learned about its peers.
struct Loop {
    run: AgentRun,
    commands: mpsc::UnboundedReceiver<Command>,
    /// The host's bounded event queue (an event it had no room for holds the response back).
    outlet: Outlet<AgentEvent>,
    /// The run's typed failure, set before its `Error` event is queued (read through
    /// [`RunEvents::failure`](super::RunEvents::failure)).
    failure: Arc<OnceLock<AgentError>>,
    commands_open: bool,
}

impl Driver {
    async fn drive(self) -> AgentRun {
        let mut state = Loop {
            run: self.run,
            commands: self.commands,
            outlet: Outlet::new(self.events),
            failure: self.failure,
            commands_open: true,
        };
        let open = self.client.bidi(&self.origin, AGENT_RUN_PATH, self.headers);
        match state.until(open).await {
            Some(Ok(mut call)) => {
                let server_open = state.serve(&mut call).await;
                state.close(call, server_open).await;
            }
            Some(Err(error)) => {
                state.run.handle_end_of_stream(outcome_of(&error), now());
                state.settle_owed().await;
            }
            // Cancelled or timed out while connecting.
            None => state.settle_owed().await,
        }
        state.flush().await;
        state.run
    }
}

impl Loop {
    /// Runs the stream until the run is finished; returns whether the server side is still
    /// open.
    async fn serve(&mut self, call: &mut BidiCall) -> bool {
        if !self.write(call).await {
            return false;
        }
        if !self.await_response_head(call).await {
            return false;
        }
        loop {
            if !self.write(call).await {
                return false;
            }
            self.forward();
            if self.run.is_finished() {
                return true;
            }
            let deadline = self.run.poll_timeout();
            let blocked = self.outlet.is_blocked();
            tokio::select! {
                biased;
                command = self.commands.recv(), if self.commands_open => self.apply(command),
                // The host's queue is full: nothing more is read until it takes an event.
                room = self.outlet.has_room(), if blocked => self.deliver(room),
                data = call.recv_data(), if !blocked => {
                    let mut burst = data.as_ref().map_or(0, |d| d.as_ref().map_or(0, Bytes::len));
                    if !self.receive(data) {
                        return false;
                    }
                    // Chunks already received go in before the events go out, so deltas
                    // that arrived together reach the host as one (bounded, so commands and
                    // timers stay prompt). `recv_data` is cancel-safe.
                    for _ in 1..MAX_BURST {
                        if self.run.is_finished() || burst >= MAX_BURST_BYTES {
                            break;
                        }
                        let Some(data) = call.recv_data().now_or_never() else {
                            break;
                        };
                        burst += data.as_ref().map_or(0, |d| d.as_ref().map_or(0, Bytes::len));
                        if !self.receive(data) {
                            return false;
                        }
                    }
                }
                () = sleep_until(deadline) => self.run.handle_timeout(now()),
                () = self.outlet.closed(), if self.outlet.is_listening() => self.stop_listening(),
            }
        }
    }

    /// One chunk of the response body into the run (which takes its envelopes apart and ends
    /// itself at the end-of-stream frame); false when the server side ended.
    fn receive(&mut self, data: Result<Option<Bytes>, CursorError>) -> bool {
        match data {
            Ok(Some(chunk)) => {
                self.run.handle_server_data(chunk, now());
                true
            }
            Ok(None) => {
                // After its end-of-stream frame the run has finished; a body without one is
                // drift, as the transport's own framing reports it.
                if !self.run.is_finished() {
                    let error =
                        CursorError::drift("the stream ended without an end-of-stream frame");
                    self.run.handle_end_of_stream(outcome_of(&error), now());
                }
                self.forward();
                false
            }
            Err(error) => {
                self.run.handle_end_of_stream(outcome_of(&error), now());
                self.forward();
                false
            }
        }
    }

    /// Waits for the response head while applying commands and timers; frames queued
    /// meanwhile are written once it arrived. Returns false when the head was an error.
    async fn await_response_head(&mut self, call: &mut BidiCall) -> bool {
        let head = async { call.response_headers().await.map(|_| ()) };
        match self.until(head).await {
            // Finished first (cancelled, timed out): closing resets the stream.
            None => true,
            Some(Ok(())) => {
                let compression = call.response_compression().unwrap_or(Compression::Identity);
                self.run
                    .handle_response_head(compression, call.max_message_size());
                true
            }
            Some(Err(error)) => {
                self.run.handle_end_of_stream(outcome_of(&error), now());
                self.forward();
                false
            }
        }
    }

    /// Runs `future` to completion while applying commands and timers, without writing (the
    /// future may hold the stream); `None` when the run finished first.
    async fn until<F: Future>(&mut self, future: F) -> Option<F::Output> {
        tokio::pin!(future);
        loop {
            self.forward();
            if self.run.is_finished() {
                return None;
            }
            let deadline = self.run.poll_timeout();
            let blocked = self.outlet.is_blocked();
            tokio::select! {
                biased;
                output = &mut future => return Some(output),
                room = self.outlet.has_room(), if blocked => self.deliver(room),
                command = self.commands.recv(), if self.commands_open => self.apply(command),
                () = sleep_until(deadline) => self.run.handle_timeout(now()),
                () = self.outlet.closed(), if self.outlet.is_listening() => self.stop_listening(),
            }
        }
    }

    /// Writes every queued frame; a failed write ends the run with the transport's error.
    async fn write(&mut self, call: &mut BidiCall) -> bool {
        while let Some(frame) = self.run.poll_transmit() {
            if let Err(error) = call.send(&frame).await {
                self.run.handle_end_of_stream(outcome_of(&error), now());
                self.forward();
                return false;
            }
        }
        true
    }

    /// Hands queued events to the host until its queue is full, noting the run's typed failure.
    fn forward(&mut self) {
        let (run, failure) = (&mut self.run, &self.failure);
        self.outlet.forward(|| {
            let event = run.poll_event()?;
            track(run, failure, &event);
            Some(event)
        });
        if !self.outlet.is_listening() && !self.run.is_finished() {
            self.stop_listening();
        }
    }

    /// The queue made room (`room`), or its receiver is gone: the waiting event goes in, then
    /// whatever else is queued.
    fn deliver(&mut self, room: bool) {
        if !room {
            self.outlet.stop_listening();
        }
        self.forward();
    }

    /// Waits until every event the run queued reached the host's queue (or nobody listens).
    async fn flush(&mut self) {
        loop {
            self.forward();
            if !self.outlet.is_blocked() || !self.outlet.is_listening() {
                return;
            }
            let room = self.outlet.has_room().await;
            self.deliver(room);
        }
    }

    /// Nobody reads the events any more: the run is cancelled.
    fn stop_listening(&mut self) {
        self.outlet.stop_listening();
        self.run.cancel(now());
        while self.run.poll_event().is_some() {}
    }

    fn apply(&mut self, command: Option<Command>) {
        match command {
            Some(Command::Submit { results, reply }) => {
                let result = self.run.submit_tool_results(results, now());
                let _ = reply.send(result);
            }
            Some(Command::UpdateTools(tools)) => self.run.update_tools(tools),
            Some(Command::Cancel) => self.run.cancel(now()),
            None => {
                self.commands_open = false;
                // Nobody can submit the results this run waits for.
                if self.run.is_awaiting_tool_results() {
                    self.run.cancel(now());
                }
            }
        }
    }

    /// A failure while the host ran its tools is reported as the next leg's end: wait for the
    /// host to come back (submit or cancel) before the event stream ends.
    async fn settle_owed(&mut self) {
        self.forward();
        while self.run.owes_leg_end() && self.commands_open && self.outlet.is_listening() {
            let blocked = self.outlet.is_blocked();
            tokio::select! {
                command = self.commands.recv() => self.apply(command),
                room = self.outlet.has_room(), if blocked => self.deliver(room),
                () = self.outlet.closed() => self.outlet.stop_listening(),
            }
            self.forward();
        }
    }

    /// Ends the stream: a polite half-close after a clean finish (the server gets a moment to
    /// end its side), a reset otherwise.
    async fn close(&mut self, mut call: BidiCall, server_open: bool) {
        let clean = self.run.is_done();
        if !clean || !server_open {
            call.cancel();
        }
        self.settle_owed().await;
        self.flush().await;
        // The event stream ends here, before any grace period: the turn is not held open.
        self.outlet.close();
        if clean && server_open {
            close_gracefully(&mut call).await;
        }
    }
}

/// Publishes the run's typed failure before its `Error` event reaches the host.
fn track(run: &AgentRun, failure: &OnceLock<AgentError>, event: &AgentEvent) {
    if let AgentEvent::Ir(Event::Error(_)) = event
        && let Some(error) = run.failure()
    {
        let _ = failure.set(error.clone());
    }
}
