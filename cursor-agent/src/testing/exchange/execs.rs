//! The exec requests the replica's model makes, and how it reads the client's answers.

use cursor_proto::agent::v1::{
    self as wire, ConversationStateStructure, agent_client_message::Message as Client,
    agent_server_message::Message as Server, exec_client_control_message::Message as Control,
    exec_client_message::Message as Reply, exec_server_message::Message as Exec,
};
use prost::Message as _;
use serde_json::Value;

use super::{Exchange, Stop};
use crate::testing::ExecRecord;
use crate::testing::model::Call;

/// Exec request `id` carrying `message`, encoded as a server frame.
fn exec_frame(id: u32, message: Exec) -> Vec<u8> {
    wire::AgentServerMessage {
        message: Some(Server::ExecServerMessage(wire::ExecServerMessage {
            id,
            exec_id: format!("exec-{id}"),
            message: Some(message),
            ..Default::default()
        })),
        ..Default::default()
    }
    .encode_to_vec()
}

/// One reply to an exec request.
enum ExecReply {
    Typed(Reply),
    Thrown(String),
}

/// What a client answered, reduced to what the model tells the user.
struct Answer {
    status: &'static str,
    text: String,
}

impl Answer {
    fn new(status: &'static str, text: impl Into<String>) -> Self {
        Self {
            status,
            text: text.into(),
        }
    }
}

