//! Tool calls assembled from `tool_call_part` chunks.
//!
//! A call streams as several parts: the first names the call and the tool, later ones append
//! to the argument text, and the last is marked `is_complete`. Later parts may repeat the id
//! or carry only `tool_index`, so a call is keyed by its index when there is one.
//!
//! Two shapes of the last part are accepted (docs/PROTOCOL.md §6.4):
//!
//! - **live**: the last part carries the *whole* argument JSON again, after deltas that already
//!   streamed it. A last part whose arguments parse alone as a JSON object wins; the deltas
//!   before it must then parse to the same object (or be empty).
//! - **older**: the last part carries only the final chunk, and the arguments are the
//!   concatenation of every part.
//!
//! The two cannot be confused: a non-empty prefix followed by a complete object is never one
//! JSON object.
//!
//! What was streamed and what the last part says must agree: a part that renames the call's id
//! or tool, a part for a call that already ended, or a second call reusing an id is protocol
//! drift. The turn fails instead of handing the host a call whose id, name or arguments differ
//! from the ones streamed.

use cursor_proto::aiserver::v1::InferenceToolCallStreamPart;
use cursor_proto::ir::ToolCall;

use crate::InferenceError;

/// Which call a part belongs to.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Key {
    Index(i32),
    Id(String),
}

#[derive(Debug)]
struct Partial {
    key: Key,
    id: String,
    name: String,
    args: String,
}

/// The calls still streaming.
#[derive(Debug, Default)]
pub(crate) struct ToolCallAssembler {
    open: Vec<Partial>,
    /// The key and id of every call already handed out, so a late part cannot change it.
    done: Vec<(Key, String)>,
}

impl ToolCallAssembler {
    /// Adds a part; returns the call once its last part arrived.
    ///
    /// # Errors
    ///
    /// Drift when a part names no call, or a completed call has no id or name, or its
    /// arguments are not a JSON object.
    pub(crate) fn push(
        &mut self,
        part: InferenceToolCallStreamPart,
    ) -> Result<Option<ToolCall>, InferenceError> {
        let key = match (part.tool_index, part.tool_call_id.is_empty()) {
            (Some(index), _) => Key::Index(index),
            (None, false) => Key::Id(part.tool_call_id.clone()),
            (None, true) => {
                return Err(InferenceError::drift(
                    "a tool_call_part names neither a call id nor an index",
                ));
            }
        };
        if let Some((_, id)) = self.done.iter().find(|(done, _)| *done == key) {
            return Err(InferenceError::drift(format!(
                "a tool_call_part for call {id} arrived after its last part"
            )));
        }
        let position = match self.open.iter().position(|p| p.key == key) {
            Some(position) => position,
            None => {
                self.open.push(Partial {
                    key,
                    id: String::new(),
                    name: String::new(),
                    args: String::new(),
                });
                self.open.len() - 1
            }
        };
        let partial = &mut self.open[position];
        agree(&mut partial.id, part.tool_call_id, "id")?;
        agree(&mut partial.name, part.tool_name, "tool name")?;
        if !part.is_complete {
            partial.args.push_str(&part.args);
            return Ok(None);
        }
        let mut partial = self.open.remove(position);
        let whole = whole_object(&part.args);
        if self.done.iter().any(|(_, id)| *id == partial.id) {
            return Err(InferenceError::drift(format!(
                "two tool calls share the id {}",
                partial.id
            )));
        }
        self.done.push((partial.key.clone(), partial.id.clone()));
        match whole {
            Some(whole) => reconcile(partial, whole).map(Some),
            None => {
                partial.args.push_str(&part.args);
                finish(partial).map(Some)
            }
        }
    }

    /// Whether a call is still waiting for its last part.
    pub(crate) fn has_open_calls(&self) -> bool {
        !self.open.is_empty()
    }
}

/// Records `new` as the call's `what` (id or tool name), which a part may repeat but not change.
fn agree(known: &mut String, new: String, what: &str) -> Result<(), InferenceError> {
    if new.is_empty() || *known == new {
        return Ok(());
    }
    if known.is_empty() {
        *known = new;
        return Ok(());
    }
    Err(InferenceError::drift(format!(
        "a tool call's {what} changed from {known:?} to {new:?} between its parts"
    )))
}

/// The last part's arguments, when they parse alone as a JSON object (the live shape).
fn whole_object(args: &str) -> Option<serde_json::Value> {
    let text = args.trim();
    if text.is_empty() {
        return None;
    }
    serde_json::from_str::<serde_json::Value>(text)
        .ok()
        .filter(serde_json::Value::is_object)
}

