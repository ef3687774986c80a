//! Anthropic's Messages request, typed. Content blocks are read one at a time and folded as they
//! come (see [`crate::dialects`]); a block this gateway does not take is kept as a note of what
//! and where, so the translation can name it in a 400.

use std::borrow::Cow;

use serde::Deserialize;
use serde::de;

use crate::dialects::content::{
    Deferred, Fold, Joined, deserialize_folded, image_from_base64, push_text,
};
use cursor_agent::ir::Image;

/// A Messages request. Fields that do not change what the answer means (`temperature`,
/// `top_p`, `top_k`, `context_management`, `output_config`, `thinking`) are read past.
#[derive(Debug, Deserialize)]
pub(crate) struct MessagesRequest {
    pub(crate) model: String,
    pub(crate) messages: Vec<InMessage>,
    #[serde(default)]
    pub(crate) system: Option<Content>,
    #[serde(default)]
    pub(crate) max_tokens: Option<u64>,
    #[serde(default)]
    pub(crate) stream: Option<bool>,
    #[serde(default)]
    pub(crate) tools: Option<Vec<ToolSpec>>,
    #[serde(default)]
    pub(crate) tool_choice: Option<ToolChoice>,
    #[serde(default)]
    pub(crate) stop_sequences: Option<Vec<String>>,
    #[serde(default)]
    pub(crate) metadata: Option<Metadata>,
}

/// One entry of `messages`.
#[derive(Debug, Deserialize)]
pub(crate) struct InMessage {
    pub(crate) role: Role,
    pub(crate) content: Content,
}

/// A message's role.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Role {
    User,
    Assistant,
    /// Claude Code sends context this way inside `messages`.
    System,
}

/// A tool offered.
#[derive(Debug, Deserialize)]
pub(crate) struct ToolSpec {
    #[serde(rename = "type", default)]
    pub(crate) kind: Option<String>,
    #[serde(default)]
    pub(crate) name: Option<String>,
    #[serde(default)]
    pub(crate) description: Option<String>,
    #[serde(default)]
    pub(crate) input_schema: Option<Deferred>,
}

/// `tool_choice`.
#[derive(Debug, Deserialize)]
pub(crate) struct ToolChoice {
    #[serde(rename = "type")]
    pub(crate) kind: ToolChoiceKind,
    #[serde(default)]
    pub(crate) name: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum ToolChoiceKind {
    Auto,
    Any,
    Tool,
    None,
}

/// `metadata`.
#[derive(Debug, Deserialize)]
pub(crate) struct Metadata {
    #[serde(default)]
    pub(crate) user_id: Option<String>,
}

/// A message's content, folded: a string is one text block.
#[derive(Debug, Default)]
pub(crate) struct Content(pub(crate) Vec<Part>);

/// One block, or a run of text blocks.
#[derive(Debug)]
pub(crate) enum Part {
    Text(Joined),
    Image(Image),
    ToolUse {
        id: String,
        name: String,
        input: Option<Deferred>,
    },
    ToolResult {
        tool_use_id: String,
        content: Content,
        is_error: bool,
    },
    Thinking {
        thinking: String,
        signature: String,
    },
    RedactedThinking,
    /// A block the gateway does not take, or one that is malformed: block `index`, why.
    Refused {
        index: usize,
        kind: String,
        why: String,
    },
}

/// A block as it arrives; read once and folded into a [`Part`].
#[derive(Deserialize)]
pub(crate) struct RawBlock<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    source: Option<RawSource<'a>>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    input: Option<Deferred>,
    #[serde(default)]
    tool_use_id: Option<String>,
    #[serde(default)]
    content: Option<Content>,
    #[serde(default)]
    is_error: Option<bool>,
    #[serde(default)]
    thinking: Option<String>,
    #[serde(default)]
    signature: Option<String>,
}

#[derive(Deserialize)]
pub(crate) struct RawSource<'a> {
    #[serde(rename = "type", default, borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    media_type: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    data: Option<Cow<'a, str>>,
}

