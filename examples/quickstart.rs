//! One agent turn end to end: streamed text, one MCP tool call answered by this example's own
//! tool, and the final answer.
//!
//! By default it runs against the in-process replica of Cursor's agent backend
//! (`cursor_agent::testing::Replica`), so it needs no account and no network. With credentials
//! configured it talks to the real backend instead:
//!
//! - `CURSOR_ACCESS_TOKEN`, or the `cursor` entry of pi's `~/.pi/agent/auth.json`;
//! - the agent origin from `CURSOR_PROVIDER_AGENT_ORIGIN`, else `GetServerConfig`, else the
//!   built-in default.
//!
//! Run with `cargo run -p cursor-examples --example quickstart`
//! (`CURSOR_QUICKSTART_REPLICA=1` forces the replica even with credentials).

use std::io::Write as _;

use cursor_agent::testing::Replica;
use cursor_agent::{AgentEvent, AgentRun, HostProfile, IdSeed, RunConfig, driver};
use cursor_catalog::{CatalogRpc as _, TransportCatalogRpc};
use cursor_proto::aiserver::v1::GetServerConfigRequest;
use cursor_proto::ir::{Conversation, Event, Message, Tool, ToolCall, ToolResult};
use cursor_transport::{
    AccessToken, CallKind, CliIdentity, Client, Origin, RequestHeaders, RequestId,
};
use serde_json::json;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Where the turn runs.
enum Backend {
    /// The loopback replica, kept alive for the turn.
    Replica(cursor_agent::testing::ReplicaServer),
    /// Cursor itself.
    Cursor { token: String },
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), BoxError> {
    let client = Client::new()?;
    let backend = match access_token() {
        Some(token) if std::env::var_os("CURSOR_QUICKSTART_REPLICA").is_none() => {
            Backend::Cursor { token }
        }
        _ => Backend::Replica(Replica::start().await?),
    };
    let (origin, headers, model, ask) = match &backend {
        Backend::Replica(replica) => {
            println!("backend: in-process replica at {}", replica.origin());
            (
                replica.origin(),
                RequestHeaders::new(),
                "composer-2.5".to_owned(),
                r#"tool: add {"a": 19, "b": 23}"#.to_owned(),
            )
        }
        Backend::Cursor { token } => {
            let origin = agent_origin(&client, token).await?;
            println!("backend: Cursor at {origin}");
            let headers = RequestHeaders::cli(
                &AccessToken::new(token.clone()),
                &CliIdentity::default(),
                CallKind::Stream,
                &RequestId::generate()?,
            )?;
            let model =
                std::env::var("CURSOR_QUICKSTART_MODEL").unwrap_or_else(|_| "composer-2.5".into());
            let ask = "Call the add tool with a=19 and b=23, then tell me the sum in one sentence.";
            (origin, headers, model, ask.to_owned())
        }
    };

    let conversation = Conversation::new("You are terse.")
        .with_tool(Tool::new(
            "add",
            "Add two numbers and return the sum",
            json!({
                "type": "object",
                "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                "required": ["a", "b"]
            }),
        ))
        .with_message(Message::user_text(ask.as_str()));
    println!("user: {ask}");

    let config = RunConfig::new(model, workspace_uri(), IdSeed::random()?)
        .with_profile(HostProfile::new("quickstart"));
    let run = AgentRun::new(config, &conversation, driver::now())?;
    let (handle, mut events, task) = driver::start(client, origin, headers, run);
    let task = tokio::spawn(task);

    let mut stdout = std::io::stdout();
    let mut pending: Vec<ToolCall> = Vec::new();
    let mut failed = None;
    let mut speaking = false;
    while let Some(event) = events.recv().await {
        match event {
            AgentEvent::Ir(Event::TextDelta { text }) => {
                if !speaking {
                    print!("assistant: ");
                    speaking = true;
                }
                print!("{text}");
                stdout.flush()?;
            }
            AgentEvent::Ir(Event::ToolCall(call)) => pending.push(call),
            AgentEvent::Ir(Event::Usage(usage)) => {
                if std::mem::take(&mut speaking) {
                    println!();
                }
                println!(
                    "usage: {} input (estimated: {}), {} output tokens",
                    usage.input_tokens, usage.input_estimated, usage.output_tokens
                );
            }
            AgentEvent::Ir(Event::Done { reason }) if !pending.is_empty() => {
                println!("[leg done: {reason:?}]");
                let results = pending.drain(..).map(|call| run_tool(&call)).collect();
                handle.submit_tool_results(results).await?;
            }
            AgentEvent::Ir(Event::Done { reason }) => println!("[done: {reason:?}]"),
            AgentEvent::Ir(Event::Error(info)) => failed = Some(info),
            _ => {}
        }
    }
    let run = task.await?;
    if let Some(info) = failed {
        return Err(format!(
            "the turn failed: {} (next: {})",
            info.message, info.next_step
        )
        .into());
    }
    println!(
        "conversation {} (checkpoint {} bytes)",
        run.conversation_id(),
        run.checkpoint().map_or(0, <[u8]>::len)
    );
    if let Backend::Replica(replica) = &backend {
        for record in replica.runs() {
            println!("replica saw: {}", record.to_json_line());
        }
    }
    Ok(())
}

