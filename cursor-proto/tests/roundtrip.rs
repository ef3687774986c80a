//! T-PROTO round trips: every message the family sends or parses survives encode → decode, and
//! every oneof arm sits at the field number docs/PROTOCOL-AGENT.md and docs/PROTOCOL.md record.

use std::collections::BTreeMap;
use std::fmt::Debug;

use cursor_proto::agent::v1 as agent;
use cursor_proto::aiserver::v1 as aiserver;
use prost::Message;
use prost_types::{Struct, Value, value::Kind};

fn assert_round_trips<M: Message + Default + PartialEq + Debug>(message: &M) {
    let bytes = message.encode_to_vec();
    assert_eq!(bytes.len(), message.encoded_len());
    let decoded = M::decode(bytes.as_slice()).expect("own encoding decodes");
    assert_eq!(&decoded, message);
}

/// Field number of the first key in `bytes` (a varint `(field << 3) | wire_type`).
fn first_field_number(bytes: &[u8]) -> u64 {
    let mut key = 0u64;
    for (index, byte) in bytes.iter().enumerate() {
        key |= u64::from(byte & 0x7f) << (7 * index);
        if byte & 0x80 == 0 {
            return key >> 3;
        }
    }
    panic!("no complete key in {bytes:?}");
}

/// Builds one value of each listed oneof variant, each with a default payload.
macro_rules! every_arm {
    ($enum:path => $($variant:ident),+ $(,)?) => {{
        use $enum as Arm;
        vec![$(Arm::$variant(Default::default())),+]
    }};
}

fn string_value(text: &str) -> Value {
    Value {
        kind: Some(Kind::StringValue(text.to_owned())),
    }
}

fn object_schema() -> Value {
    let mut fields = BTreeMap::new();
    fields.insert("type".to_owned(), string_value("object"));
    Value {
        kind: Some(Kind::StructValue(Struct { fields })),
    }
}

fn sample_tool() -> agent::McpToolDefinition {
    agent::McpToolDefinition {
        name: "bash".into(),
        description: "Run a command".into(),
        input_schema: Some(object_schema()),
        provider_identifier: "pi".into(),
        tool_name: "bash".into(),
        input_schema_json: r#"{"type":"object"}"#.into(),
    }
}

fn sample_run_request() -> agent::AgentRunRequest {
    agent::AgentRunRequest {
        conversation_state: Some(agent::ConversationStateStructure {
            root_prompt_messages_json: vec![vec![1; 32], vec![2; 32]],
            turns: vec![vec![9, 9]],
            previous_workspace_uris: vec!["file:///work".into()],
            mode: Some(agent::AgentMode::Agent as i32),
            client_name: Some("pi".into()),
            file_states_v2: BTreeMap::from([("a.rs".to_owned(), vec![1, 2, 3])]),
            token_details: Some(agent::ConversationTokenDetails {
                used_tokens: 10,
                max_tokens: 20,
            }),
            ..Default::default()
        }),
        action: Some(agent::ConversationAction {
            action: Some(agent::conversation_action::Action::UserMessageAction(
                agent::UserMessageAction {
                    user_message: Some(agent::UserMessage {
                        text: "hello".into(),
                        message_id: "m1".into(),
                        selected_context: Some(agent::SelectedContext {
                            selected_images: vec![agent::SelectedImage {
                                uuid: "u1".into(),
                                path: "shot.png".into(),
                                mime_type: "image/png".into(),
                                data: vec![0x89, b'P', b'N', b'G'],
                            }],
                        }),
                        mode: agent::AgentMode::Agent as i32,
                        selected_context_blob: vec![7; 32],
                        correlation_id: "m1".into(),
                    }),
                    request_context: None,
                },
            )),
        }),
        mcp_tools: Some(agent::McpTools {
            mcp_tools: vec![sample_tool()],
        }),
        conversation_id: Some("c0ffee".into()),
        requested_model: Some(agent::RequestedModel {
            model_id: "grok-4.7-high".into(),
            max_mode: false,
            parameters: vec![],
        }),
        client_supports_inline_images: Some(true),
        ..Default::default()
    }
}

