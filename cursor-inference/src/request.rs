//! Request assembly: an [`ir::Conversation`](Conversation) as the frames that open a run and
//! invoke the model once.

use base64::Engine as _;
use cursor_proto::aiserver::v1::{
    InferenceAgentTool, InferenceContentPart, InferenceContentParts, InferenceCoreMessage,
    InferenceImagePart, InferenceMessageRole, InferenceModelConfig, InferenceReasoningPart,
    InferenceRequestedModel, InferenceStreamRequest, InferenceTextPart, InferenceToolCall,
    InferenceToolResultContent, InferenceToolResultPart, RunInferenceClientMessage,
    RunInferenceInvokeModel, RunInferenceRoutingMessage, RunInferenceRunRequest,
    inference_content_part::Part, inference_core_message::Content,
    run_inference_client_message::Message as ClientArm,
};
use cursor_proto::ir::{
    AssistantContent, Conversation, Image, ImageFormat, Message, Tool, ToolResult,
    ToolResultContent, UserContent,
};
use prost_types::Struct;
use serde_json::json;

use crate::{InferenceConfig, InferenceError, json};

/// The most image bytes (raw, before base64) one model call carries: every image of the
/// conversation goes in the one `invoke_model` frame, base64 makes them 4/3 larger, and a
/// Connect frame holds at most 16 MiB (this project's cap, not a documented server limit).
pub const MAX_IMAGE_BYTES: usize = 10 << 20;

/// Checks the conversation's images before anything is sent: each must be of a format the
/// backend takes (by MIME type, and its bytes must be that format), and together they must
/// fit [`MAX_IMAGE_BYTES`].
///
/// # Errors
///
/// [`InferenceError::UnsupportedImage`] or [`InferenceError::ImagesTooLarge`].
pub fn check_images(conversation: &Conversation) -> Result<(), InferenceError> {
    let mut total = 0_usize;
    for image in conversation.messages.iter().flat_map(images) {
        let Some(format) = image.format() else {
            return Err(InferenceError::UnsupportedImage {
                mime: image.mime_type.clone(),
                mismatch: false,
            });
        };
        if !has_magic(format, &image.data) {
            return Err(InferenceError::UnsupportedImage {
                mime: image.mime_type.clone(),
                mismatch: true,
            });
        }
        total = total.saturating_add(image.data.len());
    }
    if total > MAX_IMAGE_BYTES {
        return Err(InferenceError::ImagesTooLarge {
            len: total,
            max: MAX_IMAGE_BYTES,
        });
    }
    Ok(())
}

