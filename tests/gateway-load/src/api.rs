//! The three client APIs the gateway serves: paths, headers and request bodies.

use bytes::Bytes;
use serde_json::json;

/// The chat model id (Chat Completions, Responses).
pub(crate) const MODEL: &str = "composer-2.5";
/// The same model as the Anthropic Messages API names it.
pub(crate) const ANTHROPIC_MODEL: &str = "claude-cursor-composer-2.5";

/// One client API.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Api {
    /// `/v1/messages`
    Messages,
    /// `/v1/chat/completions`
    Chat,
    /// `/v1/responses`
    Responses,
}

impl Api {
    /// All three, in report order.
    pub(crate) const ALL: [Self; 3] = [Self::Messages, Self::Chat, Self::Responses];

    /// `messages`, `chat` or `responses`.
    pub(crate) fn named(name: &str) -> Option<Self> {
        match name {
            "messages" => Some(Self::Messages),
            "chat" => Some(Self::Chat),
            "responses" => Some(Self::Responses),
            _ => None,
        }
    }

    /// The request path.
    pub(crate) fn path(self) -> &'static str {
        match self {
            Self::Messages => "/v1/messages",
            Self::Chat => "/v1/chat/completions",
            Self::Responses => "/v1/responses",
        }
    }

    /// The headers a client of this API sends with `key`.
    pub(crate) fn headers(self, key: &str) -> Vec<(&'static str, String)> {
        let mut headers = vec![("Authorization", format!("Bearer {key}"))];
        if self == Self::Messages {
            headers.push(("anthropic-version", "2023-06-01".into()));
        }
        headers
    }

    /// A small non-streaming request whose user text is `text`.
    pub(crate) fn small_body(self, text: &str) -> Bytes {
        let body = match self {
            Self::Messages => json!({"model": ANTHROPIC_MODEL, "max_tokens": 256,
                "messages": [{"role": "user", "content": text}]}),
            Self::Chat => json!({"model": MODEL, "messages": [{"role": "user", "content": text}]}),
            Self::Responses => json!({"model": MODEL, "input": text}),
        };
        Bytes::from(body.to_string())
    }

    /// A non-streaming request of at most `limit` bytes (and within one content block of it):
    /// one user message whose content is as many one-letter text blocks as fit.
    pub(crate) fn many_blocks_body(self, limit: usize) -> Bytes {
        let (head, block, tail) = match self {
            Self::Messages => (
                format!(
                    r#"{{"model":"{ANTHROPIC_MODEL}","max_tokens":256,"messages":[{{"role":"user","content":["#
                ),
                r#"{"type":"text","text":"a"}"#,
                "]}]}",
            ),
            Self::Chat => (
                format!(r#"{{"model":"{MODEL}","messages":[{{"role":"user","content":["#),
                r#"{"type":"text","text":"a"}"#,
                "]}]}",
            ),
            Self::Responses => (
                format!(
                    r#"{{"model":"{MODEL}","input":[{{"type":"message","role":"user","content":["#
                ),
                r#"{"type":"input_text","text":"a"}"#,
                "]}]}",
            ),
        };
        let room = limit - head.len() - tail.len();
        // n blocks take n * block + (n - 1) commas.
        let blocks = (room + 1) / (block.len() + 1);
        let mut body = Vec::with_capacity(limit);
        body.extend_from_slice(head.as_bytes());
        for i in 0..blocks {
            if i > 0 {
                body.push(b',');
            }
            body.extend_from_slice(block.as_bytes());
        }
        body.extend_from_slice(tail.as_bytes());
        Bytes::from(body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn many_blocks_bodies_are_json_just_under_the_limit() {
        for api in Api::ALL {
            let body = api.many_blocks_body(100_000);
            assert!(
                body.len() <= 100_000 && body.len() > 100_000 - 40,
                "{api:?}"
            );
            let value: serde_json::Value = serde_json::from_slice(&body).unwrap();
            let content = match api {
                Api::Responses => &value["input"][0]["content"],
                _ => &value["messages"][0]["content"],
            };
            assert!(content.as_array().unwrap().len() > 3000, "{api:?}");
            let small: serde_json::Value = serde_json::from_slice(&api.small_body("ping")).unwrap();
            assert!(small.is_object());
        }
    }
}
