//! The fixture server: routing, identity checks, faults and call counts.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, PoisonError},
};

use bytes::Bytes;
use cursor_proto::aiserver::v1::AvailableModelsRequest;
use cursor_transport::{
    AccessToken, CliIdentity, Client, CursorError, Origin,
    envelope::{Code, ConnectError},
    testing::TestServer,
};
use http::{HeaderValue, Request, Response, StatusCode, header::CONTENT_TYPE};
use prost::Message as _;

use super::roster::FixtureRoster;
use super::usage::FixtureUsage;
use crate::rpc::UsageRpc;
use crate::rpc::{Rpc, TransportCatalogRpc};

/// The bearer token [`FixtureBackend::rpc`] sends.
pub const FIXTURE_TOKEN: &str = "fixture-access-token";

/// Bytes that are not a protobuf message (a truncated varint tag).
const GARBAGE: &[u8] = &[0xff, 0xff, 0xff, 0xff];

/// How one RPC misbehaves.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Answer with this HTTP status and Connect error.
    Error {
        /// HTTP status.
        status: u16,
        /// The Connect error body.
        error: ConnectError,
    },
    /// Answer 200 `application/proto` with bytes that do not decode.
    Garbage,
}

impl Fault {
    /// `503 unavailable`: a transient backend failure.
    pub fn unavailable() -> Self {
        Self::Error {
            status: 503,
            error: ConnectError::new(Code::Unavailable, "upstream connect error"),
        }
    }

    /// `401 unauthenticated`: an expired or revoked token.
    pub fn unauthenticated() -> Self {
        Self::Error {
            status: 401,
            error: ConnectError::new(Code::Unauthenticated, "Not logged in"),
        }
    }
}

#[derive(Debug, Default)]
struct State {
    roster: FixtureRoster,
    faults: HashMap<Rpc, Fault>,
    calls: HashMap<Rpc, usize>,
    usage: FixtureUsage,
    usage_faults: HashMap<UsageRpc, Fault>,
}

/// The discovery RPCs served from a [`FixtureRoster`] on a loopback h2c server.
#[derive(Debug)]
pub struct FixtureBackend {
    server: TestServer,
    state: Arc<Mutex<State>>,
}

impl FixtureBackend {
    /// Starts serving `roster`.
    pub async fn start(roster: FixtureRoster) -> std::io::Result<Self> {
        let state = Arc::new(Mutex::new(State {
            roster,
            usage: FixtureUsage::realistic(),
            ..State::default()
        }));
        let handler_state = Arc::clone(&state);
        let server = TestServer::builder()
            .handler(move |request| answer(&handler_state, &request))
            .start()
            .await?;
        Ok(Self { server, state })
    }

    /// Starts serving [`FixtureRoster::realistic`].
    pub async fn start_realistic() -> std::io::Result<Self> {
        Self::start(FixtureRoster::realistic()).await
    }

    /// The server's origin.
    pub fn origin(&self) -> Origin {
        self.server.origin()
    }

    /// The underlying loopback server. Streaming calls (`application/connect+proto`) are not
    /// answered by the fixture and arrive through [`TestServer::accept`], so an agent replica can
    /// serve `Run` on the same origin.
    pub fn server_mut(&mut self) -> &mut TestServer {
        &mut self.server
    }

    /// A transport-backed client for this server, with [`FIXTURE_TOKEN`] and the default CLI
    /// identity.
    pub fn rpc(&self) -> Result<TransportCatalogRpc, CursorError> {
        fixture_rpc(self.origin())
    }

    /// Makes `rpc` misbehave (`Some`) or behave again (`None`).
    pub fn set_fault(&self, rpc: Rpc, fault: Option<Fault>) {
        let mut state = self.lock();
        match fault {
            Some(fault) => state.faults.insert(rpc, fault),
            None => state.faults.remove(&rpc),
        };
    }

    /// Makes the usage call `rpc` misbehave (`Some`) or behave again (`None`).
    pub fn set_usage_fault(&self, rpc: UsageRpc, fault: Option<Fault>) {
        let mut state = self.lock();
        match fault {
            Some(fault) => state.usage_faults.insert(rpc, fault),
            None => state.usage_faults.remove(&rpc),
        };
    }

    /// Serves `usage` (default: [`FixtureUsage::realistic`]) from now on.
    pub fn set_usage(&self, usage: FixtureUsage) {
        self.lock().usage = usage;
    }

    /// Serves `roster` from now on.
    pub fn set_roster(&self, roster: FixtureRoster) {
        self.lock().roster = roster;
    }

    /// How many times `rpc` was called.
    pub fn calls(&self, rpc: Rpc) -> usize {
        self.lock().calls.get(&rpc).copied().unwrap_or(0)
    }

