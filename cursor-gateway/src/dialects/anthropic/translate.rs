//! A Messages request in the engine's terms: validated and translated to the host-neutral
//! transcript. Claude Code is the client this is shaped by: `system` as text blocks, context
//! blocks before the prompt, `system`-role entries inside `messages`, thinking blocks replayed
//! with their signatures.

use cursor_agent::ir::{
    AssistantContent, Conversation, Message, Tool, ToolCall, ToolResult, ToolResultContent,
    UserContent,
};
use serde_json::{Value, json};

use super::signature::ThinkingKey;
use super::wire::{Content, InMessage, MessagesRequest, Part, Role, ToolChoiceKind};
use crate::ApiError;

/// What a request asked, translated.
#[derive(Debug)]
pub(crate) struct Translated {
    pub(crate) conversation: Conversation,
    /// `metadata.user_id`'s session (Claude Code puts a JSON object with `session_id` there).
    pub(crate) hint: Option<String>,
    /// Claude Code asking for a summary of the conversation (its compaction): answered in a
    /// conversation of its own so the main one is not advanced by it.
    pub(crate) compaction: bool,
}

fn bad(message: impl Into<String>) -> ApiError {
    ApiError::bad_request("invalid_request_error", message)
}

/// What the request's JSON trees (tool schemas, tool inputs) will cost once built.
pub(crate) fn tree_cost(request: &MessagesRequest) -> usize {
    let tools: usize = request
        .tools
        .iter()
        .flatten()
        .filter_map(|tool| tool.input_schema.as_ref())
        .map(|schema| schema.cost())
        .sum();
    let inputs: usize = request
        .messages
        .iter()
        .flat_map(|message| &message.content.0)
        .filter_map(|part| match part {
            Part::ToolUse {
                input: Some(input), ..
            } => Some(input.cost()),
            _ => None,
        })
        .sum();
    tools + inputs
}

/// A refused block's 400.
fn refused(at: &str, index: usize, kind: &str, why: &str) -> ApiError {
    bad(format!(
        "{at}[{index}]: a {kind} block is not supported here ({why}); text, image, tool_use, \
         tool_result and thinking blocks are"
    ))
}

/// The texts of `content`, which may hold text blocks only.
fn texts(content: Content, at: &str) -> Result<String, ApiError> {
    let mut out = Vec::new();
    for (i, part) in content.0.into_iter().enumerate() {
        match part {
            Part::Text(run) => out.push(run.newline_joined()),
            Part::Refused { index, kind, why } => return Err(refused(at, index, &kind, &why)),
            _ => return Err(bad(format!("{at}[{i}]: only text blocks are allowed here"))),
        }
    }
    Ok(out.join("\n"))
}

/// Translates the request: `system`-role entries join the user turn before them, as context
/// in front of its prompt (the first user turn when none is before), consecutive user entries
/// merge, thinking blocks must carry this gateway's signature, and tool results stay in order.
/// `for_count` skips what only a turn needs (`max_tokens`).
pub(crate) fn translate(
    request: MessagesRequest,
    key: &ThinkingKey,
    for_count: bool,
) -> Result<Translated, ApiError> {
    if request.max_tokens.is_none() && !for_count {
        return Err(bad("max_tokens is required").with_param("max_tokens"));
    }
    let tools = tools(&request)?;
    let MessagesRequest {
        messages: entries,
        system,
        metadata,
        ..
    } = request;
    let mut messages: Vec<Message> = Vec::new();
    let mut pending_system: Vec<String> = Vec::new();
    for (index, InMessage { role, content }) in entries.into_iter().enumerate() {
        let at = format!("messages[{index}].content");
        match role {
            Role::System => {
                // Context for the model, not the user's words: marked the way Claude Code marks
                // its own context, and placed before the turn's own prompt.
                let text = format!(
                    "<system-reminder>\n{}\n</system-reminder>",
                    texts(content, &at)?
                );
                match messages.last_mut() {
                    Some(Message::User { content }) => {
                        let at = content
                            .iter()
                            .rposition(|block| matches!(block, UserContent::Text { .. }))
                            .unwrap_or(content.len());
                        content.insert(at, UserContent::Text { text });
                    }
                    Some(Message::ToolResult(result)) => {
                        result.content.push(ToolResultContent::Text { text });
                    }
                    _ => pending_system.push(text),
                }
            }
            Role::User => user_entry(&mut messages, &mut pending_system, content, &at)?,
            Role::Assistant => {
                let content = assistant_entry(content, &at, key)?;
                match messages.last_mut() {
                    Some(Message::Assistant { content: before }) => before.extend(content),
                    _ => messages.push(Message::Assistant { content }),
                }
            }
        }
    }
    if !pending_system.is_empty() {
        return Err(bad("the request has no user message"));
    }
    if !matches!(
        messages.last(),
        Some(Message::User { .. } | Message::ToolResult(_))
    ) {
        return Err(
            bad("the last message must be a user message (or tool results)").with_param("messages"),
        );
    }
    let compaction = is_compaction(&messages);
    let system = match system {
        Some(content) => texts(content, "system")?,
        None => String::new(),
    };
    let mut conversation = Conversation::new(system);
    conversation.messages = messages;
    conversation.tools = tools;
    let hint = metadata.and_then(|m| m.user_id).map(|user| {
        // Claude Code: a JSON object whose `session_id` names the session.
        serde_json::from_str::<Value>(&user)
            .ok()
            .and_then(|v| v.get("session_id")?.as_str().map(str::to_owned))
            .unwrap_or(user)
    });
    Ok(Translated {
        conversation,
        hint,
        compaction,
    })
}

