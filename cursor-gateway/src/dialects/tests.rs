//! Property tests of the three request parsers: whatever JSON a client sends, shaped like each
//! API or not, the answer is a translation or a 400, never a panic; and what translates is a
//! turn the engine can run (it ends with the user's input or tool results).

use cursor_agent::ir::{Conversation, Message};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

/// Any JSON value, a few levels deep.
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<u64>().prop_map(|n| json!(n)),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| json!(f)),
        "[a-z{}\\[\\]\":,\\\\é\\n ]{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::btree_map("[a-z_]{1,8}", inner, 0..4)
                .prop_map(|map| Value::Object(map.into_iter().collect())),
        ]
    })
}

/// One of `names`, or any string.
fn name_from(names: &'static [&'static str]) -> impl Strategy<Value = String> {
    prop_oneof![
        4 => proptest::sample::select(names).prop_map(str::to_owned),
        1 => "[a-z_]{0,10}",
    ]
}

/// An object with some of `keys`, each a plausible or an arbitrary value.
fn object_with(
    keys: &'static [&'static str],
    plausible: impl Strategy<Value = Value> + Clone,
) -> impl Strategy<Value = Value> {
    proptest::collection::vec(
        (
            proptest::sample::select(keys),
            prop_oneof![3 => plausible, 1 => any_json()],
        ),
        0..6,
    )
    .prop_map(|entries| {
        let mut map = Map::new();
        for (key, value) in entries {
            map.insert(key.to_owned(), value);
        }
        Value::Object(map)
    })
}

const BLOCK_TYPES: &[&str] = &[
    "text",
    "image",
    "image_url",
    "input_text",
    "output_text",
    "input_image",
    "tool_use",
    "tool_result",
    "thinking",
    "redacted_thinking",
    "document",
];
const BLOCK_KEYS: &[&str] = &[
    "type",
    "text",
    "source",
    "id",
    "name",
    "input",
    "tool_use_id",
    "content",
    "is_error",
    "thinking",
    "signature",
    "image_url",
];

fn block() -> impl Strategy<Value = Value> {
    let plausible = prop_oneof![
        name_from(BLOCK_TYPES).prop_map(Value::String),
        Just(json!({"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="})),
        Just(json!({"url": "data:image/png;base64,iVBORw0KGgo="})),
        Just(json!("data:image/png;base64,iVBORw0KGgo=")),
        Just(json!({"a": 1})),
        Just(json!("t1")),
        Just(json!([{"type": "text", "text": "r"}])),
    ];
    (name_from(BLOCK_TYPES), object_with(BLOCK_KEYS, plausible)).prop_map(|(kind, mut block)| {
        if let Value::Object(map) = &mut block {
            map.entry("type").or_insert(Value::String(kind));
        }
        block
    })
}

const ROLES: &[&str] = &["user", "assistant", "system", "developer", "tool"];

fn message() -> impl Strategy<Value = Value> {
    let content = prop_oneof![
        "[a-z ]{0,8}".prop_map(Value::String),
        proptest::collection::vec(block(), 0..5).prop_map(Value::Array),
        any_json(),
    ];
    (
        name_from(ROLES),
        content,
        proptest::option::of(any_json()),
        proptest::option::of("[a-z0-9]{0,4}"),
    )
        .prop_map(|(role, content, extra, call_id)| {
            let mut message = json!({"role": role, "content": content});
            if let Some(extra) = extra {
                message["tool_calls"] = json!([{"id": "t1", "function": {"name": "f", "arguments": extra.to_string()}}]);
            }
            if let Some(id) = call_id {
                message["tool_call_id"] = json!(id);
                message["type"] = json!("function_call_output");
                message["call_id"] = json!(id);
                message["output"] = json!("r");
            }
            message
        })
}

/// A request body: plausible fields of all three APIs, and arbitrary ones.
fn body() -> impl Strategy<Value = Value> {
    let messages = proptest::collection::vec(message(), 0..6);
    (
        messages,
        any_json(),
        any_json(),
        proptest::option::of(0u64..u64::MAX),
    )
        .prop_map(|(messages, extra, tools, max)| {
            let mut body = json!({
                "model": "composer-2.5",
                "messages": &messages,
                "input": &messages,
                "tools": tools,
                "tool_choice": extra,
            });
            if let Some(max) = max {
                body["max_tokens"] = json!(max);
                body["max_output_tokens"] = json!(max);
            }
            body
        })
}

/// A translated turn ends with the user's input or tool results, after at least one user
/// message.
fn runnable(conversation: &Conversation) -> bool {
    matches!(
        conversation.messages.last(),
        Some(Message::User { .. } | Message::ToolResult(_))
    ) && conversation
        .messages
        .iter()
        .any(|m| matches!(m, Message::User { .. }))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn any_body_is_translated_or_refused_never_a_panic(body in body()) {
        let bytes = body.to_string().into_bytes();
        if let Ok(conversation) = super::chat::translate_body(&bytes) {
            prop_assert!(runnable(&conversation), "chat: {body}");
        }
        if let Ok(conversation) = super::responses::translate_body(&bytes) {
            prop_assert!(runnable(&conversation), "responses: {body}");
        }
        for for_count in [false, true] {
            if let Ok(conversation) = super::anthropic::translate_body(&bytes, for_count) {
                prop_assert!(runnable(&conversation), "messages: {body}");
            }
        }
    }

    #[test]
    fn any_bytes_are_refused_never_a_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        let _ = super::chat::translate_body(&bytes);
        let _ = super::responses::translate_body(&bytes);
        let _ = super::anthropic::translate_body(&bytes, false);
        let _ = super::anthropic::translate_body(&bytes, true);
    }

    #[test]
    fn any_json_value_is_refused_or_translated_never_a_panic(value in any_json()) {
        let bytes = value.to_string().into_bytes();
        let _ = super::chat::translate_body(&bytes);
        let _ = super::responses::translate_body(&bytes);
        let _ = super::anthropic::translate_body(&bytes, true);
    }
}
