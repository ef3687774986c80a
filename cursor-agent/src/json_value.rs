//! Conversions between JSON and `google.protobuf.Value`, the form MCP schemas and arguments take.

use prost_types::value::Kind;
use prost_types::{ListValue, Struct, Value};

/// JSON to a protobuf `Value` (tool schemas sent in `McpToolDefinition.input_schema`).
pub(crate) fn to_proto(json: &serde_json::Value) -> Value {
    let kind = match json {
        serde_json::Value::Null => Kind::NullValue(0),
        serde_json::Value::Bool(b) => Kind::BoolValue(*b),
        serde_json::Value::Number(n) => Kind::NumberValue(n.as_f64().unwrap_or(0.0)),
        serde_json::Value::String(s) => Kind::StringValue(s.clone()),
        serde_json::Value::Array(items) => Kind::ListValue(ListValue {
            values: items.iter().map(to_proto).collect(),
        }),
        serde_json::Value::Object(map) => Kind::StructValue(Struct {
            fields: map.iter().map(|(k, v)| (k.clone(), to_proto(v))).collect(),
        }),
    };
    Value { kind: Some(kind) }
}

/// A protobuf `Value` to JSON (MCP call arguments). Integral numbers become JSON integers so a
/// tool sees `3`, not `3.0`; non-finite numbers and unset values become `null`.
pub(crate) fn to_json(value: &Value) -> serde_json::Value {
    match &value.kind {
        None | Some(Kind::NullValue(_)) => serde_json::Value::Null,
        Some(Kind::BoolValue(b)) => serde_json::Value::Bool(*b),
        Some(Kind::NumberValue(n)) => number(*n),
        Some(Kind::StringValue(s)) => serde_json::Value::String(s.clone()),
        Some(Kind::ListValue(list)) => list.values.iter().map(to_json).collect(),
        Some(Kind::StructValue(s)) => serde_json::Value::Object(
            s.fields
                .iter()
                .map(|(k, v)| (k.clone(), to_json(v)))
                .collect(),
        ),
    }
}

fn number(n: f64) -> serde_json::Value {
    // 2^53: beyond it f64 no longer holds every integer, so keep the float form.
    const EXACT: f64 = 9_007_199_254_740_992.0;
    if n.fract() == 0.0 && n.abs() <= EXACT {
        #[allow(clippy::cast_possible_truncation)]
        return serde_json::Value::from(n as i64);
    }
    serde_json::Number::from_f64(n).map_or(serde_json::Value::Null, serde_json::Value::Number)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_round_trips_through_protobuf_values() {
        let schema = json!({
            "type": "object",
            "properties": {"command": {"type": "string"}, "n": {"type": "integer", "default": 3}},
            "required": ["command"],
            "nullable": null,
            "strict": true,
            "ratio": 0.5
        });
        assert_eq!(to_json(&to_proto(&schema)), schema);
    }

    #[test]
    fn unset_and_non_finite_values_become_null() {
        assert_eq!(to_json(&Value { kind: None }), json!(null));
        assert_eq!(
            to_json(&Value {
                kind: Some(Kind::NumberValue(f64::NAN))
            }),
            json!(null)
        );
        assert_eq!(
            to_json(&Value {
                kind: Some(Kind::NumberValue(1e300))
            }),
            json!(1e300)
        );
    }
}
