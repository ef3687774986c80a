//! The root prompt: the host's transcript as AI-SDK JSON messages, one blob each
//! (PROTOCOL-AGENT §3.1).
//!
//! Cursor drops `role: "system"`, so the system prompt plus the local-tool policy rides as the
//! first user message inside `<rules>`. The current user turn is not part of it: it travels as
//! the run request's user message. Building is one pass over the history (linear in its length).

use cursor_proto::ir::{
    AssistantContent, Conversation, Image, Message, Tool, ToolResult, ToolResultContent,
    UserContent,
};
use serde_json::{Value, json};

use crate::intent::Capability;
use crate::ranking::{Pick, best_tool};
use crate::{HostProfile, RunConfig};

/// The root prompt of `conversation` as JSON texts, rules first; the trailing user message (the
/// turn being asked) is excluded.
pub fn root_prompt_json(conversation: &Conversation, config: &RunConfig) -> Vec<String> {
    let history = history_of(&conversation.messages);
    messages(conversation, history, config)
        .iter()
        .map(Value::to_string)
        .collect()
}

/// The messages before the current turn (all of them when the last is not a user message).
pub(crate) fn history_of(messages: &[Message]) -> &[Message] {
    match messages.split_last() {
        Some((Message::User { .. }, history)) => history,
        _ => messages,
    }
}

/// The root prompt messages: rules, then the history. Turns older than the last
/// [`Limits::archive_after_turns`](crate::Limits::archive_after_turns) user turns are folded
/// into one archive message, so a rebuild makes the server fetch a bounded number of blobs
/// however long the conversation grew (docs/PROTOCOL-AGENT.md §10, §12.5). The turns replayed
/// message by message hold at most
/// [`Limits::max_structured_history_bytes`](crate::Limits::max_structured_history_bytes) of
/// JSON: older ones fold into the archive too, because the server resets a stream carrying
/// much more (§13.4).
pub(crate) fn messages(
    conversation: &Conversation,
    history: &[Message],
    config: &RunConfig,
) -> Vec<Value> {
    let prefix = config.tool_prefix();
    let cap = config.limits.max_replayed_result_chars;
    let host = &config.profile.display_name;
    let (archived, recent) = split_for_archive(history, config.limits.archive_after_turns);
    let groups = turn_groups(recent);
    let structured: Vec<Vec<Value>> = groups
        .iter()
        .map(|group| structured_messages(group, &prefix, cap, host))
        .collect();
    let folded = turns_over_budget(&structured, config.limits.max_structured_history_bytes);
    let archived_len = archived.len() + groups[..folded].iter().map(|g| g.len()).sum::<usize>();
    let archived = &history[..archived_len];
    let mut out = Vec::with_capacity(recent.len() + 2);
    out.push(user_text(format!(
        "<rules>\n{}\n</rules>",
        rules_text(conversation, &config.profile)
    )));
    if !archived.is_empty() {
        // The archive is one blob: it must fit the per-blob cap, with room for its JSON frame.
        let budget = config.limits.max_blob_len.saturating_sub(1024);
        let fold = (folded > 0).then_some(Fold {
            turns: folded,
            budget: config.limits.max_structured_history_bytes,
        });
        out.push(user_text(archive_text(
            archived, &prefix, cap, host, budget, fold,
        )));
    }
    out.extend(structured.into_iter().skip(folded).flatten());
    out
}

/// `messages` cut before each user message: one user turn with its answer and tool rounds
/// each (a leading group may hold no user message).
fn turn_groups(messages: &[Message]) -> Vec<&[Message]> {
    let mut groups = Vec::new();
    let mut start = 0;
    for (at, message) in messages.iter().enumerate() {
        if at > start && matches!(message, Message::User { .. }) {
            groups.push(&messages[start..at]);
            start = at;
        }
    }
    if start < messages.len() {
        groups.push(&messages[start..]);
    }
    groups
}

/// How many of the oldest turn groups must fold into the archive so the JSON of the rest
/// fits `budget` bytes (all of them when even the newest alone does not).
fn turns_over_budget(structured: &[Vec<Value>], budget: usize) -> usize {
    let sizes: Vec<usize> = structured
        .iter()
        .map(|group| group.iter().map(|m| m.to_string().len()).sum())
        .collect();
    let mut total: usize = sizes.iter().sum();
    let mut folded = 0;
    while total > budget && folded < sizes.len() {
        total -= sizes[folded];
        folded += 1;
    }
    folded
}

