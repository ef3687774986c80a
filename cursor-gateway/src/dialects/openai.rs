//! What the two OpenAI APIs (chat completions and Responses) share: `tool_choice`, a reply
//! format (`response_format`, `text.format`), and how each narrows or becomes the engine's.

use std::borrow::Cow;
use std::fmt;

use cursor_agent::ir::Tool;
use serde::Deserialize;
use serde::de::{self, IgnoredAny, MapAccess, Visitor};

use crate::ApiError;
use crate::dialects::content::Deferred;
use crate::engine::format::FormatSpec;

/// `tool_choice`: a mode (`auto`, `required`, `none`) or a named function, in the chat shape
/// (`{"type": "function", "function": {"name": N}}`) or the Responses shape (`{"type":
/// "function", "name": N}`).
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum ToolChoice {
    Mode(String),
    /// An object: its `type` and the function it names, if any.
    Named {
        kind: Option<String>,
        name: Option<String>,
    },
}

impl<'de> Deserialize<'de> for ToolChoice {
    fn deserialize<D: de::Deserializer<'de>>(input: D) -> Result<Self, D::Error> {
        struct Choice;

        #[derive(Deserialize)]
        struct Function {
            #[serde(default)]
            name: Option<String>,
        }

        impl<'de> Visitor<'de> for Choice {
            type Value = ToolChoice;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a tool_choice mode or object")
            }

            fn visit_str<E: de::Error>(self, mode: &str) -> Result<ToolChoice, E> {
                Ok(ToolChoice::Mode(mode.to_owned()))
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ToolChoice, A::Error> {
                let mut name = None;
                let mut kind = None;
                while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                    match key.as_ref() {
                        "type" => kind = map.next_value::<Option<String>>()?,
                        "function" => {
                            if let Some(function) = map.next_value::<Option<Function>>()? {
                                name = name.or(function.name);
                            }
                        }
                        "name" => name = map.next_value::<Option<String>>()?,
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(ToolChoice::Named { kind, name })
            }
        }

        input.deserialize_any(Choice)
    }
}

/// `response_format` (chat) and `text.format` (Responses): chat nests the schema under
/// `json_schema`, Responses puts its fields at the top level.
#[derive(Debug, Deserialize)]
pub(crate) struct ResponseFormat {
    #[serde(rename = "type")]
    pub(crate) kind: String,
    #[serde(default)]
    pub(crate) json_schema: Option<SchemaSpec>,
    #[serde(default)]
    pub(crate) name: Option<String>,
    #[serde(default)]
    pub(crate) schema: Option<Deferred>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct SchemaSpec {
    #[serde(default)]
    pub(crate) name: Option<String>,
    #[serde(default)]
    pub(crate) schema: Option<Deferred>,
}

impl ResponseFormat {
    /// The engine's format (`None` for plain text); `param` names the field in errors.
    pub(crate) fn spec(self, param: &'static str) -> Result<Option<FormatSpec>, ApiError> {
        let bad =
            |why: String| ApiError::bad_request("invalid_response_format", why).with_param(param);
        match self.kind.as_str() {
            "text" => Ok(None),
            "json_object" => Ok(Some(FormatSpec::JsonObject)),
            "json_schema" => {
                let (name, schema) = match self.json_schema {
                    Some(nested) => (nested.name, nested.schema),
                    None => (self.name, self.schema),
                };
                let schema =
                    schema.ok_or_else(|| bad(format!("{param}: json_schema needs a `schema`")))?;
                Ok(Some(FormatSpec::JsonSchema {
                    name,
                    schema: schema.0,
                }))
            }
            other => Err(bad(format!(
                "{param}: unknown type {other} (text, json_object and json_schema are)"
            ))),
        }
    }

    /// What its schema's tree will cost once built.
    pub(crate) fn cost(&self) -> usize {
        let nested = self.json_schema.as_ref().and_then(|s| s.schema.as_ref());
        nested.or(self.schema.as_ref()).map_or(0, Deferred::cost)
    }
}

/// `none` offers no tools, a named function only that one; `auto` and `required` offer all
/// (Cursor has no way to force a call, so `required` is a request the model may not follow).
pub(crate) fn narrow(tools: Vec<Tool>, choice: Option<&ToolChoice>) -> Result<Vec<Tool>, ApiError> {
    let bad =
        |why: String| ApiError::bad_request("invalid_tool_choice", why).with_param("tool_choice");
    match choice {
        None => Ok(tools),
        Some(ToolChoice::Mode(mode)) => match mode.as_str() {
            "auto" | "required" => Ok(tools),
            "none" => Ok(Vec::new()),
            other => Err(bad(format!("unknown tool_choice {other}"))),
        },
        Some(ToolChoice::Named { name: None, .. }) => {
            Err(bad("tool_choice must be a mode or name a function".into()))
        }
        Some(ToolChoice::Named {
            name: Some(name), ..
        }) => {
            let named: Vec<Tool> = tools.into_iter().filter(|t| t.name == *name).collect();
            if named.is_empty() {
                return Err(bad(format!(
                    "tool_choice names {name}, which tools does not list"
                )));
            }
            Ok(named)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn choice(value: serde_json::Value) -> ToolChoice {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn tool_choice_none_drops_tools_and_a_named_one_keeps_only_it() {
        let tools = vec![Tool::new("a", "", json!({})), Tool::new("b", "", json!({}))];
        assert!(
            narrow(tools.clone(), Some(&choice(json!("none"))))
                .unwrap()
                .is_empty()
        );
        assert_eq!(
            narrow(tools.clone(), Some(&choice(json!("required"))))
                .unwrap()
                .len(),
            2
        );
        let named = narrow(
            tools.clone(),
            Some(&choice(
                json!({"type": "function", "function": {"name": "b"}}),
            )),
        )
        .unwrap();
        assert_eq!(named.len(), 1);
        assert_eq!(named[0].name, "b");
        let flat = narrow(
            tools,
            Some(&choice(json!({"type": "function", "name": "a"}))),
        )
        .unwrap();
        assert_eq!(flat[0].name, "a");
    }
}