/// The live shape: the last part's `whole` arguments stand, provided the deltas streamed
/// before it (if any) say the same.
fn reconcile(partial: Partial, whole: serde_json::Value) -> Result<ToolCall, InferenceError> {
    let streamed = partial.args.trim();
    if !streamed.is_empty() {
        let agrees = serde_json::from_str::<serde_json::Value>(streamed)
            .is_ok_and(|streamed| streamed == whole);
        if !agrees {
            return Err(InferenceError::drift(format!(
                "the last part of tool call {} ({}) carries arguments that disagree with the \
                 streamed deltas",
                partial.id, partial.name
            )));
        }
    }
    named(&partial)?;
    Ok(ToolCall::new(partial.id, partial.name, whole))
}

fn named(partial: &Partial) -> Result<(), InferenceError> {
    if partial.id.is_empty() || partial.name.is_empty() {
        return Err(InferenceError::drift(format!(
            "a completed tool call lacks its id or tool name (id {:?}, name {:?})",
            partial.id, partial.name
        )));
    }
    Ok(())
}

fn finish(partial: Partial) -> Result<ToolCall, InferenceError> {
    named(&partial)?;
    let text = partial.args.trim();
    let arguments = if text.is_empty() {
        serde_json::Value::Object(serde_json::Map::new())
    } else {
        serde_json::from_str(text).map_err(|error| {
            InferenceError::drift(format!(
                "the arguments of tool call {} ({}) are not JSON: {error}",
                partial.id, partial.name
            ))
        })?
    };
    if !arguments.is_object() {
        return Err(InferenceError::drift(format!(
            "the arguments of tool call {} ({}) are not a JSON object",
            partial.id, partial.name
        )));
    }
    Ok(ToolCall::new(partial.id, partial.name, arguments))
}

#[cfg(test)]
mod tests {
    use cursor_proto::ir::{Classify as _, ErrorKind};
    use serde_json::json;

    use super::*;

    fn part(
        id: &str,
        name: &str,
        args: &str,
        complete: bool,
        index: Option<i32>,
    ) -> InferenceToolCallStreamPart {
        InferenceToolCallStreamPart {
            tool_call_id: id.into(),
            tool_name: name.into(),
            args: args.into(),
            is_complete: complete,
            tool_index: index,
        }
    }

    #[test]
    fn chunks_join_until_complete_then_parse() {
        let mut calls = ToolCallAssembler::default();
        assert_eq!(
            calls
                .push(part("c1", "read", "{\"pa", false, None))
                .unwrap(),
            None
        );
        assert!(calls.has_open_calls());
        assert_eq!(
            calls
                .push(part("c1", "", "th\": \"a\"", false, None))
                .unwrap(),
            None
        );
        let call = calls
            .push(part("c1", "", "}", true, None))
            .unwrap()
            .unwrap();
        assert_eq!(call, ToolCall::new("c1", "read", json!({"path": "a"})));
        assert!(!calls.has_open_calls());
    }

    #[test]
    fn interleaved_calls_are_told_apart_by_index() {
        let mut calls = ToolCallAssembler::default();
        calls.push(part("a", "one", "{", false, Some(0))).unwrap();
        calls
            .push(part("b", "two", "{\"x\":", false, Some(1)))
            .unwrap();
        let two = calls
            .push(part("", "", "1}", true, Some(1)))
            .unwrap()
            .unwrap();
        let one = calls
            .push(part("", "", "}", true, Some(0)))
            .unwrap()
            .unwrap();
        assert_eq!(two, ToolCall::new("b", "two", json!({"x": 1})));
        assert_eq!(one, ToolCall::new("a", "one", json!({})));
    }

    #[test]
    fn empty_arguments_are_an_empty_object() {
        let mut calls = ToolCallAssembler::default();
        let call = calls
            .push(part("c", "ls", "", true, None))
            .unwrap()
            .unwrap();
        assert_eq!(call.arguments, json!({}));
    }