/// The messages of one turn group in AI-SDK shapes; consecutive tool results share one
/// `tool` message.
fn structured_messages(group: &[Message], prefix: &str, cap: usize, host: &str) -> Vec<Value> {
    let mut out = Vec::with_capacity(group.len());
    let mut tool_parts: Vec<Value> = Vec::new();
    for message in group {
        if let Message::ToolResult(result) = message {
            tool_parts.push(tool_result_part(result, prefix, cap, host));
            continue;
        }
        if !tool_parts.is_empty() {
            out.push(json!({"role": "tool", "content": std::mem::take(&mut tool_parts)}));
        }
        match message {
            Message::User { content } => out.push(user_message(content)),
            Message::Assistant { content } => {
                if let Some(message) = assistant_message(content, prefix) {
                    out.push(message);
                }
            }
            // Handled above; a future message kind is not replayed rather than guessed at.
            _ => {}
        }
    }
    if !tool_parts.is_empty() {
        out.push(json!({"role": "tool", "content": tool_parts}));
    }
    out
}

/// Turns folded into the archive to keep the structured history within `budget` bytes.
#[derive(Clone, Copy)]
struct Fold {
    turns: usize,
    budget: usize,
}

/// Splits `history` before its `keep`-th last user message: what goes into the archive, and
/// what is replayed message by message. Nothing is archived while there are at most `keep`
/// user turns.
fn split_for_archive(history: &[Message], keep: usize) -> (&[Message], &[Message]) {
    let users: Vec<usize> = history
        .iter()
        .enumerate()
        .filter(|(_, m)| matches!(m, Message::User { .. }))
        .map(|(i, _)| i)
        .collect();
    match users.len().checked_sub(keep) {
        Some(first_kept) if first_kept > 0 => users
            .get(first_kept)
            .map_or((history, &[]), |&at| history.split_at(at)),
        _ => (&[], history),
    }
}

/// The archived turns as one text: each message in a tag of its role, tool results capped
/// like replayed ones, images named but not carried. When the whole archive would not fit
/// `budget` bytes, the oldest messages are dropped first and the archive says how many.
fn archive_text(
    archived: &[Message],
    prefix: &str,
    cap: usize,
    host: &str,
    budget: usize,
    fold: Option<Fold>,
) -> String {
    let entries: Vec<String> = archived
        .iter()
        .map(|message| archive_entry(message, prefix, cap, host))
        .collect();
    const HEAD: &str = "<conversation_archive>\nThe earlier part of this conversation, oldest first, as it happened:\n";
    const TAIL: &str = "</conversation_archive>";
    let mut kept = entries.len();
    let mut size = HEAD.len() + TAIL.len() + entries.iter().map(String::len).sum::<usize>();
    let mut first = 0;
    let fold_note = fold.map(|fold| {
        format!(
            "[{host}: the newest {} turns here were folded in from the replayed history, which holds at most {} bytes]\n",
            fold.turns, fold.budget
        )
    });
    size += fold_note.as_ref().map_or(0, String::len);
    // Room for the omission note too.
    while size + 128 > budget && first < kept {
        size -= entries[first].len();
        first += 1;
    }
    kept -= first;
    let mut text = String::with_capacity(size + 128);
    text.push_str(HEAD);
    if first > 0 {
        text.push_str(&format!(
            "[{host}: {first} older messages omitted, keeping the archive within one blob; {kept} follow]\n"
        ));
    }
    if let Some(note) = &fold_note {
        text.push_str(note);
    }
    for entry in &entries[first..] {
        text.push_str(entry);
    }
    text.push_str(TAIL);
    text
}

