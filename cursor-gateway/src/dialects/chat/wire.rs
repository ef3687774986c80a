//! OpenAI's chat completions request, typed. Content parts are read one at a time and runs of
//! text folded as they come; fields this gateway cannot honour are read past, noting only
//! whether they were sent.

use std::borrow::Cow;
use std::fmt;

use cursor_agent::ir::Image;
use serde::Deserialize;
use serde::de::{self, IgnoredAny, MapAccess, SeqAccess, Visitor};

use crate::dialects::content::{
    Deferred, Fold, Joined, Sent, deserialize_folded, image_from_data_url, push_text,
};
use crate::dialects::openai::{ResponseFormat, ToolChoice};

/// A chat completions request (fields this gateway does not use are ignored).
#[derive(Debug, Deserialize)]
pub(crate) struct ChatRequest {
    pub(crate) model: String,
    pub(crate) messages: Vec<ChatMessage>,
    #[serde(default)]
    pub(crate) stream: Option<bool>,
    #[serde(default)]
    pub(crate) stream_options: Option<StreamOptions>,
    #[serde(default)]
    pub(crate) tools: Option<Vec<ToolSpec>>,
    #[serde(default)]
    pub(crate) tool_choice: Option<ToolChoice>,
    #[serde(default)]
    pub(crate) reasoning_effort: Option<String>,
    #[serde(default)]
    pub(crate) n: Option<u32>,
    /// The caller's end-user id: a session hint that keeps conversations apart.
    #[serde(default)]
    pub(crate) user: Option<String>,
    #[serde(default)]
    pub(crate) stop: Option<Stop>,
    #[serde(default)]
    pub(crate) max_tokens: Option<u64>,
    #[serde(default)]
    pub(crate) max_completion_tokens: Option<u64>,
    #[serde(default)]
    pub(crate) response_format: Option<ResponseFormat>,
    /// Fields that would change the answer and cannot be honoured: sent, they are a 400.
    #[serde(default)]
    pub(crate) logprobs: Option<bool>,
    #[serde(default)]
    pub(crate) top_logprobs: Option<u32>,
    #[serde(default)]
    pub(crate) audio: Sent,
    #[serde(default)]
    pub(crate) modalities: Option<Vec<String>>,
    #[serde(default)]
    pub(crate) prediction: Sent,
    #[serde(default)]
    pub(crate) web_search_options: Sent,
    #[serde(default)]
    pub(crate) functions: Sent,
    #[serde(default)]
    pub(crate) logit_bias: Entries,
}

#[derive(Debug, Deserialize)]
pub(crate) struct StreamOptions {
    #[serde(default)]
    pub(crate) include_usage: Option<bool>,
}

/// One message.
#[derive(Debug, Deserialize)]
pub(crate) struct ChatMessage {
    pub(crate) role: ChatRole,
    #[serde(default)]
    pub(crate) content: Option<ChatContent>,
    #[serde(default)]
    pub(crate) tool_calls: Option<Vec<ToolCallSpec>>,
    #[serde(default)]
    pub(crate) tool_call_id: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum ChatRole {
    System,
    Developer,
    User,
    Assistant,
    Tool,
}

/// A message's content, folded: a string is one text part.
#[derive(Debug, Default)]
pub(crate) struct ChatContent(pub(crate) Vec<ChatPart>);

/// A content part, or a run of text parts.
#[derive(Debug)]
pub(crate) enum ChatPart {
    Text(Joined),
    Image(Image),
    /// A part the gateway does not take, or a malformed one: part `index`, and why.
    Refused {
        index: usize,
        why: String,
    },
}

#[derive(Deserialize)]
pub(crate) struct RawPart<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    image_url: Option<RawImageUrl<'a>>,
}

#[derive(Deserialize)]
pub(crate) struct RawImageUrl<'a> {
    #[serde(borrow)]
    url: Cow<'a, str>,
}

