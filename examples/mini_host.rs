//! A small command-line coding agent built on `cursor-agent` alone (plus `cursor-catalog` for
//! the model): its own two tools, its own host profile and wording, and a conversation that a
//! later process resumes.
//!
//! ```text
//! mini_host [--origin URL] [--state DIR] [--model ID] PROMPT
//! ```
//!
//! - `--origin URL`: the agent origin, for example a loopback replica
//!   (`cargo run -p cursor-examples --example replica`). Without it the agent host comes from
//!   the model catalog's snapshot (Cursor's default otherwise).
//! - `--api-origin URL`: where a user API key is exchanged (default: `--origin` when given,
//!   else `https://api2.cursor.sh`).
//!
//! The credential: `CURSOR_ACCESS_TOKEN` (an access token), else `CURSOR_API_KEY` (a user API
//! key, `crsr_…`, exchanged at `/auth/exchange_user_api_key` for an access token that is kept
//! in memory until its `exp` and exchanged again after a 401; neither is written anywhere),
//! else, with `--origin`, a placeholder token the loopback replica accepts. This host has no
//! sign-in of its own, so an environment credential is all it has.
//! - `--state DIR` (default `./.mini-host`): where the transcript (`transcript.json`) and the
//!   resume handles (`handles/`) live. A second process with the same directory continues the
//!   same remote conversation instead of replaying it.
//! - `--model ID` (default `composer-2.5`): a model id from the catalog.
//!
//! The tools are the host's own: `read_file {path}` and `list_dir {path}`, run inside the
//! current directory. Cursor's native tool requests never run here; the session translates
//! them into calls of these tools or refuses them.
//!
//! ```text
//! cargo run -p cursor-examples --example replica -- --hold-open --heartbeat-ms 50 &
//! cargo run -p cursor-examples --example mini_host -- --origin http://127.0.0.1:PORT "remember WOMBAT-5"
//! cargo run -p cursor-examples --example mini_host -- --origin http://127.0.0.1:PORT 'tool: list_dir {"path": "."}'
//! cargo run -p cursor-examples --example mini_host -- --origin http://127.0.0.1:PORT "what did I ask you to remember?"
//! ```

use std::path::{Path, PathBuf};
use std::sync::Arc;

use cursor_agent::ir::Classify as _;
use cursor_agent::ir::{
    AssistantContent, Conversation, ErrorInfo, Event, Message, StopReason, Tool, ToolCall,
    ToolResult,
};
use cursor_agent::session::{AgentSession, Client, ModelChoice, Origin, StaticToken, TokenSource};
use cursor_agent::{AgentEvent, HostProfile};
use cursor_auth::{AuthConfig, UserApiKey};
use cursor_catalog::CatalogStore;
use cursor_transport::TokioClock;
use serde_json::{Value, json};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The session id this host keeps its one conversation under.
const SESSION_ID: &str = "mini-host";

struct Options {
    origin: Option<String>,
    api_origin: Option<String>,
    state: PathBuf,
    model: String,
    prompt: String,
}

fn options() -> Result<Options, BoxError> {
    let mut options = Options {
        origin: None,
        api_origin: None,
        state: PathBuf::from(".mini-host"),
        model: "composer-2.5".into(),
        prompt: String::new(),
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--origin" => options.origin = Some(args.next().ok_or("--origin needs a URL")?),
            "--api-origin" => {
                options.api_origin = Some(args.next().ok_or("--api-origin needs a URL")?);
            }
            "--state" => options.state = args.next().ok_or("--state needs a directory")?.into(),
            "--model" => options.model = args.next().ok_or("--model needs an id")?,
            other if other.starts_with("--") => return Err(format!("unknown flag {other}").into()),
            prompt => options.prompt = prompt.to_owned(),
        }
    }
    if options.prompt.is_empty() {
        return Err(
            "usage: mini_host [--origin URL] [--api-origin URL] [--state DIR] [--model ID] PROMPT"
                .into(),
        );
    }
    Ok(options)
}