impl Exchange<'_> {
    /// Sends exec request `message` and collects every reply up to its `stream_close`.
    async fn request(&mut self, message: Exec) -> Result<Vec<ExecReply>, Stop> {
        let id = self.next_id();
        self.request_bytes(id, &exec_frame(id, message)).await
    }

    /// Sends exec request `id` as raw frame bytes (arms this build's schema lacks, too).
    async fn request_bytes(&mut self, id: u32, frame: &[u8]) -> Result<Vec<ExecReply>, Stop> {
        self.send_bytes(frame).await?;
        self.awaiting_exec = true;
        let replies = self.exec_replies(id).await?;
        self.awaiting_exec = false;
        Ok(replies)
    }

    /// Every reply to exec `id` up to its `stream_close`.
    async fn exec_replies(&mut self, id: u32) -> Result<Vec<ExecReply>, Stop> {
        let mut all = self.replies_to_all(&[id]).await?;
        Ok(all.pop().unwrap_or_default())
    }

    /// Every reply to each exec of `ids` (in that order) up to the `stream_close` of each;
    /// the client may interleave them.
    async fn replies_to_all(&mut self, ids: &[u32]) -> Result<Vec<Vec<ExecReply>>, Stop> {
        let mut replies: Vec<Vec<ExecReply>> = ids.iter().map(|_| Vec::new()).collect();
        let mut open = ids.len();
        let slot = |id: u32| ids.iter().position(|&i| i == id);
        while open > 0 {
            match self.next().await? {
                Some(Client::ExecClientMessage(reply)) if slot(reply.id).is_some() => {
                    if let (Some(i), Some(message)) = (slot(reply.id), reply.message) {
                        replies[i].push(ExecReply::Typed(message));
                    }
                }
                Some(Client::ExecClientControlMessage(control)) => match control.message {
                    Some(Control::StreamClose(close)) if slot(close.id).is_some() => open -= 1,
                    Some(Control::Throw(thrown)) if slot(thrown.id).is_some() => {
                        if let Some(i) = slot(thrown.id) {
                            replies[i].push(ExecReply::Thrown(thrown.error));
                        }
                    }
                    _ => return Err(Stop::reject("an exec control frame for another exec")),
                },
                _ => return Err(Stop::reject("expected the answer to an exec request")),
            }
        }
        Ok(replies)
    }

    fn note(&mut self, kind: &str, request: impl Into<String>, answer: &Answer) {
        self.record.execs.push(ExecRecord {
            kind: kind.into(),
            request: request.into(),
            result: answer.text.clone(),
            status: answer.status.into(),
        });
    }

    /// Waits until the client has read every frame sent so far: it answers frames in order,
    /// so its answer to a `request_context` exec proves the earlier ones were handled.
    pub(super) async fn read_frames_sent(&mut self) -> Result<(), Stop> {
        self.request(Exec::RequestContextArgs(wire::RequestContextArgs::default()))
            .await
            .map(drop)
    }

    /// A native shell exec (`shell_stream_args`), answered with what the client sent back.
    pub(super) async fn shell(
        &mut self,
        command: &str,
        state: &ConversationStateStructure,
    ) -> Result<String, Stop> {
        let args = shell_args(command, state);
        let replies = self.request(Exec::ShellStreamArgs(args)).await?;
        let (answer, note) = shell_answer(replies)?;
        self.note("shell_stream", command, &answer);
        let output = answer.text.trim_end();
        Ok(match answer.status {
            "success" => format!("The command printed: {output}"),
            "error" => format!("The command failed{note}: {output}"),
            _ => format!("The command was refused: {output}"),
        })
    }

    /// A `run:` turn when the allowed-tools header forbids the native shell: the host's own
    /// command tool, through MCP, as a model restricted to MCP tools would do it.
    pub(super) async fn command_through_mcp(&mut self, command: &str) -> Result<String, Stop> {
        let tool = self
            .tools
            .iter()
            .find(|name| {
                let name = name.to_ascii_lowercase();
                ["bash", "shell", "command", "exec"]
                    .iter()
                    .any(|word| name.contains(word))
            })
            .cloned();
        match tool {
            Some(tool) => {
                self.tool(&tool, &serde_json::json!({ "command": command }))
                    .await
            }
            None => Ok("I cannot run commands here: no tool of yours runs them.".into()),
        }
    }

    /// One MCP tool call (`mcp_args`), answered with the host's result.
    pub(super) async fn tool(&mut self, name: &str, arguments: &Value) -> Result<String, Stop> {
        let call = Call {
            name: name.to_owned(),
            arguments: arguments.clone(),
        };
        self.tools(std::slice::from_ref(&call)).await
    }

    /// MCP tool calls (`mcp_args`), all sent before any result is awaited (parallel calls, as
    /// a model that asks for several tools at once makes them), answered with the host's
    /// results in call order.
    pub(super) async fn tools(&mut self, calls: &[Call]) -> Result<String, Stop> {
        let mut ids = Vec::with_capacity(calls.len());
        let mut names = Vec::with_capacity(calls.len());
        for call in calls {
            let id = self.next_id();
            let args = match &call.arguments {
                Value::Object(map) => map
                    .iter()
                    .map(|(k, v)| (k.clone(), proto_value(v)))
                    .collect(),
                _ => Default::default(),
            };
            let named = self.tool_naming.name(&self.provider, &call.name);
            names.push(named.clone());
            let mcp = Exec::McpArgs(wire::McpArgs {
                name: named.clone(),
                args,
                tool_call_id: format!("call-{id}"),
                provider_identifier: self.provider.clone(),
                tool_name: named,
                server_identifier: self.provider.clone(),
            });
            self.send_bytes(&exec_frame(id, mcp)).await?;
            ids.push(id);
        }
        self.awaiting_exec = true;
        let replies = self.replies_to_all(&ids).await?;
        self.awaiting_exec = false;
        let mut said = Vec::with_capacity(calls.len());
        for ((call, replies), named) in calls.iter().zip(replies).zip(&names) {
            let answer = mcp_answer(replies)?;
            let name = &call.name;
            self.note("mcp", format!("{named} {}", call.arguments), &answer);
            let text = &answer.text;
            said.push(match answer.status {
                "success" => format!("The tool {name} answered: {text}"),
                "tool-not-found" => format!("There is no tool named {name} (available: {text})."),
                _ => format!("The tool {name} failed: {text}"),
            });
        }
        Ok(said.join(" "))
    }

    /// Exec arm 36 (docs/PROTOCOL-AGENT.md §5.5): asks for the client's MCP state and tells whether
    /// it lists every tool of `names`. A throw, an error or an empty answer lists nothing.
    pub(super) async fn mcp_state_lists(&mut self, names: &[&str]) -> Result<bool, Stop> {
        let replies = self
            .request(Exec::McpStateExecArgs(wire::McpStateExecArgs::default()))
            .await?;
        let mut listed = Vec::new();
        let mut answer = Answer::new("error", "");
        for reply in replies {
            use wire::mcp_state_exec_result::Result as State;
            match reply {
                ExecReply::Typed(Reply::McpStateExecResult(result)) => match result.result {
                    Some(State::Success(success)) => {
                        for server in success.servers {
                            for tool in server.tools {
                                // The newer string schema must carry the same schema.
                                if !tool.input_schema_json.is_empty()
                                    && serde_json::from_str::<Value>(&tool.input_schema_json)
                                        .is_err()
                                {
                                    return Err(Stop::reject("input_schema_json is not JSON"));
                                }
                                listed.push(format!("{}/{}", server.server_identifier, tool.name));
                            }
                        }
                        answer = Answer::new("success", listed.join(", "));
                    }
                    Some(State::Error(error)) => answer = Answer::new("error", error.error),
                    Some(State::Rejected(rejected)) => {
                        answer = Answer::new("rejected", rejected.reason);
                    }
                    None => answer = Answer::new("error", "empty result"),
                },
                ExecReply::Thrown(error) => answer = Answer::new("thrown", error),
                ExecReply::Typed(_) => {
                    return Err(Stop::reject("an MCP state request got a foreign result"));
                }
            }
        }
        self.note("mcp_state", "", &answer);
        let provider = &self.provider;
        Ok(answer.status == "success"
            && names
                .iter()
                .all(|name| listed.contains(&format!("{provider}/{name}"))))
    }

    /// `try every native tool`: one request of each kind a client must answer without running
    /// anything itself (shell, read, glob, fetch, arm 52 and the arms 53, 54, 56 whose results
    /// no public source describes, and an arm no schema has), then a summary.
    pub(super) async fn natives(
        &mut self,
        state: &ConversationStateStructure,
    ) -> Result<String, Stop> {
        let shell = shell_args("echo native-battery", state);
        let read = wire::ReadArgs {
            path: "README.md".into(),
            ..Default::default()
        };
        let glob = wire::GrepArgs {
            glob: Some("*.md".into()),
            ..Default::default()
        };
        let fetch = wire::FetchArgs {
            url: "https://example.org/".into(),
            ..Default::default()
        };
        let requests = vec![
            ("shell_stream", Exec::ShellStreamArgs(shell.clone())),
            ("read", Exec::ReadArgs(read)),
            ("glob", Exec::GrepArgs(glob)),
            ("fetch", Exec::FetchArgs(fetch)),
            ("mini_swe_agent_bash", Exec::MiniSweAgentBashArgs(shell)),
            (
                "conversation_search",
                Exec::ConversationSearchArgs(wire::ConversationSearchArgs::default()),
            ),
            (
                "agent_store_conflict",
                Exec::AgentStoreConflictArgs(wire::AgentStoreConflictArgs::default()),
            ),
            ("adopt", Exec::AdoptArgs(wire::AdoptArgs::default())),
        ];
        let mut summary = Vec::new();
        for (kind, request) in requests {
            let replies = self.request(request).await?;
            let answer = any_answer(replies);
            summary.push(format!("{kind}: {}", answer.status));
            self.note(kind, "", &answer);
        }
        // Arm 33: in no schema (its number is disputed, PROTOCOL-AGENT §11.1), sent as raw bytes.
        let id = self.next_id();
        let replies = self.request_bytes(id, &unknown_arm_frame(id, 33)).await?;
        let answer = any_answer(replies);
        summary.push(format!("unknown: {}", answer.status));
        self.note("unknown", "33", &answer);
        Ok(format!("Native requests answered: {}.", summary.join(", ")))
    }
}

