//! A loopback replica of RunInference for tests (feature `testing`).
//!
//! [`Replica`] answers `aiserver.v1.InferenceService/RunInference` calls on a
//! [`TestServer`]: it reads the run request, sends `run_ready`, reads the invocation, and then
//! answers the conversation's last message:
//!
//! - a user message `ping` → the text `pong`, in two parts;
//! - a user message `tool: <name> <json>` → a call of tool `<name>` with the JSON arguments,
//!   streamed as `tool_call_part` chunks in the replica's [`WireShape`];
//! - tool results → the text `got: ` followed by the results' text;
//! - any other user text → `echo: ` followed by it.
//!
//! Every answer carries usage and ends with `invocation_end`. A run carries up to 64
//! invocations, answered one after the other in the order they arrived (the 65th ends at once
//! with error code 8, `resource_exhausted`); a `cancel_invocation` stops its invocation between
//! two frames (or drops it while queued) and ends it with error code 1, `cancelled`. After the
//! client's `finish_run` and half-close the replica ends the stream. [`Replica::script`] replaces the next answer with an error, and
//! [`Replica::set_fail_auth`] answers every call with HTTP 401. Responses of 1 KiB or more
//! are gzip-compressed when the client asked for gzip.

mod exchange;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

use cursor_proto::aiserver::v1::InferenceStreamRequest;
use cursor_transport::Origin;
use cursor_transport::testing::{ServerCall, TestServer, TestServerBuilder};

/// How the replica answers one invocation instead of its usual reply.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Script {
    /// Streams `text` first, then an `InferenceStreamError` of `error_type` (the
    /// `InferenceStreamErrorType` number) with `message`.
    StreamError {
        /// Text sent before the error.
        text: String,
        /// The error type number.
        error_type: i32,
        /// The error message.
        message: String,
    },
    /// Ends the invocation with an error `{code, message}`.
    InvocationEndError {
        /// The error code (gRPC numbering).
        code: i32,
        /// The message.
        message: String,
    },
    /// Sends nothing for the invocation until the client cancels it (then ends it with code 1,
    /// `cancelled`) or gives up on the run.
    Silent,
}

/// Which shapes of the wire the replica speaks (docs/PROTOCOL.md §6.3, §6.4).
#[non_exhaustive]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WireShape {
    /// What live servers send, as an independent client written against live paid turns
    /// reads it (docs/PROTOCOL.md §6.5 names it): `run_ready.resolved_model` names the
    /// requested model; a tool call streams its argument JSON as three deltas, each part
    /// repeating the call id, and then a last part (`is_complete`) carrying the whole JSON.
    #[default]
    Live,
    /// The shapes this project first reconstructed: an empty `run_ready`; the call id and
    /// tool name on the first part only, the last of three chunks marked `is_complete`.
    Older,
}

#[derive(Debug, Default)]
struct State {
    shape: WireShape,
    scripts: VecDeque<Script>,
    fail_auth: bool,
    fail_auth_next: usize,
    calls: usize,
    requests: Vec<InferenceStreamRequest>,
    canceled: Vec<String>,
}

/// The RunInference replica. Cheap to clone; clones share state.
#[derive(Clone, Debug, Default)]
pub struct Replica {
    state: Arc<Mutex<State>>,
}

impl Replica {
    /// A replica with nothing scripted, not serving yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Starts a replica on a fresh loopback server.
    pub async fn start() -> std::io::Result<ReplicaServer> {
        Self::new().listen(TestServer::builder()).await
    }

    /// Starts serving on a server built from `builder` (which may answer unary calls with a
    /// handler on the same origin).
    pub async fn listen(self, builder: TestServerBuilder) -> std::io::Result<ReplicaServer> {
        let mut server = builder.start().await?;
        let origin = server.origin();
        let replica = self.clone();
        let task = tokio::spawn(async move { replica.serve(&mut server).await });
        Ok(ReplicaServer {
            replica: self,
            origin,
            task,
        })
    }

    /// Serves every streaming call `server` accepts until it stops: RunInference as the
    /// inference backend, anything else with Connect `unimplemented`.
    pub async fn serve(&self, server: &mut TestServer) {
        while let Some(call) = server.accept().await {
            tokio::spawn(self.clone().serve_call(call));
        }
    }

    /// Serves one streaming call.
    pub async fn serve_call(self, call: ServerCall) {
        // A client that went away mid-call is the client's business, not the replica's.
        let _ = exchange::serve(&self, call).await;
    }

    /// Queues `script` for the next invocation.
    pub fn script(&self, script: Script) {
        self.lock().scripts.push_back(script);
    }

    /// Answers the next `calls` calls with HTTP 401 (then as usual).
    pub fn fail_auth_next(&self, calls: usize) {
        self.lock().fail_auth_next = calls;
    }

    /// How many RunInference calls arrived (including refused ones).
    pub fn calls(&self) -> usize {
        self.lock().calls
    }

    /// Speaks `shape` from the next call on ([`WireShape::Live`] by default).
    pub fn set_shape(&self, shape: WireShape) {
        self.lock().shape = shape;
    }

    fn shape(&self) -> WireShape {
        self.lock().shape
    }

    /// Answers every call with HTTP 401.
    pub fn set_fail_auth(&self, fail: bool) {
        self.lock().fail_auth = fail;
    }

    /// Every model request received so far, in order.
    pub fn requests(&self) -> Vec<InferenceStreamRequest> {
        self.lock().requests.clone()
    }

    /// The ids of the invocations canceled by the client before their end, in order.
    pub fn canceled(&self) -> Vec<String> {
        self.lock().canceled.clone()
    }

    fn note_canceled(&self, id: &str) {
        self.lock().canceled.push(id.to_owned());
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Counts a call and says whether to refuse it with 401.
    fn fails_auth(&self) -> bool {
        let mut state = self.lock();
        state.calls += 1;
        if state.fail_auth_next > 0 {
            state.fail_auth_next -= 1;
            return true;
        }
        state.fail_auth
    }

    fn next_script(&self) -> Option<Script> {
        self.lock().scripts.pop_front()
    }

    fn record(&self, request: InferenceStreamRequest) {
        self.lock().requests.push(request);
    }
}

/// A replica serving on its own loopback server; dropping it stops the server.
#[derive(Debug)]
pub struct ReplicaServer {
    replica: Replica,
    origin: Origin,
    task: tokio::task::JoinHandle<()>,
}

impl ReplicaServer {
    /// The origin to call.
    pub fn origin(&self) -> Origin {
        self.origin.clone()
    }

    /// The replica, to script it or read what it received.
    pub fn replica(&self) -> &Replica {
        &self.replica
    }
}

impl Drop for ReplicaServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}
