//! A standalone replica of Cursor's backend for end-to-end tests (pi against loopback).
//!
//! One loopback origin serves:
//!
//! - `agent.v1.AgentService/Run` with `cursor_agent::testing::Replica` (root-prompt blobs over
//!   KV, checkpoints, native and MCP execs, resume by conversation id);
//! - the two usage RPCs (`DashboardService/GetCurrentPeriodUsage`, `GetPlanInfo`) from the
//!   catalog fixture's realistic account (`FixtureUsage::realistic`);
//! - the four catalog RPCs from the catalog fixture's realistic roster, with
//!   `GetServerConfig` naming this origin as the agent host;
//! - the token refresh `POST /oauth/token`;
//! - the login poll, `POST /auth/poll` with the JSON body `{uuid, verifier}` or the older
//!   `GET /auth/poll?uuid=…&verifier=…` (either without them is a 400): "not yet" (404) for
//!   the first `--login-polls` poll rounds of every sign-in (default 2; a `GET` right after a
//!   `POST` of the same sign-in is that round's fallback, not a round of its own), then tokens,
//!   as Cursor answers while the user is still in the browser;
//! - the user API key exchange `POST /auth/exchange_user_api_key` (`Authorization: Bearer
//!   crsr_…`, body `{}`): an unsigned JWT access token valid for an hour, or a 401 for a key
//!   that does not start with `crsr_` or contains `refused`;
//! - on a second loopback listener, `aiserver.v1.InferenceService/RunInference` with
//!   `cursor_inference::testing::Replica` (`ping` → `pong`, tool calls on request), beside the
//!   same catalog and token refresh: the agent replica answers every streaming call on its own
//!   origin as a Run, so RunInference needs an origin of its own;
//! - `POST /replica/script` scripts the next Run: the body `silent` makes it read its request
//!   and then send nothing until the client gives up (for abort tests); `text N` makes it
//!   answer with N one-word text deltas sent back to back, then end the turn (for latency
//!   measurements); `think TEXT` makes it think TEXT (thinking deltas), then answer
//!   `I thought: TEXT`; `resource-exhausted MESSAGE` answers HTTP 200 with a `resource_exhausted`
//!   Connect error, as Cursor refuses a spent quota;
//!   `exhausted quota|plan|capacity|context-overflow` refuses it with the `resource_exhausted`
//!   of that meaning, worded as Cursor words it (the overflow is a bare `Error` before any
//!   token; docs/PROTOCOL-AGENT.md §13.2); `tool-naming bare|mcp|dash` makes the next Run call
//!   host tools under that name form (see `--tool-naming`);
//!   `lose-state conversation-data|blob|tool-session` fails the next Run the way Cursor reports
//!   that lost state (`Conversation data missing`, `Blob not found`, `tool session not found`;
//!   §13.3); `restart` restarts the backend at once (every conversation is gone, and a Run
//!   waiting for tool results ends with `tool session not found`); `fault reset|close|goaway`
//!   breaks the Run's stream (or connection) before its first frame;
//!   `fault-after-exec reset|close|goaway` breaks it after one `request_context` exec the
//!   client answered (its audit is the only thing the host saw, so the client must not retry);
//!   `interaction-query ARM` sends an `InteractionQuery` in arm ARM (any field number, known or
//!   not) before the model answers, and resets the stream when it is not answered within
//!   `--interaction-idle-ms` (1 s when unset; §13.6).
//!
//! Flags (or the environment variable in brackets):
//!
//! - `--port N` [`REPLICA_PORT`]: listen on `127.0.0.1:N`; 0 (the default) picks a free port;
//! - `--fail-auth` [`REPLICA_FAIL_AUTH=1`]: every Run answers 401 and the refresh answers
//!   `shouldLogout`;
//! - `--login-polls N` [`REPLICA_LOGIN_POLLS`]: how many poll rounds of a sign-in say "not yet";
//! - `--log PATH` [`REPLICA_LOG`]: append one JSON line per Run (label `agent-resume` /
//!   `agent-rebuild`, user texts in the root prompt, exec requests and results);
//! - `--hold-open` [`REPLICA_HOLD_OPEN=1`], or `--hold-open-ms N` [`REPLICA_HOLD_OPEN_MS`]:
//!   keep every Run's response open after `turn_ended`, until the client closes it or for N ms,
//!   as Cursor may;
//! - `--heartbeat-ms N` [`REPLICA_HEARTBEAT_MS`]: send an `InteractionUpdate.heartbeat` every
//!   N ms while waiting for the client (tool rounds, held-open streams), as Cursor does;
//! - `--mcp-state never|grok|always` [`REPLICA_MCP_STATE`]: which Runs ask for the host's MCP
//!   state (exec arm 36) before using a tool and call only a tool the state lists; `grok` (the
//!   default) is what the live backend does since 2026-09-21;
//! - `--ignore-allowed-tools` [`REPLICA_IGNORE_ALLOWED_TOOLS=1`]: send native execs whatever
//!   `x-cursor-agent-allowed-tools` says (by default a `run:` turn whose header does not allow
//!   `shell_tool_call` uses the host's MCP command tool);
//! - `--min-client-version V` [`REPLICA_MIN_CLIENT_VERSION`]: refuse Runs whose
//!   `x-cursor-client-version` sorts below `V`, with Cursor's "Please update" refusal;
//! - `--inference-shape live|older` [`REPLICA_INFERENCE_SHAPE`]: the RunInference wire shapes
//!   (`cursor_inference::testing::WireShape`): `live` (the default) names the resolved model in
//!   `run_ready` and repeats the call id on every tool-call part with the whole argument JSON
//!   in the last; `older` is the shape this project first reconstructed;
//! - `--max-concurrent-streams N` [`REPLICA_MAX_CONCURRENT_STREAMS`]: the agent listener
//!   advertises `SETTINGS_MAX_CONCURRENT_STREAMS` N, as a backend limiting open Runs per
//!   connection does (unlimited by default).
//! - `--tool-naming bare|mcp|dash` [`REPLICA_TOOL_NAMING`]: the name the model calls a host
//!   tool by: as advertised (`bash`, the default), `mcp_<provider>_bash`, or `<provider>-bash`;
//!   live servers use all three (docs/PROTOCOL-AGENT.md §13.1);
//! - `--checkpoint-ttl SECS` [`REPLICA_CHECKPOINT_TTL`]: expire checkpoints older than SECS
//!   (fractions allowed): a Run resuming one fails with `Conversation data missing`, as the live
//!   backend does after about 30 minutes (§13.3); by default checkpoints never expire;
//! - `--bare-only-model ID` [`REPLICA_BARE_ONLY_MODELS`, comma-separated]: take the family `ID`
//!   only as the bare id; `ID-high`, `ID-fast` and every other suffixed form end `not_found`
//!   (Grok 4.7 on the live servers, docs/PROTOCOL-AGENT.md §13.7); repeatable;
//! - `--suffixed-only-model ID` [`REPLICA_SUFFIXED_ONLY_MODELS`, comma-separated]: take the
//!   family `ID` only suffixed (`ID-low`, `ID-high`, `ID-max`); the bare id ends `not_found`
//!   (Kimi K3, §13.7); repeatable. Each Run's requested model id is in its `--log` line
//!   (`model`, with `outcome` `model-not-found` when refused);
//! - `--structured-history-limit BYTES` [`REPLICA_STRUCTURED_HISTORY_LIMIT`]: reset the stream
//!   of a rebuilt Run whose structured history (root-prompt JSON messages besides the rules and
//!   the archive) holds more than BYTES, as the live backend does at about 64 KiB (§13.4); by
//!   default any size is taken;
//! - `--check-image-ids` [`REPLICA_CHECK_IMAGE_IDS=1`]: keep image ids per conversation and
//!   answer an image sent before under a new id (or an id without data never sent) with
//!   `Image not found [internal]`, which poisons the conversation, as the live backend does
//!   (§13.5);
//! - `--interaction-idle-ms N` [`REPLICA_INTERACTION_IDLE_MS`]: before the model answers, send
//!   every Run one `InteractionQuery` of each kind the backend sends (arms 2–9) and reset the
//!   stream when one is not answered in its own arm within N ms, as the live backend does after
//!   about 90 s (§13.6); by default no query is sent;
//! - `--http1-only [421|464|rst|goaway]` [`REPLICA_HTTP1_ONLY`]: the agent listener refuses
//!   HTTP/2 streaming calls (HTTP 421 by default, 464, or `HTTP_1_1_REQUIRED` in RST_STREAM or
//!   GOAWAY) and serves the Run only as RunSSE plus BidiAppend over HTTP/1.1, as behind a proxy
//!   that passes only HTTP/1.1 (docs/PROTOCOL-AGENT.md §13.8);
//! - `--help`: print the flags.
//!
//! stdout says `REPLICA_INFERENCE_ORIGIN=http://127.0.0.1:PORT` (the RunInference listener),
//! then `REPLICA_ORIGIN=http://127.0.0.1:PORT` (everything else); the server then runs until
//! killed. Run with `cargo run -p cursor-examples --example replica -- --log runs.jsonl`.

