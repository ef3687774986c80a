//! Builds the `AgentRunRequest` that opens a fresh agent turn, encodes it, and prints its size
//! and the ids of the blobs it references (docs/PROTOCOL-AGENT.md §2.1–§3).
//!
//! Run with `cargo run -p cursor-examples --example build_request`.

use std::collections::BTreeMap;

use cursor_proto::agent::v1::{
    AgentMode, AgentRunRequest, ConversationAction, ConversationStateStructure, McpToolDefinition,
    McpTools, RequestedModel, UserMessage, UserMessageAction, conversation_action,
};
use cursor_proto::selected_context_blob::SelectedContextBlob;
use prost::Message as _;
use prost_types::{Struct, Value, value::Kind};
use sha2::{Digest, Sha256};

/// A blob as the client's store keeps it: content plus its SHA-256 id.
struct Blob {
    id: Vec<u8>,
    content: Vec<u8>,
}

impl Blob {
    fn new(content: Vec<u8>) -> Self {
        Self {
            id: Sha256::digest(&content).to_vec(),
            content,
        }
    }
}

fn string_value(text: &str) -> Value {
    Value {
        kind: Some(Kind::StringValue(text.to_owned())),
    }
}

fn object_value(fields: impl IntoIterator<Item = (&'static str, Value)>) -> Value {
    let fields = fields
        .into_iter()
        .map(|(key, value)| (key.to_owned(), value))
        .collect();
    Value {
        kind: Some(Kind::StructValue(Struct { fields })),
    }
}

/// The host's `bash` tool as an MCP tool of provider "pi" (docs/PROTOCOL-AGENT.md §2.2).
fn bash_tool() -> McpToolDefinition {
    let schema = object_value([
        ("type", string_value("object")),
        (
            "properties",
            object_value([("command", object_value([("type", string_value("string"))]))]),
        ),
        (
            "required",
            Value {
                kind: Some(Kind::ListValue(prost_types::ListValue {
                    values: vec![string_value("command")],
                })),
            },
        ),
    ]);
    McpToolDefinition {
        name: "bash".into(),
        description: "Run a shell command in the workspace".into(),
        input_schema: Some(schema),
        provider_identifier: "pi".into(),
        tool_name: "bash".into(),
        // The same schema as JSON text, for servers that read the newer field.
        input_schema_json:
            r#"{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}"#
                .into(),
    }
}

fn main() -> Result<(), serde_json::Error> {
    // Root prompt: the system prompt as a user message, then one earlier user turn
    // (docs/PROTOCOL-AGENT.md §3.1). Each blob is the JSON of one message.
    let rules = Blob::new(serde_json::to_vec(&serde_json::json!({
        "role": "user",
        "content": "<rules>\nYou are a careful coding agent.\n</rules>",
    }))?);
    let earlier_turn = Blob::new(serde_json::to_vec(&serde_json::json!({
        "role": "user",
        "content": "<user_query>\nWhat is in this repository?\n</user_query>",
    }))?);
    let root_prompt = [&rules, &earlier_turn];

    // The selected-context blob lists the same ids plus the host name (§2.3); the user message
    // carries its SHA-256 id.
    let selected_context = Blob::new(
        SelectedContextBlob::new(
            root_prompt.iter().map(|blob| blob.id.clone()).collect(),
            "pi",
        )
        .encode(),
    );

    let message_id = "3f1c2a9e-0b7d-4c55-9a61-5e2f8d7c4b10".to_owned();
    let request = AgentRunRequest {
        conversation_state: Some(ConversationStateStructure {
            root_prompt_messages_json: root_prompt.iter().map(|blob| blob.id.clone()).collect(),
            previous_workspace_uris: vec!["file:///home/user/project".into()],
            mode: Some(AgentMode::Agent as i32),
            client_name: Some("pi".into()),
            file_states: BTreeMap::new(),
            ..Default::default()
        }),
        action: Some(ConversationAction {
            action: Some(conversation_action::Action::UserMessageAction(
                UserMessageAction {
                    user_message: Some(UserMessage {
                        text: "List the Rust crates here.".into(),
                        message_id: message_id.clone(),
                        selected_context: None,
                        mode: AgentMode::Agent as i32,
                        selected_context_blob: selected_context.id.clone(),
                        correlation_id: message_id,
                    }),
                    request_context: None,
                },
            )),
        }),
        mcp_tools: Some(McpTools {
            mcp_tools: vec![bash_tool()],
        }),
        conversation_id: Some("9d4e1b7a-62c3-4f08-b1a5-0c7e3d2f9a64".into()),
        requested_model: Some(RequestedModel {
            model_id: "grok-4.7-high".into(),
            max_mode: false,
            parameters: Vec::new(),
        }),
        client_supports_inline_images: Some(true),
        ..Default::default()
    };

    let encoded = request.encode_to_vec();
    println!("AgentRunRequest: {} bytes encoded", encoded.len());
    for (index, blob) in root_prompt.iter().enumerate() {
        println!(
            "root prompt blob {index}: {} ({} bytes)",
            cursor_proto::hex::encode(&blob.id),
            blob.content.len()
        );
    }
    println!(
        "selected_context_blob: {} ({} bytes)",
        cursor_proto::hex::encode(&selected_context.id),
        selected_context.content.len()
    );
    Ok(())
}
