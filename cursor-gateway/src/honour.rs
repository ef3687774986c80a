//! Request fields Cursor has no parameter for, honoured by the gateway itself: stop sequences
//! and output limits cut the text ([`Clip`]), a response format is asked for in the system
//! prompt and checked, with one corrective turn ([`Format`]).

use cursor_agent::ir::{
    AssistantContent, Conversation, ErrorInfo, ErrorKind, Message, NextStep, UserContent,
};
use cursor_agent::session::ModelChoice;
use serde::Deserialize;
use serde_json::Value;

use crate::ApiError;
use crate::gateway::{Gateway, Leg, collect};
use crate::history::Scope;

/// Output tokens are counted as 4 bytes of UTF-8 each (Cursor reports no per-delta counts;
/// 4 bytes is the usual English average, so a limit cuts close to where OpenAI would).
pub(crate) const BYTES_PER_TOKEN: usize = 4;

/// Why the gateway ended a reply early.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Cut {
    /// A stop sequence appeared.
    Stop,
    /// The output limit was reached.
    Length,
}

/// Cuts streamed text at the first stop sequence (not included) or at the output limit. Text
/// is released as it comes, less a tail one byte shorter than the longest stop sequence, so a
/// sequence split across deltas is still caught before any of it went out.
#[derive(Clone, Debug, Default)]
pub(crate) struct Clip {
    stops: Vec<String>,
    max_bytes: Option<usize>,
    text: String,
    sent: usize,
    /// The stop sequence that ended the reply, once one did.
    matched: Option<usize>,
}

impl Clip {
    pub(crate) fn new(stops: Vec<String>, max_tokens: Option<u64>) -> Self {
        Self {
            stops: stops.into_iter().filter(|s| !s.is_empty()).collect(),
            max_bytes: max_tokens
                .map(|t| usize::try_from(t).unwrap_or(usize::MAX / 8) * BYTES_PER_TOKEN),
            ..Self::default()
        }
    }

    /// Starts over (a rebuild voided what streamed before).
    pub(crate) fn reset(&mut self) {
        self.text.clear();
        self.sent = 0;
        self.matched = None;
    }

    /// The stop sequence that ended the reply, if one did.
    pub(crate) fn matched(&self) -> Option<&str> {
        self.matched.map(|i| self.stops[i].as_str())
    }

    /// Takes one delta: the text that may go out now, and the cut if the reply ends here.
    pub(crate) fn push(&mut self, delta: &str) -> (String, Option<Cut>) {
        self.text.push_str(delta);
        let first = self
            .stops
            .iter()
            .enumerate()
            .filter_map(|(i, s)| self.text.find(s.as_str()).map(|at| (at, i)))
            .min();
        let stop_at = first.map(|(at, _)| at);
        let over = self
            .max_bytes
            .filter(|max| self.text.len() > *max)
            .map(|max| floor_boundary(&self.text, max));
        let (end, cut) = match (stop_at, over) {
            (Some(at), Some(max)) if at > max => (max, Some(Cut::Length)),
            (Some(at), _) => {
                self.matched = first.map(|(_, i)| i);
                (at, Some(Cut::Stop))
            }
            (None, Some(max)) => (max, Some(Cut::Length)),
            (None, None) => {
                let hold = self.stops.iter().map(String::len).max().unwrap_or(1) - 1;
                (
                    floor_boundary(&self.text, self.text.len() - hold.min(self.text.len())),
                    None,
                )
            }
        };
        let end = end.max(self.sent);
        let out = self.text[self.sent..end].to_owned();
        self.sent = end;
        if cut.is_some() {
            self.text.truncate(end);
        }
        (out, cut)
    }

    /// The held-back tail, at the reply's natural end.
    pub(crate) fn flush(&mut self) -> String {
        let out = self.text[self.sent..].to_owned();
        self.sent = self.text.len();
        out
    }

    /// Everything released so far.
    pub(crate) fn text(&self) -> &str {
        &self.text[..self.sent]
    }
}

fn floor_boundary(text: &str, mut at: usize) -> usize {
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// `response_format` (chat) and `text.format` (Responses), as sent.
#[derive(Clone, Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum FormatSpec {
    Text,
    JsonObject,
    /// Chat nests the schema under `json_schema`; Responses puts its fields at the top level.
    JsonSchema {
        #[serde(default)]
        json_schema: Option<SchemaSpec>,
        #[serde(flatten)]
        flat: SchemaSpec,
    },
}

#[derive(Clone, Debug, Default, Deserialize)]
pub(crate) struct SchemaSpec {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    schema: Option<Value>,
}