use std::io::Write as _;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use cursor_agent::testing::{
    AllowedTools, Exhaustion, Fault, HoldOpen, McpStateRequests, ModelIdForm, Replica, Script,
    StateLoss, ToolNaming,
};
use cursor_catalog::testing::{FixtureRoster, FixtureUsage, usage_body};
use cursor_catalog::{Rpc, UsageRpc};
use cursor_inference::testing::{Replica as InferenceReplica, WireShape};
use cursor_proto::agent::v1::{
    AgentServerMessage, InteractionUpdate, TextDeltaUpdate, ThinkingDeltaUpdate, TurnEndedUpdate,
    agent_server_message::Message as Server, interaction_update::Message as Update,
};
use cursor_proto::aiserver::v1::AgentUrlConfig;
use cursor_transport::envelope::{Code, ConnectError};
use cursor_transport::testing::{H2Refusal, TestServer};
use http::{HeaderValue, Request, Response, StatusCode, header::CONTENT_TYPE};
use prost::Message as _;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// `--help`: the flags (the module docs above say more, and list the scripts).
const USAGE: &str = "\
replica: a loopback replica of Cursor's backend (see examples/replica.rs for the scripts)

  --port N                          listen on 127.0.0.1:N (REPLICA_PORT; 0 picks a free port)
  --fail-auth                       every Run answers 401 (REPLICA_FAIL_AUTH=1)
  --login-polls N                   poll rounds of a sign-in that say not yet (REPLICA_LOGIN_POLLS)
  --log PATH                        append one JSON line per Run (REPLICA_LOG)
  --hold-open | --hold-open-ms N    keep responses open after turn_ended (REPLICA_HOLD_OPEN[_MS])
  --heartbeat-ms N                  idle heartbeats every N ms (REPLICA_HEARTBEAT_MS)
  --mcp-state never|grok|always     Runs that ask for the MCP state first (REPLICA_MCP_STATE)
  --ignore-allowed-tools            native execs whatever the header says (REPLICA_IGNORE_ALLOWED_TOOLS=1)
  --min-client-version V            refuse older x-cursor-client-version (REPLICA_MIN_CLIENT_VERSION)
  --inference-shape live|older      RunInference wire shapes (REPLICA_INFERENCE_SHAPE)
  --tool-naming bare|mcp|dash       the name host tools are called by (REPLICA_TOOL_NAMING)
  --checkpoint-ttl SECS             expire checkpoints older than SECS (REPLICA_CHECKPOINT_TTL)
  --structured-history-limit BYTES  reset rebuilds with more structured history (REPLICA_STRUCTURED_HISTORY_LIMIT)
  --check-image-ids                 an image under a new id is not found (REPLICA_CHECK_IMAGE_IDS=1)
  --interaction-idle-ms N           ask every query kind; reset if unanswered in N ms (REPLICA_INTERACTION_IDLE_MS)
  --max-concurrent-streams N        the agent listener's stream limit (REPLICA_MAX_CONCURRENT_STREAMS)
  --bare-only-model ID              suffixed forms of ID are not_found (REPLICA_BARE_ONLY_MODELS=a,b)
  --suffixed-only-model ID          the bare ID is not_found (REPLICA_SUFFIXED_ONLY_MODELS=a,b)
  --http1-only [421|464|rst|goaway] refuse HTTP/2 Runs; serve RunSSE+BidiAppend (REPLICA_HTTP1_ONLY)
  --help                            this text