#[test]
fn run_request_round_trips() {
    assert_round_trips(&sample_run_request());
}

#[test]
fn every_client_message_arm_round_trips_at_its_documented_number() {
    use agent::agent_client_message::Message as M;
    let arms = [
        (1, M::RunRequest(sample_run_request())),
        (2, M::ExecClientMessage(Default::default())),
        (3, M::KvClientMessage(Default::default())),
        (5, M::ExecClientControlMessage(Default::default())),
        (6, M::InteractionResponse(Default::default())),
        (7, M::ClientHeartbeat(Default::default())),
    ];
    for (field, arm) in arms {
        let message = agent::AgentClientMessage { message: Some(arm) };
        assert_eq!(first_field_number(&message.encode_to_vec()), field);
        assert_round_trips(&message);
    }
}

#[test]
fn every_server_message_arm_round_trips_at_its_documented_number() {
    use agent::agent_server_message::Message as M;
    let arms = [
        (1, M::InteractionUpdate(Default::default())),
        (2, M::ExecServerMessage(Default::default())),
        (3, M::ConversationCheckpointUpdate(vec![0x0a, 0x01, 0x00])),
        (4, M::KvServerMessage(Default::default())),
        (5, M::ExecServerControlMessage(Default::default())),
        (7, M::InteractionQuery(Default::default())),
    ];
    for (field, arm) in arms {
        let message = agent::AgentServerMessage {
            ttft_breakdown: None,
            message: Some(arm),
        };
        assert_eq!(first_field_number(&message.encode_to_vec()), field);
        assert_round_trips(&message);
    }
    let with_ttft = agent::AgentServerMessage {
        ttft_breakdown: Some(agent::TtftBreakdown {
            server_first_token_ms: 1.5,
            provider_ttft_ms: Some(2.0),
            ..Default::default()
        }),
        message: Some(M::InteractionUpdate(Default::default())),
    };
    assert_round_trips(&with_ttft);
}

#[test]
fn every_exec_server_arm_round_trips_at_its_documented_number() {
    let arms = every_arm!(agent::exec_server_message::Message =>
        ShellArgs, WriteArgs, DeleteArgs, GrepArgs, ReadArgs, LsArgs, DiagnosticsArgs,
        RequestContextArgs, McpArgs, ShellStreamArgs, BackgroundShellSpawnArgs,
        ListMcpResourcesExecArgs, ReadMcpResourceExecArgs, FetchArgs, RecordScreenArgs,
        ComputerUseArgs, WriteShellStdinArgs, ExecuteHookArgs, SubagentArgs, RedactedReadArgs,
        ForceBackgroundShellArgs, ForceBackgroundSubagentArgs, McpStateExecArgs,
        SubagentAwaitArgs, SmartModeClassifierArgs, CanvasDiagnosticsArgs,
        ShellAllowlistPrecheckArgs, McpAllowlistPrecheckArgs, WebFetchAllowlistPrecheckArgs,
        GitDiffRequest, PiReadArgs, PiBashArgs, PiEditArgs, PiWriteArgs, PiGrepArgs, PiFindArgs,
        PiLsArgs,
    );
    // docs/PROTOCOL-AGENT.md §5 and §5.3.
    let documented = [
        2, 3, 4, 5, 7, 8, 9, 10, 11, 14, 16, 17, 18, 20, 21, 22, 23, 27, 28, 29, 30, 31, 36, 37,
        38, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51,
    ];
    assert_eq!(arms.len(), documented.len());
    for (arm, field) in arms.into_iter().zip(documented) {
        let message = agent::ExecServerMessage {
            message: Some(arm),
            ..Default::default()
        };
        assert_eq!(first_field_number(&message.encode_to_vec()), field);
        assert_round_trips(&message);
    }
}

