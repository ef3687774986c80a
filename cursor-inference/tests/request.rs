//! Request assembly: what a conversation looks like on the wire.

use cursor_inference::{InferenceConfig, request};
use cursor_proto::aiserver::v1::{
    InferenceAgentTool, InferenceContentPart, InferenceContentParts, InferenceCoreMessage,
    InferenceImagePart, InferenceMessageRole as Role, InferenceModelConfig, InferenceReasoningPart,
    InferenceRequestedModel, InferenceStreamRequest, InferenceTextPart, InferenceToolCall,
    InferenceToolResultContent, InferenceToolResultPart, RunInferenceRoutingMessage,
    inference_content_part::Part, inference_core_message::Content,
    run_inference_client_message::Message as Client,
};
use cursor_proto::ir::{
    AssistantContent, Conversation, Image, Message, Tool, ToolCall, ToolResult, UserContent,
};
use prost_types::{Struct, Value, value::Kind};
use serde_json::json;

fn string(text: &str) -> Value {
    Value {
        kind: Some(Kind::StringValue(text.into())),
    }
}

fn fields(pairs: &[(&str, Value)]) -> Struct {
    Struct {
        fields: pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.clone()))
            .collect(),
    }
}

fn conversation() -> Conversation {
    Conversation::new("You are terse.")
        .with_message(Message::User {
            content: vec![
                UserContent::Text {
                    text: "look".into(),
                },
                UserContent::Image(Image::new("image/png", vec![1, 2, 3])),
            ],
        })
        .with_message(Message::Assistant {
            content: vec![
                AssistantContent::Thinking {
                    text: "hm".into(),
                    signature: Some("sig".into()),
                },
                AssistantContent::Text {
                    text: "reading".into(),
                },
                AssistantContent::ToolCall(ToolCall::new("c1", "read", json!({"path": "a"}))),
                AssistantContent::ToolCall(ToolCall::new("c2", "read", json!({"path": "b"}))),
            ],
        })
        .with_message(Message::ToolResult(ToolResult::text(
            "c1", "read", "A", false,
        )))
        .with_message(Message::ToolResult(ToolResult::text(
            "c2",
            "read",
            "no such file",
            true,
        )))
        .with_message(Message::user_text("thanks"))
        .with_tool(Tool::new(
            "read",
            "Reads a file",
            json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        ))
}