    #[test]
    fn malformed_arguments_are_protocol_drift() {
        let mut calls = ToolCallAssembler::default();
        let error = calls
            .push(part("c", "ls", "{\"a\":", true, None))
            .unwrap_err();
        assert_eq!(error.kind(), ErrorKind::ProtocolDrift);
        let error = calls.push(part("d", "ls", "[1]", true, None)).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::ProtocolDrift);
    }

    #[test]
    fn a_part_without_id_or_index_or_a_nameless_call_is_drift() {
        let mut calls = ToolCallAssembler::default();
        assert!(calls.push(part("", "ls", "{}", true, None)).is_err());
        assert!(calls.push(part("c", "", "{}", true, None)).is_err());
    }

    fn assert_drift(result: Result<Option<ToolCall>, InferenceError>, says: &str) {
        let error = result.unwrap_err();
        assert_eq!(error.kind(), ErrorKind::ProtocolDrift, "{error}");
        assert!(error.to_string().contains(says), "{error}");
    }

    #[test]
    fn a_last_part_renaming_the_call_id_or_tool_is_drift_not_a_call() {
        let mut calls = ToolCallAssembler::default();
        calls.push(part("c1", "read", "{", false, Some(0))).unwrap();
        assert_drift(calls.push(part("c2", "", "}", true, Some(0))), "id changed");
        let mut calls = ToolCallAssembler::default();
        calls.push(part("c1", "read", "{", false, Some(0))).unwrap();
        assert_drift(
            calls.push(part("c1", "write", "}", true, Some(0))),
            "tool name changed",
        );
    }

    #[test]
    fn repeating_the_same_id_and_name_on_every_part_is_fine() {
        let mut calls = ToolCallAssembler::default();
        calls.push(part("c1", "read", "{", false, Some(0))).unwrap();
        let call = calls.push(part("c1", "read", "}", true, Some(0))).unwrap();
        assert_eq!(call, Some(ToolCall::new("c1", "read", json!({}))));
    }

    #[test]
    fn a_last_part_restating_the_arguments_differently_is_drift() {
        let mut calls = ToolCallAssembler::default();
        calls
            .push(part("c1", "read", "{\"path\":\"a\"}", false, Some(0)))
            .unwrap();
        // The last part carries the whole arguments again, and differently.
        assert_drift(
            calls.push(part("c1", "read", "{\"path\":\"b\"}", true, Some(0))),
            "disagree with the streamed deltas",
        );
        // Deltas that are not even JSON cannot agree with a whole last part.
        let mut calls = ToolCallAssembler::default();
        calls
            .push(part("c1", "read", "{\"pa", false, Some(0)))
            .unwrap();
        assert_drift(
            calls.push(part("c1", "read", "{\"path\":\"a\"}", true, Some(0))),
            "disagree with the streamed deltas",
        );
    }

    #[test]
    fn live_shape_whole_arguments_in_the_last_part_with_the_id_on_every_part() {
        let mut calls = ToolCallAssembler::default();
        calls
            .push(part("c1", "read", "{\"pa", false, Some(0)))
            .unwrap();
        calls
            .push(part("c1", "", "th\": \"a\"}", false, Some(0)))
            .unwrap();
        let call = calls
            .push(part("c1", "", "{\"path\": \"a\"}", true, Some(0)))
            .unwrap();
        assert_eq!(
            call,
            Some(ToolCall::new("c1", "read", json!({"path": "a"})))
        );
        // Key order and spacing may differ between the deltas and the last part.
        let mut calls = ToolCallAssembler::default();
        calls
            .push(part("c2", "edit", "{\"a\":1, \"b\":[2]}", false, None))
            .unwrap();
        let call = calls
            .push(part("c2", "edit", "{\"b\":[2],\"a\":1}", true, None))
            .unwrap();
        assert_eq!(
            call,
            Some(ToolCall::new("c2", "edit", json!({"a": 1, "b": [2]})))
        );
    }

    #[test]
    fn live_shape_with_only_the_last_part_takes_its_arguments() {
        let mut calls = ToolCallAssembler::default();
        calls.push(part("c1", "ls", "", false, Some(0))).unwrap();
        let call = calls
            .push(part("c1", "ls", "{\"dir\":\".\"}", true, Some(0)))
            .unwrap();
        assert_eq!(call, Some(ToolCall::new("c1", "ls", json!({"dir": "."}))));
    }

    #[test]
    fn a_part_after_the_last_one_or_a_reused_id_is_drift() {
        let mut calls = ToolCallAssembler::default();
        calls.push(part("c1", "read", "{}", true, Some(0))).unwrap();
        assert_drift(
            calls.push(part("", "", "{}", true, Some(0))),
            "after its last part",
        );
        let mut calls = ToolCallAssembler::default();
        calls.push(part("c1", "read", "{}", true, Some(0))).unwrap();
        assert_drift(
            calls.push(part("c1", "read", "{}", true, Some(1))),
            "share the id",
        );
    }

    mod splits {
        use proptest::prelude::*;
        use serde_json::{Map, Value};

        use super::*;

        fn leaf() -> impl Strategy<Value = Value> {
            prop_oneof![
                Just(Value::Null),
                any::<bool>().prop_map(Value::Bool),
                any::<i64>().prop_map(Value::from),
                "[a-z\"\\\\{}\\[\\]:, é日\n]{0,12}".prop_map(Value::String),
            ]
        }

        fn value() -> impl Strategy<Value = Value> {
            leaf().prop_recursive(3, 24, 4, |inner| {
                prop_oneof![
                    prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                    prop::collection::btree_map("[a-z_]{1,6}", inner, 0..4)
                        .prop_map(|map| Value::Object(map.into_iter().collect())),
                ]
            })
        }

        fn arguments() -> impl Strategy<Value = Map<String, Value>> {
            prop::collection::btree_map("[a-z_]{1,6}", value(), 0..5)
                .prop_map(|map| map.into_iter().collect())
        }

        /// `text` cut at the char boundaries nearest to `cuts` (fractions of its length).
        fn split(text: &str, cuts: &[f64]) -> Vec<String> {
            let mut at: Vec<usize> = cuts
                .iter()
                .map(|f| {
                    let mut i = (f * text.len() as f64) as usize;
                    while !text.is_char_boundary(i) {
                        i -= 1;
                    }
                    i
                })
                .collect();
            at.sort_unstable();
            let mut chunks = Vec::new();
            let mut from = 0;
            for i in at.into_iter().chain([text.len()]) {
                chunks.push(text[from..i].to_owned());
                from = i;
            }
            chunks
        }

        fn assemble(parts: Vec<InferenceToolCallStreamPart>) -> Result<ToolCall, InferenceError> {
            let mut calls = ToolCallAssembler::default();
            let mut out = None;
            for part in parts {
                if let Some(call) = calls.push(part)? {
                    out = Some(call);
                }
            }
            Ok(out.expect("the last part completes the call"))
        }

        proptest! {
            #[test]
            fn older_shape_any_split_assembles_the_arguments(
                args in arguments(),
                cuts in prop::collection::vec(0.0f64..=1.0, 0..6),
                index in prop::option::of(0i32..3),
            ) {
                let text = serde_json::to_string(&args).unwrap();
                let chunks = split(&text, &cuts);
                let last = chunks.len() - 1;
                let parts = chunks.iter().enumerate().map(|(i, chunk)| {
                    let first = i == 0;
                    part(if first || index.is_none() { "c1" } else { "" },
                         if first { "tool" } else { "" }, chunk, i == last, index)
                }).collect();
                let call = assemble(parts).unwrap();
                prop_assert_eq!(call, ToolCall::new("c1", "tool", Value::Object(args)));
            }

            #[test]
            fn live_shape_any_split_then_the_whole_assembles_the_arguments(
                args in arguments(),
                cuts in prop::collection::vec(0.0f64..=1.0, 0..6),
                pretty in any::<bool>(),
                index in prop::option::of(0i32..3),
            ) {
                let text = serde_json::to_string(&args).unwrap();
                let whole = if pretty {
                    serde_json::to_string_pretty(&args).unwrap()
                } else {
                    text.clone()
                };
                let mut parts: Vec<_> = split(&text, &cuts).iter().enumerate().map(|(i, chunk)| {
                    part("c1", if i == 0 { "tool" } else { "" }, chunk, false, index)
                }).collect();
                parts.push(part("c1", "", &whole, true, index));
                let call = assemble(parts).unwrap();
                prop_assert_eq!(call, ToolCall::new("c1", "tool", Value::Object(args)));
            }

            #[test]
            fn live_shape_a_last_part_that_disagrees_is_drift(
                args in arguments(),
                cuts in prop::collection::vec(0.0f64..=1.0, 0..6),
            ) {
                let text = serde_json::to_string(&args).unwrap();
                let mut other = args;
                other.insert("zz_extra".into(), Value::Bool(true));
                let mut parts: Vec<_> = split(&text, &cuts).iter().enumerate().map(|(i, chunk)| {
                    part("c1", if i == 0 { "tool" } else { "" }, chunk, false, Some(0))
                }).collect();
                parts.push(part("c1", "", &serde_json::to_string(&other).unwrap(), true, Some(0)));
                let error = assemble(parts).unwrap_err();
                prop_assert_eq!(error.kind(), ErrorKind::ProtocolDrift);
                prop_assert!(error.to_string().contains("disagree"), "{}", error);
            }
        }
    }
}