/// One archived message as tagged text.
fn archive_entry(message: &Message, prefix: &str, cap: usize, host: &str) -> String {
    match message {
        Message::User { content } => {
            let mut text = format!(
                "<user_query>\n{}\n</user_query>\n",
                joined_user_text(content)
            );
            for block in content {
                if let UserContent::Image(image) = block {
                    text.push_str(&format!(
                        "<image mime=\"{}\">(not carried in the archive)</image>\n",
                        image.mime_type
                    ));
                }
            }
            text
        }
        Message::Assistant { content } => {
            let mut text = String::new();
            for block in content {
                match block {
                    AssistantContent::Text { text: said } if !said.is_empty() => {
                        text.push_str(&format!("<assistant>\n{said}\n</assistant>\n"));
                    }
                    AssistantContent::ToolCall(call) => text.push_str(&format!(
                        "<tool_call id=\"{}\" name=\"{prefix}{}\">{}</tool_call>\n",
                        call.id, call.name, call.arguments
                    )),
                    _ => {}
                }
            }
            text
        }
        Message::ToolResult(result) => format!(
            "<tool_result id=\"{}\" name=\"{prefix}{}\"{}>\n{}\n</tool_result>\n",
            result.tool_call_id,
            result.tool_name,
            if result.is_error {
                " error=\"true\""
            } else {
                ""
            },
            cap_chars(&result.joined_text(), cap, host)
        ),
        _ => String::new(),
    }
}

/// The text inside `<rules>`: the host's system prompt, the local-tool policy, the intent map
/// and one signature line per tool (descriptions and schemas never reach the model, the rules
/// do: PROTOCOL-AGENT §5.1).
pub(crate) fn rules_text(conversation: &Conversation, profile: &HostProfile) -> String {
    let prefix = &profile.tool_prefix();
    let host = &profile.display_name;
    let mut text = String::new();
    if !conversation.system_prompt.is_empty() {
        text.push_str(&conversation.system_prompt);
        text.push_str("\n\n");
    }
    let namespace = prefix.trim_start_matches("mcp_").trim_end_matches('_');
    text.push_str(&format!(
        "# Local tools\n\
         Local work in this session runs only through {host}'s MCP tools. They are Cursor dynamic tools in the MCP namespace `{namespace}`: look them up there (GetDynamicTools, then CallDynamicTool) or call them by their names `{prefix}<tool>`. If they are missing from your static tool list, they are still available: do not fall back to other tools.\n\
         Cursor native tools (Shell, Read, Write, Delete, Grep, Glob, LS, Fetch and the rest) are disabled here: every such call is refused and nothing runs.\n"
    ));
    let map: Vec<String> = Capability::ALL
        .iter()
        .filter_map(
            |&capability| match best_tool(&conversation.tools, capability) {
                Pick::Matched {
                    tool,
                    capability: matched,
                } if matched == capability => {
                    Some(format!("{} → `{prefix}{}`", capability.phrase(), tool.name))
                }
                _ => None,
            },
        )
        .collect();
    if !map.is_empty() {
        text.push_str(&format!("Use: {}.\n", map.join("; ")));
    }
    if !conversation.tools.is_empty() {
        text.push_str(&format!("{host} tools (name(arguments): purpose):\n"));
        for tool in &conversation.tools {
            text.push_str(&contract_line(tool, prefix));
            text.push('\n');
        }
    }
    text.trim_end().to_owned()
}

/// `- mcp_pi_bash(command: string, timeout?: number): Run a shell command.`
fn contract_line(tool: &Tool, prefix: &str) -> String {
    let arguments = match tool.parameters.get("properties").and_then(Value::as_object) {
        Some(properties) => {
            let required = required_of(&tool.parameters);
            let fields: Vec<String> = properties
                .iter()
                .map(|(name, schema)| {
                    let optional = if required.contains(&name.as_str()) {
                        ""
                    } else {
                        "?"
                    };
                    format!("{name}{optional}: {}", type_of(schema, 0))
                })
                .collect();
            fields.join(", ")
        }
        None => String::new(),
    };
    let purpose = tool.description.lines().next().unwrap_or_default().trim();
    let purpose: String = purpose.chars().take(200).collect();
    if purpose.is_empty() {
        format!("- {prefix}{}({arguments})", tool.name)
    } else {
        format!("- {prefix}{}({arguments}): {purpose}", tool.name)
    }
}

