//! Which stored conversation a request continues. A conversation is found by who asks (the
//! client key's namespace and the client's own session hint) and by the complete history it
//! carries: every message, assistant turns, tool calls and tool results included. A request
//! continues only a conversation whose stored history is an exact prefix of its own, so two
//! callers never share a remote conversation and one caller's look-alike conversations never
//! cross.

use cursor_agent::ir::{
    AssistantContent, Conversation, Image, Message, ToolCall, ToolResultContent, UserContent,
};
use serde_json::Value;
use sha2::{Digest as _, Sha256};

/// Who is asking: the client key's namespace, the session hint the client sent (`user`,
/// `prompt_cache_key`, a session id header), if any, and which API it speaks.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Scope {
    /// The client key's namespace ([`crate::ClientKeys::namespace_of`]).
    pub namespace: String,
    /// The client's own session hint.
    pub hint: Option<String>,
    /// The API the conversation is spoken in: a conversation of one is never continued
    /// through the other.
    pub api: Api,
}

/// The API a request speaks.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Api {
    /// OpenAI's chat completions or Responses.
    #[default]
    OpenAi,
    /// Anthropic's Messages (Claude Code).
    Anthropic,
}

impl Scope {
    /// A scope in `namespace` with `hint`, on the OpenAI APIs.
    pub fn new(namespace: impl Into<String>, hint: Option<String>) -> Self {
        Self {
            namespace: namespace.into(),
            hint: hint.filter(|h| !h.is_empty()),
            api: Api::OpenAi,
        }
    }

    /// The same scope on `api`.
    #[must_use]
    pub fn on(mut self, api: Api) -> Self {
        self.api = api;
        self
    }
}

/// The fingerprint of a history up to some message, within a scope.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct HistoryFp(pub [u8; 16]);

impl HistoryFp {
    /// Lowercase hex, for file contents.
    pub fn to_hex(self) -> String {
        cursor_proto::hex::encode(&self.0)
    }

    /// Parses [`to_hex`](Self::to_hex) output.
    pub fn from_hex(text: &str) -> Option<Self> {
        cursor_proto::hex::decode_array(text.trim()).map(Self)
    }

    fn chain(self, unit: &[u8]) -> Self {
        let mut hasher = Sha256::new();
        hasher.update(self.0);
        hasher.update((unit.len() as u64).to_le_bytes());
        hasher.update(unit);
        let digest = hasher.finalize();
        let mut out = [0u8; 16];
        out.copy_from_slice(&digest[..16]);
        Self(out)
    }
}

/// The fingerprints of every prefix of `conversation`'s history within `scope`: element `k`
/// covers the scope, the system prompt and the first `k + 1` history units. Consecutive
/// assistant messages count as one unit (clients split text and tool calls differently).
pub fn prefixes(scope: &Scope, conversation: &Conversation) -> Vec<HistoryFp> {
    let mut fp = root(scope, &conversation.system_prompt);
    let mut out = Vec::new();
    for_each_unit(&conversation.messages, |unit| {
        fp = fp.chain(unit);
        out.push(fp);
    });
    out
}

/// The fingerprint after `prefix` plus the assistant's answer (`text` and `calls`), as the
/// client will send it back.
pub fn extend(prefix: HistoryFp, text: &str, calls: &[ToolCall]) -> HistoryFp {
    let mut unit = Vec::new();
    assistant_unit(&mut unit, text.trim(), calls);
    prefix.chain(&unit)
}

/// For each history unit of [`prefixes`], the number of messages it ends after.
pub fn unit_ends(messages: &[Message]) -> Vec<usize> {
    let mut ends = Vec::new();
    let mut in_assistant = false;
    for (i, message) in messages.iter().enumerate() {
        match message {
            Message::Assistant { .. } => in_assistant = true,
            Message::User { .. } | Message::ToolResult(_) => {
                if in_assistant {
                    ends.push(i);
                    in_assistant = false;
                }
                ends.push(i + 1);
            }
            _ => {}
        }
    }
    if in_assistant {
        ends.push(messages.len());
    }
    ends
}