POST /replica/script bodies: silent, text N, think TEXT, resource-exhausted MESSAGE,
  exhausted quota|plan|capacity|context-overflow, tool-naming bare|mcp|dash,
  lose-state conversation-data|blob|tool-session, restart, fault reset|close|goaway,
  fault-after-exec reset|close|goaway, interaction-query ARM";

/// The command line.
#[derive(Debug, Default)]
struct Options {
    port: u16,
    fail_auth: bool,
    login_polls: u64,
    log: Option<String>,
    hold_open: HoldOpen,
    heartbeat: Option<Duration>,
    mcp_state: McpStateRequests,
    ignore_allowed_tools: bool,
    min_client_version: Option<String>,
    inference_shape: WireShape,
    max_concurrent_streams: Option<u32>,
    tool_naming: ToolNaming,
    checkpoint_ttl: Option<Duration>,
    /// Model families served in one id form only (`--bare-only-model`, `--suffixed-only-model`).
    model_id_forms: Vec<(String, ModelIdForm)>,
    structured_history_limit: Option<usize>,
    check_image_ids: bool,
    interaction_idle: Option<Duration>,
    http1_only: Option<H2Refusal>,
}

/// The `--tool-naming` words.
fn h2_refusal(word: &str) -> Result<H2Refusal, BoxError> {
    match word {
        "1" | "421" => Ok(H2Refusal::Status421),
        "464" => Ok(H2Refusal::Status464),
        "rst" => Ok(H2Refusal::Http11Required),
        "goaway" => Ok(H2Refusal::GoawayHttp11Required),
        other => Err(format!("--http1-only takes 421, 464, rst or goaway, not {other:?}").into()),
    }
}

