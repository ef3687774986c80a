//! The run request that opens a turn (PROTOCOL-AGENT §2.1, §3).

use cursor_proto::agent::v1::{
    AgentMode, AgentRunRequest, ConversationAction, ConversationStateStructure, McpToolDefinition,
    McpTools, RequestedModel, SelectedContext, SelectedImage, UserMessage, UserMessageAction,
    conversation_action::Action,
};
use cursor_proto::checkpoint::ResumeOverlay;
use cursor_proto::ir::{Conversation, Image, Message, UserContent};
use cursor_proto::selected_context_blob::SelectedContextBlob;
use prost::Message as _;

use crate::blobs::BlobStore;
use crate::ids::IdSource;
use crate::root_prompt::{self, joined_user_text};
use crate::{AgentError, RunConfig, mcp};

/// The checkpoint and options a resumed Run opens with.
#[derive(Clone, Debug)]
pub(crate) struct ResumeSeed {
    checkpoint: Vec<u8>,
    pub(crate) send_mcp_tools: bool,
}

impl ResumeSeed {
    pub(crate) fn new(checkpoint: Vec<u8>, send_mcp_tools: bool) -> Self {
        Self {
            checkpoint,
            send_mcp_tools,
        }
    }

    /// The stored checkpoint the Run resumes from, as it was received.
    #[cfg(test)]
    pub(crate) fn checkpoint(&self) -> &[u8] {
        &self.checkpoint
    }

    /// The checkpoint with the current rules appended to the root prompt and the workspace and
    /// host name replaced, every other field kept byte for byte.
    pub(crate) fn overlay(
        &self,
        rules_ids: &[Vec<u8>],
        config: &RunConfig,
    ) -> Result<Vec<u8>, AgentError> {
        ResumeOverlay {
            appended_root_prompt_ids: rules_ids,
            workspace_uris: &config.workspace_uris,
            client_name: &config.profile.host_name,
        }
        .apply(&self.checkpoint)
        .map_err(|e| AgentError::UnusableCheckpoint(e.to_string()))
    }
}

/// What the Run asks: the trailing user message, or (after a stale resume whose turn already
/// ran tools) to continue from the tool results that end the transcript.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Turn<'a> {
    Ask(&'a [UserContent]),
    Continue,
}

impl<'a> Turn<'a> {
    pub(crate) fn of(conversation: &'a Conversation) -> Result<Self, AgentError> {
        match conversation.messages.last() {
            Some(Message::User { content }) => Ok(Self::Ask(content)),
            Some(Message::ToolResult(_))
                if conversation
                    .messages
                    .iter()
                    .any(|m| matches!(m, Message::User { .. })) =>
            {
                Ok(Self::Continue)
            }
            _ => Err(AgentError::NoUserTurn),
        }
    }
}

/// Everything opening a Run produces besides the blobs it stored.
#[derive(Debug)]
pub(crate) struct Opening {
    pub(crate) request: AgentRunRequest,
    pub(crate) rules_text: String,
    pub(crate) definitions: Vec<McpToolDefinition>,
    /// On resume: the overlaid checkpoint, the exact `conversation_state` bytes to send.
    pub(crate) raw_state: Option<Vec<u8>>,
}