#[test]
fn every_exec_client_arm_round_trips_at_its_documented_number() {
    let arms = every_arm!(agent::exec_client_message::Message =>
        ShellResult, WriteResult, DeleteResult, GrepResult, ReadResult, LsResult,
        DiagnosticsResult, RequestContextResult, McpResult, ShellStream,
        BackgroundShellSpawnResult, ListMcpResourcesExecResult, ReadMcpResourceExecResult,
        FetchResult, RecordScreenResult, ComputerUseResult, WriteShellStdinResult,
        RedactedReadResult, PiReadResult, PiBashResult, PiEditResult, PiWriteResult,
        PiGrepResult, PiFindResult, PiLsResult,
    );
    // docs/PROTOCOL-AGENT.md §5 and §5.4 (pi_* results sit one above their args).
    let documented = [
        2, 3, 4, 5, 7, 8, 9, 10, 11, 14, 16, 17, 18, 20, 21, 22, 23, 29, 46, 47, 48, 49, 50, 51, 52,
    ];
    assert_eq!(arms.len(), documented.len());
    for (arm, field) in arms.into_iter().zip(documented) {
        let message = agent::ExecClientMessage {
            message: Some(arm),
            ..Default::default()
        };
        assert_eq!(first_field_number(&message.encode_to_vec()), field);
        assert_round_trips(&message);
    }
}

#[test]
fn every_interaction_update_arm_round_trips_at_its_documented_number() {
    let arms = every_arm!(agent::interaction_update::Message =>
        TextDelta, ToolCallStarted, ToolCallCompleted, ThinkingDelta, ThinkingCompleted,
        UserMessageAppended, PartialToolCall, TokenDelta, Summary, SummaryStarted,
        SummaryCompleted, ShellOutputDelta, Heartbeat, TurnEnded, ToolCallDelta, StepStarted,
        StepCompleted, PromptSuggestion, PostRequestPrompt, ActiveBranchChange, FeedbackRequest,
        ResponseComparison,
    );
    assert_eq!(arms.len(), 22);
    for (arm, field) in arms.into_iter().zip(1..) {
        let message = agent::InteractionUpdate {
            message_started_at_ms: None,
            message: Some(arm),
        };
        assert_eq!(first_field_number(&message.encode_to_vec()), field);
        assert_round_trips(&message);
    }
}

#[test]
fn every_interaction_query_and_response_arm_round_trips_at_its_documented_number() {
    let queries = every_arm!(agent::interaction_query::Query =>
        WebSearchRequestQuery, AskQuestionInteractionQuery, SwitchModeRequestQuery,
        ExaSearchRequestQuery, ExaFetchRequestQuery, CreatePlanRequestQuery,
        SetupVmEnvironmentArgs, WebFetchRequestQuery, PrManagementRequestQuery,
        McpAuthRequestQuery, GenerateImageRequestQuery, ReplaceEnvArgs, ConnectScmRequestQuery,
    );
    for (arm, field) in queries.into_iter().zip(2..) {
        let message = agent::InteractionQuery {
            id: 0,
            query: Some(arm),
        };
        assert_eq!(first_field_number(&message.encode_to_vec()), field);
        assert_round_trips(&message);
    }
    let responses = every_arm!(agent::interaction_response::Result =>
        WebSearchRequestResponse, AskQuestionInteractionResponse, SwitchModeRequestResponse,
        ExaSearchRequestResponse, ExaFetchRequestResponse, CreatePlanRequestResponse,
        SetupVmEnvironmentResult, WebFetchRequestResponse,
    );
    for (arm, field) in responses.into_iter().zip(2..) {
        let message = agent::InteractionResponse {
            id: 0,
            result: Some(arm),
        };
        assert_eq!(first_field_number(&message.encode_to_vec()), field);
        assert_round_trips(&message);
    }
}