fn tool_naming(word: &str) -> Result<ToolNaming, BoxError> {
    match word {
        "bare" => Ok(ToolNaming::Bare),
        "mcp" => Ok(ToolNaming::Mcp),
        "dash" => Ok(ToolNaming::Dash),
        other => Err(format!("--tool-naming takes bare, mcp or dash, not {other:?}").into()),
    }
}

/// The `--inference-shape` words.
fn inference_shape(word: &str) -> Result<WireShape, BoxError> {
    match word {
        "live" => Ok(WireShape::Live),
        "older" => Ok(WireShape::Older),
        other => Err(format!("--inference-shape takes live or older, not {other:?}").into()),
    }
}

/// The `--mcp-state` words.
fn mcp_state(word: &str) -> Result<McpStateRequests, BoxError> {
    match word {
        "never" => Ok(McpStateRequests::Never),
        "grok" => Ok(McpStateRequests::GrokModels),
        "always" => Ok(McpStateRequests::Always),
        other => Err(format!("--mcp-state takes never, grok or always, not {other:?}").into()),
    }
}

impl Options {
    fn parse() -> Result<Self, BoxError> {
        let env = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        let mut options = Self {
            port: env("REPLICA_PORT")
                .map(|p| p.parse())
                .transpose()?
                .unwrap_or(0),
            fail_auth: env("REPLICA_FAIL_AUTH").is_some_and(|v| v != "0"),
            login_polls: env("REPLICA_LOGIN_POLLS")
                .map(|n| n.parse())
                .transpose()?
                .unwrap_or(2),
            log: env("REPLICA_LOG"),
            hold_open: match (env("REPLICA_HOLD_OPEN_MS"), env("REPLICA_HOLD_OPEN")) {
                (Some(ms), _) => HoldOpen::For(Duration::from_millis(ms.parse()?)),
                (None, Some(v)) if v != "0" => HoldOpen::Forever,
                _ => HoldOpen::Close,
            },
            heartbeat: env("REPLICA_HEARTBEAT_MS")
                .map(|ms| ms.parse().map(Duration::from_millis))
                .transpose()?,
            mcp_state: env("REPLICA_MCP_STATE")
                .map(|word| mcp_state(&word))
                .transpose()?
                .unwrap_or_default(),
            ignore_allowed_tools: env("REPLICA_IGNORE_ALLOWED_TOOLS").is_some_and(|v| v != "0"),
            min_client_version: env("REPLICA_MIN_CLIENT_VERSION"),
            inference_shape: env("REPLICA_INFERENCE_SHAPE")
                .map(|word| inference_shape(&word))
                .transpose()?
                .unwrap_or_default(),
            max_concurrent_streams: env("REPLICA_MAX_CONCURRENT_STREAMS")
                .map(|n| n.parse())
                .transpose()?,
            tool_naming: env("REPLICA_TOOL_NAMING")
                .map(|word| tool_naming(&word))
                .transpose()?
                .unwrap_or_default(),
            checkpoint_ttl: env("REPLICA_CHECKPOINT_TTL")
                .map(|secs| secs.parse().map(Duration::from_secs_f64))
                .transpose()?,
            model_id_forms: [
                ("REPLICA_BARE_ONLY_MODELS", ModelIdForm::BareOnly),
                ("REPLICA_SUFFIXED_ONLY_MODELS", ModelIdForm::SuffixedOnly),
            ]
            .into_iter()
            .flat_map(|(name, form)| {
                env(name)
                    .unwrap_or_default()
                    .split(',')
                    .map(str::trim)
                    .filter(|id| !id.is_empty())
                    .map(|id| (id.to_owned(), form))
                    .collect::<Vec<_>>()
            })
            .collect(),
            interaction_idle: env("REPLICA_INTERACTION_IDLE_MS")
                .map(|ms| ms.parse().map(Duration::from_millis))
                .transpose()?,
            check_image_ids: env("REPLICA_CHECK_IMAGE_IDS").is_some_and(|v| v != "0"),
            structured_history_limit: env("REPLICA_STRUCTURED_HISTORY_LIMIT")
                .map(|bytes| bytes.parse())
                .transpose()?,
            http1_only: env("REPLICA_HTTP1_ONLY")
                .filter(|v| v != "0")
                .map(|word| h2_refusal(&word))
                .transpose()?,
        };
        let mut args = std::env::args().skip(1).peekable();
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "--port" => options.port = args.next().ok_or("--port needs a number")?.parse()?,
                "--fail-auth" => options.fail_auth = true,
                "--login-polls" => {
                    options.login_polls =
                        args.next().ok_or("--login-polls needs a number")?.parse()?;
                }
                "--log" => options.log = Some(args.next().ok_or("--log needs a path")?),
                "--hold-open" => options.hold_open = HoldOpen::Forever,
                "--hold-open-ms" => {
                    let ms = args.next().ok_or("--hold-open-ms needs a number")?;
                    options.hold_open = HoldOpen::For(Duration::from_millis(ms.parse()?));
                }
                "--heartbeat-ms" => {
                    let ms = args.next().ok_or("--heartbeat-ms needs a number")?;
                    options.heartbeat = Some(Duration::from_millis(ms.parse()?));
                }
                "--mcp-state" => {
                    options.mcp_state = mcp_state(&args.next().ok_or("--mcp-state needs a word")?)?;
                }
                "--ignore-allowed-tools" => options.ignore_allowed_tools = true,
                "--min-client-version" => {
                    let version = args.next().ok_or("--min-client-version needs a version")?;
                    options.min_client_version = Some(version);
                }
                "--inference-shape" => {
                    let word = args.next().ok_or("--inference-shape needs a word")?;
                    options.inference_shape = inference_shape(&word)?;
                }
                "--max-concurrent-streams" => {
                    let n = args
                        .next()
                        .ok_or("--max-concurrent-streams needs a number")?;
                    options.max_concurrent_streams = Some(n.parse()?);
                }
                "--http1-only" => {
                    // The refusal is optional: a following flag is not one.
                    let word = args.peek().filter(|w| !w.starts_with("--")).cloned();
                    if word.is_some() {
                        args.next();
                    }
                    options.http1_only = Some(h2_refusal(word.as_deref().unwrap_or("421"))?);
                }
                "--checkpoint-ttl" => {
                    let secs = args.next().ok_or("--checkpoint-ttl needs seconds")?;
                    options.checkpoint_ttl = Some(Duration::from_secs_f64(secs.parse()?));
                }
                "--structured-history-limit" => {
                    let bytes = args
                        .next()
                        .ok_or("--structured-history-limit needs bytes")?;
                    options.structured_history_limit = Some(bytes.parse()?);
                }
                "--check-image-ids" => options.check_image_ids = true,
                "--interaction-idle-ms" => {
                    let ms = args.next().ok_or("--interaction-idle-ms needs a number")?;
                    options.interaction_idle = Some(Duration::from_millis(ms.parse()?));
                }
                "--help" | "-h" => {
                    println!("{USAGE}");
                    std::process::exit(0);
                }
                "--tool-naming" => {
                    let word = args.next().ok_or("--tool-naming needs a word")?;
                    options.tool_naming = tool_naming(&word)?;
                }
                "--bare-only-model" => {
                    let id = args.next().ok_or("--bare-only-model needs a model id")?;
                    options.model_id_forms.push((id, ModelIdForm::BareOnly));
                }
                "--suffixed-only-model" => {
                    let id = args
                        .next()
                        .ok_or("--suffixed-only-model needs a model id")?;
                    options.model_id_forms.push((id, ModelIdForm::SuffixedOnly));
                }
                other => return Err(format!("unknown argument {other:?}").into()),
            }
        }
        Ok(options)
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), BoxError> {
    let options = Options::parse()?;
    // The handler needs the origin, which is known once the listener is bound.
    let origin = Arc::new(OnceLock::<String>::new());
    let handler_origin = Arc::clone(&origin);
    let fail_auth = options.fail_auth;
    let refreshes = Arc::new(Counters {
        login_polls: options.login_polls,
        ..Counters::default()
    });
    let replica = Replica::new();
    let scripted = replica.clone();
    let agent_refreshes = Arc::clone(&refreshes);
    let mut builder = TestServer::builder();
    if let Some(max) = options.max_concurrent_streams {
        builder = builder.max_concurrent_streams(max);
    }
    if let Some(refusal) = options.http1_only {
        builder = builder.refuse_h2(refusal);
    }
    let builder = builder
        .bind(SocketAddr::from(([127, 0, 0, 1], options.port)))
        .handler(move |request| {
            if request.uri().path() == "/replica/script" {
                return script(&scripted, request.body());
            }
            answer(&request, &handler_origin, fail_auth, &agent_refreshes)
        });
    let inference_origin = Arc::clone(&origin);
    let inference_builder = TestServer::builder()
        .handler(move |request| answer(&request, &inference_origin, fail_auth, &refreshes));
    let inference = InferenceReplica::new();
    inference.set_fail_auth(options.fail_auth);
    inference.set_shape(options.inference_shape);
    let inference = inference.listen(inference_builder).await?;

    replica.set_fail_auth(options.fail_auth);
    replica.set_hold_open(options.hold_open);
    replica.set_idle_heartbeat(options.heartbeat);
    replica.set_mcp_state_requests(options.mcp_state);
    if options.ignore_allowed_tools {
        replica.set_allowed_tools(AllowedTools::Ignore);
    }
    replica.set_min_client_version(options.min_client_version.clone());
    replica.set_tool_naming(options.tool_naming);
    replica.set_checkpoint_ttl(options.checkpoint_ttl);
    for (id, form) in &options.model_id_forms {
        replica.set_model_id_form(id.clone(), *form);
    }
    replica.set_structured_history_limit(options.structured_history_limit);
    replica.set_check_image_ids(options.check_image_ids);
    replica.set_interaction_probe(options.interaction_idle);
    if let Some(path) = &options.log {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?;
        let file = Mutex::new(file);
        replica.set_record_sink(move |record| {
            let mut file = file
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            // A log line that cannot be written must not take the server down.
            let _ = writeln!(file, "{}", record.to_json_line());
            let _ = file.flush();
        });
    }
    let server = replica.listen(builder).await?;
    let public = server.origin().to_string();
    let _ = origin.set(public.clone());

    let mut stdout = std::io::stdout();
    writeln!(stdout, "REPLICA_INFERENCE_ORIGIN={}", inference.origin())?;
    writeln!(stdout, "REPLICA_ORIGIN={public}")?;
    stdout.flush()?;
    eprintln!(
        "replica serving Run, the catalog, /oauth/token, /auth/poll and /auth/exchange_user_api_key at {public}{}",
        if options.fail_auth {
            " (failing auth)"
        } else {
            ""
        }
    );
    std::future::pending::<()>().await;
    drop(server);
    drop(inference);
    Ok(())
}

