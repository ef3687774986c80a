//! The run request (PROTOCOL-AGENT §2.1, §3): what is sent, and what is never sent.

mod common;

use std::time::Instant;

use common::{Harness, config, conversation};
use cursor_agent::{AgentError, AgentRun, BlobId};
use cursor_proto::agent::v1::{self as w, AgentClientMessage, conversation_action::Action};
use cursor_proto::ir::{Conversation, Image, Message, UserContent};
use cursor_proto::selected_context_blob::SelectedContextBlob;
use prost::Message as _;

fn user_message(request: &w::AgentRunRequest) -> &w::UserMessage {
    let Some(Action::UserMessageAction(action)) =
        request.action.as_ref().and_then(|a| a.action.as_ref())
    else {
        panic!("no user message action")
    };
    action.user_message.as_ref().unwrap()
}

#[test]
fn run_request_carries_state_model_tools_and_the_current_turn() {
    let request = Harness::run_request(config(), conversation());
    let state = request.conversation_state.as_ref().unwrap();
    assert_eq!(state.previous_workspace_uris, ["file:///work"]);
    assert_eq!(state.mode, Some(w::AgentMode::Agent as i32));
    assert_eq!(state.client_name.as_deref(), Some("pi"));
    assert!(state.turns.is_empty());
    assert_eq!(
        state.root_prompt_messages_json.len(),
        1,
        "rules only: the history is empty"
    );
    assert!(
        state
            .root_prompt_messages_json
            .iter()
            .all(|id| id.len() == 32)
    );

    let model = request.requested_model.as_ref().unwrap();
    assert_eq!(model.model_id, "composer-2.5");
    assert!(
        model.parameters.is_empty(),
        "no effort or context parameters"
    );
    assert!(!model.max_mode);
    assert_eq!(request.model_details, None);
    assert_eq!(request.custom_system_prompt, None);
    assert_eq!(request.client_supports_inline_images, Some(true));

    let tools = &request.mcp_tools.as_ref().unwrap().mcp_tools;
    assert_eq!(tools.len(), 2);
    assert_eq!(tools[0].name, "bash");
    assert_eq!(tools[0].tool_name, "bash");
    assert_eq!(tools[0].provider_identifier, "pi");
    assert_eq!(
        tools[0].input_schema,
        Some(common::proto_value(&conversation().tools[0].parameters))
    );

    let message = user_message(&request);
    assert_eq!(message.text, "ping");
    assert_eq!(message.mode, w::AgentMode::Agent as i32);
    assert_eq!(message.message_id, message.correlation_id);
    assert_eq!(message.message_id.len(), 36);
    assert_eq!(message.selected_context, None);
    assert_eq!(message.selected_context_blob.len(), 32);
}

#[test]
fn prompt_and_selected_context_blobs_are_stored_under_their_sha256() {
    let start = Instant::now();
    let conversation = conversation()
        .with_message(Message::assistant_text("earlier answer"))
        .with_message(Message::user_text("follow-up"));
    let mut run = AgentRun::new(config(), &conversation, start).unwrap();
    let Some(w::agent_client_message::Message::RunRequest(request)) =
        AgentClientMessage::decode(run.poll_transmit().unwrap().as_slice())
            .unwrap()
            .message
    else {
        panic!()
    };
    let ids = &request
        .conversation_state
        .as_ref()
        .unwrap()
        .root_prompt_messages_json;
    // rules, the first "ping", the assistant answer; "follow-up" is the current turn.
    assert_eq!(ids.len(), 3);
    for id in ids {
        let id = BlobId::from_slice(id).unwrap();
        let blob = run.blobs().get(&id).expect("prompt blob stored");
        assert_eq!(BlobId::of(blob), id);
        let json: serde_json::Value = serde_json::from_slice(blob).unwrap();
        assert!(!json.to_string().contains("follow-up"));
    }
    let context_id = BlobId::from_slice(&user_message(&request).selected_context_blob).unwrap();
    let context = SelectedContextBlob::decode(run.blobs().get(&context_id).unwrap()).unwrap();
    assert_eq!(&context.root_prompt_blob_ids, ids);
    assert_eq!(context.host_name, "pi");
}