#[test]
fn policy_replies_round_trip() {
    use agent::exec_client_message::Message as Reply;
    let replies = [
        Reply::ShellResult(agent::ShellResult {
            result: Some(agent::shell_result::Result::Success(agent::ShellSuccess {
                command: "echo hi".into(),
                working_directory: "/w".into(),
                exit_code: 0,
                stdout: "hi\n".into(),
                stderr: String::new(),
                execution_time: 4,
            })),
        }),
        Reply::ShellResult(agent::ShellResult {
            result: Some(agent::shell_result::Result::Failure(agent::ShellFailure {
                exit_code: 2,
                aborted: true,
                ..Default::default()
            })),
        }),
        Reply::ShellStream(agent::ShellStream {
            event: Some(agent::shell_stream::Event::Exit(agent::ShellStreamExit {
                code: 1,
                cwd: "/w".into(),
                aborted: false,
            })),
        }),
        Reply::ShellStream(agent::ShellStream {
            event: Some(agent::shell_stream::Event::Rejected(agent::ShellRejected {
                command: "rm -rf /".into(),
                reason: "No operation was performed".into(),
                ..Default::default()
            })),
        }),
        Reply::WriteResult(agent::WriteResult {
            result: Some(agent::write_result::Result::Success(agent::WriteSuccess {
                path: "a.txt".into(),
                lines_created: 3,
                file_size: 12,
            })),
        }),
        Reply::DeleteResult(agent::DeleteResult {
            result: Some(agent::delete_result::Result::Success(
                agent::DeleteSuccess {
                    path: "a.txt".into(),
                    deleted_file: "a.txt".into(),
                    file_size: 12,
                    prev_content: String::new(),
                },
            )),
        }),
        Reply::GrepResult(agent::GrepResult {
            result: Some(agent::grep_result::Result::Success(agent::GrepSuccess {
                pattern: "fn".into(),
                path: ".".into(),
                output_mode: "content".into(),
                workspace_results: BTreeMap::from([(
                    "/w".to_owned(),
                    agent::GrepUnionResult {
                        result: Some(agent::grep_union_result::Result::Content(
                            agent::GrepContentResult {
                                matches: vec![agent::GrepFileMatch {
                                    file: "a.rs".into(),
                                    matches: vec![agent::GrepContentMatch {
                                        line_number: 1,
                                        content: "fn main() {}".into(),
                                    }],
                                }],
                                total_matched_lines: 1,
                            },
                        )),
                    },
                )]),
            })),
        }),
        Reply::ReadResult(agent::ReadResult {
            result: Some(agent::read_result::Result::Success(agent::ReadSuccess {
                path: "a.rs".into(),
                content: "fn main() {}".into(),
                total_lines: 1,
                file_size: 12,
                truncated: false,
            })),
        }),
        Reply::LsResult(agent::LsResult {
            result: Some(agent::ls_result::Result::Success(agent::LsSuccess {
                directory_tree_root: Some(agent::LsDirectoryTreeNode {
                    abs_path: "/w".into(),
                    children_dirs: vec![agent::LsDirectoryTreeNode {
                        abs_path: "/w/src".into(),
                        ..Default::default()
                    }],
                    children_files: vec![agent::LsFile {
                        name: "Cargo.toml".into(),
                    }],
                    children_were_processed: true,
                    num_files: 1,
                }),
            })),
        }),
        Reply::RequestContextResult(agent::RequestContextResult {
            result: Some(agent::request_context_result::Result::Success(
                agent::RequestContextSuccess {
                    request_context: Some(agent::RequestContext {
                        env: Some(agent::RequestContextEnv {
                            workspace_paths: vec!["file:///w".into()],
                            shell: "bash".into(),
                            time_zone: "UTC".into(),
                            ..Default::default()
                        }),
                        tools: vec![sample_tool()],
                    }),
                },
            )),
        }),
        Reply::McpResult(agent::McpResult {
            result: Some(agent::mcp_result::Result::Success(agent::McpSuccess {
                content: vec![
                    agent::McpToolResultContentItem {
                        content: Some(agent::mcp_tool_result_content_item::Content::Text(
                            agent::McpTextContent {
                                text: "done".into(),
                            },
                        )),
                    },
                    agent::McpToolResultContentItem {
                        content: Some(agent::mcp_tool_result_content_item::Content::Image(
                            agent::McpImageContent {
                                data: vec![1, 2, 3],
                                mime_type: "image/png".into(),
                            },
                        )),
                    },
                ],
                is_error: false,
            })),
        }),
        Reply::McpResult(agent::McpResult {
            result: Some(agent::mcp_result::Result::ToolNotFound(
                agent::McpToolNotFound {
                    name: "sudo_exec".into(),
                    available_tools: vec!["bash".into()],
                },
            )),
        }),
        Reply::FetchResult(agent::FetchResult {
            result: Some(agent::fetch_result::Result::Error(agent::FetchError {
                url: "https://cursor.com".into(),
                error: "no local HTTP".into(),
            })),
        }),
        Reply::PiEditResult(agent::PiEditExecResult {
            result: Some(agent::pi_edit_exec_result::Result::Rejected(
                agent::ReasonRejected {
                    reason: "read-only".into(),
                },
            )),
        }),
    ];
    for reply in replies {
        assert_round_trips(&agent::ExecClientMessage {
            id: 3,
            exec_id: "e3".into(),
            message: Some(reply),
        });
    }
    use agent::exec_client_control_message::Message as Control;
    for control in [
        Control::StreamClose(agent::ExecClientStreamClose { id: 3 }),
        Control::Throw(agent::ExecClientThrow {
            id: 3,
            error: "unsupported".into(),
        }),
        Control::Heartbeat(agent::ExecClientHeartbeat { id: 3 }),
    ] {
        assert_round_trips(&agent::ExecClientControlMessage {
            message: Some(control),
        });
    }
}

