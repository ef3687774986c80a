//! T-COMPAT: pi's shapes ⇄ the conversation model.
//!
//! - Contexts captured from real pi builds (`fixtures/pi-<version>/call-<n>.context.json`, made by
//!   `tools/pi/capture-fixtures.sh`) must map to the committed IR snapshots beside them
//!   (`call-<n>.ir.json`).
//! - Scripted IR event sequences (`fixtures/events/<name>.json`, field `ir`) must map to the
//!   committed pi events in the same file (field `pi`).
//!
//! `UPDATE_SNAPSHOTS=1 cargo test -p cursor-pi-adapter --test compat` rewrites the snapshots;
//! review the diff before committing it.

use std::path::{Path, PathBuf};

use cursor_pi_adapter::compat::{
    CompatError, CostRates, EventMapper, ModelInfo, conversation_from_json, conversation_from_value,
};
use cursor_proto::ir::{
    AssistantContent, Conversation, ErrorInfo, ErrorKind, Event, Image, Message, StopReason,
    ToolCall, ToolResult, ToolResultContent, Usage, UserContent,
};
use serde_json::{Value, json};

const PI_VERSIONS: [&str; 3] = ["0.99.1", "1.0.3", "1.6.0"];

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

fn updating() -> bool {
    std::env::var_os("UPDATE_SNAPSHOTS").is_some_and(|v| v == "1")
}

/// Compares `actual` with the JSON snapshot at `path`, or rewrites it under UPDATE_SNAPSHOTS=1.
fn assert_snapshot(path: &Path, actual: &Value) {
    let rendered = format!("{}\n", serde_json::to_string_pretty(actual).unwrap());
    if updating() {
        std::fs::write(path, rendered).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (run with UPDATE_SNAPSHOTS=1 to create it)",
            path.display()
        )
    });
    assert!(
        expected == rendered,
        "{} differs from the mapping's output; rerun with UPDATE_SNAPSHOTS=1 and review the diff.\n--- actual ---\n{rendered}",
        path.display()
    );
}

fn captured_contexts(version: &str) -> Vec<(PathBuf, String)> {
    let dir = fixtures().join(format!("pi-{version}"));
    let mut calls: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.to_string_lossy().ends_with(".context.json"))
        .collect();
    calls.sort();
    assert_eq!(
        calls.len(),
        3,
        "pi {version}: expected three captured calls in {}",
        dir.display()
    );
    calls
        .into_iter()
        .map(|path| (path.clone(), std::fs::read_to_string(path).unwrap()))
        .collect()
}