/// What the plain HTTP answers count, shared by both listeners.
#[derive(Debug, Default)]
struct Counters {
    refreshes: AtomicU64,
    /// Sign-ins completed (names their tokens).
    logins: AtomicU64,
    /// Poll rounds per sign-in (by uuid).
    rounds: Mutex<std::collections::HashMap<String, PollRounds>>,
    exchanges: AtomicU64,
    /// How many poll rounds of each sign-in say "not yet".
    login_polls: u64,
}

/// A sign-in's poll rounds. A client polls with `POST` and, when that answers 404, with the
/// older `GET` in the same round: that `GET` is the same round, not another one.
#[derive(Debug, Default)]
struct PollRounds {
    rounds: u64,
    post_unanswered: bool,
}

/// Answers the plain HTTP and unary requests: the refresh, the login poll and the catalog.
fn answer(
    request: &Request<Bytes>,
    origin: &OnceLock<String>,
    fail_auth: bool,
    counters: &Counters,
) -> Response<Bytes> {
    let path = request.uri().path();
    if path == "/oauth/token" {
        return refresh(fail_auth, &counters.refreshes);
    }
    if path == "/auth/exchange_user_api_key" {
        return exchange_api_key(request, &counters.exchanges);
    }
    if path == "/auth/poll" {
        if !names_the_login(request) {
            return error(
                400,
                Code::InvalidArgument,
                "the poll needs uuid and verifier",
            );
        }
        return poll(request, counters);
    }
    let bearer = request
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .is_some_and(|token| !token.trim().is_empty());
    if !bearer {
        return error(401, Code::Unauthenticated, "missing bearer token");
    }
    if let Some(rpc) = UsageRpc::from_path(path) {
        let body = usage_body(&FixtureUsage::realistic(), rpc);
        return with_type(Response::new(Bytes::from(body)), "application/proto");
    }
    let roster = FixtureRoster::realistic();
    let body = match Rpc::from_path(path) {
        Some(Rpc::AvailableModels) => roster.available.encode_to_vec(),
        Some(Rpc::GetUsableModels) => roster.usable.encode_to_vec(),
        Some(Rpc::GetDefaultModelForCli) => roster.default.encode_to_vec(),
        Some(Rpc::GetServerConfig) => {
            // Agent host discovery points at this replica.
            let mut config = roster.server_config;
            let here = origin.get().cloned().unwrap_or_default();
            config.agent_url_config = Some(AgentUrlConfig {
                agent_url: here.clone(),
                agentn_url: here,
            });
            config.encode_to_vec()
        }
        _ => return error(404, Code::Unimplemented, "no such method on the replica"),
    };
    with_type(Response::new(Bytes::from(body)), "application/proto")
}