    /// Calls of every RPC together.
    pub fn total_calls(&self) -> usize {
        self.lock().calls.values().sum()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A transport-backed client for `origin` with [`FIXTURE_TOKEN`] and the default CLI identity.
pub fn fixture_rpc(origin: Origin) -> Result<TransportCatalogRpc, CursorError> {
    Ok(TransportCatalogRpc::new(
        Client::new()?,
        origin,
        AccessToken::new(FIXTURE_TOKEN),
        CliIdentity::default(),
    ))
}

/// A loopback origin on a port that was just free: connecting to it is refused.
pub fn refused_origin() -> std::io::Result<Origin> {
    let listener = std::net::TcpListener::bind(("127.0.0.1", 0))?;
    let port = listener.local_addr()?.port();
    drop(listener);
    Ok(Origin::loopback(port))
}

fn answer(state: &Mutex<State>, request: &Request<Bytes>) -> Response<Bytes> {
    if let Some(rpc) = UsageRpc::from_path(request.uri().path()) {
        return answer_usage(state, request, rpc);
    }
    let Some(rpc) = Rpc::from_path(request.uri().path()) else {
        return error(404, Code::Unimplemented, "no such method on the fixture");
    };
    let mut state = state.lock().unwrap_or_else(PoisonError::into_inner);
    *state.calls.entry(rpc).or_default() += 1;
    if let Some(refusal) = refuse_identity(request) {
        return refusal;
    }
    if rpc == Rpc::AvailableModels {
        let asked = AvailableModelsRequest::decode(request.body().clone());
        let flags_set = asked.is_ok_and(|r| {
            r.use_model_parameters == Some(true) && r.do_not_use_markdown == Some(true)
        });
        if !flags_set {
            return error(
                400,
                Code::InvalidArgument,
                "use_model_parameters and do_not_use_markdown must be set",
            );
        }
    }
    match state.faults.get(&rpc) {
        Some(Fault::Error {
            status,
            error: connect,
        }) => return json(*status, connect),
        Some(Fault::Garbage) => return proto(Bytes::from_static(GARBAGE)),
        None => {}
    }
    let roster = &state.roster;
    let body = match rpc {
        Rpc::AvailableModels => roster.available.encode_to_vec(),
        Rpc::GetUsableModels => roster.usable.encode_to_vec(),
        Rpc::GetDefaultModelForCli => roster.default.encode_to_vec(),
        Rpc::GetServerConfig => roster.server_config.encode_to_vec(),
    };
    proto(Bytes::from(body))
}

/// The usage calls: the same identity checks and faults as discovery.
fn answer_usage(state: &Mutex<State>, request: &Request<Bytes>, rpc: UsageRpc) -> Response<Bytes> {
    let state = state.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(refusal) = refuse_identity(request) {
        return refusal;
    }
    match state.usage_faults.get(&rpc) {
        Some(Fault::Error {
            status,
            error: connect,
        }) => return json(*status, connect),
        Some(Fault::Garbage) => return proto(Bytes::from_static(GARBAGE)),
        None => {}
    }
    proto(Bytes::from(usage_body(&state.usage, rpc)))
}

/// The encoded answer of a usage call, for servers that serve [`FixtureUsage`] themselves.
pub fn usage_body(usage: &FixtureUsage, rpc: UsageRpc) -> Vec<u8> {
    match rpc {
        UsageRpc::GetCurrentPeriodUsage => usage.usage.encode_to_vec(),
        UsageRpc::GetPlanInfo => usage.plan.encode_to_vec(),
    }
}

/// A refusal when the request lacks the fixture token or the CLI identity.
fn refuse_identity(request: &Request<Bytes>) -> Option<Response<Bytes>> {
    let header = |name: &str| request.headers().get(name).and_then(|v| v.to_str().ok());
    if header("authorization").is_none_or(|v| v != format!("Bearer {FIXTURE_TOKEN}")) {
        return Some(error(
            401,
            Code::Unauthenticated,
            "missing or wrong bearer token",
        ));
    }
    if header("x-cursor-client-type") != Some("cli")
        || header("content-type") != Some("application/proto")
    {
        return Some(error(
            400,
            Code::InvalidArgument,
            "catalog calls use the CLI identity and application/proto",
        ));
    }
    None
}

fn proto(body: Bytes) -> Response<Bytes> {
    let mut response = Response::new(body);
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/proto"));
    response
}

fn error(status: u16, code: Code, message: &str) -> Response<Bytes> {
    json(status, &ConnectError::new(code, message))
}

fn json(status: u16, error: &ConnectError) -> Response<Bytes> {
    let mut response = Response::new(Bytes::from(error.to_unary_json()));
    *response.status_mut() =
        StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}
