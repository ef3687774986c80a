//! The MCP bridge (PROTOCOL-AGENT §2.2, §8): host tools out as `McpToolDefinition`s, `mcp_args`
//! in as host tool calls, host results back as `mcp_result.success`.

use cursor_proto::agent::v1::{
    self as wire, McpArgs, McpResult, McpToolDefinition, mcp_result,
    mcp_tool_result_content_item::Content,
};
use cursor_proto::ir::{ImageFormat, Tool, ToolCall, ToolResult, ToolResultContent};

use crate::json_value;
use crate::{HostProfile, Limits};

/// The host's tools as the run request's MCP catalog. Each schema rides twice: as a protobuf
/// `Value` and as JSON text, the newer servers' alternative (docs/PROTOCOL-AGENT.md §12.1).
pub(crate) fn definitions(tools: &[Tool], provider: &str) -> Vec<McpToolDefinition> {
    tools
        .iter()
        .map(|tool| McpToolDefinition {
            name: tool.name.clone(),
            description: tool.description.clone(),
            input_schema: Some(json_value::to_proto(&tool.parameters)),
            provider_identifier: provider.to_owned(),
            tool_name: tool.name.clone(),
            input_schema_json: tool.parameters.to_string(),
        })
        .collect()
}

/// The answer to `mcp_state_exec_args` (docs/PROTOCOL-AGENT.md §5.5): one server, the host's
/// projection, listing exactly the tools the run advertised. `server_identifiers` narrows the
/// answer to the servers named (none named means all); `kick_only` asks only for a refresh, which a
/// host projection has nothing to do for, so it is acknowledged with no servers. Also returns how
/// many servers and tools the answer lists, for the audit record.
pub(crate) fn state(
    args: &wire::McpStateExecArgs,
    profile: &HostProfile,
    advertised: &[McpToolDefinition],
) -> (wire::McpStateExecResult, usize, usize) {
    let ours = &profile.provider_identifier;
    let named = args.server_identifiers.is_empty() || args.server_identifiers.contains(ours);
    let servers: Vec<wire::McpStateServer> = (named && !args.kick_only)
        .then(|| wire::McpStateServer {
            server_name: profile.display_name.clone(),
            server_identifier: ours.clone(),
            tools: advertised.to_vec(),
        })
        .into_iter()
        .collect();
    let tools = servers.iter().map(|s| s.tools.len()).sum();
    let count = servers.len();
    let result = wire::McpStateExecResult {
        result: Some(wire::mcp_state_exec_result::Result::Success(
            wire::McpStateSuccess { servers },
        )),
    };
    (result, count, tools)
}

/// The name an `mcp_args` calls: `tool_name`, or `name` when that is empty.
pub(crate) fn raw_name(args: &McpArgs) -> &str {
    if args.tool_name.is_empty() {
        &args.name
    } else {
        &args.tool_name
    }
}

/// The advertised tool `raw` names. Live servers call a tool of provider `p` as advertised
/// (`bash`), as `mcp_<p>_bash` or as `<p>-bash` (PROTOCOL-AGENT §13.1): an exact match wins, then the one advertised tool a prefix form leaves. `None`
/// when nothing matches, or (defensively: no provider id makes both forms fit one name) when
/// the forms name different tools.
pub(crate) fn resolve<'a>(
    raw: &'a str,
    provider: &str,
    advertised: impl Fn(&str) -> bool,
) -> Option<&'a str> {
    if advertised(raw) {
        return Some(raw);
    }
    let mut found = stripped(raw, provider).filter(|name| advertised(name));
    let first = found.next()?;
    found.all(|other| other == first).then_some(first)
}

/// `raw` without each provider prefix form it starts with (`mcp_<p>_`, `<p>-`).
fn stripped<'a>(raw: &'a str, provider: &str) -> impl Iterator<Item = &'a str> {
    let mcp = format!("mcp_{provider}_");
    let dash = format!("{provider}-");
    [mcp, dash]
        .into_iter()
        .filter_map(move |prefix| raw.strip_prefix(prefix.as_str()))
        .filter(|name| !name.is_empty())
}

/// The name to report for a call nothing resolves: `raw` without a provider prefix form.
pub(crate) fn unresolved_name<'a>(raw: &'a str, provider: &str) -> &'a str {
    stripped(raw, provider).next().unwrap_or(raw)
}

/// True when the call names another MCP provider than ours (an empty provider is ours).
pub(crate) fn foreign_provider(args: &McpArgs, provider: &str) -> bool {
    !args.provider_identifier.is_empty() && args.provider_identifier != provider
}