#[test]
fn ids_come_from_the_seed_and_a_given_conversation_id_is_kept() {
    let a = Harness::run_request(config(), conversation());
    let b = Harness::run_request(config(), conversation());
    assert_eq!(a.conversation_id, b.conversation_id, "same seed, same ids");
    let mut other_config = config();
    other_config.id_seed = cursor_agent::IdSeed::fixed([8; 16]);
    let other = Harness::run_request(other_config, conversation());
    assert_ne!(a.conversation_id, other.conversation_id);
    let kept = Harness::run_request(config().with_conversation_id("conv-1"), conversation());
    assert_eq!(kept.conversation_id.as_deref(), Some("conv-1"));
}

fn with_image(image: Image) -> Conversation {
    let mut conversation = Conversation::new("sys").with_message(Message::User {
        content: vec![
            UserContent::Text { text: "see".into() },
            UserContent::Image(image),
        ],
    });
    conversation.tools = common::tools();
    conversation
}

#[test]
fn live_images_travel_as_raw_bytes_in_selected_context() {
    let request = Harness::run_request(
        config(),
        with_image(Image::new("image/jpg", vec![0xff, 0xd8, 0xff])),
    );
    let context = user_message(&request)
        .selected_context
        .clone()
        .expect("images attached");
    assert_eq!(context.selected_images.len(), 1);
    let image = &context.selected_images[0];
    assert_eq!(image.data, [0xff, 0xd8, 0xff]);
    assert_eq!(image.mime_type, "image/jpeg");
    assert_eq!(image.uuid.len(), 36);
}

#[test]
fn unsupported_or_oversize_live_images_fail_closed() {
    let svg = AgentRun::new(
        config(),
        &with_image(Image::new("image/svg+xml", b"<svg/>".to_vec())),
        Instant::now(),
    );
    assert_eq!(
        svg.unwrap_err(),
        AgentError::UnsupportedImage {
            mime: "image/svg+xml".into()
        }
    );
    let mut small = config();
    small.limits.max_image_len = 4;
    let big = AgentRun::new(
        small,
        &with_image(Image::new("image/png", vec![0; 5])),
        Instant::now(),
    );
    assert_eq!(
        big.unwrap_err(),
        AgentError::ImageTooLarge { len: 5, max: 4 }
    );
}

#[test]
fn a_conversation_without_a_trailing_user_message_is_refused() {
    let conversation = conversation().with_message(Message::assistant_text("done"));
    assert_eq!(
        AgentRun::new(config(), &conversation, Instant::now()).unwrap_err(),
        AgentError::NoUserTurn
    );
}

#[test]
fn the_rules_blob_carries_the_system_prompt_policy_and_tool_contracts() {
    let start = Instant::now();
    let mut run = AgentRun::new(config(), &conversation(), start).unwrap();
    let Some(w::agent_client_message::Message::RunRequest(request)) =
        AgentClientMessage::decode(run.poll_transmit().unwrap().as_slice())
            .unwrap()
            .message
    else {
        panic!()
    };
    let first = BlobId::from_slice(
        &request
            .conversation_state
            .unwrap()
            .root_prompt_messages_json[0],
    )
    .unwrap();
    let rules: serde_json::Value =
        serde_json::from_slice(run.blobs().get(&first).unwrap()).unwrap();
    assert_eq!(rules["role"], "user");
    let text = rules["content"][0]["text"].as_str().unwrap();
    assert!(text.starts_with("<rules>\nYou are terse.\n\n"));
    assert!(text.contains("MCP namespace `pi`"));
    assert!(text.contains("- mcp_pi_bash(command: string): Run a shell command"));
    assert!(text.ends_with("\n</rules>"));
}