fn assistant_entry(
    content: Content,
    at: &str,
    key: &ThinkingKey,
) -> Result<Vec<AssistantContent>, ApiError> {
    let mut out = Vec::new();
    for (i, part) in content.0.into_iter().enumerate() {
        let here = format!("{at}[{i}]");
        match part {
            Part::Text(run) => out.push(AssistantContent::Text {
                text: run.concatenated(),
            }),
            Part::ToolUse { id, name, input } => {
                let input = input.map_or_else(|| json!({}), |input| input.build());
                out.push(AssistantContent::ToolCall(ToolCall::new(id, name, input)));
            }
            Part::Thinking {
                thinking,
                signature,
            } => {
                if !key.verify(&thinking, &signature) {
                    return Err(bad(format!(
                        "{here}: this thinking block's signature does not verify; send thinking \
                         blocks back exactly as this gateway sent them"
                    ))
                    .with_param(here));
                }
                out.push(AssistantContent::Thinking {
                    text: thinking,
                    signature: Some(signature),
                });
            }
            Part::RedactedThinking => {
                return Err(bad(format!(
                    "{here}: redacted_thinking blocks come from another provider; this gateway \
                     cannot verify them"
                )));
            }
            Part::Refused { index, kind, why } => return Err(refused(at, index, &kind, &why)),
            Part::Image(_) | Part::ToolResult { .. } => {
                return Err(bad(format!("{here}: not allowed in an assistant message")));
            }
        }
    }
    Ok(out)
}

/// A user entry: text and images join a user message; tool results become results (text
/// blocks beside them join the last result, so the turn still ends with the results).
fn user_entry(
    messages: &mut Vec<Message>,
    pending_system: &mut Vec<String>,
    content: Content,
    at: &str,
) -> Result<(), ApiError> {
    let mut user: Vec<UserContent> = pending_system
        .drain(..)
        .map(|text| UserContent::Text { text })
        .collect();
    let mut results: Vec<ToolResult> = Vec::new();
    for (i, part) in content.0.into_iter().enumerate() {
        let here = format!("{at}[{i}]");
        match part {
            Part::Text(run) => {
                let text = run.newline_joined();
                match results.last_mut() {
                    Some(result) => result.content.push(ToolResultContent::Text { text }),
                    None => user.push(UserContent::Text { text }),
                }
            }
            Part::Image(image) => match results.last_mut() {
                Some(result) => result.content.push(ToolResultContent::Image(image)),
                None => user.push(UserContent::Image(image)),
            },
            Part::ToolResult {
                tool_use_id,
                content,
                is_error,
            } => {
                let name = called(messages, &tool_use_id).ok_or_else(|| {
                    bad(format!(
                        "{here}: tool_result for {tool_use_id}, which no earlier tool_use made"
                    ))
                })?;
                let mut result = ToolResult::text(tool_use_id, name, "", is_error);
                result.content = Vec::new();
                let inner_at = format!("{here}.content");
                for (j, inner) in content.0.into_iter().enumerate() {
                    match inner {
                        Part::Text(run) => result.content.push(ToolResultContent::Text {
                            text: run.newline_joined(),
                        }),
                        Part::Image(image) => result.content.push(ToolResultContent::Image(image)),
                        Part::Refused { index, kind, why } => {
                            return Err(refused(&inner_at, index, &kind, &why));
                        }
                        _ => return Err(bad(format!("{inner_at}[{j}]: text and image only"))),
                    }
                }
                results.push(result);
            }
            Part::Refused { index, kind, why } => return Err(refused(at, index, &kind, &why)),
            _ => return Err(bad(format!("{here}: not allowed in a user message"))),
        }
    }
    if !results.is_empty() {
        if !user.is_empty() {
            // Text before the results (rare): keep it, in front of the first result.
            let first = &mut results[0].content;
            let mut lead: Vec<ToolResultContent> = user
                .into_iter()
                .filter_map(|block| match block {
                    UserContent::Image(image) => Some(ToolResultContent::Image(image)),
                    UserContent::Text { text } => Some(ToolResultContent::Text { text }),
                    _ => None,
                })
                .collect();
            lead.append(first);
            *first = lead;
        }
        messages.extend(results.into_iter().map(Message::ToolResult));
        return Ok(());
    }
    match messages.last_mut() {
        Some(Message::User { content }) => content.extend(user),
        _ => messages.push(Message::User { content: user }),
    }
    Ok(())
}