/// This example's own tool: `add`.
fn run_tool(call: &ToolCall) -> ToolResult {
    println!("tool call: {}({})", call.name, call.arguments);
    let number = |key: &str| call.arguments.get(key).and_then(serde_json::Value::as_f64);
    match (call.name.as_str(), number("a"), number("b")) {
        ("add", Some(a), Some(b)) => {
            let sum = a + b;
            println!("tool result: {sum}");
            ToolResult::text(&call.id, &call.name, sum.to_string(), false)
        }
        _ => ToolResult::text(&call.id, &call.name, "add needs numbers a and b", true),
    }
}

/// `CURSOR_ACCESS_TOKEN`, else the `cursor` entry of pi's auth file.
fn access_token() -> Option<String> {
    if let Some(token) = std::env::var("CURSOR_ACCESS_TOKEN")
        .ok()
        .filter(|t| !t.trim().is_empty())
    {
        return Some(token.trim().to_owned());
    }
    let home = std::env::var_os("HOME")?;
    let path = std::path::Path::new(&home).join(".pi/agent/auth.json");
    let text = std::fs::read_to_string(path).ok()?;
    let file: serde_json::Value = serde_json::from_str(&text).ok()?;
    let entry = file.get("cursor")?;
    cursor_auth::Credentials::from_json(&entry.to_string())
        .ok()
        .map(|c| c.access)
}

/// The agent host: the override, else the one `GetServerConfig` names, else the default.
async fn agent_origin(client: &Client, token: &str) -> Result<Origin, BoxError> {
    let override_origin = std::env::var("CURSOR_PROVIDER_AGENT_ORIGIN")
        .ok()
        .map(|origin| origin.trim().to_owned())
        .filter(|origin| !origin.is_empty());
    let discovered = if override_origin.is_some() {
        None
    } else {
        let rpc = TransportCatalogRpc::new(
            client.clone(),
            Origin::api2(),
            AccessToken::new(token.to_owned()),
            CliIdentity::default(),
        );
        match rpc.server_config(GetServerConfigRequest::default()).await {
            Ok(config) => cursor_catalog::agent_origin_from_server_config(&config, false)?,
            Err(error) => {
                eprintln!("GetServerConfig failed ({error}); using the default agent host");
                None
            }
        }
    };
    let discovered = discovered.map(|origin| origin.to_string());
    Ok(
        cursor_catalog::resolve_agent_origin(override_origin.as_deref(), discovered.as_deref())?
            .origin,
    )
}

fn workspace_uri() -> String {
    let dir = std::env::current_dir().unwrap_or_else(|_| "/".into());
    cursor_agent::file_uri::from_path(&dir)
}
