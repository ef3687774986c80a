//! A scripted Cursor server and a drain harness for driving `AgentRun` with simulated time.
#![allow(dead_code, unreachable_pub)]

use std::time::{Duration, Instant};

use cursor_agent::{AgentEvent, AgentRun, RunConfig};
use cursor_proto::agent::v1::{
    self as w, AgentClientMessage, AgentServerMessage, agent_client_message::Message as Client,
    agent_server_message::Message as Server, exec_server_message::Message as Exec,
    interaction_update::Message as Update,
};
use cursor_proto::ir::{Conversation, Event, Message, Tool};
use prost::Message as _;
use serde_json::json;

/// The host's tools in most tests: a command tool and a reader.
pub fn tools() -> Vec<Tool> {
    vec![
        Tool::new(
            "bash",
            "Run a shell command",
            json!({"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}),
        ),
        Tool::new(
            "read",
            "Read a file",
            json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
        ),
    ]
}

/// The same tool names, but schemas that require a property no translation can fill: every
/// translatable exec falls back to its typed refusal, which still names these tools.
pub fn untranslatable_tools() -> Vec<Tool> {
    vec![
        Tool::new(
            "bash",
            "Run a shell command",
            json!({"type": "object", "properties": {"command": {"type": "string"}, "session": {"type": "string"}}, "required": ["command", "session"]}),
        ),
        Tool::new(
            "read",
            "Read a file",
            json!({"type": "object", "properties": {"path": {"type": "string"}, "encoding": {"type": "string"}}, "required": ["path", "encoding"]}),
        ),
    ]
}

pub fn conversation() -> Conversation {
    let mut conversation =
        Conversation::new("You are terse.").with_message(Message::user_text("ping"));
    conversation.tools = tools();
    conversation
}

pub fn config() -> RunConfig {
    RunConfig::new(
        "composer-2.5",
        "file:///work",
        cursor_agent::IdSeed::fixed([7; 16]),
    )
    .with_profile(cursor_agent::HostProfile::new("pi"))
}

/// A run plus a simulated clock and everything it wrote and reported.
pub struct Harness {
    pub run: AgentRun,
    pub start: Instant,
    pub now: Instant,
    pub sent: Vec<AgentClientMessage>,
    pub events: Vec<AgentEvent>,
}

impl Harness {
    pub fn new() -> Self {
        Self::with(config(), conversation())
    }

    /// A run whose host tools cannot serve any translation (see [`untranslatable_tools`]).
    pub fn refusing() -> Self {
        let mut conversation = conversation();
        conversation.tools = untranslatable_tools();
        Self::with(config(), conversation)
    }

    /// Opens the run and takes the run request off the queue.
    pub fn with(config: RunConfig, conversation: Conversation) -> Self {
        let start = Instant::now();
        let run = AgentRun::new(config, &conversation, start).expect("run opens");
        let mut harness = Self {
            run,
            start,
            now: start,
            sent: Vec::new(),
            events: Vec::new(),
        };
        harness.drain();
        assert!(matches!(
            harness.sent[0].message,
            Some(Client::RunRequest(_))
        ));
        harness.sent.clear();
        harness
    }

    pub fn run_request(config: RunConfig, conversation: Conversation) -> w::AgentRunRequest {
        let mut run = AgentRun::new(config, &conversation, Instant::now()).expect("run opens");
        match run
            .poll_transmit()
            .and_then(|bytes| decode_client(&bytes).message)
        {
            Some(Client::RunRequest(request)) => request,
            other => panic!("first frame is not the run request: {other:?}"),
        }
    }

    pub fn drain(&mut self) {
        while let Some(bytes) = self.run.poll_transmit() {
            self.sent.push(decode_client(&bytes));
        }
        while let Some(event) = self.run.poll_event() {
            self.events.push(event);
        }
    }

    pub fn server(&mut self, message: Server) {
        self.run.handle_server_message(
            AgentServerMessage {
                message: Some(message),
                ..Default::default()
            },
            self.now,
        );
        self.drain();
    }

    pub fn update(&mut self, update: Update) {
        self.server(Server::InteractionUpdate(w::InteractionUpdate {
            message: Some(update),
            ..Default::default()
        }));
    }

    pub fn text(&mut self, text: &str) {
        self.update(Update::TextDelta(w::TextDeltaUpdate { text: text.into() }));
    }

    pub fn turn_ended(&mut self) {
        self.update(Update::TurnEnded(w::TurnEndedUpdate::default()));
    }

    pub fn exec(&mut self, id: u32, message: Exec) {
        self.server(Server::ExecServerMessage(w::ExecServerMessage {
            id,
            exec_id: format!("x{id}"),
            message: Some(message),
            ..Default::default()
        }));
    }

    pub fn mcp(&mut self, id: u32, tool: &str, call_id: &str, args: serde_json::Value) {
        let args = args
            .as_object()
            .expect("object args")
            .iter()
            .map(|(k, v)| (k.clone(), proto_value(v)))
            .collect();
        self.exec(
            id,
            Exec::McpArgs(w::McpArgs {
                name: tool.into(),
                tool_name: tool.into(),
                tool_call_id: call_id.into(),
                provider_identifier: "pi".into(),
                args,
                ..Default::default()
            }),
        );
    }

    /// Moves the clock and fires due timers (the way a driver would).
    pub fn advance(&mut self, by: Duration) {
        self.now += by;
        self.run.handle_timeout(self.now);
        self.drain();
    }

    /// Moves the clock to the run's next deadline and fires it.
    pub fn advance_to_deadline(&mut self) {
        let at = self.run.poll_timeout().expect("a deadline");
        self.now = self.now.max(at);
        self.run.handle_timeout(self.now);
        self.drain();
    }

    pub fn take_sent(&mut self) -> Vec<AgentClientMessage> {
        std::mem::take(&mut self.sent)
    }

    pub fn take_events(&mut self) -> Vec<AgentEvent> {
        std::mem::take(&mut self.events)
    }

    /// The host events only (audit and checkpoint records dropped).
    pub fn ir_events(&mut self) -> Vec<Event> {
        self.take_events()
            .into_iter()
            .filter_map(|event| match event {
                AgentEvent::Ir(event) => Some(event),
                _ => None,
            })
            .collect()
    }
}

pub fn proto_value(json: &serde_json::Value) -> prost_types::Value {
    use prost_types::value::Kind;
    let kind = match json {
        serde_json::Value::Null => Kind::NullValue(0),
        serde_json::Value::Bool(b) => Kind::BoolValue(*b),
        serde_json::Value::Number(n) => Kind::NumberValue(n.as_f64().unwrap()),
        serde_json::Value::String(s) => Kind::StringValue(s.clone()),
        serde_json::Value::Array(a) => Kind::ListValue(prost_types::ListValue {
            values: a.iter().map(proto_value).collect(),
        }),
        serde_json::Value::Object(o) => Kind::StructValue(prost_types::Struct {
            fields: o.iter().map(|(k, v)| (k.clone(), proto_value(v))).collect(),
        }),
    };
    prost_types::Value { kind: Some(kind) }
}

/// The exec reply inside a client frame.
pub fn exec_reply(frame: &AgentClientMessage) -> &w::ExecClientMessage {
    match &frame.message {
        Some(Client::ExecClientMessage(reply)) => reply,
        other => panic!("not an exec reply: {other:?}"),
    }
}

/// Asserts `frame` is `stream_close{id}`.
pub fn assert_stream_close(frame: &AgentClientMessage, id: u32) {
    assert_eq!(
        frame.message,
        Some(Client::ExecClientControlMessage(
            w::ExecClientControlMessage {
                message: Some(w::exec_client_control_message::Message::StreamClose(
                    w::ExecClientStreamClose { id }
                )),
            }
        )),
    );
}

/// The error of the last event, if the run failed.
pub fn last_error(events: &[Event]) -> Option<&cursor_proto::ir::ErrorInfo> {
    match events.last() {
        Some(Event::Error(info)) => Some(info),
        _ => None,
    }
}

/// A frame the run wrote, decoded.
pub fn decode_client(bytes: &[u8]) -> AgentClientMessage {
    AgentClientMessage::decode(bytes).expect("the run writes decodable frames")
}