#[test]
fn captured_pi_contexts_map_to_their_ir_snapshots() {
    for version in PI_VERSIONS {
        for (path, text) in captured_contexts(version) {
            let conversation =
                conversation_from_json(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let snapshot = path.to_string_lossy().replace(".context.json", ".ir.json");
            assert_snapshot(
                Path::new(&snapshot),
                &serde_json::to_value(&conversation).unwrap(),
            );
        }
    }
}

#[test]
fn captured_pi_contexts_carry_every_kind_of_message_the_adapter_maps() {
    for version in PI_VERSIONS {
        let (_, last) = captured_contexts(version).pop().unwrap();
        let conversation = conversation_from_json(&last).unwrap();
        // The leading system message's sections, in pi's order: preamble first, cwd last.
        assert!(
            conversation.system_prompt.starts_with("You are"),
            "pi {version}"
        );
        assert!(
            conversation
                .system_prompt
                .ends_with("<cwd>\n<WORK>\n</cwd>"),
            "pi {version}"
        );
        // The later system message removed edit and write and rewrote the tools section.
        let tools: Vec<&str> = conversation.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(tools, ["read", "bash"], "pi {version}");
        assert!(
            !conversation.system_prompt.contains("- edit:"),
            "pi {version}"
        );
        let Message::User { content } = &conversation.messages[0] else {
            panic!("pi {version}: no user first")
        };
        assert!(
            matches!(&content[1], UserContent::Image(image) if image.data.starts_with(b"\x89PNG"))
        );
        let Message::Assistant { content } = &conversation.messages[1] else {
            panic!("pi {version}")
        };
        assert!(
            matches!(&content[0], AssistantContent::Thinking { signature: Some(s), .. } if s == "sig-dump-1")
        );
        assert!(matches!(&content[1], AssistantContent::ToolCall(call) if call.name == "read"));
        let Message::ToolResult(ok) = &conversation.messages[2] else {
            panic!("pi {version}")
        };
        assert!(!ok.is_error && matches!(ok.content[1], ToolResultContent::Image(_)));
        let Message::ToolResult(failed) = &conversation.messages[4] else {
            panic!("pi {version}")
        };
        assert!(
            failed.is_error && failed.tool_call_id == "call_dump_2",
            "pi {version}"
        );
        assert_eq!(
            conversation.messages.len(),
            5,
            "pi {version}: system messages must not stay in the transcript"
        );
    }
}

#[test]
fn scripted_event_sequences_map_to_their_pi_event_snapshots() {
    let dir = fixtures().join("events");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    files.sort();
    assert!(
        files.len() >= 5,
        "expected the scripted sequences in {}",
        dir.display()
    );
    for path in files {
        let mut fixture: Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let model = ModelInfo::from_pi_model(&fixture["model"]).unwrap();
        let timestamp = fixture["timestamp"].as_u64().unwrap();
        let events: Vec<Event> = serde_json::from_value(fixture["ir"].clone()).unwrap();
        let mut mapper = EventMapper::new(model, timestamp);
        let mut pi = Vec::new();
        for event in events {
            pi.extend(mapper.map(event));
        }
        pi.extend(mapper.finish());
        // Compared as text: serde_json's default float parsing may be off by one ulp, so
        // parsed snapshot numbers are not a reliable reference; the rendered text is.
        fixture["pi"] = Value::Array(pi);
        assert_snapshot(&path, &fixture);
    }
}

// --- context → IR ---------------------------------------------------------------------------

#[test]
fn legacy_context_shape_reads_prompt_and_tools_beside_the_messages() {
    let context = json!({
        "systemPrompt": "You are terse.",
        "tools": [{"name": "bash", "description": "Run", "parameters": {"type": "object"}}],
        "messages": [{"role": "user", "content": "ping", "timestamp": 1}]
    });
    let conversation = conversation_from_value(&context).unwrap();
    assert_eq!(conversation.system_prompt, "You are terse.");
    assert_eq!(conversation.tools.len(), 1);
    assert_eq!(conversation.messages, [Message::user_text("ping")]);
}

#[test]
fn legacy_fields_and_system_messages_combine_like_pi_normalize_context() {
    let context = json!({
        "systemPrompt": "base",
        "tools": [{"name": "read", "description": "r", "parameters": {}}],
        "messages": [
            {"role": "system", "content": [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}],
             "toolsAdded": [{"name": "bash", "description": "b", "parameters": {}}]},
            {"role": "user", "content": "hi"}
        ]
    });
    let conversation = conversation_from_value(&context).unwrap();
    assert_eq!(conversation.system_prompt, "base\n\none\ntwo");
    let names: Vec<&str> = conversation.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["read", "bash"]);
}

#[test]
fn user_content_may_be_a_string_or_blocks_with_images() {
    let from_string =
        conversation_from_json(r#"{"messages":[{"role":"user","content":"hi"}]}"#).unwrap();
    let from_blocks = conversation_from_json(
        r#"{"messages":[{"role":"user","content":[{"type":"text","text":"hi"},
            {"type":"image","mimeType":"image/png","data":"iVBORw=="}]}]}"#,
    )
    .unwrap();
    assert_eq!(from_string.messages, [Message::user_text("hi")]);
    assert_eq!(
        from_blocks.messages,
        [Message::User {
            content: vec![
                UserContent::Text { text: "hi".into() },
                UserContent::Image(Image::new("image/png", vec![0x89, b'P', b'N', b'G'])),
            ]
        }]
    );
}

#[test]
fn unpadded_base64_images_decode_too() {
    let conversation = conversation_from_json(
        r#"{"messages":[{"role":"user","content":[{"type":"image","mimeType":"image/png","data":"iVBORw"}]}]}"#,
    )
    .unwrap();
    let Message::User { content } = &conversation.messages[0] else {
        panic!()
    };
    assert_eq!(
        content[0],
        UserContent::Image(Image::new("image/png", vec![0x89, b'P', b'N', b'G']))
    );
}