/// The host tool call for an admitted `mcp_args`; `fallback_id` stands in for an empty call id.
pub(crate) fn tool_call(args: &McpArgs, name: &str, fallback_id: String) -> ToolCall {
    let arguments: serde_json::Map<String, serde_json::Value> = args
        .args
        .iter()
        .map(|(key, value)| (key.clone(), json_value::to_json(value)))
        .collect();
    let id = if args.tool_call_id.is_empty() {
        fallback_id
    } else {
        args.tool_call_id.clone()
    };
    ToolCall::new(id, name, serde_json::Value::Object(arguments))
}

/// `mcp_result.tool_not_found` for a tool neither the catalog nor the live registry has.
pub(crate) fn not_found(name: &str, available_tools: Vec<String>) -> McpResult {
    McpResult {
        result: Some(mcp_result::Result::ToolNotFound(wire::McpToolNotFound {
            name: name.to_owned(),
            available_tools,
        })),
    }
}

/// `mcp_result.success` for a host result: one text item first (always, even if empty), then
/// the images. Text is capped in UTF-8 bytes with a marker; an image Cursor cannot take is
/// replaced by a note rather than dropped silently. The images together hold at most
/// [`Limits::max_image_len`](crate::Limits::max_image_len) bytes, so the reply fits one frame
/// beside its text: those past it, in order, are left out and counted in one note.
pub(crate) fn success(result: &ToolResult, limits: &Limits, host: &str) -> McpResult {
    let mut notes = Vec::new();
    let mut images = Vec::new();
    let mut image_bytes = 0_usize;
    let (mut seen, mut over, mut over_bytes) = (0_usize, 0_usize, 0_usize);
    for block in &result.content {
        if let ToolResultContent::Image(image) = block {
            seen += 1;
            let len = image.data.len();
            if ImageFormat::from_mime(&image.mime_type).is_none() {
                notes.push(format!(
                    "[{host}: omitted an image of unsupported type {}]",
                    image.mime_type
                ));
            } else if len > limits.max_image_len {
                notes.push(format!(
                    "[{host}: omitted an image of {len} bytes (over the cap)]"
                ));
            } else if image_bytes.saturating_add(len) > limits.max_image_len {
                over += 1;
                over_bytes = over_bytes.saturating_add(len);
            } else {
                image_bytes += len;
                images.push(wire::McpToolResultContentItem {
                    content: Some(Content::Image(wire::McpImageContent {
                        data: image.data.clone(),
                        mime_type: image.mime_type.clone(),
                    })),
                });
            }
        }
    }
    if over > 0 {
        notes.push(format!(
            "[{host}: omitted {over} of {seen} images ({over_bytes} bytes): one tool result carries at most {} bytes of images]",
            limits.max_image_len
        ));
    }
    let mut text = cap_bytes(&result.joined_text(), limits.max_tool_result_bytes, host);
    for note in notes {
        text.push('\n');
        text.push_str(&note);
    }
    let mut content = vec![wire::McpToolResultContentItem {
        content: Some(Content::Text(wire::McpTextContent { text })),
    }];
    content.extend(images);
    McpResult {
        result: Some(mcp_result::Result::Success(wire::McpSuccess {
            content,
            is_error: result.is_error,
        })),
    }
}

/// The result for a pending call the host returned nothing for.
pub(crate) fn missing_result(host: &str) -> McpResult {
    McpResult {
        result: Some(mcp_result::Result::Success(wire::McpSuccess {
            content: vec![wire::McpToolResultContentItem {
                content: Some(Content::Text(wire::McpTextContent {
                    text: format!("{host} returned no result for this tool call."),
                })),
            }],
            is_error: true,
        })),
    }
}

/// The one rule every tool result sent back obeys, MCP or translated: at most
/// [`Limits::max_tool_result_bytes`](crate::Limits::max_tool_result_bytes) bytes of text, cut
/// at a character boundary, with a marker saying what was cut.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TextCap<'a> {
    bytes: usize,
    host: &'a str,
}

impl<'a> TextCap<'a> {
    pub(crate) fn of(config: &'a crate::RunConfig) -> Self {
        Self {
            bytes: config.limits.max_tool_result_bytes,
            host: &config.profile.display_name,
        }
    }

    pub(crate) fn apply(&self, text: &str) -> String {
        cap_bytes(text, self.bytes, self.host)
    }
}

