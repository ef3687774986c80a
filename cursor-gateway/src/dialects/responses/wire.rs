//! OpenAI's Responses request, typed: the subset Codex CLI uses. Input items and their content
//! parts are read one at a time and runs of text folded as they come; an item or part this
//! gateway does not take is kept as a note of what and where, so the translation can name it.

use std::borrow::Cow;
use std::fmt;

use cursor_agent::ir::Image;
use serde::Deserialize;
use serde::de::{self, SeqAccess, Visitor};

use crate::dialects::content::{
    Deferred, Fold, Joined, Sent, deserialize_folded, image_from_data_url, push_text,
};
use crate::dialects::openai::{ResponseFormat, ToolChoice};

/// A Responses request.
#[derive(Debug, Deserialize)]
pub(crate) struct ResponsesRequest {
    pub(crate) model: String,
    #[serde(default)]
    pub(crate) instructions: Option<String>,
    pub(crate) input: Input,
    #[serde(default)]
    pub(crate) previous_response_id: Option<String>,
    #[serde(default)]
    pub(crate) text: Option<TextConfig>,
    #[serde(default)]
    pub(crate) tools: Vec<ToolSpec>,
    #[serde(default)]
    pub(crate) tool_choice: Option<ToolChoice>,
    #[serde(default)]
    pub(crate) prompt_cache_key: Option<String>,
    #[serde(default)]
    pub(crate) user: Option<String>,
    #[serde(default)]
    pub(crate) store: Option<bool>,
    #[serde(default)]
    pub(crate) max_output_tokens: Option<u64>,
    #[serde(default)]
    pub(crate) reasoning: Option<Reasoning>,
    #[serde(default)]
    pub(crate) stream: Option<bool>,
    #[serde(default)]
    pub(crate) background: Option<bool>,
    #[serde(default)]
    pub(crate) conversation: Sent,
    #[serde(default)]
    pub(crate) prompt: Sent,
    #[serde(default)]
    pub(crate) top_logprobs: Option<u64>,
    #[serde(default)]
    pub(crate) include: Vec<String>,
}

/// `text`.
#[derive(Debug, Deserialize)]
pub(crate) struct TextConfig {
    #[serde(default)]
    pub(crate) format: Option<ResponseFormat>,
}

/// `reasoning`.
#[derive(Debug, Deserialize)]
pub(crate) struct Reasoning {
    #[serde(default)]
    pub(crate) effort: Option<String>,
}

/// A tool offered (Responses shape: the name at the top level).
#[derive(Debug, Deserialize)]
pub(crate) struct ToolSpec {
    #[serde(rename = "type", default)]
    pub(crate) kind: String,
    #[serde(default)]
    pub(crate) name: Option<String>,
    #[serde(default)]
    pub(crate) description: Option<String>,
    #[serde(default)]
    pub(crate) parameters: Option<Deferred>,
}

/// `input`: a string (one user message) or items.
#[derive(Debug, Default)]
pub(crate) struct Input(pub(crate) Vec<Item>);

/// One input item.
#[derive(Debug)]
pub(crate) enum Item {
    Message {
        role: String,
        content: Parts,
    },
    FunctionCall {
        call_id: String,
        name: String,
        arguments: String,
    },
    FunctionCallOutput {
        call_id: String,
        output: Parts,
    },
    /// Reasoning carries nothing Cursor can take back.
    Reasoning,
    /// An item of a kind this gateway does not take, or a malformed one.
    Refused {
        index: usize,
        why: String,
    },
}

/// Content parts, folded: a string is one text part.
#[derive(Debug, Default)]
pub(crate) struct Parts(pub(crate) Vec<Part>);

#[derive(Debug)]
pub(crate) enum Part {
    Text(Joined),
    Image(Image),
    Refused { index: usize, why: String },
}

#[derive(Deserialize)]
struct RawItem<'a> {
    #[serde(rename = "type", default, borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(default)]
    role: Option<String>,
    #[serde(default)]
    content: Option<Parts>,
    #[serde(default)]
    call_id: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
    #[serde(default)]
    output: Option<Parts>,
}

#[derive(Deserialize)]
pub(crate) struct RawPart<'a> {
    #[serde(rename = "type", default, borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    image_url: Option<ImageUrl<'a>>,
}

