//! A reply format (JSON, or JSON matching a schema), which Cursor has no parameter for: asked for
//! at the end of the system prompt, then checked, with one corrective turn.
//!
//! Compiling a schema and checking a reply against it can take long for a large schema, so both
//! run on the blocking pool, never on the async workers.

use cursor_agent::ir::Conversation;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::ApiError;

/// A format as a request asked for it, before its schema is compiled.
#[derive(Clone, Debug)]
pub(crate) enum FormatSpec {
    /// Any JSON object.
    JsonObject,
    /// JSON matching `schema`, named `name` for the model.
    JsonSchema {
        name: Option<String>,
        schema: Box<RawValue>,
    },
}

/// A reply format the engine checks.
#[derive(Debug)]
pub(crate) enum Format {
    JsonObject,
    JsonSchema {
        name: String,
        schema: Value,
        validator: Box<jsonschema::Validator>,
    },
}

impl Format {
    /// Compiles `spec` on the blocking pool; `param` names the request field in errors.
    pub(crate) async fn compile(spec: FormatSpec, param: &'static str) -> Result<Self, ApiError> {
        crate::engine::blocking::run(move || Self::compile_now(spec, param))
            .await
            .unwrap_or_else(Err)
    }

    fn compile_now(spec: FormatSpec, param: &'static str) -> Result<Self, ApiError> {
        let bad =
            |why: String| ApiError::bad_request("invalid_response_format", why).with_param(param);
        match spec {
            FormatSpec::JsonObject => Ok(Self::JsonObject),
            FormatSpec::JsonSchema { name, schema } => {
                let schema: Value = serde_json::from_str(schema.get())
                    .map_err(|e| bad(format!("{param}: the schema is not JSON: {e}")))?;
                let validator = jsonschema::validator_for(&schema)
                    .map_err(|e| bad(format!("{param}: the schema is not valid: {e}")))?;
                Ok(Self::JsonSchema {
                    name: name.unwrap_or_else(|| "reply".into()),
                    schema,
                    validator: Box::new(validator),
                })
            }
        }
    }

    /// Asks for the format at the end of the system prompt (Cursor has no format parameter).
    pub(crate) fn instruct(&self, conversation: &mut Conversation) {
        let instruction = match self {
            Self::JsonObject => {
                "Reply with only a JSON object: no prose, no code fence, nothing before or after it."
                    .to_owned()
            }
            Self::JsonSchema { name, schema, .. } => format!(
                "Reply with only a JSON value matching this JSON schema (named {name}): no prose, \
                 no code fence, nothing before or after it.\n{schema}"
            ),
        };
        let prompt = &mut conversation.system_prompt;
        if !prompt.is_empty() {
            prompt.push_str("\n\n");
        }
        prompt.push_str(&instruction);
    }

    /// The reply as the format's JSON text (a surrounding code fence dropped), or what is wrong.
    pub(crate) fn check(&self, reply: &str) -> Result<String, String> {
        let text = unfence(reply);
        let value: Value = serde_json::from_str(text)
            .map_err(|e| format!("your reply was not valid JSON ({e})"))?;
        match self {
            Self::JsonObject if !value.is_object() => {
                Err("your reply was JSON but not a JSON object".into())
            }
            Self::JsonObject => Ok(text.to_owned()),
            Self::JsonSchema { validator, .. } => {
                let errors: Vec<String> = validator
                    .iter_errors(&value)
                    .take(5)
                    .map(|e| format!("at `{}`: {e}", e.instance_path))
                    .collect();
                if errors.is_empty() {
                    Ok(text.to_owned())
                } else {
                    Err(format!(
                        "your reply does not match the schema: {}",
                        errors.join("; ")
                    ))
                }
            }
        }
    }
}

fn unfence(reply: &str) -> &str {
    let text = reply.trim();
    text.strip_prefix("```")
        .and_then(|rest| rest.strip_suffix("```"))
        .map_or(text, |body| {
            body.trim_start_matches(|c: char| c.is_ascii_alphanumeric())
                .trim()
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema(text: &str) -> FormatSpec {
        FormatSpec::JsonSchema {
            name: Some("n".into()),
            schema: RawValue::from_string(text.to_owned()).unwrap(),
        }
    }

    #[test]
    fn a_schema_reply_is_checked_and_a_fence_dropped() {
        let format = Format::compile_now(
            schema(r#"{"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}"#),
            "response_format",
        )
        .unwrap();
        assert_eq!(
            format.check("```json\n{\"n\": 1}\n```").unwrap(),
            "{\"n\": 1}"
        );
        assert!(
            format
                .check("{\"n\": \"x\"}")
                .unwrap_err()
                .contains("schema")
        );
        assert!(format.check("nope").unwrap_err().contains("not valid JSON"));
    }

    #[test]
    fn an_invalid_schema_is_a_400_naming_the_field() {
        let error = Format::compile_now(schema(r#"{"type": 12}"#), "text.format").unwrap_err();
        assert_eq!(error.status, 400);
        assert_eq!(error.param.as_deref(), Some("text.format"));
    }
}