fn root(scope: &Scope, system_prompt: &str) -> HistoryFp {
    let mut unit = Vec::new();
    field(&mut unit, scope.namespace.as_bytes());
    match &scope.hint {
        Some(hint) => {
            unit.push(1);
            field(&mut unit, hint.as_bytes());
        }
        None => unit.push(0),
    }
    if scope.api == Api::Anthropic {
        unit.push(b'A');
    }
    field(&mut unit, system_prompt.as_bytes());
    HistoryFp([0; 16]).chain(&unit)
}

fn field(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
    out.extend_from_slice(bytes);
}

fn image(out: &mut Vec<u8>, image: &Image) {
    out.push(b'i');
    field(out, image.mime_type.as_bytes());
    out.extend_from_slice(&Sha256::digest(&image.data));
}

/// Object keys sorted, so a client that re-serialises arguments in another order matches.
fn canonical_json(value: &Value) -> String {
    fn sorted(value: &Value) -> Value {
        match value {
            Value::Object(map) => {
                let mut entries: Vec<_> = map.iter().collect();
                entries.sort_by(|a, b| a.0.cmp(b.0));
                Value::Object(
                    entries
                        .into_iter()
                        .map(|(k, v)| (k.clone(), sorted(v)))
                        .collect(),
                )
            }
            Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    sorted(value).to_string()
}

fn assistant_unit(out: &mut Vec<u8>, text: &str, calls: &[ToolCall]) {
    let calls: Vec<&ToolCall> = calls.iter().collect();
    assistant_unit_of(out, text, &calls);
}

fn assistant_unit_of(out: &mut Vec<u8>, text: &str, calls: &[&ToolCall]) {
    out.push(b'a');
    field(out, text.as_bytes());
    for call in calls {
        out.push(b'c');
        field(out, call.id.as_bytes());
        field(out, call.name.as_bytes());
        field(out, canonical_json(&call.arguments).as_bytes());
    }
}

/// Calls `each` with the bytes of every history unit in order. One unit is built at a time in
/// a reused buffer: a history of a million messages costs the largest one, not a copy of all.
fn for_each_unit(messages: &[Message], mut each: impl FnMut(&[u8])) {
    let mut unit = Vec::new();
    let mut i = 0;
    while i < messages.len() {
        unit.clear();
        match &messages[i] {
            Message::Assistant { .. } => {
                let run = messages[i..]
                    .iter()
                    .take_while(|m| matches!(m, Message::Assistant { .. }))
                    .count();
                let group = &messages[i..i + run];
                let mut text = String::new();
                let mut calls = Vec::new();
                for message in group {
                    let Message::Assistant { content } = message else {
                        continue;
                    };
                    for block in content {
                        match block {
                            AssistantContent::Text { text: part } => text.push_str(part),
                            AssistantContent::ToolCall(call) => calls.push(call),
                            // Clients drop or summarise reasoning; it is not part of the history.
                            _ => {}
                        }
                    }
                }
                assistant_unit_of(&mut unit, text.trim(), &calls);
                i += run;
            }
            Message::User { content } => {
                unit.push(b'u');
                for block in content {
                    match block {
                        UserContent::Text { text } => {
                            unit.push(b't');
                            field(&mut unit, text.as_bytes());
                        }
                        UserContent::Image(img) => image(&mut unit, img),
                        // A newer block kind: counted, so it never matches a history without it.
                        _ => unit.push(b'?'),
                    }
                }
                i += 1;
            }
            Message::ToolResult(result) => {
                unit.push(b'r');
                unit.push(u8::from(result.is_error));
                field(&mut unit, result.tool_call_id.as_bytes());
                for block in &result.content {
                    match block {
                        ToolResultContent::Text { text } => {
                            unit.push(b't');
                            field(&mut unit, text.as_bytes());
                        }
                        ToolResultContent::Image(img) => image(&mut unit, img),
                        _ => unit.push(b'?'),
                    }
                }
                i += 1;
            }
            // Newer message kinds carry nothing the gateway's clients send.
            _ => {
                i += 1;
                continue;
            }
        }
        each(&unit);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cursor_agent::ir::ToolResult;
    use serde_json::json;

    fn conversation(messages: Vec<Message>) -> Conversation {
        let mut c = Conversation::new("system");
        c.messages = messages;
        c
    }

    fn scope() -> Scope {
        Scope::new("open", None)
    }

    #[test]
    fn an_answer_extends_the_prefix_the_client_sends_back() {
        let first = conversation(vec![Message::user_text("remember the door is blue")]);
        let answered = extend(*prefixes(&scope(), &first).last().unwrap(), " Noted. ", &[]);
        let next = conversation(vec![
            Message::user_text("remember the door is blue"),
            Message::assistant_text("Noted."),
            Message::user_text("what colour?"),
        ]);
        assert_eq!(prefixes(&scope(), &next)[1], answered);
    }

    #[test]
    fn different_answers_scopes_or_systems_never_match() {
        let prefix = *prefixes(&scope(), &conversation(vec![Message::user_text("u")]))
            .last()
            .unwrap();
        let a = extend(prefix, "A", &[]);
        let b = extend(prefix, "B", &[]);
        assert_ne!(a, b);
        let other_key = Scope::new("key-1", None);
        let hinted = Scope::new("open", Some("session-2".into()));
        let same = conversation(vec![Message::user_text("u")]);
        assert_ne!(prefixes(&other_key, &same), prefixes(&scope(), &same));
        assert_ne!(prefixes(&hinted, &same), prefixes(&scope(), &same));
        let mut other_system = same.clone();
        other_system.system_prompt = "other".into();
        assert_ne!(prefixes(&scope(), &other_system), prefixes(&scope(), &same));
    }

    #[test]
    fn split_assistant_messages_and_reordered_argument_keys_match_the_answer() {
        let call = ToolCall::new("c1", "add", json!({"a": 1, "b": {"y": 2, "x": 1}}));
        let prefix = *prefixes(&scope(), &conversation(vec![Message::user_text("u")]))
            .last()
            .unwrap();
        let answered = extend(prefix, "adding", std::slice::from_ref(&call));
        let echoed = conversation(vec![
            Message::user_text("u"),
            Message::assistant_text("adding"),
            Message::assistant_tool_calls(vec![ToolCall::new(
                "c1",
                "add",
                json!({"b": {"x": 1, "y": 2}, "a": 1}),
            )]),
            Message::ToolResult(ToolResult::text("c1", "add", "3", false)),
        ]);
        let fps = prefixes(&scope(), &echoed);
        assert_eq!(fps.len(), 3);
        assert_eq!(fps[1], answered);
    }

    #[test]
    fn unit_ends_follow_the_units_prefixes_counts() {
        let messages = vec![
            Message::user_text("u"),
            Message::assistant_text("a"),
            Message::assistant_tool_calls(vec![ToolCall::new("c", "t", json!({}))]),
            Message::ToolResult(ToolResult::text("c", "t", "r", false)),
            Message::assistant_text("done"),
        ];
        let ends = unit_ends(&messages);
        assert_eq!(ends, vec![1, 3, 4, 5]);
        assert_eq!(
            ends.len(),
            prefixes(&scope(), &conversation(messages)).len()
        );
    }

    #[test]
    fn hex_round_trips_and_rejects_garbage() {
        let fp = prefixes(&scope(), &conversation(vec![Message::user_text("u")]))[0];
        assert_eq!(HistoryFp::from_hex(&fp.to_hex()), Some(fp));
        assert_eq!(HistoryFp::from_hex("zz"), None);
        assert_eq!(HistoryFp::from_hex(&"é".repeat(16)), None);
    }
}