/// Queues a script for the next Run from a `POST /replica/script` body.
fn script(replica: &Replica, body: &[u8]) -> Response<Bytes> {
    let body = String::from_utf8_lossy(body);
    if body.trim() == "restart" {
        replica.restart();
        return with_type(
            Response::new(Bytes::from_static(b"restarted")),
            "text/plain",
        );
    }
    let script = match body.trim().split_once(' ') {
        None if body.trim() == "silent" => Script::Silent,
        Some(("lose-state", loss)) => match loss.trim() {
            "conversation-data" => Script::LoseState(StateLoss::ConversationData),
            "blob" => Script::LoseState(StateLoss::Blob),
            "tool-session" => Script::LoseState(StateLoss::ToolSession),
            _ => {
                return error(
                    400,
                    Code::InvalidArgument,
                    "lose-state takes conversation-data, blob or tool-session",
                );
            }
        },
        Some(("resource-exhausted", message)) => Script::ResourceExhausted(message.trim().into()),
        Some(("exhausted", meaning)) => match meaning.trim() {
            "quota" => Script::Exhausted(Exhaustion::Quota),
            "plan" => Script::Exhausted(Exhaustion::PlanModel),
            "capacity" => Script::Exhausted(Exhaustion::Capacity),
            "context-overflow" => Script::Exhausted(Exhaustion::ContextOverflow),
            _ => {
                return error(
                    400,
                    Code::InvalidArgument,
                    "exhausted takes quota, plan, capacity or context-overflow",
                );
            }
        },
        Some(("tool-naming", word)) => match tool_naming(word.trim()) {
            Ok(naming) => Script::ToolNaming(naming),
            Err(e) => return error(400, Code::InvalidArgument, &e.to_string()),
        },
        Some((verb @ ("fault" | "fault-after-exec"), kind)) => {
            let fault = match kind.trim() {
                "reset" => Fault::ResetStream,
                "close" => Fault::CloseConnection,
                "goaway" => Fault::GoawayWithError,
                _ => {
                    let message = format!("{verb} takes reset, close or goaway");
                    return error(400, Code::InvalidArgument, &message);
                }
            };
            if verb == "fault" {
                Script::FaultBeforeFirstFrame(fault)
            } else {
                Script::FramesThenFault(Vec::new(), fault)
            }
        }
        Some(("interaction-query", arm)) => match arm.trim().parse::<u32>() {
            Ok(arm) if (2..=536_870_911).contains(&arm) => Script::InteractionQuery(arm),
            _ => {
                return error(
                    400,
                    Code::InvalidArgument,
                    "interaction-query needs an arm number of 2 or more",
                );
            }
        },
        Some(("think", text)) => Script::Frames(thinking_frames(text.trim())),
        Some(("text", n)) => match n.trim().parse::<u32>() {
            Ok(n) if (1..=100_000).contains(&n) => Script::Frames(text_frames(n)),
            _ => {
                return error(
                    400,
                    Code::InvalidArgument,
                    "text needs a count of 1..=100000",
                );
            }
        },
        _ => {
            let known = "unknown script (known: `silent`, `text N`, `think TEXT`, `resource-exhausted MESSAGE`, \
                         `exhausted quota|plan|capacity|context-overflow`, \
                         `tool-naming bare|mcp|dash`, \
                         `lose-state conversation-data|blob|tool-session`, `restart`, \
                         `fault reset|close|goaway`, `fault-after-exec reset|close|goaway`, \
                         `interaction-query ARM`)";
            return error(400, Code::InvalidArgument, known);
        }
    };
    replica.script(script);
    with_type(Response::new(Bytes::from_static(b"queued")), "text/plain")
}