fn required_of(schema: &Value) -> Vec<&str> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// A compact type for a JSON Schema: `string`, `array<{path: string}>`, `"a"|"b"`.
fn type_of(schema: &Value, depth: usize) -> String {
    if let Some(options) = schema.get("enum").and_then(Value::as_array) {
        let options: Vec<String> = options.iter().map(Value::to_string).collect();
        return options.join("|");
    }
    match schema.get("type") {
        Some(Value::String(kind)) => match kind.as_str() {
            "array" => match schema.get("items") {
                Some(items) => format!("array<{}>", type_of(items, depth + 1)),
                None => "array".into(),
            },
            "object" => match schema.get("properties").and_then(Value::as_object) {
                Some(properties) if depth < 3 => {
                    let required = required_of(schema);
                    let fields: Vec<String> = properties
                        .iter()
                        .map(|(name, inner)| {
                            let optional = if required.contains(&name.as_str()) {
                                ""
                            } else {
                                "?"
                            };
                            format!("{name}{optional}: {}", type_of(inner, depth + 1))
                        })
                        .collect();
                    format!("{{{}}}", fields.join(", "))
                }
                _ => "object".into(),
            },
            other => other.to_owned(),
        },
        Some(Value::Array(kinds)) => {
            let kinds: Vec<&str> = kinds.iter().filter_map(Value::as_str).collect();
            kinds.join("|")
        }
        _ => "any".into(),
    }
}

fn user_text(text: String) -> Value {
    json!({"role": "user", "content": [{"type": "text", "text": text}]})
}

fn user_message(content: &[UserContent]) -> Value {
    let text = joined_user_text(content);
    let mut parts =
        vec![json!({"type": "text", "text": format!("<user_query>\n{text}\n</user_query>")})];
    for block in content {
        if let UserContent::Image(image) = block {
            parts.push(json!({"type": "image", "image": image.to_data_url()}));
        }
    }
    json!({"role": "user", "content": parts})
}