impl Part {
    fn of(index: usize, block: RawBlock<'_>, parts: &mut Vec<Self>) {
        let refuse = |why: &str| Self::Refused {
            index,
            kind: block.kind.to_string(),
            why: why.to_owned(),
        };
        let part = match block.kind.as_ref() {
            "text" => match &block.text {
                Some(text) => {
                    push_text(
                        parts,
                        text,
                        |part| match part {
                            Self::Text(run) => Some(run),
                            _ => None,
                        },
                        Self::Text,
                    );
                    return;
                }
                None => refuse("a text block needs `text`"),
            },
            "image" => match &block.source {
                Some(source) if source.kind.as_deref() == Some("base64") => {
                    match image_from_base64(
                        source.media_type.as_deref().unwrap_or_default(),
                        source.data.as_deref().unwrap_or_default(),
                    ) {
                        Ok(image) => Self::Image(image),
                        Err(why) => refuse(&why),
                    }
                }
                Some(_) => refuse("only base64 images are accepted; the gateway fetches nothing"),
                None => refuse("an image block needs a `source`"),
            },
            "tool_use" => match (&block.id, &block.name) {
                (Some(_), Some(_)) => Self::ToolUse {
                    id: block.id.unwrap_or_default(),
                    name: block.name.unwrap_or_default(),
                    input: block.input,
                },
                _ => refuse("a tool_use block needs `id` and `name`"),
            },
            "tool_result" => match block.tool_use_id {
                Some(tool_use_id) => Self::ToolResult {
                    tool_use_id,
                    content: block.content.unwrap_or_default(),
                    is_error: block.is_error.unwrap_or(false),
                },
                None => refuse("a tool_result block needs `tool_use_id`"),
            },
            "thinking" => Self::Thinking {
                thinking: block.thinking.unwrap_or_default(),
                signature: block.signature.unwrap_or_default(),
            },
            "redacted_thinking" => Self::RedactedThinking,
            _ => refuse("this block type is not supported here"),
        };
        parts.push(part);
    }
}

impl Fold for Part {
    type Raw<'de> = RawBlock<'de>;

    fn text(text: String) -> Self {
        Self::Text(Joined::one(text))
    }

    fn fold(index: usize, raw: RawBlock<'_>, parts: &mut Vec<Self>) {
        Self::of(index, raw, parts);
    }
}

impl<'de> Deserialize<'de> for Content {
    fn deserialize<D: de::Deserializer<'de>>(input: D) -> Result<Self, D::Error> {
        deserialize_folded(input).map(Self)
    }
}

/// Parses a Messages (or `count_tokens`) body; malformed JSON and unknown shapes are errors
/// that say what is wrong and where.
pub(crate) fn parse(body: &[u8]) -> Result<MessagesRequest, serde_json::Error> {
    serde_json::from_slice(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_million_tiny_text_blocks_fold_into_one_text() {
        let mut body =
            String::from(r#"{"model":"m","max_tokens":1,"messages":[{"role":"user","content":["#);
        for i in 0..100_000 {
            if i > 0 {
                body.push(',');
            }
            body.push_str(r#"{"type":"text","text":"a"}"#);
        }
        body.push_str("]}]}");
        let request = parse(body.as_bytes()).unwrap();
        let parts = &request.messages[0].content.0;
        assert_eq!(parts.len(), 1);
        let Part::Text(run) = &parts[0] else {
            panic!("{parts:?}")
        };
        assert_eq!(run.clone().newline_joined().len(), 2 * 100_000 - 1);
    }

    #[test]
    fn non_object_bodies_are_errors_not_panics() {
        for body in [
            &b"[]"[..],
            b"1",
            b"\"x\"",
            b"null",
            b"{}",
            b"",
            b"{\"model\": 1}",
        ] {
            assert!(parse(body).is_err(), "{}", String::from_utf8_lossy(body));
        }
    }

    #[test]
    fn unknown_blocks_are_noted_with_their_place() {
        let body = br#"{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"document","source":{}}]}]}"#;
        let request = parse(body).unwrap();
        let Part::Refused { index, kind, .. } = &request.messages[0].content.0[1] else {
            panic!()
        };
        assert_eq!((*index, kind.as_str()), (1, "document"));
    }
}