/// The environment's credential (see the module docs).
fn token_source(options: &Options) -> Result<Arc<dyn TokenSource>, BoxError> {
    let env = |name: &str| {
        std::env::var(name)
            .ok()
            .map(|value| value.trim().to_owned())
            .filter(|value| !value.is_empty())
    };
    if let Some(token) = env("CURSOR_ACCESS_TOKEN") {
        return Ok(Arc::new(StaticToken::new(token)));
    }
    if let Some(key) = env("CURSOR_API_KEY") {
        let api = options
            .api_origin
            .clone()
            .or_else(|| options.origin.clone())
            .unwrap_or_else(|| cursor_auth::DEFAULT_API_BASE.to_owned());
        return Ok(Arc::new(ApiKeyTokens {
            key: UserApiKey::new(key),
            client: Client::new()?,
            config: AuthConfig::with_bases(api, cursor_auth::DEFAULT_WEBSITE_BASE),
        }));
    }
    if options.origin.is_some() {
        return Ok(Arc::new(StaticToken::new("loopback")));
    }
    Err("set CURSOR_ACCESS_TOKEN or CURSOR_API_KEY, or pass --origin of a loopback replica".into())
}

/// A user API key exchanged for access tokens, in memory only.
#[derive(Debug)]
struct ApiKeyTokens {
    key: UserApiKey,
    client: Client,
    config: AuthConfig,
}

#[async_trait::async_trait]
impl TokenSource for ApiKeyTokens {
    async fn access_token(&self) -> Result<String, ErrorInfo> {
        self.key
            .access_token(&self.client, &TokioClock, &self.config)
            .await
            .map_err(|error| error.to_info())
    }

    async fn refresh(&self, rejected: &str) -> Result<String, ErrorInfo> {
        self.key
            .exchange_after_401(&self.client, &TokioClock, &self.config, rejected)
            .await
            .map_err(|error| error.to_info())
    }
}

/// How Cursor and the model see this host.
fn profile() -> HostProfile {
    HostProfile::new("mini-host").with_continuation_prompt("Go on from the tool results above.")
}

fn tools() -> Vec<Tool> {
    let path_schema = json!({
        "type": "object",
        "properties": {"path": {"type": "string", "description": "A path relative to the workspace"}},
        "required": ["path"]
    });
    vec![
        Tool::new(
            "read_file",
            "Read a text file of the workspace",
            path_schema.clone(),
        ),
        Tool::new(
            "list_dir",
            "List the entries of a workspace directory",
            path_schema,
        ),
    ]
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), BoxError> {
    let options = options()?;
    std::fs::create_dir_all(&options.state)?;
    let transcript_path = options.state.join("transcript.json");
    let mut conversation = load_transcript(&transcript_path)?;
    conversation.tools = tools();
    conversation
        .messages
        .push(Message::user_text(options.prompt.as_str()));

    // The model: the catalog's published slug for the id (offline: its shipped table).
    let (catalog, _warnings) = CatalogStore::restore(None);
    let model = ModelChoice::new(catalog.catalog().slug_for(&options.model, None)?);
    let origin = match &options.origin {
        Some(origin) => Origin::parse(origin)?,
        None => catalog.agent_origin(None)?.origin,
    };
    let tokens = token_source(&options)?;
    let workspace = std::env::current_dir()?;
    let session = AgentSession::builder(Client::new()?, origin, tokens)
        .profile(profile())
        .handle_dir(options.state.join("handles"))
        .workspace_uri(cursor_agent::file_uri::from_path(&workspace))
        .session_id(SESSION_ID)
        .build();

    println!("you: {}", options.prompt);
    loop {
        let leg = run_leg(&session, &conversation, &model).await?;
        conversation.messages.push(leg.message());
        if leg.stop != StopReason::ToolUse {
            break;
        }
        for call in &leg.calls {
            let (text, failed) = run_tool(&workspace, call);
            println!(
                "[tool {} → {} bytes{}]",
                call.name,
                text.len(),
                if failed { ", failed" } else { "" }
            );
            conversation
                .messages
                .push(Message::ToolResult(ToolResult::text(
                    call.id.clone(),
                    call.name.clone(),
                    text,
                    failed,
                )));
        }
    }
    // Atomically: a crash mid-write leaves the previous transcript, never half of one.
    let temp = options.state.join("transcript.json.tmp");
    std::fs::write(&temp, serde_json::to_vec_pretty(&conversation)?)?;
    std::fs::rename(&temp, &transcript_path)?;
    Ok(())
}