/// `image_url`: a URL string, or an object with one.
#[derive(Deserialize)]
#[serde(untagged)]
pub(crate) enum ImageUrl<'a> {
    Text(#[serde(borrow)] Cow<'a, str>),
    Object {
        #[serde(borrow)]
        url: Cow<'a, str>,
    },
}

impl Item {
    fn of(index: usize, item: RawItem<'_>) -> Self {
        let kind = match item.kind.as_deref() {
            Some(kind) => kind,
            None if item.role.is_some() => "message",
            None => "",
        };
        let refuse = |why: &str| Self::Refused {
            index,
            why: why.to_owned(),
        };
        match kind {
            "message" => match item.role {
                Some(role) => Self::Message {
                    role,
                    content: item.content.unwrap_or_default(),
                },
                None => refuse("a message needs a `role`"),
            },
            "function_call" => match (item.call_id, item.name) {
                (Some(call_id), Some(name)) => Self::FunctionCall {
                    call_id,
                    name,
                    arguments: item.arguments.unwrap_or_default(),
                },
                _ => refuse("a function_call needs `call_id` and `name`"),
            },
            "function_call_output" => match (item.call_id, item.output) {
                (Some(call_id), Some(output)) => Self::FunctionCallOutput { call_id, output },
                _ => refuse("a function_call_output needs `call_id` and `output`"),
            },
            "reasoning" => Self::Reasoning,
            other => Self::Refused {
                index,
                why: format!(
                    "input items of type {} are not supported (message, function_call, \
                     function_call_output, reasoning are)",
                    if other.is_empty() { "(none)" } else { other }
                ),
            },
        }
    }
}

impl Part {
    fn of(index: usize, part: RawPart<'_>, parts: &mut Vec<Self>) {
        let kind = part.kind.as_deref().unwrap_or("untyped");
        let folded = match kind {
            "input_text" | "output_text" | "text" => match &part.text {
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
                None => Self::Refused {
                    index,
                    why: format!("a {kind} part needs `text`"),
                },
            },
            "input_image" => {
                let url = match &part.image_url {
                    Some(ImageUrl::Text(url) | ImageUrl::Object { url }) => Some(url.as_ref()),
                    None => None,
                };
                match url.map(image_from_data_url) {
                    Some(Ok(image)) => Self::Image(image),
                    Some(Err(why)) => Self::Refused { index, why },
                    None => Self::Refused {
                        index,
                        why: "input_image needs image_url".into(),
                    },
                }
            }
            other => Self::Refused {
                index,
                why: format!("a {other} part is not allowed here"),
            },
        };
        parts.push(folded);
    }
}

impl Fold for Part {
    type Raw<'de> = RawPart<'de>;

    fn text(text: String) -> Self {
        Self::Text(Joined::one(text))
    }

    fn fold(index: usize, raw: RawPart<'_>, parts: &mut Vec<Self>) {
        Self::of(index, raw, parts);
    }
}

impl<'de> Deserialize<'de> for Parts {
    fn deserialize<D: de::Deserializer<'de>>(input: D) -> Result<Self, D::Error> {
        deserialize_folded(input).map(Self)
    }
}

impl<'de> Deserialize<'de> for Input {
    fn deserialize<D: de::Deserializer<'de>>(input: D) -> Result<Self, D::Error> {
        struct Items;

        impl<'de> Visitor<'de> for Items {
            type Value = Input;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string or a list of input items")
            }

            fn visit_str<E: de::Error>(self, text: &str) -> Result<Input, E> {
                Ok(Input(vec![Item::Message {
                    role: "user".into(),
                    content: Parts(vec![Part::Text(Joined::one(text.to_owned()))]),
                }]))
            }

            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Input, A::Error> {
                let mut items = Vec::new();
                let mut index = 0;
                while let Some(item) = seq.next_element::<RawItem<'de>>()? {
                    items.push(Item::of(index, item));
                    index += 1;
                }
                Ok(Input(items))
            }
        }

        input.deserialize_any(Items)
    }
}

/// Parses a Responses body.
pub(crate) fn parse(body: &[u8]) -> Result<ResponsesRequest, serde_json::Error> {
    serde_json::from_slice(body)
}