/// `text` cut to at most `cap` UTF-8 bytes at a character boundary, with a marker.
pub(crate) fn cap_bytes(text: &str, cap: usize, host: &str) -> String {
    if text.len() <= cap {
        return text.to_owned();
    }
    let mut end = cap;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}\n[{host}: tool output truncated, showing {end} of {} bytes]",
        &text[..end],
        text.len()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use cursor_proto::ir::Image;
    use prost_types::{Value, value::Kind};
    use serde_json::json;

    #[test]
    fn each_naming_form_resolves_to_the_advertised_tool_and_args_decode() {
        let tools = ["bash", "read"];
        let advertised = |name: &str| tools.contains(&name);
        for raw in ["bash", "mcp_acme_bash", "acme-bash"] {
            assert_eq!(resolve(raw, "acme", advertised), Some("bash"), "{raw}");
        }
        for raw in ["mcp_other_bash", "other-bash", "acme-", "mcp_acme_", "nope"] {
            assert_eq!(resolve(raw, "acme", advertised), None, "{raw}");
        }
        assert_eq!(unresolved_name("acme-nope", "acme"), "nope");
        assert_eq!(unresolved_name("nope", "acme"), "nope");

        let mut args = McpArgs {
            name: "mcp_host_bash".into(),
            tool_call_id: "call-1".into(),
            provider_identifier: "acme".into(),
            ..McpArgs::default()
        };
        args.args.insert(
            "command".into(),
            Value {
                kind: Some(Kind::StringValue("ls".into())),
            },
        );
        args.args.insert(
            "timeout".into(),
            Value {
                kind: Some(Kind::NumberValue(5.0)),
            },
        );
        let name = resolve(raw_name(&args), "host", advertised).unwrap();
        assert_eq!(name, "bash");
        let call = tool_call(&args, name, "fallback".into());
        assert_eq!(
            call,
            ToolCall::new("call-1", "bash", json!({"command": "ls", "timeout": 5}))
        );
        assert!(!foreign_provider(&args, "acme"));
    }

    #[test]
    fn an_exact_name_wins_over_a_prefix_form() {
        let tools = ["acme-bash", "bash"];
        let advertised = |name: &str| tools.contains(&name);
        assert_eq!(resolve("acme-bash", "acme", advertised), Some("acme-bash"));
        assert_eq!(
            resolve("mcp_acme_acme-bash", "acme", advertised),
            Some("acme-bash")
        );
    }

    #[test]
    fn empty_call_id_gets_the_fallback() {
        let args = McpArgs {
            tool_name: "read".into(),
            ..McpArgs::default()
        };
        assert_eq!(tool_call(&args, "read", "exec-7".into()).id, "exec-7");
    }

    #[test]
    fn success_puts_text_first_then_images_and_notes_unsupported_ones() {
        let mut result = ToolResult::text("c", "shot", "done", false);
        result.content.push(ToolResultContent::Image(Image::new(
            "image/png",
            vec![1, 2],
        )));
        result
            .content
            .push(ToolResultContent::Image(Image::new("image/tiff", vec![3])));
        let encoded = success(&result, &Limits::default(), "acme");
        let Some(mcp_result::Result::Success(success)) = encoded.result else {
            panic!()
        };
        assert_eq!(success.content.len(), 2);
        assert_eq!(
            success.content[0].content,
            Some(Content::Text(wire::McpTextContent {
                text: "done\n[acme: omitted an image of unsupported type image/tiff]".into()
            }))
        );
        assert!(matches!(&success.content[1].content, Some(Content::Image(i)) if i.data == [1, 2]));
    }

    #[test]
    fn images_past_the_per_result_total_are_left_out_with_a_marker_and_the_reply_fits_a_frame() {
        // Each image is under the per-image cap; together they are over the frame limit.
        let limits = Limits::default();
        let each = limits.max_image_len - 1024;
        let mut result = ToolResult::text("c", "shot", "two shots", false);
        for byte in [1, 2, 3] {
            result.content.push(ToolResultContent::Image(Image::new(
                "image/png",
                vec![byte; each],
            )));
        }
        let encoded = success(&result, &limits, "acme");
        let frame = cursor_transport::envelope::DEFAULT_MAX_MESSAGE_SIZE;
        assert!(prost::Message::encoded_len(&encoded) + crate::FRAME_OVERHEAD <= frame);
        let Some(mcp_result::Result::Success(success)) = encoded.result else {
            panic!()
        };
        assert_eq!(success.content.len(), 2, "the text and the first image");
        assert!(matches!(&success.content[1].content, Some(Content::Image(i)) if i.data[0] == 1));
        let Some(Content::Text(text)) = &success.content[0].content else {
            panic!()
        };
        let total = limits.max_image_len;
        assert_eq!(
            text.text,
            format!(
                "two shots\n[acme: omitted 2 of 3 images ({} bytes): one tool result carries at most {total} bytes of images]",
                2 * each
            )
        );
    }

    #[test]
    fn tool_output_is_capped_in_bytes_at_a_char_boundary() {
        let capped = cap_bytes("ééé", 3, "acme");
        assert_eq!(
            capped,
            "é\n[acme: tool output truncated, showing 2 of 6 bytes]"
        );
    }
}