/// What one leg produced.
struct Leg {
    text: String,
    calls: Vec<ToolCall>,
    stop: StopReason,
}

impl Leg {
    fn message(&self) -> Message {
        let mut content = Vec::new();
        if !self.text.is_empty() {
            content.push(AssistantContent::Text {
                text: self.text.clone(),
            });
        }
        content.extend(self.calls.iter().cloned().map(AssistantContent::ToolCall));
        Message::Assistant { content }
    }
}

async fn run_leg(
    session: &AgentSession,
    conversation: &Conversation,
    model: &ModelChoice,
) -> Result<Leg, BoxError> {
    let mut turn = session.turn(conversation, model);
    let mut leg = Leg {
        text: String::new(),
        calls: Vec::new(),
        stop: StopReason::Stop,
    };
    let mut speaking = false;
    while let Some(event) = turn.next().await {
        match event {
            AgentEvent::Ir(Event::TextDelta { text }) => {
                if !speaking {
                    print!("mini host: ");
                    speaking = true;
                }
                print!("{text}");
                leg.text.push_str(&text);
            }
            AgentEvent::Ir(Event::ToolCall(call)) => leg.calls.push(call),
            // A rebuilt Run starts over: what the stale attempt streamed is void.
            AgentEvent::Ir(Event::Reset) => {
                leg.text.clear();
                leg.calls.clear();
            }
            AgentEvent::Ir(Event::Warning(warning)) => eprintln!("warning: {}", warning.message),
            AgentEvent::Exec(audit) => {
                eprintln!("[cursor asked for {:?}: {:?}]", audit.arm, audit.outcome)
            }
            AgentEvent::Ir(Event::Done { reason }) => leg.stop = reason,
            AgentEvent::Ir(Event::Error(info)) => return Err(failure(&info).into()),
            AgentEvent::Ir(Event::Aborted) => return Err("the turn was aborted".into()),
            _ => {}
        }
    }
    if speaking {
        println!();
    }
    Ok(leg)
}

fn failure(info: &ErrorInfo) -> String {
    format!(
        "{} error: {} (what to do: {})",
        info.kind, info.message, info.next_step
    )
}

/// Runs one of this host's tools inside `workspace`; `(output, failed)`.
fn run_tool(workspace: &Path, call: &ToolCall) -> (String, bool) {
    let Some(path) = call.arguments.get("path").and_then(Value::as_str) else {
        return ("the call has no string `path`".into(), true);
    };
    let Some(target) = inside(workspace, path) else {
        return (format!("{path} is outside the workspace"), true);
    };
    let result = match call.name.as_str() {
        "read_file" => std::fs::read_to_string(&target),
        "list_dir" => std::fs::read_dir(&target).map(|entries| {
            let mut names: Vec<String> = entries
                .filter_map(Result::ok)
                .map(|entry| entry.file_name().to_string_lossy().into_owned())
                .collect();
            names.sort();
            names.join("\n")
        }),
        other => return (format!("this host has no tool {other}"), true),
    };
    match result {
        Ok(text) => (text, false),
        Err(error) => (format!("{path}: {error}"), true),
    }
}

/// `path` under `workspace`, refusing absolute paths and `..` components.
fn inside(workspace: &Path, path: &str) -> Option<PathBuf> {
    let relative = Path::new(path);
    let plain = relative.components().all(|part| {
        matches!(
            part,
            std::path::Component::Normal(_) | std::path::Component::CurDir
        )
    });
    plain.then(|| workspace.join(relative))
}

fn load_transcript(path: &Path) -> Result<Conversation, BoxError> {
    match std::fs::read(path) {
        Ok(bytes) => Ok(serde_json::from_slice(&bytes)?),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            Ok(Conversation::new("You are a terse coding assistant."))
        }
        Err(error) => Err(error.into()),
    }
}
