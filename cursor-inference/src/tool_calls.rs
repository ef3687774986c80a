//! Tool calls assembled from `tool_call_part` chunks.
//!
//! A call streams as several parts: the first names the call and the tool, later ones append
//! to the argument text, and the last is marked `is_complete`. Later parts may repeat the id
//! or carry only `tool_index`, so a call is keyed by its index when there is one.
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
        partial.args.push_str(&part.args);
        if !part.is_complete {
            return Ok(None);
        }
        let partial = self.open.remove(position);
        if self.done.iter().any(|(_, id)| *id == partial.id) {
            return Err(InferenceError::drift(format!(
                "two tool calls share the id {}",
                partial.id
            )));
        }
        self.done.push((partial.key.clone(), partial.id.clone()));
        finish(partial).map(Some)
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

fn finish(partial: Partial) -> Result<ToolCall, InferenceError> {
    if partial.id.is_empty() || partial.name.is_empty() {
        return Err(InferenceError::drift(format!(
            "a completed tool call lacks its id or tool name (id {:?}, name {:?})",
            partial.id, partial.name
        )));
    }
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
    fn a_final_record_restating_the_streamed_arguments_is_drift() {
        let mut calls = ToolCallAssembler::default();
        calls
            .push(part("c1", "read", "{\"path\":\"a\"}", false, Some(0)))
            .unwrap();
        // The last part carries the whole arguments again, and differently.
        assert_drift(
            calls.push(part("c1", "read", "{\"path\":\"b\"}", true, Some(0))),
            "not JSON",
        );
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
}