/// The text blocks of a user message joined with newlines.
pub(crate) fn joined_user_text(content: &[UserContent]) -> String {
    let texts: Vec<&str> = content
        .iter()
        .filter_map(|block| match block {
            UserContent::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    texts.join("\n")
}

/// Text and tool calls; thinking is not replayed (it is model-private and signature-bound).
fn assistant_message(content: &[AssistantContent], prefix: &str) -> Option<Value> {
    let parts: Vec<Value> = content
        .iter()
        .filter_map(|block| match block {
            AssistantContent::Text { text } if !text.is_empty() => {
                Some(json!({"type": "text", "text": text}))
            }
            AssistantContent::ToolCall(call) => Some(json!({
                "type": "tool-call",
                "toolCallId": call.id,
                "toolName": format!("{prefix}{}", call.name),
                "args": call.arguments,
            })),
            _ => None,
        })
        .collect();
    (!parts.is_empty()).then(|| json!({"role": "assistant", "content": parts}))
}

fn tool_result_part(result: &ToolResult, prefix: &str, cap: usize, host: &str) -> Value {
    let text = cap_chars(&result.joined_text(), cap, host);
    let mut part = json!({
        "type": "tool-result",
        "toolCallId": result.tool_call_id,
        "toolName": format!("{prefix}{}", result.tool_name),
        "result": text,
    });
    if result.is_error {
        part["isError"] = Value::Bool(true);
    }
    let images: Vec<&Image> = result
        .content
        .iter()
        .filter_map(|block| match block {
            ToolResultContent::Image(image) => Some(image),
            _ => None,
        })
        .collect();
    if !images.is_empty() {
        let mut content = vec![json!({"type": "text", "text": text})];
        content.extend(images.into_iter().map(|image| {
            let url = image.to_data_url();
            let data = url.split_once(',').map_or("", |(_, data)| data).to_owned();
            json!({"type": "image", "data": data, "mimeType": image.mime_type})
        }));
        part["experimental_content"] = Value::Array(content);
    }
    part
}

/// `text` cut to `cap` characters with an explicit marker (never a silent cut).
pub(crate) fn cap_chars(text: &str, cap: usize, host: &str) -> String {
    match text.char_indices().nth(cap) {
        None => text.to_owned(),
        Some((end, _)) => {
            let total = text.chars().count();
            format!(
                "{}\n[{host}: tool result truncated, showing {cap} of {total} characters]",
                &text[..end]
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cursor_proto::ir::ToolCall;

    fn config() -> RunConfig {
        RunConfig::new("m", "file:///w", crate::IdSeed::fixed([1; 16]))
            .with_profile(HostProfile::new("acme"))
    }

    fn conversation() -> Conversation {
        Conversation::new("Be terse.")
            .with_tool(Tool::new(
                "bash",
                "Run a shell command.\nMore detail.",
                json!({"type": "object", "properties": {"command": {"type": "string"}, "timeout": {"type": "number"}}, "required": ["command"]}),
            ))
            .with_tool(Tool::new(
                "multi_edit",
                "",
                json!({"type": "object", "properties": {"edits": {"type": "array", "items": {"type": "object", "properties": {"new": {"type": "string"}, "old": {"type": "string"}}, "required": ["new", "old"]}}}}),
            ))
    }

    #[test]
    fn rules_carry_system_prompt_policy_intent_map_and_contracts() {
        let rules = rules_text(&conversation(), &HostProfile::new("acme"));
        assert!(rules.starts_with("Be terse.\n\n# Local tools\n"));
        assert!(rules.contains("MCP namespace `acme`"));
        let other = rules_text(&conversation(), &HostProfile::new("acme"));
        assert!(other.contains("through acme's MCP tools"), "{other}");
        assert!(
            other.contains("acme tools (name(arguments): purpose)"),
            "{other}"
        );
        assert!(other.contains("`mcp_acme_bash`"), "{other}");
        assert!(rules.contains("run a command → `mcp_acme_bash`"));
        assert!(rules.contains(
            "- mcp_acme_bash(command: string, timeout?: number): Run a shell command.\n"
        ));
        assert!(
            rules.ends_with("- mcp_acme_multi_edit(edits?: array<{new: string, old: string}>)")
        );
    }

    #[test]
    fn history_replays_in_ai_sdk_shapes_and_excludes_the_current_turn() {
        let mut result = ToolResult::text("c1", "bash", "out", true);
        result.content.push(ToolResultContent::Image(Image::new(
            "image/png",
            b"PNG".to_vec(),
        )));
        let conversation = conversation()
            .with_message(Message::User {
                content: vec![
                    UserContent::Text {
                        text: "look".into(),
                    },
                    UserContent::Image(Image::new("image/gif", b"GIF89a".to_vec())),
                ],
            })
            .with_message(Message::Assistant {
                content: vec![
                    AssistantContent::Thinking {
                        text: "hm".into(),
                        signature: None,
                    },
                    AssistantContent::ToolCall(ToolCall::new(
                        "c1",
                        "bash",
                        json!({"command": "ls"}),
                    )),
                ],
            })
            .with_message(Message::ToolResult(result))
            .with_message(Message::user_text("current turn"));
        let texts = root_prompt_json(&conversation, &config());
        let values: Vec<Value> = texts
            .iter()
            .map(|t| serde_json::from_str(t).unwrap())
            .collect();
        assert_eq!(values.len(), 4);
        assert!(
            values[0]["content"][0]["text"]
                .as_str()
                .unwrap()
                .starts_with("<rules>\n")
        );
        assert_eq!(
            values[1],
            json!({"role": "user", "content": [
                {"type": "text", "text": "<user_query>\nlook\n</user_query>"},
                {"type": "image", "image": "data:image/gif;base64,R0lGODlh"}
            ]})
        );
        assert_eq!(
            values[2],
            json!({"role": "assistant", "content": [
                {"type": "tool-call", "toolCallId": "c1", "toolName": "mcp_acme_bash", "args": {"command": "ls"}}
            ]})
        );
        assert_eq!(
            values[3],
            json!({"role": "tool", "content": [{
                "type": "tool-result", "toolCallId": "c1", "toolName": "mcp_acme_bash",
                "result": "out", "isError": true,
                "experimental_content": [
                    {"type": "text", "text": "out"},
                    {"type": "image", "data": "UE5H", "mimeType": "image/png"}
                ]
            }]})
        );
        assert!(!texts.iter().any(|t| t.contains("current turn")));
    }

    #[test]
    fn replayed_results_are_capped_with_a_marker() {
        let long = "é".repeat(25);
        let capped = cap_chars(&long, 20, "acme");
        assert!(capped.starts_with(&"é".repeat(20)));
        assert!(capped.ends_with("[acme: tool result truncated, showing 20 of 25 characters]"));
        assert_eq!(cap_chars("short", 20, "acme"), "short");
    }

    /// `turns` user/assistant pairs, then the current question.
    fn long_history(turns: usize) -> Conversation {
        let mut conversation = conversation();
        for turn in 0..turns {
            conversation = conversation
                .with_message(Message::user_text(format!("question {turn}")))
                .with_message(Message::assistant_text(format!("answer {turn}")));
        }
        conversation.with_message(Message::user_text("current turn"))
    }

    #[test]
    fn turns_beyond_the_bound_fold_into_one_archive_message_oldest_first() {
        let config = config();
        let conversation = long_history(25);
        let values = messages(&conversation, history_of(&conversation.messages), &config);
        // rules, the archive, then 20 turns of two messages each.
        assert_eq!(values.len(), 2 + 2 * 20);
        let archive = values[1]["content"][0]["text"].as_str().unwrap();
        assert!(archive.starts_with("<conversation_archive>\n"), "{archive}");
        assert!(archive.ends_with("</conversation_archive>"), "{archive}");
        let first = archive
            .find("<user_query>\nquestion 0\n</user_query>")
            .unwrap();
        let last = archive
            .find("<user_query>\nquestion 4\n</user_query>")
            .unwrap();
        assert!(first < last);
        assert!(archive.contains("<assistant>\nanswer 4\n</assistant>"));
        assert!(!archive.contains("question 5"), "{archive}");
        assert_eq!(
            values[2]["content"][0]["text"],
            "<user_query>\nquestion 5\n</user_query>"
        );
        // At or under the bound nothing is archived.
        let short = long_history(20);
        let values = messages(&short, history_of(&short.messages), &config);
        assert_eq!(values.len(), 1 + 2 * 20);
    }

    #[test]
    fn archived_tool_rounds_keep_calls_and_capped_results_and_name_images() {
        let mut config = config();
        config.limits.archive_after_turns = 0;
        config.limits.max_replayed_result_chars = 5;
        let conversation = conversation()
            .with_message(Message::User {
                content: vec![
                    UserContent::Text {
                        text: "look".into(),
                    },
                    UserContent::Image(Image::new("image/png", b"PNG".to_vec())),
                ],
            })
            .with_message(Message::assistant_tool_calls(vec![ToolCall::new(
                "c1",
                "bash",
                json!({"command": "ls"}),
            )]))
            .with_message(Message::ToolResult(ToolResult::text(
                "c1",
                "bash",
                "0123456789",
                true,
            )))
            .with_message(Message::user_text("current turn"));
        let values = messages(&conversation, history_of(&conversation.messages), &config);
        assert_eq!(values.len(), 2, "rules and the archive: {values:?}");
        let archive = values[1]["content"][0]["text"].as_str().unwrap();
        assert!(archive.contains("<image mime=\"image/png\">(not carried in the archive)</image>"));
        assert!(
            archive.contains(
                r#"<tool_call id="c1" name="mcp_acme_bash">{"command":"ls"}</tool_call>"#
            )
        );
        assert!(archive.contains(r#"<tool_result id="c1" name="mcp_acme_bash" error="true">"#));
        assert!(
            archive.contains("01234\n[acme: tool result truncated, showing 5 of 10 characters]")
        );
    }

    #[test]
    fn an_archive_over_one_blob_drops_its_oldest_messages_and_says_so() {
        let mut config = config();
        config.limits.archive_after_turns = 1;
        config.limits.max_blob_len = 1024 + 600;
        let conversation = long_history(30);
        let values = messages(&conversation, history_of(&conversation.messages), &config);
        let archive = values[1]["content"][0]["text"].as_str().unwrap();
        assert!(archive.len() <= 600, "{}", archive.len());
        assert!(archive.contains("older messages omitted"), "{archive}");
        assert!(
            archive.contains("question 28"),
            "the newest archived turn is kept"
        );
        assert!(!archive.contains("question 0\n"), "{archive}");
    }

    /// The bytes of the messages replayed one by one (neither the rules nor the archive).
    fn structured_bytes(values: &[Value]) -> usize {
        values
            .iter()
            .filter(|v| {
                let text = v["content"][0]["text"].as_str().unwrap_or("");
                !(text.starts_with("<rules>") || text.starts_with("<conversation_archive>"))
            })
            .map(|v| v.to_string().len())
            .sum()
    }

    /// `turns` user/assistant pairs of about `size` bytes each, then the current question.
    fn big_history(turns: usize, size: usize) -> Conversation {
        let mut conversation = conversation();
        for turn in 0..turns {
            conversation = conversation
                .with_message(Message::user_text(format!(
                    "question {turn} {}",
                    "q".repeat(size / 2)
                )))
                .with_message(Message::assistant_text(format!(
                    "answer {turn} {}",
                    "a".repeat(size / 2)
                )));
        }
        conversation.with_message(Message::user_text("current turn"))
    }

    #[test]
    fn structured_history_past_the_budget_folds_its_oldest_turns_into_the_archive() {
        let config = config();
        let conversation = big_history(30, 4096);
        let values = messages(&conversation, history_of(&conversation.messages), &config);
        let budget = config.limits.max_structured_history_bytes;
        assert!(
            structured_bytes(&values) <= budget,
            "{}",
            structured_bytes(&values)
        );
        let archive = values[1]["content"][0]["text"].as_str().unwrap();
        assert!(archive.starts_with("<conversation_archive>\n"));
        assert!(
            archive
                .contains("folded in from the replayed history, which holds at most 49152 bytes"),
            "{}",
            &archive[..300]
        );
        // 10 turns archived by count, the oldest of the 20 recent ones by size; the newest stay.
        assert!(archive.contains("question 10 "));
        let last = values.last().unwrap()["content"][0]["text"]
            .as_str()
            .unwrap();
        assert!(last.starts_with("answer 29 "), "{last:.40}");
        let kept = (values.len() - 2) / 2;
        assert!((8..20).contains(&kept), "{kept} turns kept structured");
        // Under the budget nothing more folds than the turn count says.
        let small = big_history(20, 1024);
        let values = messages(&small, history_of(&small.messages), &config);
        assert_eq!(values.len(), 1 + 2 * 20);
    }

    #[test]
    fn one_turn_bigger_than_the_budget_is_folded_with_a_marker_not_sent_whole() {
        let config = config();
        let conversation = big_history(1, 100 << 10);
        let values = messages(&conversation, history_of(&conversation.messages), &config);
        assert_eq!(values.len(), 2, "rules and the archive only");
        assert_eq!(structured_bytes(&values), 0);
        let archive = values[1]["content"][0]["text"].as_str().unwrap();
        assert!(archive.contains("[acme: the newest 1 turns here were folded in"));
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
        #[test]
        fn no_rebuild_sends_more_structured_history_than_the_budget(
            sizes in proptest::collection::vec(0_usize..80_000, 0..40),
            results in proptest::collection::vec(0_usize..30_000, 0..40),
            budget in 0_usize..70_000,
        ) {
            let mut config = config();
            config.limits.max_structured_history_bytes = budget;
            let mut conversation = conversation();
            for (turn, size) in sizes.iter().enumerate() {
                conversation = conversation.with_message(Message::user_text("u".repeat(*size)));
                if let Some(&len) = results.get(turn) {
                    let id = format!("c{turn}");
                    conversation = conversation
                        .with_message(Message::assistant_tool_calls(vec![ToolCall::new(
                            id.clone(), "bash", json!({"command": "ls"}),
                        )]))
                        .with_message(Message::ToolResult(ToolResult::text(
                            id, "bash", "r".repeat(len), false,
                        )));
                }
                conversation = conversation.with_message(Message::assistant_text("ok"));
            }
            let conversation = conversation.with_message(Message::user_text("now"));
            let values = messages(&conversation, history_of(&conversation.messages), &config);
            proptest::prop_assert!(structured_bytes(&values) <= budget);
        }
    }
}