#[test]
fn later_system_messages_collapse_into_the_leading_prompt_and_leave_the_transcript() {
    let context = r#"{"messages":[
        {"role":"system","content":"","sections":{"preamble":"P","tools":"T1","cwd":"C"},
         "toolsAdded":[{"name":"read","description":"r","parameters":{}},{"name":"edit","description":"e","parameters":{}}]},
        {"role":"user","content":"hi"},
        {"role":"system","content":"Extra rule.","sections":{"tools":"T2","cwd":null,"late":"L"},
         "toolsRemoved":[{"name":"edit"}],"toolsAdded":[{"name":"bash","description":"b","parameters":{}}]},
        {"role":"assistant","content":[{"type":"text","text":"ok"}]}
    ]}"#;
    let conversation = conversation_from_json(context).unwrap();
    // Content first, then sections in first-written order with patches applied in place.
    assert_eq!(conversation.system_prompt, "Extra rule.\n\nP\n\nT2\n\nL");
    let names: Vec<&str> = conversation.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["read", "bash"]);
    assert_eq!(
        conversation.messages,
        [Message::user_text("hi"), Message::assistant_text("ok")]
    );
}

#[test]
fn assistant_blocks_and_tool_results_map_field_by_field() {
    let context = r#"{"messages":[
        {"role":"assistant","stopReason":"toolUse","usage":{},"content":[
            {"type":"thinking","thinking":"hm","thinkingSignature":"sig"},
            {"type":"thinking","thinking":"","redacted":true},
            {"type":"text","text":"calling","textSignature":"x"},
            {"type":"toolCall","id":"c1","name":"bash","arguments":{"command":"ls"}},
            {"type":"toolCall","id":"c2","name":"ls"}]},
        {"role":"toolResult","toolCallId":"c1","toolName":"bash","isError":true,
         "content":[{"type":"text","text":"boom"}],"details":{"exit":1}},
        {"role":"toolResult","toolCallId":"c2","toolName":"ls","content":null}
    ]}"#;
    let conversation = conversation_from_json(context).unwrap();
    let expected = Conversation::default()
        .with_message(Message::Assistant {
            content: vec![
                AssistantContent::Thinking {
                    text: "hm".into(),
                    signature: Some("sig".into()),
                },
                AssistantContent::Thinking {
                    text: String::new(),
                    signature: None,
                },
                AssistantContent::Text {
                    text: "calling".into(),
                },
                AssistantContent::ToolCall(ToolCall::new("c1", "bash", json!({"command": "ls"}))),
                AssistantContent::ToolCall(ToolCall::new("c2", "ls", json!({}))),
            ],
        })
        .with_message(Message::ToolResult(ToolResult::text(
            "c1", "bash", "boom", true,
        )))
        .with_message(Message::ToolResult({
            let mut empty = ToolResult::text("c2", "ls", "", false);
            empty.content.clear();
            empty
        }));
    assert_eq!(conversation, expected);
}

#[test]
fn an_unknown_role_is_a_local_error_naming_the_tested_pi_versions() {
    let error = conversation_from_json(
        r#"{"messages":[{"role":"user","content":"a"},{"role":"narrator","content":"b"}]}"#,
    )
    .unwrap_err();
    assert_eq!(
        error,
        CompatError::UnknownRole {
            index: 1,
            role: "narrator".into()
        }
    );
    let info = ErrorInfo::from(error);
    assert_eq!(info.kind, ErrorKind::Local);
    assert!(info.message.contains("1.6.0"), "{}", info.message);
}

#[test]
fn unknown_blocks_are_errors_not_dropped() {
    let cases = [
        (
            r#"{"messages":[{"role":"user","content":[{"type":"audio","data":""}]}]}"#,
            "user",
            "audio",
        ),
        (
            r#"{"messages":[{"role":"assistant","content":[{"type":"image","data":"","mimeType":"image/png"}]}]}"#,
            "assistant",
            "image",
        ),
        (
            r#"{"messages":[{"role":"toolResult","toolCallId":"c","toolName":"t","content":[{"type":"toolCall"}]}]}"#,
            "toolResult",
            "toolCall",
        ),
        (
            r#"{"messages":[{"role":"system","content":[{"type":"image","data":"","mimeType":"image/png"}]}]}"#,
            "system",
            "image",
        ),
    ];
    for (context, role, block_type) in cases {
        let error = conversation_from_json(context).unwrap_err();
        assert_eq!(
            error,
            CompatError::UnknownBlock {
                index: 0,
                role,
                block_type: block_type.into()
            }
        );
    }
}