fn shell_args(command: &str, state: &ConversationStateStructure) -> wire::ShellArgs {
    let cwd = state
        .previous_workspace_uris
        .first()
        .map(|uri| uri.strip_prefix("file://").unwrap_or(uri).to_owned())
        .unwrap_or_default();
    wire::ShellArgs {
        command: command.to_owned(),
        working_directory: cwd,
        tool_call_id: "call-shell".into(),
        description: "Run the command".into(),
        ..Default::default()
    }
}

/// A shell exec's replies as the model reads them, and an exit-code note for failures.
fn shell_answer(replies: Vec<ExecReply>) -> Result<(Answer, String), Stop> {
    let mut stdout = String::new();
    let mut status = "success";
    let mut note = String::new();
    for reply in replies {
        match reply {
            ExecReply::Typed(Reply::ShellStream(stream)) => {
                use wire::shell_stream::Event;
                match stream.event {
                    Some(Event::Stdout(out)) => stdout.push_str(&out.data),
                    Some(Event::Stderr(err)) => stdout.push_str(&err.data),
                    Some(Event::Exit(exit)) if exit.code != 0 => {
                        status = "error";
                        note = format!(" (exit code {})", exit.code);
                    }
                    Some(Event::Rejected(rejected)) => {
                        status = "rejected";
                        stdout = rejected.reason;
                    }
                    _ => {}
                }
            }
            ExecReply::Typed(
                Reply::ShellResult(result) | Reply::MiniSweAgentBashResult(result),
            ) => {
                use wire::shell_result::Result as Shell;
                match result.result {
                    Some(Shell::Success(ok)) => stdout = ok.stdout,
                    Some(Shell::Rejected(rejected)) => {
                        status = "rejected";
                        stdout = rejected.reason;
                    }
                    _ => status = "error",
                }
            }
            ExecReply::Thrown(error) => {
                status = "thrown";
                stdout = error;
            }
            ExecReply::Typed(_) => {
                return Err(Stop::reject("a shell exec got a foreign result"));
            }
        }
    }
    Ok((Answer::new(status, stdout), note))
}