#[test]
fn server_requests_round_trip() {
    let mcp_args = agent::McpArgs {
        name: "mcp_pi_bash".into(),
        args: BTreeMap::from([("command".to_owned(), string_value("ls"))]),
        tool_call_id: "call_1".into(),
        provider_identifier: "pi".into(),
        tool_name: "mcp_pi_bash".into(),
        server_identifier: "pi".into(),
    };
    assert_round_trips(&agent::ExecServerMessage {
        id: 1,
        exec_id: "e1".into(),
        accept_hook_additional_contexts: Some(true),
        machine_id: Some("m-1".into()),
        message: Some(agent::exec_server_message::Message::McpArgs(mcp_args)),
    });
    assert_round_trips(&agent::ExecServerMessage {
        id: 2,
        message: Some(agent::exec_server_message::Message::PiEditArgs(
            agent::PiEditExecArgs {
                path: "a.rs".into(),
                edits: vec![agent::PiEditReplacement {
                    old_text: "a".into(),
                    new_text: "b".into(),
                }],
            },
        )),
        ..Default::default()
    });
    assert_round_trips(&agent::KvServerMessage {
        id: 4,
        message: Some(agent::kv_server_message::Message::SetBlobArgs(
            agent::SetBlobArgs {
                blob_id: vec![1; 32],
                blob_data: Some(b"{}".to_vec()),
            },
        )),
    });
    assert_round_trips(&agent::KvClientMessage {
        id: 4,
        message: Some(agent::kv_client_message::Message::GetBlobResult(
            agent::GetBlobResult {
                blob_data: Some(b"{}".to_vec()),
            },
        )),
    });
    assert_round_trips(&agent::ExecServerControlMessage {
        message: Some(agent::exec_server_control_message::Message::Abort(
            agent::ExecServerAbort { id: 1 },
        )),
    });
    assert_round_trips(&agent::InteractionUpdate {
        message_started_at_ms: Some(1_700_000_000_000),
        message: Some(agent::interaction_update::Message::TurnEnded(
            agent::TurnEndedUpdate {
                input_tokens: Some(100),
                output_tokens: Some(20),
                cache_read_tokens: Some(5),
                cache_write_tokens: Some(1),
                reasoning_tokens: Some(7),
            },
        )),
    });
}