#[test]
fn a_conversation_becomes_the_expected_stream_request() {
    let config =
        InferenceConfig::with_ids("claude-4.5-sonnet", "conv", "inv").with_max_tokens(2048);
    let actual = request::stream_request(&config, &conversation());
    let requested = InferenceRequestedModel {
        model_id: "claude-4.5-sonnet".into(),
        ..InferenceRequestedModel::default()
    };
    let tool_call = |id: &str, path: &str| InferenceToolCall {
        tool_call_id: id.into(),
        tool_name: "read".into(),
        args: Some(fields(&[("path", string(path))])),
        raw_tool_call_args: Some(format!("{{\"path\":\"{path}\"}}")),
    };
    let result = |id: &str, text: &str, is_error| InferenceToolResultPart {
        tool_call_id: id.into(),
        tool_name: "read".into(),
        result: Some(string(text)),
        is_error,
        experimental_content: vec![],
    };
    let schema = Value {
        kind: Some(Kind::StructValue(fields(&[
            ("type", string("object")),
            (
                "properties",
                Value {
                    kind: Some(Kind::StructValue(fields(&[(
                        "path",
                        Value {
                            kind: Some(Kind::StructValue(fields(&[("type", string("string"))]))),
                        },
                    )]))),
                },
            ),
        ]))),
    };
    let expected = InferenceStreamRequest {
        messages: vec![
            InferenceCoreMessage {
                role: Role::System as i32,
                content: Some(Content::Text("You are terse.".into())),
                ..InferenceCoreMessage::default()
            },
            InferenceCoreMessage {
                role: Role::User as i32,
                content: Some(Content::Parts(InferenceContentParts {
                    parts: vec![
                        InferenceContentPart {
                            part: Some(Part::Text(InferenceTextPart {
                                text: "look".into(),
                            })),
                        },
                        InferenceContentPart {
                            part: Some(Part::Image(InferenceImagePart {
                                data: "AQID".into(),
                                mime_type: Some("image/png".into()),
                            })),
                        },
                    ],
                })),
                ..InferenceCoreMessage::default()
            },
            InferenceCoreMessage {
                role: Role::Assistant as i32,
                content: Some(Content::Text("reading".into())),
                tool_calls: vec![tool_call("c1", "a"), tool_call("c2", "b")],
                reasoning_parts: vec![InferenceReasoningPart {
                    text: "hm".into(),
                    signature: Some("sig".into()),
                    ..InferenceReasoningPart::default()
                }],
            },
            InferenceCoreMessage {
                role: Role::Tool as i32,
                content: Some(Content::ToolContent(InferenceToolResultContent {
                    parts: vec![result("c1", "A", false), result("c2", "no such file", true)],
                })),
                ..InferenceCoreMessage::default()
            },
            InferenceCoreMessage {
                role: Role::User as i32,
                content: Some(Content::Text("thanks".into())),
                ..InferenceCoreMessage::default()
            },
        ],
        tools: vec![InferenceAgentTool {
            name: "read".into(),
            description: "Reads a file".into(),
            parameters: Some(fields(&[("jsonSchema", schema)])),
        }],
        model_config: Some(InferenceModelConfig {
            max_tokens: Some(2048),
            ..InferenceModelConfig::default()
        }),
        model_id: Some("claude-4.5-sonnet".into()),
        invocation_id: Some("inv".into()),
        requested_model: Some(requested),
        conversation_id: Some("conv".into()),
    };
    assert_eq!(actual, expected);
}

#[test]
fn the_run_request_names_the_conversation_the_bare_slug_and_the_last_user_text() {
    let config = InferenceConfig::with_ids("gpt-5", "conv", "inv");
    let Some(Client::RunRequest(run)) = request::run_request(&config, &conversation()).message
    else {
        panic!("a run_request");
    };
    assert_eq!(run.conversation_id, "conv");
    let model = run.requested_model.unwrap();
    assert_eq!(model.model_id, "gpt-5");
    assert!(model.parameters.is_empty() && !model.max_mode);
    assert_eq!(
        run.routing_conversation,
        [RunInferenceRoutingMessage {
            role: 1,
            text: "thanks".into()
        }]
    );
}

#[test]
fn no_system_prompt_means_no_system_message() {
    let config = InferenceConfig::with_ids("gpt-5", "conv", "inv");
    let conversation = Conversation::new("").with_message(Message::user_text("hi"));
    let request = request::stream_request(&config, &conversation);
    assert_eq!(request.messages.len(), 1);
    assert_eq!(request.messages[0].role, Role::User as i32);
    assert_eq!(request.model_config, None);
}

#[test]
fn max_mode_is_sent_in_both_requested_models_only_when_asked() {
    let conversation = Conversation::new("").with_message(Message::user_text("hi"));
    for max_mode in [false, true] {
        let config = InferenceConfig::with_ids("m", "conv", "inv").with_max_mode(max_mode);
        let Some(Client::RunRequest(run)) = request::run_request(&config, &conversation).message
        else {
            panic!("run_request");
        };
        assert_eq!(run.requested_model.unwrap().max_mode, max_mode);
        let Some(Client::InvokeModel(invoke)) =
            request::invoke_model(&config, &conversation).message
        else {
            panic!("invoke_model");
        };
        let requested = invoke.request.unwrap().requested_model.unwrap();
        assert_eq!(requested.max_mode, max_mode);
        assert!(requested.parameters.is_empty());
    }
}
