//! JSON values as protobuf `Struct`/`Value` (tool schemas, tool-call arguments, tool results).

use prost_types::{ListValue, Struct, Value, value::Kind};
use serde_json::Value as Json;

/// `value` as a protobuf `Value`. Numbers become doubles, as `Struct` has no integers.
pub(crate) fn to_value(value: &Json) -> Value {
    let kind = match value {
        Json::Null => Kind::NullValue(0),
        Json::Bool(b) => Kind::BoolValue(*b),
        Json::Number(n) => Kind::NumberValue(n.as_f64().unwrap_or(0.0)),
        Json::String(s) => Kind::StringValue(s.clone()),
        Json::Array(items) => Kind::ListValue(ListValue {
            values: items.iter().map(to_value).collect(),
        }),
        Json::Object(_) => Kind::StructValue(to_struct(value)),
    };
    Value { kind: Some(kind) }
}

/// `value` as a `Struct`: an object maps field by field; anything else is wrapped as
/// `{"value": …}` so no argument is ever dropped.
pub(crate) fn to_struct(value: &Json) -> Struct {
    match value {
        Json::Object(map) => Struct {
            fields: map.iter().map(|(k, v)| (k.clone(), to_value(v))).collect(),
        },
        other => Struct {
            fields: [("value".to_owned(), to_value(other))]
                .into_iter()
                .collect(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn objects_map_field_by_field_and_nest() {
        let s = to_struct(&json!({"a": [1, "x", null], "b": {"c": true}}));
        let Some(Kind::ListValue(list)) = &s.fields["a"].kind else {
            panic!("a is a list: {s:?}");
        };
        assert_eq!(list.values[0].kind, Some(Kind::NumberValue(1.0)));
        assert_eq!(list.values[2].kind, Some(Kind::NullValue(0)));
        let Some(Kind::StructValue(b)) = &s.fields["b"].kind else {
            panic!("b is a struct: {s:?}");
        };
        assert_eq!(b.fields["c"].kind, Some(Kind::BoolValue(true)));
    }

    #[test]
    fn a_non_object_is_wrapped_rather_than_dropped() {
        let s = to_struct(&json!("text"));
        assert_eq!(
            s.fields["value"].kind,
            Some(Kind::StringValue("text".into()))
        );
    }
}