/// A reply format the gateway checks.
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
    /// The format `spec` asks for (`None` for plain text); `param` names the field in errors.
    pub(crate) fn from_spec(
        spec: Option<FormatSpec>,
        param: &str,
    ) -> Result<Option<Self>, ApiError> {
        let bad =
            |why: String| ApiError::bad_request("invalid_response_format", why).with_param(param);
        Ok(match spec {
            None | Some(FormatSpec::Text) => None,
            Some(FormatSpec::JsonObject) => Some(Self::JsonObject),
            Some(FormatSpec::JsonSchema { json_schema, flat }) => {
                let spec = json_schema.unwrap_or(flat);
                let schema = spec
                    .schema
                    .ok_or_else(|| bad(format!("{param}: json_schema needs a `schema`")))?;
                let validator = jsonschema::validator_for(&schema)
                    .map_err(|e| bad(format!("{param}: the schema is not valid: {e}")))?;
                Some(Self::JsonSchema {
                    name: spec.name.unwrap_or_else(|| "reply".into()),
                    schema,
                    validator: Box::new(validator),
                })
            }
        })
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

/// One turn answered whole, honouring `clip` and `format`: a reply that misses the format gets
/// one corrective user turn in the same conversation, then a 502 if it still misses.
pub(crate) async fn answer_whole(
    gateway: &Gateway,
    scope: &Scope,
    conversation: &Conversation,
    model: &ModelChoice,
    clip: &Clip,
    format: Option<&Format>,
) -> Result<(Leg, Option<Cut>), ApiError> {
    let guard = gateway.begin(scope, conversation)?;
    let (mut leg, cut) = collect(guard, conversation, model, clip.clone()).await?;
    let Some(format) = format else {
        return Ok((leg, cut));
    };
    // A cut reply or a tool round is answered as it is: the format applies to a final reply.
    if cut.is_some() || !leg.calls.is_empty() {
        return Ok((leg, cut));
    }
    let why = match format.check(&leg.text) {
        Ok(text) => {
            leg.text = text;
            return Ok((leg, cut));
        }
        Err(why) => why,
    };
    tracing::info!(%why, "the reply missed response_format; one corrective turn");
    let mut corrected = conversation.clone();
    corrected.messages.push(Message::Assistant {
        content: vec![AssistantContent::Text {
            text: leg.text.clone(),
        }],
    });
    corrected.messages.push(Message::User {
        content: vec![UserContent::Text {
            text: format!(
                "That reply cannot be used: {why}. Send the reply again as only the JSON the \
                 system prompt asks for."
            ),
        }],
    });
    let guard = gateway.begin(scope, &corrected)?;
    let (mut leg, cut) = collect(guard, &corrected, model, clip.clone()).await?;
    if cut.is_some() || !leg.calls.is_empty() {
        return Ok((leg, cut));
    }
    match format.check(&leg.text) {
        Ok(text) => {
            leg.text = text;
            Ok((leg, cut))
        }
        Err(why) => {
            let mut error = ApiError::from_info(&ErrorInfo::new(
                ErrorKind::RemoteRefusal,
                format!(
                    "the model's reply did not match response_format after one corrective turn: {why}"
                ),
                NextStep::Retry,
            ));
            error.code = "invalid_model_output".into();
            Err(error)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(clip: &mut Clip, deltas: &[&str]) -> (String, Option<Cut>) {
        let mut out = String::new();
        for delta in deltas {
            let (text, cut) = clip.push(delta);
            out.push_str(&text);
            if cut.is_some() {
                return (out, cut);
            }
        }
        out.push_str(&clip.flush());
        (out, None)
    }

    #[test]
    fn a_stop_sequence_split_across_deltas_is_caught_and_left_out() {
        let mut clip = Clip::new(vec!["END".into(), "zz".into()], None);
        assert_eq!(
            run(&mut clip, &["one two E", "N", "D three"]),
            ("one two ".into(), Some(Cut::Stop))
        );
        let mut clip = Clip::new(vec!["END".into()], None);
        assert_eq!(
            run(&mut clip, &["no stop ", "here EN"]),
            ("no stop here EN".into(), None)
        );
    }

    #[test]
    fn the_output_limit_cuts_at_a_char_boundary() {
        let mut clip = Clip::new(Vec::new(), Some(1));
        assert_eq!(
            run(&mut clip, &["ab", "cdef"]),
            ("abcd".into(), Some(Cut::Length))
        );
        let mut clip = Clip::new(Vec::new(), Some(1));
        assert_eq!(run(&mut clip, &["aé", "éé"]).0, "aé");
    }

    #[test]
    fn a_schema_reply_is_checked_and_a_fence_dropped() {
        let spec: FormatSpec = serde_json::from_value(json!({"type": "json_schema", "json_schema": {
            "name": "n", "strict": true,
            "schema": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
        }}))
        .unwrap();
        let format = Format::from_spec(Some(spec), "response_format")
            .unwrap()
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
        let flat: FormatSpec = serde_json::from_value(
            json!({"type": "json_schema", "name": "n", "schema": {"type": "array"}}),
        )
        .unwrap();
        let format = Format::from_spec(Some(flat), "text.format")
            .unwrap()
            .unwrap();
        assert!(format.check("[1]").is_ok());
    }
}