/// A server frame carrying one interaction update.
fn update(update: Update) -> AgentServerMessage {
    AgentServerMessage {
        message: Some(Server::InteractionUpdate(InteractionUpdate {
            message: Some(update),
            ..Default::default()
        })),
        ..Default::default()
    }
}

/// Thinking `text`, then the answer `I thought: text`, then the end of the turn.
fn thinking_frames(text: &str) -> Vec<AgentServerMessage> {
    vec![
        update(Update::ThinkingDelta(ThinkingDeltaUpdate {
            text: text.into(),
        })),
        update(Update::TextDelta(TextDeltaUpdate {
            text: format!("I thought: {text}"),
        })),
        update(Update::TurnEnded(TurnEndedUpdate::default())),
    ]
}

/// `n` text deltas `w1 `, `w2 `, … and the end of the turn.
fn text_frames(n: u32) -> Vec<AgentServerMessage> {
    (1..=n)
        .map(|i| {
            update(Update::TextDelta(TextDeltaUpdate {
                text: format!("w{i} "),
            }))
        })
        .chain([update(Update::TurnEnded(TurnEndedUpdate {
            output_tokens: Some(i64::from(n)),
            ..Default::default()
        }))])
        .collect()
}

fn refresh(fail_auth: bool, refreshes: &AtomicU64) -> Response<Bytes> {
    if fail_auth {
        let body = r#"{"error":"invalid_grant","shouldLogout":true}"#;
        let mut response = with_type(Response::new(Bytes::from(body)), "application/json");
        *response.status_mut() = StatusCode::UNAUTHORIZED;
        return response;
    }
    let n = refreshes.fetch_add(1, Ordering::AcqRel) + 1;
    let body = serde_json::json!({
        "access_token": format!("replica-access-{n}"),
        "refresh_token": format!("replica-refresh-{n}"),
        "expires_in": 3600,
        "shouldLogout": false,
    });
    with_type(
        Response::new(Bytes::from(body.to_string())),
        "application/json",
    )
}