#[test]
fn malformed_contexts_are_classified_errors() {
    let missing_messages = conversation_from_json(r#"{"systemPrompt":"x"}"#).unwrap_err();
    assert!(
        matches!(
            missing_messages,
            CompatError::Malformed {
                what: "context",
                ..
            }
        ),
        "{missing_messages}"
    );
    assert!(matches!(
        conversation_from_json("not json").unwrap_err(),
        CompatError::Malformed { .. }
    ));
    assert!(matches!(
        conversation_from_value(&json!([1, 2])).unwrap_err(),
        CompatError::Malformed { .. }
    ));

    let cases = [
        (
            r#"{"messages":[{"role":"toolResult","toolName":"t","content":[]}]}"#,
            "toolResult",
            "toolCallId",
        ),
        (
            r#"{"messages":[{"role":"toolResult","toolCallId":"c","content":[]}]}"#,
            "toolResult",
            "toolName",
        ),
        (
            r#"{"messages":[{"role":"assistant","content":[{"type":"toolCall","name":"x"}]}]}"#,
            "assistant",
            "id",
        ),
        (
            r#"{"messages":[{"role":"user","content":[{"text":"no type"}]}]}"#,
            "user",
            "type",
        ),
        (
            r#"{"messages":[{"role":"user","content":[{"type":"text"}]}]}"#,
            "user",
            "text",
        ),
        (
            r#"{"messages":[{"role":"user","content":42}]}"#,
            "user",
            "content",
        ),
        (
            r#"{"messages":[{"role":"user","content":[{"type":"image","data":"AA=="}]}]}"#,
            "user",
            "mimeType",
        ),
    ];
    for (context, role, field) in cases {
        assert_eq!(
            conversation_from_json(context).unwrap_err(),
            CompatError::MissingField {
                index: 0,
                role,
                field
            }
        );
    }
    let bad_image =
        conversation_from_json(r#"{"messages":[{"role":"user","content":[{"type":"image","mimeType":"image/png","data":"***"}]}]}"#)
            .unwrap_err();
    assert!(
        matches!(bad_image, CompatError::InvalidImage { index: 0, .. }),
        "{bad_image}"
    );
}

// --- IR events → pi events -------------------------------------------------------------------

fn mapper() -> EventMapper {
    EventMapper::new(
        ModelInfo::new("cursor-agent", "cursor", "auto")
            .with_cost(CostRates::new(1.0, 2.0, 0.5, 1.5)),
        42,
    )
}

fn run(mapper: &mut EventMapper, events: Vec<Event>) -> Vec<Value> {
    let mut out: Vec<Value> = events
        .into_iter()
        .flat_map(|event| mapper.map(event))
        .collect();
    out.extend(mapper.finish());
    out
}

fn types(events: &[Value]) -> Vec<&str> {
    events
        .iter()
        .map(|event| event["type"].as_str().unwrap())
        .collect()
}

#[test]
fn content_index_and_partial_stay_consistent_across_block_switches() {
    let mut mapper = mapper();
    let events = run(
        &mut mapper,
        vec![
            Event::ThinkingDelta { text: "a".into() },
            Event::ThinkingDelta { text: "b".into() },
            Event::TextDelta { text: "x".into() },
            Event::ToolCall(ToolCall::new("c1", "bash", json!({"command": "ls"}))),
            Event::TextDelta { text: "y".into() },
            Event::Done {
                reason: StopReason::ToolUse,
            },
        ],
    );
    for event in &events {
        let partial = event
            .get("partial")
            .or_else(|| event.get("message"))
            .unwrap();
        if let Some(index) = event["contentIndex"].as_u64() {
            let blocks = partial["content"].as_array().unwrap();
            assert!((index as usize) < blocks.len(), "{event}");
        }
        assert_eq!(partial["timestamp"], json!(42));
        assert_eq!(partial["provider"], json!("cursor"));
    }
    assert_eq!(
        types(&events),
        [
            "start",
            "thinking_start",
            "thinking_delta",
            "thinking_delta",
            "thinking_end",
            "text_start",
            "text_delta",
            "text_end",
            "toolcall_start",
            "toolcall_delta",
            "toolcall_end",
            "text_start",
            "text_delta",
            "text_end",
            "done"
        ]
    );
    let done = events.last().unwrap();
    assert_eq!(done["reason"], json!("toolUse"));
    assert_eq!(done["message"]["stopReason"], json!("toolUse"));
    assert_eq!(
        done["message"]["content"],
        json!([{"type": "thinking", "thinking": "ab"}, {"type": "text", "text": "x"},
               {"type": "toolCall", "id": "c1", "name": "bash", "arguments": {"command": "ls"}},
               {"type": "text", "text": "y"}])
    );
    assert_eq!(events[4]["content"], json!("ab"));
    assert_eq!(
        events[10]["toolCall"]["arguments"],
        json!({"command": "ls"})
    );
    assert_eq!(events[9]["delta"], json!(r#"{"command":"ls"}"#));
}

#[test]
fn usage_updates_the_partial_with_totals_and_cost_but_emits_nothing() {
    let mut mapper = mapper();
    let start = mapper.map(Event::TextDelta { text: "hi".into() });
    let mut usage = Usage::default();
    usage.input_tokens = 1_000_000;
    usage.output_tokens = 10;
    usage.reasoning_tokens = 4;
    assert!(mapper.map(Event::Usage(usage)).is_empty());
    assert_eq!(start[0]["partial"]["usage"]["totalTokens"], json!(0));
    let done = mapper.map(Event::Done {
        reason: StopReason::Stop,
    });
    let reported = &done.last().unwrap()["message"]["usage"];
    assert_eq!(reported["input"], json!(1_000_000));
    assert_eq!(reported["totalTokens"], json!(1_000_010));
    assert_eq!(reported["reasoning"], json!(4));
    assert_eq!(reported["cost"]["input"], json!(1.0));
    assert_eq!(mapper.usage(), usage);
}

#[test]
fn reset_empties_the_partial_and_numbering_starts_again() {
    let mut mapper = mapper();
    let events = run(
        &mut mapper,
        vec![
            Event::TextDelta {
                text: "stale".into(),
            },
            Event::Reset,
            Event::TextDelta {
                text: "fresh".into(),
            },
            Event::Done {
                reason: StopReason::Stop,
            },
        ],
    );
    assert_eq!(
        types(&events),
        [
            "start",
            "text_start",
            "text_delta",
            "text_start",
            "text_delta",
            "text_end",
            "done"
        ]
    );
    assert_eq!(events[3]["contentIndex"], json!(0));
    assert_eq!(
        events[3]["partial"]["content"],
        json!([{"type": "text", "text": ""}])
    );
    assert_eq!(
        events[6]["message"]["content"],
        json!([{"type": "text", "text": "fresh"}])
    );
}

#[test]
fn an_error_before_any_output_skips_start_and_carries_the_next_step() {
    let mut mapper = mapper();
    let events = run(
        &mut mapper,
        vec![Event::Error(ErrorInfo::new(
            ErrorKind::Auth,
            "token expired",
            cursor_proto::ir::NextStep::Login,
        ))],
    );
    assert_eq!(types(&events), ["error"]);
    assert_eq!(events[0]["reason"], json!("error"));
    assert_eq!(events[0]["error"]["stopReason"], json!("error"));
    let message = events[0]["error"]["errorMessage"].as_str().unwrap();
    assert!(
        message.contains("token expired") && message.contains("run /login cursor"),
        "{message}"
    );
}

#[test]
fn abort_ends_with_reason_aborted_and_keeps_streamed_content() {
    let mut mapper = mapper();
    let events = run(
        &mut mapper,
        vec![Event::TextDelta { text: "par".into() }, Event::Aborted],
    );
    assert_eq!(
        types(&events),
        ["start", "text_start", "text_delta", "error"]
    );
    let error = &events[3];
    assert_eq!(error["reason"], json!("aborted"));
    assert_eq!(error["error"]["stopReason"], json!("aborted"));
    assert_eq!(
        error["error"]["content"],
        json!([{"type": "text", "text": "par"}])
    );
    assert!(error["error"]["errorMessage"].is_string());
}

#[test]
fn exactly_one_final_event_even_if_the_source_keeps_talking_or_stops_early() {
    let mut mapper = mapper();
    let events = run(
        &mut mapper,
        vec![
            Event::Done {
                reason: StopReason::Length,
            },
            Event::TextDelta {
                text: "late".into(),
            },
            Event::Aborted,
        ],
    );
    assert_eq!(types(&events), ["start", "done"]);
    assert_eq!(events[1]["reason"], json!("length"));
    assert!(mapper.is_finished());

    let mut early = self::mapper();
    let events = run(&mut early, vec![Event::TextDelta { text: "cut".into() }]);
    assert_eq!(
        types(&events),
        ["start", "text_start", "text_delta", "error"]
    );
    assert_eq!(events[3]["reason"], json!("error"));
}

#[test]
fn empty_deltas_open_no_blocks() {
    let mut mapper = mapper();
    let events = run(
        &mut mapper,
        vec![
            Event::TextDelta {
                text: String::new(),
            },
            Event::Done {
                reason: StopReason::Stop,
            },
        ],
    );
    assert_eq!(types(&events), ["start", "done"]);
    assert_eq!(events[1]["message"]["content"], json!([]));
}