/// An MCP call's replies as the model reads them.
fn mcp_answer(replies: Vec<ExecReply>) -> Result<Answer, Stop> {
    use wire::mcp_result::Result as Mcp;
    let mut answer = Answer::new("success", "");
    for reply in replies {
        answer = match reply {
            ExecReply::Typed(Reply::McpResult(result)) => match result.result {
                Some(Mcp::Success(ok)) => {
                    let text = ok
                        .content
                        .iter()
                        .filter_map(|item| match &item.content {
                            Some(wire::mcp_tool_result_content_item::Content::Text(t)) => {
                                Some(t.text.as_str())
                            }
                            _ => None,
                        })
                        .collect::<Vec<_>>()
                        .join("\n");
                    Answer::new(if ok.is_error { "error" } else { "success" }, text)
                }
                Some(Mcp::Error(error)) => Answer::new("error", error.error),
                Some(Mcp::Rejected(rejected)) => Answer::new("rejected", rejected.reason),
                Some(Mcp::ToolNotFound(missing)) => {
                    Answer::new("tool-not-found", missing.available_tools.join(", "))
                }
                None => Answer::new("error", ""),
            },
            ExecReply::Thrown(error) => Answer::new("thrown", error),
            ExecReply::Typed(_) => {
                return Err(Stop::reject("an MCP call got a foreign result"));
            }
        };
    }
    Ok(answer)
}

/// Any exec's replies, classified: `translated` (a result that claims the work happened, which
/// only a host tool can have done), `rejected`, `error`, `thrown`, or `silent` (no reply at all
/// before `stream_close`, which a client must never do).
fn any_answer(replies: Vec<ExecReply>) -> Answer {
    let mut answer = Answer::new("silent", "");
    for reply in replies {
        answer = match reply {
            ExecReply::Thrown(error) => Answer::new("thrown", error),
            ExecReply::Typed(reply) => {
                let debug = format!("{reply:?}");
                let status = match result_arm(&debug) {
                    Some("Rejected") => "rejected",
                    Some("Error" | "Failure" | "PermissionDenied" | "SpawnError") => "error",
                    Some(_) => "translated",
                    None => "silent",
                };
                Answer::new(status, debug)
            }
        };
    }
    answer
}

/// The name of a result message's oneof arm, from its debug form: the variant after the first
/// `result: Some(` or `event: Some(` (the outer result; anything nested comes later).
fn result_arm(debug: &str) -> Option<&str> {
    let start = ["result: Some(", "event: Some("]
        .iter()
        .filter_map(|key| debug.find(key).map(|at| at + key.len()))
        .min()?;
    let rest = &debug[start..];
    let end = rest.find(|c: char| !c.is_ascii_alphanumeric())?;
    Some(&rest[..end])
}

/// An `AgentServerMessage` carrying exec `id` on arm `field` with an empty payload.
fn unknown_arm_frame(id: u32, field: u32) -> Vec<u8> {
    let mut exec = Vec::new();
    prost::encoding::uint32::encode(1, &id, &mut exec);
    prost::encoding::encode_key(field, prost::encoding::WireType::LengthDelimited, &mut exec);
    exec.push(0);
    let mut frame = Vec::new();
    prost::encoding::encode_key(2, prost::encoding::WireType::LengthDelimited, &mut frame);
    prost::encoding::encode_varint(exec.len() as u64, &mut frame);
    frame.extend(exec);
    frame
}

/// A JSON value as the protobuf `Value` MCP arguments travel in.
fn proto_value(json: &Value) -> prost_types::Value {
    use prost_types::value::Kind;
    let kind = match json {
        Value::Null => Kind::NullValue(0),
        Value::Bool(b) => Kind::BoolValue(*b),
        Value::Number(n) => Kind::NumberValue(n.as_f64().unwrap_or_default()),
        Value::String(s) => Kind::StringValue(s.clone()),
        Value::Array(items) => Kind::ListValue(prost_types::ListValue {
            values: items.iter().map(proto_value).collect(),
        }),
        Value::Object(map) => Kind::StructValue(prost_types::Struct {
            fields: map
                .iter()
                .map(|(k, v)| (k.clone(), proto_value(v)))
                .collect(),
        }),
    };
    prost_types::Value { kind: Some(kind) }
}