#[test]
fn catalog_messages_round_trip() {
    assert_round_trips(&aiserver::AvailableModelsRequest {
        use_model_parameters: Some(true),
        do_not_use_markdown: Some(true),
        ..Default::default()
    });
    assert_round_trips(&aiserver::AvailableModelsResponse {
        model_names: vec!["grok-4.7".into()],
        models: vec![aiserver::AvailableModel {
            name: "grok-4.7".into(),
            supports_images: Some(true),
            supports_max_mode: Some(false),
            context_token_limit: Some(256_000),
            variants: vec![aiserver::ModelVariantConfig {
                parameter_values: vec![agent::requested_model::ModelParameterValue {
                    id: "reasoning_effort".into(),
                    value: "high".into(),
                }],
                display_name: "High".into(),
                is_default_non_max_config: Some(true),
                legacy_slug: Some("grok-4.7-high".into()),
                ..Default::default()
            }],
            ..Default::default()
        }],
        use_model_parameters: true,
    });
    assert_round_trips(&agent::GetUsableModelsResponse {
        models: vec![agent::ModelDetails {
            model_id: "grok-4.7-high".into(),
            display_name: "Grok 4.7 High".into(),
            aliases: vec!["grok".into()],
            max_mode: Some(false),
            ..Default::default()
        }],
    });
    assert_round_trips(&agent::GetDefaultModelForCliResponse {
        model: Some(agent::ModelDetails {
            model_id: "auto".into(),
            ..Default::default()
        }),
    });
    assert_round_trips(&aiserver::GetServerConfigResponse {
        config_version: "b5f0".into(),
        use_nlb_for_nal: true,
        agent_url_config: Some(aiserver::AgentUrlConfig {
            agent_url: "https://agent.api5.cursor.sh".into(),
            agentn_url: "https://agentn.api5.cursor.sh".into(),
        }),
    });
}

#[test]
fn inference_messages_round_trip_at_their_documented_numbers() {
    use aiserver::run_inference_client_message::Message as Client;
    use aiserver::run_inference_server_message::Message as Server;
    let invoke = aiserver::RunInferenceInvokeModel {
        invocation_id: "inv1".into(),
        request: Some(aiserver::InferenceStreamRequest {
            messages: vec![aiserver::InferenceCoreMessage {
                role: aiserver::InferenceMessageRole::User as i32,
                content: Some(aiserver::inference_core_message::Content::Text("hi".into())),
                ..Default::default()
            }],
            tools: vec![aiserver::InferenceAgentTool {
                name: "bash".into(),
                description: "Run a command".into(),
                parameters: Some(Struct {
                    fields: BTreeMap::from([("jsonSchema".to_owned(), object_schema())]),
                }),
            }],
            ..Default::default()
        }),
    };
    let clients = [
        (1, Client::RunRequest(Default::default())),
        (2, Client::InvokeModel(invoke)),
        (3, Client::CancelInvocation(Default::default())),
        (4, Client::FinishRun(Default::default())),
    ];
    for (field, arm) in clients {
        let message = aiserver::RunInferenceClientMessage { message: Some(arm) };
        assert_eq!(first_field_number(&message.encode_to_vec()), field);
        assert_round_trips(&message);
    }
    let response = aiserver::RunInferenceInvocationResponse {
        invocation_id: "inv1".into(),
        response: Some(aiserver::InferenceStreamResponse {
            response: Some(aiserver::inference_stream_response::Response::TextPart(
                aiserver::InferenceTextStreamPart {
                    text: "pong".into(),
                    is_final: true,
                },
            )),
        }),
    };
    let servers = [
        (1, Server::Heartbeat(Default::default())),
        (2, Server::RunReady(Default::default())),
        (3, Server::InvocationResponse(response)),
        (4, Server::InvocationEnd(Default::default())),
    ];
    for (field, arm) in servers {
        let message = aiserver::RunInferenceServerMessage { message: Some(arm) };
        assert_eq!(first_field_number(&message.encode_to_vec()), field);
        assert_round_trips(&message);
    }
}