impl ChatPart {
    fn of(index: usize, part: RawPart<'_>, parts: &mut Vec<Self>) {
        let refuse = |why: String| Self::Refused { index, why };
        let folded = match part.kind.as_ref() {
            "text" => match &part.text {
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
                None => refuse("a text part needs `text`".into()),
            },
            "image_url" => match &part.image_url {
                Some(image) => match image_from_data_url(&image.url) {
                    Ok(image) => Self::Image(image),
                    Err(why) => refuse(format!("image_url: {why}")),
                },
                None => refuse("an image_url part needs `image_url`".into()),
            },
            other => refuse(format!(
                "{other} parts are not supported (text and image_url are)"
            )),
        };
        parts.push(folded);
    }
}

impl Fold for ChatPart {
    type Raw<'de> = RawPart<'de>;

    fn text(text: String) -> Self {
        Self::Text(Joined::one(text))
    }

    fn fold(index: usize, raw: RawPart<'_>, parts: &mut Vec<Self>) {
        Self::of(index, raw, parts);
    }
}

impl<'de> Deserialize<'de> for ChatContent {
    fn deserialize<D: de::Deserializer<'de>>(input: D) -> Result<Self, D::Error> {
        deserialize_folded(input).map(Self)
    }
}

/// A tool call of an earlier assistant message.
#[derive(Debug, Deserialize)]
pub(crate) struct ToolCallSpec {
    pub(crate) id: String,
    pub(crate) function: FunctionCall,
}

/// A tool call's function and its arguments as JSON text.
#[derive(Debug, Deserialize)]
pub(crate) struct FunctionCall {
    pub(crate) name: String,
    #[serde(default)]
    pub(crate) arguments: String,
}

/// A tool offered.
#[derive(Debug, Deserialize)]
pub(crate) struct ToolSpec {
    #[serde(rename = "type")]
    pub(crate) kind: String,
    #[serde(default)]
    pub(crate) function: Option<FunctionSpec>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct FunctionSpec {
    pub(crate) name: String,
    #[serde(default)]
    pub(crate) description: Option<String>,
    #[serde(default)]
    pub(crate) parameters: Option<Deferred>,
}

/// `stop`: one sequence or several.
#[derive(Debug, Default)]
pub(crate) struct Stop(pub(crate) Vec<String>);

impl<'de> Deserialize<'de> for Stop {
    fn deserialize<D: de::Deserializer<'de>>(input: D) -> Result<Self, D::Error> {
        struct Sequences;

        impl<'de> Visitor<'de> for Sequences {
            type Value = Stop;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a stop sequence or a list of them")
            }

            fn visit_str<E: de::Error>(self, stop: &str) -> Result<Stop, E> {
                Ok(Stop(vec![stop.to_owned()]))
            }

            fn visit_unit<E: de::Error>(self) -> Result<Stop, E> {
                Ok(Stop::default())
            }

            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Stop, A::Error> {
                let mut stops = Vec::new();
                while let Some(stop) = seq.next_element::<String>()? {
                    stops.push(stop);
                }
                Ok(Stop(stops))
            }
        }

        input.deserialize_any(Sequences)
    }
}

/// How many entries a map field has (its values read past): `logit_bias` is refused only when
/// it biases something.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Entries(pub(crate) usize);

impl<'de> Deserialize<'de> for Entries {
    fn deserialize<D: de::Deserializer<'de>>(input: D) -> Result<Self, D::Error> {
        struct Count;

        impl<'de> Visitor<'de> for Count {
            type Value = Entries;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object")
            }

            fn visit_unit<E: de::Error>(self) -> Result<Entries, E> {
                Ok(Entries(0))
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Entries, A::Error> {
                let mut entries = 0;
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {
                    entries += 1;
                }
                Ok(Entries(entries))
            }
        }

        input.deserialize_any(Count)
    }
}

/// Parses a chat completions body.
pub(crate) fn parse(body: &[u8]) -> Result<ChatRequest, serde_json::Error> {
    serde_json::from_slice(body)
}