/// The images of one message: a user's, or a tool result's.
fn images(message: &Message) -> Vec<&Image> {
    match message {
        Message::User { content } => content
            .iter()
            .filter_map(|block| match block {
                UserContent::Image(image) => Some(image),
                _ => None,
            })
            .collect(),
        Message::ToolResult(result) => result
            .content
            .iter()
            .filter_map(|block| match block {
                ToolResultContent::Image(image) => Some(image),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// Whether `data` starts as `format`'s files do.
fn has_magic(format: ImageFormat, data: &[u8]) -> bool {
    match format {
        ImageFormat::Png => data.starts_with(b"\x89PNG\r\n\x1a\n"),
        ImageFormat::Jpeg => data.starts_with(&[0xff, 0xd8, 0xff]),
        ImageFormat::Gif => data.starts_with(b"GIF87a") || data.starts_with(b"GIF89a"),
        ImageFormat::Webp => data.len() >= 12 && &data[..4] == b"RIFF" && &data[8..12] == b"WEBP",
        ImageFormat::Bmp => data.starts_with(b"BM"),
        // A format this version does not know the signature of: the MIME type stands.
        _ => true,
    }
}

/// The routing role of a user message in `routing_conversation`.
const ROUTING_USER: i32 = 1;

/// The requested model: the slug alone, no parameters, and max mode when the config asks.
fn requested_model(config: &InferenceConfig) -> InferenceRequestedModel {
    InferenceRequestedModel {
        model_id: config.model_id.clone(),
        max_mode: config.max_mode,
        ..InferenceRequestedModel::default()
    }
}

/// The `run_request` frame that opens the run. Its routing conversation carries only the last
/// user text: enough to route, without repeating the whole history in a second frame.
pub fn run_request(
    config: &InferenceConfig,
    conversation: &Conversation,
) -> RunInferenceClientMessage {
    let last_user = conversation
        .messages
        .iter()
        .rev()
        .find_map(|message| match message {
            Message::User { content } => Some(user_text(content)),
            _ => None,
        });
    RunInferenceClientMessage {
        message: Some(ClientArm::RunRequest(RunInferenceRunRequest {
            conversation_id: config.conversation_id.clone(),
            requested_model: Some(requested_model(config)),
            routing_conversation: last_user
                .map(|text| RunInferenceRoutingMessage {
                    role: ROUTING_USER,
                    text,
                })
                .into_iter()
                .collect(),
            ..RunInferenceRunRequest::default()
        })),
    }
}

/// The `invoke_model` frame: the whole conversation as one model call.
pub fn invoke_model(
    config: &InferenceConfig,
    conversation: &Conversation,
) -> RunInferenceClientMessage {
    RunInferenceClientMessage {
        message: Some(ClientArm::InvokeModel(RunInferenceInvokeModel {
            invocation_id: config.invocation_id.clone(),
            request: Some(stream_request(config, conversation)),
        })),
    }
}

/// The model call itself.
pub fn stream_request(
    config: &InferenceConfig,
    conversation: &Conversation,
) -> InferenceStreamRequest {
    InferenceStreamRequest {
        messages: core_messages(conversation),
        tools: conversation.tools.iter().map(agent_tool).collect(),
        model_config: config.max_tokens.map(|max| InferenceModelConfig {
            max_tokens: Some(i32::try_from(max).unwrap_or(i32::MAX)),
            ..InferenceModelConfig::default()
        }),
        model_id: Some(config.model_id.clone()),
        invocation_id: Some(config.invocation_id.clone()),
        requested_model: Some(requested_model(config)),
        conversation_id: Some(config.conversation_id.clone()),
    }
}

/// The system prompt (when there is one) and every message, in order. Consecutive tool results
/// share one TOOL message, as a model sees one batch of results per tool round.
fn core_messages(conversation: &Conversation) -> Vec<InferenceCoreMessage> {
    let mut out = Vec::with_capacity(conversation.messages.len() + 1);
    if !conversation.system_prompt.is_empty() {
        out.push(text_message(
            InferenceMessageRole::System,
            conversation.system_prompt.clone(),
        ));
    }
    for message in &conversation.messages {
        match message {
            Message::User { content } => out.push(user_message(content)),
            Message::Assistant { content } => out.push(assistant_message(content)),
            Message::ToolResult(result) => {
                let part = tool_result_part(result);
                match out.last_mut() {
                    Some(InferenceCoreMessage {
                        content: Some(Content::ToolContent(batch)),
                        ..
                    }) => batch.parts.push(part),
                    _ => out.push(InferenceCoreMessage {
                        role: InferenceMessageRole::Tool as i32,
                        content: Some(Content::ToolContent(InferenceToolResultContent {
                            parts: vec![part],
                        })),
                        ..InferenceCoreMessage::default()
                    }),
                }
            }
            // `Message` may grow; a kind this version does not know is not sent.
            _ => {}
        }
    }
    out
}

fn text_message(role: InferenceMessageRole, text: String) -> InferenceCoreMessage {
    InferenceCoreMessage {
        role: role as i32,
        content: Some(Content::Text(text)),
        ..InferenceCoreMessage::default()
    }
}

fn user_text(content: &[UserContent]) -> String {
    content
        .iter()
        .filter_map(|block| match block {
            UserContent::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Text alone is sent as `text`; with images, as content parts in order.
fn user_message(content: &[UserContent]) -> InferenceCoreMessage {
    let has_images = content
        .iter()
        .any(|block| matches!(block, UserContent::Image(_)));
    if !has_images {
        return text_message(InferenceMessageRole::User, user_text(content));
    }
    let parts = content
        .iter()
        .filter_map(|block| match block {
            UserContent::Text { text } => Some(text_part(text)),
            UserContent::Image(image) => Some(image_part(image)),
            _ => None,
        })
        .collect();
    InferenceCoreMessage {
        role: InferenceMessageRole::User as i32,
        content: Some(Content::Parts(InferenceContentParts { parts })),
        ..InferenceCoreMessage::default()
    }
}

fn text_part(text: &str) -> InferenceContentPart {
    InferenceContentPart {
        part: Some(Part::Text(InferenceTextPart {
            text: text.to_owned(),
        })),
    }
}

fn image_part(image: &Image) -> InferenceContentPart {
    InferenceContentPart {
        part: Some(Part::Image(InferenceImagePart {
            data: base64::engine::general_purpose::STANDARD.encode(&image.data),
            mime_type: Some(image.mime_type.clone()),
        })),
    }
}

/// Text, reasoning (with its signature, so the provider can verify it) and tool calls.
fn assistant_message(content: &[AssistantContent]) -> InferenceCoreMessage {
    let mut text = String::new();
    let mut reasoning_parts = Vec::new();
    let mut tool_calls = Vec::new();
    for block in content {
        match block {
            AssistantContent::Text { text: more } => text.push_str(more),
            AssistantContent::Thinking {
                text: thought,
                signature,
            } => reasoning_parts.push(InferenceReasoningPart {
                text: thought.clone(),
                signature: signature.clone(),
                ..InferenceReasoningPart::default()
            }),
            AssistantContent::ToolCall(call) => tool_calls.push(InferenceToolCall {
                tool_call_id: call.id.clone(),
                tool_name: call.name.clone(),
                args: Some(json::to_struct(&call.arguments)),
                raw_tool_call_args: Some(call.arguments.to_string()),
            }),
            _ => {}
        }
    }
    InferenceCoreMessage {
        role: InferenceMessageRole::Assistant as i32,
        content: (!text.is_empty()).then_some(Content::Text(text)),
        tool_calls,
        reasoning_parts,
    }
}

/// The result's text as a string value; its images as experimental content parts.
fn tool_result_part(result: &ToolResult) -> InferenceToolResultPart {
    let images = result
        .content
        .iter()
        .filter_map(|block| match block {
            ToolResultContent::Image(image) => Some(image_part(image)),
            _ => None,
        })
        .collect();
    InferenceToolResultPart {
        tool_call_id: result.tool_call_id.clone(),
        tool_name: result.tool_name.clone(),
        result: Some(json::to_value(&json!(result.joined_text()))),
        is_error: result.is_error,
        experimental_content: images,
    }
}

/// A tool with its schema wrapped as `{"jsonSchema": schema}`.
fn agent_tool(tool: &Tool) -> InferenceAgentTool {
    InferenceAgentTool {
        name: tool.name.clone(),
        description: tool.description.clone(),
        parameters: Some(Struct {
            fields: [("jsonSchema".to_owned(), json::to_value(&tool.parameters))]
                .into_iter()
                .collect(),
        }),
    }
}