/// The user API key exchange: numbered JWTs valid for an hour, a 401 for a refused key.
fn exchange_api_key(request: &Request<Bytes>, exchanges: &AtomicU64) -> Response<Bytes> {
    use base64::Engine as _;
    let key = request
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or_default();
    if request.method() != http::Method::POST
        || !key.starts_with("crsr_")
        || key.contains("refused")
    {
        let mut response = with_type(
            Response::new(Bytes::from_static(br#"{"error":"invalid user api key"}"#)),
            "application/json",
        );
        *response.status_mut() = StatusCode::UNAUTHORIZED;
        return response;
    }
    let n = exchanges.fetch_add(1, Ordering::AcqRel) + 1;
    let exp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|now| now.as_secs() + 3600)
        .unwrap_or(0);
    let engine = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let access = format!(
        "{}.{}.replica",
        engine.encode(r#"{"alg":"none"}"#),
        engine.encode(format!(r#"{{"sub":"replica-api-key-{n}","exp":{exp}}}"#))
    );
    let body = serde_json::json!({"accessToken": access, "refreshToken": format!("replica-key-refresh-{n}")});
    with_type(
        Response::new(Bytes::from(body.to_string())),
        "application/json",
    )
}

/// Whether a login poll carries its uuid and verifier: in the JSON body of a `POST`, in the
/// query of a `GET`.
fn names_the_login(request: &Request<Bytes>) -> bool {
    if request.method() == http::Method::POST {
        let body: serde_json::Value = serde_json::from_slice(request.body()).unwrap_or_default();
        return ["uuid", "verifier"]
            .iter()
            .all(|field| body[field].as_str().is_some_and(|v| !v.is_empty()));
    }
    let query = request.uri().query().unwrap_or_default();
    query.starts_with("uuid=") && query.contains("&verifier=")
}

/// Answers a poll round "not yet" (404) for the first `login_polls` rounds of a sign-in, then
/// with tokens.
fn poll(request: &Request<Bytes>, counters: &Counters) -> Response<Bytes> {
    let uuid = login_uuid(request);
    let is_post = request.method() == http::Method::POST;
    let round = {
        let mut rounds = counters
            .rounds
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let login = rounds.entry(uuid).or_default();
        if is_post || !login.post_unanswered {
            login.rounds += 1;
        }
        login.post_unanswered = is_post;
        login.rounds
    };
    if round <= counters.login_polls {
        let mut response = Response::new(Bytes::new());
        *response.status_mut() = StatusCode::NOT_FOUND;
        return response;
    }
    let n = counters.logins.fetch_add(1, Ordering::AcqRel) + 1;
    let body = serde_json::json!({
        "accessToken": format!("replica-login-access-{n}"),
        "refreshToken": format!("replica-login-refresh-{n}"),
    });
    with_type(
        Response::new(Bytes::from(body.to_string())),
        "application/json",
    )
}

/// The sign-in a poll belongs to: `uuid` of the JSON body (`POST`) or of the query (`GET`).
fn login_uuid(request: &Request<Bytes>) -> String {
    if request.method() == http::Method::POST {
        let body: serde_json::Value = serde_json::from_slice(request.body()).unwrap_or_default();
        return body["uuid"].as_str().unwrap_or_default().to_owned();
    }
    let query = request.uri().query().unwrap_or_default();
    query
        .split('&')
        .find_map(|pair| pair.strip_prefix("uuid="))
        .unwrap_or_default()
        .to_owned()
}

fn error(status: u16, code: Code, message: &str) -> Response<Bytes> {
    let body = ConnectError::new(code, message).to_unary_json();
    let mut response = with_type(Response::new(Bytes::from(body)), "application/json");
    *response.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST);
    response
}

fn with_type(mut response: Response<Bytes>, content_type: &'static str) -> Response<Bytes> {
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}