/// Builds the run request, storing the root prompt and selected-context blobs in `blobs`.
///
/// Never sets `custom_system_prompt`, `model_details`, or model parameters: the slug already
/// encodes the variant, and the system prompt rides in the root prompt's `<rules>`.
pub(crate) fn build(
    conversation: &Conversation,
    config: &RunConfig,
    conversation_id: &str,
    ids: &mut IdSource,
    blobs: &mut BlobStore,
    seed: Option<&ResumeSeed>,
) -> Result<Opening, AgentError> {
    if config.model.trim().is_empty() {
        return Err(AgentError::Config("no model slug".into()));
    }
    let turn = Turn::of(conversation)?;
    let selected_images = match turn {
        Turn::Ask(content) => live_images(content, config)?,
        Turn::Continue => Vec::new(),
    };
    // A resume keeps the remote prompt and only adds the current rules: no history replay.
    let history = match (seed, turn) {
        (Some(_), Turn::Ask(_)) => &[],
        (Some(_), Turn::Continue) => {
            return Err(AgentError::Internal(
                "a turn that continues after tool results cannot resume: rebuild it".into(),
            ));
        }
        (None, Turn::Ask(_)) => root_prompt::history_of(&conversation.messages),
        // The tool calls and results of the turn so far ride in the root prompt.
        (None, Turn::Continue) => conversation.messages.as_slice(),
    };
    let prompt = root_prompt::messages(conversation, history, config);
    let mut root_ids = Vec::with_capacity(prompt.len());
    for message in &prompt {
        let bytes = serde_json::to_vec(message)
            .map_err(|e| AgentError::Internal(format!("root prompt is not serializable: {e}")))?;
        root_ids.push(blobs.insert(bytes)?.as_bytes().to_vec());
    }
    let (state, raw_state) = match seed {
        Some(seed) => {
            let raw = seed.overlay(&root_ids, config)?;
            let view = ConversationStateStructure::decode(raw.as_slice())
                .map_err(|e| AgentError::UnusableCheckpoint(e.to_string()))?;
            (view, Some(raw))
        }
        None => (
            ConversationStateStructure {
                root_prompt_messages_json: root_ids.clone(),
                previous_workspace_uris: config.workspace_uris.clone(),
                mode: Some(AgentMode::Agent as i32),
                client_name: Some(config.profile.host_name.clone()),
                ..ConversationStateStructure::default()
            },
            None,
        ),
    };
    let context_blob = SelectedContextBlob::new(
        state.root_prompt_messages_json.clone(),
        config.profile.host_name.clone(),
    )
    .encode();
    let context_blob_id = blobs.insert(context_blob)?;

    let message_id = ids.next_uuid();
    let text = match turn {
        Turn::Ask(content) => joined_user_text(content),
        Turn::Continue => config.profile.continuation_prompt.clone(),
    };
    let user_message = UserMessage {
        text,
        message_id: message_id.clone(),
        selected_context: (!selected_images.is_empty())
            .then_some(SelectedContext { selected_images }),
        mode: AgentMode::Agent as i32,
        selected_context_blob: context_blob_id.as_bytes().to_vec(),
        correlation_id: message_id,
    };
    let definitions = mcp::definitions(&conversation.tools, &config.profile.provider_identifier);
    let request = AgentRunRequest {
        conversation_state: Some(state),
        action: Some(ConversationAction {
            action: Some(Action::UserMessageAction(UserMessageAction {
                user_message: Some(user_message),
                request_context: None,
            })),
        }),
        // The server keeps the registration across resumes; re-sent only when it changed.
        mcp_tools: seed
            .is_none_or(|seed| seed.send_mcp_tools)
            .then(|| McpTools {
                mcp_tools: definitions.clone(),
            }),
        conversation_id: Some(conversation_id.to_owned()),
        requested_model: Some(RequestedModel {
            model_id: config.model.clone(),
            max_mode: config.max_mode,
            parameters: Vec::new(),
        }),
        client_supports_inline_images: Some(true),
        ..AgentRunRequest::default()
    };
    let rules_text = root_prompt::rules_text(conversation, &config.profile);
    Ok(Opening {
        request,
        rules_text,
        definitions,
        raw_state,
    })
}

/// The current turn's images as raw bytes; unsupported types and oversize images fail closed.
/// Each image's id and path derive from its bytes (§13.5): the server keys what it saw by id,
/// and the same image under a new id is `Image not found` and poisons the conversation. The
/// same image twice in one turn is attached once.
fn live_images(
    content: &[UserContent],
    config: &RunConfig,
) -> Result<Vec<SelectedImage>, AgentError> {
    let images: Vec<&Image> = content
        .iter()
        .filter_map(|block| match block {
            UserContent::Image(image) => Some(image),
            _ => None,
        })
        .collect();
    let mut selected: Vec<SelectedImage> = Vec::with_capacity(images.len());
    for image in images {
        let format = image.format().ok_or_else(|| AgentError::UnsupportedImage {
            mime: image.mime_type.clone(),
        })?;
        if image.data.len() > config.limits.max_image_len {
            return Err(AgentError::ImageTooLarge {
                len: image.data.len(),
                max: config.limits.max_image_len,
            });
        }
        let uuid = image_id(format.mime(), &image.data);
        if selected.iter().any(|s| s.uuid == uuid) {
            continue;
        }
        let extension = format.mime().trim_start_matches("image/");
        selected.push(SelectedImage {
            path: format!("image-{}.{extension}", &uuid[..8]),
            uuid,
            mime_type: format.mime().to_owned(),
            data: image.data.clone(),
        });
    }
    Ok(selected)
}

/// The id of an image: a UUID from the SHA-256 of its type and bytes, so the same image has the
/// same id in every turn and every process.
pub(crate) fn image_id(mime: &str, data: &[u8]) -> String {
    crate::ids::hashed_uuid(&[b"cursor-agent image\0", mime.as_bytes(), &[0], data])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_ids_come_from_the_bytes_and_repeats_in_a_turn_attach_once() {
        let config = RunConfig::new("m", "file:///w", crate::IdSeed::fixed([1; 16]));
        let png = Image::new("image/png", vec![1, 2, 3]);
        let content = vec![
            UserContent::Image(png.clone()),
            UserContent::Image(Image::new("image/png", vec![4])),
            UserContent::Image(png),
        ];
        let first = live_images(&content, &config).unwrap();
        assert_eq!(first.len(), 2);
        assert_eq!(first, live_images(&content, &config).unwrap());
        assert_eq!(first[0].uuid, image_id("image/png", &[1, 2, 3]));
        assert_ne!(first[0].uuid, first[1].uuid);
        assert_eq!(first[0].path, format!("image-{}.png", &first[0].uuid[..8]));
        assert_ne!(image_id("image/png", &[1]), image_id("image/gif", &[1]));
    }
}
