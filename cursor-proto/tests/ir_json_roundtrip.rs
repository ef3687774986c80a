//! Property tests: every IR value survives a JSON round trip unchanged.

use cursor_proto::ir::{
    AssistantContent, Conversation, ErrorInfo, ErrorKind, Event, Image, Message, NextStep,
    StopReason, Tool, ToolCall, ToolResult, ToolResultContent, Usage, UserContent, Warning,
    WarningCode,
};
use proptest::prelude::*;
use serde_json::{Value, json};

fn json_leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        "\\PC{0,12}".prop_map(Value::String),
    ]
}

fn json_object() -> impl Strategy<Value = Value> {
    let value = json_leaf().prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-z_]{1,8}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    });
    prop::collection::btree_map("[a-z_]{1,8}", value, 0..4)
        .prop_map(|m| Value::Object(m.into_iter().collect()))
}

fn image() -> impl Strategy<Value = Image> {
    (
        prop_oneof![Just("image/png"), Just("image/jpeg"), Just("image/webp")],
        prop::collection::vec(any::<u8>(), 0..64),
    )
        .prop_map(|(mime, data)| Image::new(mime, data))
}

fn tool_call() -> impl Strategy<Value = ToolCall> {
    ("[a-z0-9]{1,10}", "[a-z_]{1,12}", json_object())
        .prop_map(|(id, name, args)| ToolCall::new(id, name, args))
}

fn message() -> impl Strategy<Value = Message> {
    let user_block = prop_oneof![
        "\\PC{0,40}".prop_map(|text| UserContent::Text { text }),
        image().prop_map(UserContent::Image),
    ];
    let assistant_block = prop_oneof![
        "\\PC{0,40}".prop_map(|text| AssistantContent::Text { text }),
        ("\\PC{0,40}", proptest::option::of("[A-Za-z0-9+/]{0,16}"))
            .prop_map(|(text, signature)| AssistantContent::Thinking { text, signature }),
        tool_call().prop_map(AssistantContent::ToolCall),
    ];
    let result_block = prop_oneof![
        "\\PC{0,40}".prop_map(|text| ToolResultContent::Text { text }),
        image().prop_map(ToolResultContent::Image),
    ];
    prop_oneof![
        prop::collection::vec(user_block, 0..4).prop_map(|content| Message::User { content }),
        prop::collection::vec(assistant_block, 0..4)
            .prop_map(|content| Message::Assistant { content }),
        (
            "[a-z0-9]{1,10}",
            "[a-z_]{1,12}",
            prop::collection::vec(result_block, 0..3),
            any::<bool>()
        )
            .prop_map(|(id, name, content, is_error)| {
                let mut result = ToolResult::text(id, name, "", is_error);
                result.content = content;
                Message::ToolResult(result)
            }),
    ]
}

fn conversation() -> impl Strategy<Value = Conversation> {
    (
        "\\PC{0,60}",
        prop::collection::vec(message(), 0..6),
        prop::collection::vec(("[a-z_]{1,12}", "\\PC{0,30}", json_object()), 0..4),
    )
        .prop_map(|(system, messages, tools)| {
            let mut conversation = Conversation::new(system);
            conversation.messages = messages;
            conversation.tools = tools
                .into_iter()
                .map(|(n, d, p)| Tool::new(n, d, p))
                .collect();
            conversation
        })
}

fn event() -> impl Strategy<Value = Event> {
    let kind = prop_oneof![
        Just(ErrorKind::Auth),
        Just(ErrorKind::Network),
        Just(ErrorKind::ProtocolDrift),
        Just(ErrorKind::RemoteRefusal),
        Just(ErrorKind::Local),
    ];
    let reason = prop_oneof![
        Just(StopReason::Stop),
        Just(StopReason::ToolUse),
        Just(StopReason::Length)
    ];
    prop_oneof![
        "\\PC{0,20}".prop_map(|text| Event::TextDelta { text }),
        "\\PC{0,20}".prop_map(|text| Event::ThinkingDelta { text }),
        tool_call().prop_map(Event::ToolCall),
        (any::<u32>(), any::<u32>(), any::<u32>(), any::<bool>()).prop_map(|(i, o, c, est)| {
            let mut usage = Usage::default();
            usage.input_tokens = i.into();
            usage.output_tokens = o.into();
            usage.cache_read_tokens = c.into();
            usage.input_estimated = est;
            Event::Usage(usage)
        }),
        Just(Event::Reset),
        reason.prop_map(|reason| Event::Done { reason }),
        (
            kind,
            "\\PC{0,20}",
            next_step(),
            proptest::option::of(100u16..600)
        )
            .prop_map(|(k, m, n, status)| Event::Error(
                ErrorInfo::new(k, m, n).with_wire(status.map(|_| "unavailable"), status)
            )),
        ("\\PC{0,20}", proptest::option::of(next_step()))
            .prop_map(|(m, n)| Event::Warning(Warning::new(WarningCode::HandleNotSaved, m, n))),
        Just(Event::Aborted),
    ]
}

fn next_step() -> impl Strategy<Value = NextStep> {
    prop_oneof![
        Just(NextStep::Login),
        Just(NextStep::Retry),
        Just(NextStep::UpdateCrates),
        Just(NextStep::PickModel),
        "\\PC{0,20}".prop_map(|tool| NextStep::UseTool { tool }),
        "\\PC{0,20}".prop_map(NextStep::fix_input),
        "\\PC{0,20}".prop_map(NextStep::host_bug),
    ]
}

proptest! {
    #[test]
    fn conversation_survives_json_round_trip(conversation in conversation()) {
        let text = serde_json::to_string(&conversation).unwrap();
        prop_assert_eq!(serde_json::from_str::<Conversation>(&text).unwrap(), conversation);
    }

    #[test]
    fn event_survives_json_round_trip(event in event()) {
        let text = serde_json::to_string(&event).unwrap();
        prop_assert_eq!(serde_json::from_str::<Event>(&text).unwrap(), event);
    }
}