/// The tool name of call `id` in the transcript so far.
fn called(messages: &[Message], id: &str) -> Option<String> {
    messages.iter().rev().find_map(|m| match m {
        Message::Assistant { content } => content.iter().find_map(|block| match block {
            AssistantContent::ToolCall(call) if call.id == id => Some(call.name.clone()),
            _ => None,
        }),
        _ => None,
    })
}

/// Claude Code's compaction asks, in the last user turn, for a detailed summary of the
/// conversation so far.
fn is_compaction(messages: &[Message]) -> bool {
    let Some(Message::User { content }) = messages.last() else {
        return false;
    };
    content.iter().any(|block| match block {
        UserContent::Text { text } => text
            .to_ascii_lowercase()
            .contains("summary of the conversation"),
        _ => false,
    })
}

/// Server-run tool types: the model cannot use them through Cursor.
const SERVER_TOOLS: [&str; 6] = [
    "web_search",
    "web_fetch",
    "code_execution",
    "computer",
    "bash_",
    "text_editor",
];

/// The client tools offered, narrowed by `tool_choice`. A server tool is a 400 naming it.
fn tools(request: &MessagesRequest) -> Result<Vec<Tool>, ApiError> {
    let mut tools = Vec::new();
    for (index, tool) in request.tools.iter().flatten().enumerate() {
        let kind = tool.kind.as_deref().unwrap_or("custom");
        if kind != "custom" {
            let server = SERVER_TOOLS.iter().any(|s| kind.starts_with(s));
            return Err(bad(format!(
                "tools[{index}]: {kind} is {}; Cursor can only call tools the client runs (custom tools with an input_schema)",
                if server { "a tool Anthropic's servers run" } else { "not a custom tool" }
            ))
            .with_param(format!("tools[{index}]")));
        }
        let name = tool
            .name
            .as_deref()
            .ok_or_else(|| bad(format!("tools[{index}]: a tool needs a name")))?;
        tools.push(Tool::new(
            name,
            tool.description.clone().unwrap_or_default(),
            tool.input_schema.as_ref().map_or_else(
                || json!({"type": "object", "properties": {}}),
                |schema| schema.build(),
            ),
        ));
    }
    Ok(match &request.tool_choice {
        None => tools,
        Some(choice) => match choice.kind {
            ToolChoiceKind::Auto | ToolChoiceKind::Any => tools,
            ToolChoiceKind::None => Vec::new(),
            ToolChoiceKind::Tool => {
                let name = choice.name.as_deref().unwrap_or_default();
                let named: Vec<Tool> = tools.into_iter().filter(|t| t.name == name).collect();
                if named.is_empty() {
                    return Err(bad(format!(
                        "tool_choice names {name}, which tools does not list"
                    ))
                    .with_param("tool_choice"));
                }
                named
            }
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::secret::StateSecret;

    fn key() -> ThinkingKey {
        ThinkingKey::new(StateSecret::fixed([3; 32]))
    }

    fn translate_json(value: Value) -> Result<Translated, ApiError> {
        let request = super::super::wire::parse(value.to_string().as_bytes())
            .map_err(|e| bad(e.to_string()))?;
        translate(request, &key(), false)
    }

    #[test]
    fn claude_code_shaped_requests_keep_their_turns_in_place() {
        let translated = translate_json(json!({
            "model": "claude-cursor-composer-2.5", "max_tokens": 32000,
            "system": [{"type": "text", "text": "billing"}, {"type": "text", "text": "You are Claude Code."}],
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "<system-reminder>r</system-reminder>"}, {"type": "text", "text": "say hi"}]},
                {"role": "system", "content": [{"type": "text", "text": "# Environment"}]}
            ],
            "metadata": {"user_id": "{\"device_id\":\"d\",\"session_id\":\"s-1\"}"},
            "thinking": {"type": "adaptive"}, "output_config": {"effort": "high"},
            "context_management": {"edits": []}
        }))
        .unwrap();
        let conversation = translated.conversation;
        assert_eq!(conversation.system_prompt, "billing\nYou are Claude Code.");
        assert_eq!(
            conversation.messages.len(),
            1,
            "the system entry joined the user turn"
        );
        let Message::User { content } = &conversation.messages[0] else {
            panic!()
        };
        // The context first, then the turn's text blocks, joined as Cursor joins them.
        assert_eq!(
            content,
            &vec![
                UserContent::Text {
                    text: "<system-reminder>\n# Environment\n</system-reminder>".into()
                },
                UserContent::Text {
                    text: "<system-reminder>r</system-reminder>\nsay hi".into()
                },
            ]
        );
        assert_eq!(translated.hint.as_deref(), Some("s-1"));
        assert!(!translated.compaction);
    }

    #[test]
    fn a_tool_round_with_text_beside_the_results_ends_with_the_results() {
        let translated = translate_json(json!({
            "model": "m", "max_tokens": 10,
            "messages": [
                {"role": "user", "content": "list files"},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "Listing."},
                    {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}},
                    {"type": "tool_use", "id": "t2", "name": "Bash", "input": {"command": "pwd"}}
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "t1", "content": "a.txt"},
                    {"type": "tool_result", "tool_use_id": "t2", "content": [{"type": "text", "text": "/w"}], "is_error": true},
                    {"type": "text", "text": "<system-reminder>x</system-reminder>"}
                ]}
            ]
        }))
        .unwrap();
        let messages = translated.conversation.messages;
        assert_eq!(messages.len(), 4);
        let Message::Assistant { content } = &messages[1] else {
            panic!()
        };
        assert_eq!(
            content[1],
            AssistantContent::ToolCall(ToolCall::new("t1", "Bash", json!({"command": "ls"})))
        );
        let Message::ToolResult(last) = &messages[3] else {
            panic!("{messages:?}")
        };
        assert_eq!(last.tool_call_id, "t2");
        assert!(last.is_error);
        assert_eq!(last.content.len(), 2);
    }

    #[test]
    fn thinking_must_carry_this_gateways_signature() {
        let thinking = |signature: &str| {
            json!({"model": "m", "max_tokens": 10, "messages": [
                {"role": "user", "content": "q"},
                {"role": "assistant", "content": [
                    {"type": "thinking", "thinking": "hmm", "signature": signature},
                    {"type": "text", "text": "a"}
                ]},
                {"role": "user", "content": "more"}
            ]})
        };
        assert!(translate_json(thinking(&key().sign("hmm"))).is_ok());
        let error = translate_json(thinking(&key().sign("hmm!"))).unwrap_err();
        assert_eq!(error.status, 400);
        assert!(
            error.message.contains("signature does not verify"),
            "{}",
            error.message
        );
    }

    #[test]
    fn bad_input_is_a_400_that_names_the_problem() {
        let cases = [
            (
                json!({"model": "m", "messages": [{"role": "user", "content": "x"}]}),
                "max_tokens",
            ),
            (
                json!({"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": "x"}],
                "tools": [{"type": "web_search_20250305", "name": "web_search"}]}),
                "web_search_20250305",
            ),
            (
                json!({"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": [
                {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}}]}]}),
                "fetches nothing",
            ),
            (
                json!({"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": [
                {"type": "document", "source": {}}]}]}),
                "messages[0].content[0]: a document block",
            ),
            (
                json!({"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "ghost", "content": "r"}]}]}),
                "ghost",
            ),
            (
                json!({"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": "x"}],
                "tool_choice": {"type": "tool", "name": "nope"}}),
                "nope",
            ),
            (
                json!({"model": "m", "max_tokens": 1, "messages": [{"role": "narrator", "content": "x"}]}),
                "narrator",
            ),
        ];
        for (body, needle) in cases {
            let error = translate_json(body.clone()).unwrap_err();
            assert_eq!(error.status, 400, "{body}");
            assert!(
                error.message.contains(needle),
                "{needle} not in {}",
                error.message
            );
        }
    }

    #[test]
    fn a_summary_request_is_recognised_as_compaction() {
        let translated = translate_json(json!({"model": "m", "max_tokens": 1, "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "hello"},
            {"role": "user", "content": "Your task is to create a detailed summary of the conversation so far."}
        ]}))
        .unwrap();
        assert!(translated.compaction);
    }
}
