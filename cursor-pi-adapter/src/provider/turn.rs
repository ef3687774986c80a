//! One pi turn as a channel receives it: the model, the conversation, and the call options.

use std::fmt;

use cursor_proto::ir::{Conversation, ErrorInfo, ErrorKind, NextStep};
use serde::Deserialize;

use crate::compat::ModelInfo;

/// Everything a [`Channel`](super::Channel) needs to answer one turn.
#[non_exhaustive]
#[derive(Clone, Debug)]
pub struct Turn {
    /// The model pi selected (its id is the catalog's display id).
    pub model: ModelInfo,
    /// pi's transcript, mapped by [`crate::compat`].
    pub conversation: Conversation,
    /// The per-call options pi passed.
    pub options: TurnOptions,
}

impl Turn {
    /// A turn.
    pub fn new(model: ModelInfo, conversation: Conversation, options: TurnOptions) -> Self {
        Self {
            model,
            conversation,
            options,
        }
    }
}

/// The options of pi's `streamSimple` call that a channel uses.
///
/// The extension's JS entry forwards exactly these fields of pi's `SimpleStreamOptions` (the
/// rest are functions or pi-internal); their names and meaning are the same in pi 0.99.1,
/// 1.0.3 and 1.6.0. `Debug` never shows a token.
#[non_exhaustive]
#[derive(Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnOptions {
    /// pi's session id (a UUIDv7, the same for every turn of a session, present even with
    /// `--no-session`): the key for the remote conversation handle.
    #[serde(default)]
    pub session_id: Option<String>,
    /// The thinking level (`minimal` … `max`); absent when thinking is off.
    #[serde(default)]
    pub reasoning: Option<String>,
    /// The resolved credential: for OAuth, what `getApiKey` returned (the access token).
    #[serde(default)]
    pub api_key: Option<String>,
    /// The output budget, when pi sets one.
    #[serde(default)]
    pub max_tokens: Option<u64>,
    /// The refresh token stored beside `api_key` in pi's `auth.json`, so a Run refused with
    /// 401 can refresh once and replay; absent when the JS entry found none.
    #[serde(default)]
    pub refresh_token: Option<String>,
}

impl TurnOptions {
    /// Reads the options object the JS entry sends; unknown fields are ignored.
    ///
    /// # Errors
    ///
    /// A [`ErrorKind::Local`] error when the text is not such an object.
    pub fn from_json(json: &str) -> Result<Self, ErrorInfo> {
        if json.trim().is_empty() {
            return Ok(Self::default());
        }
        serde_json::from_str(json).map_err(|error| {
            ErrorInfo::new(
                ErrorKind::Local,
                format!("the stream options from the pi extension are malformed: {error}"),
                NextStep::fix_config(
                    "reinstall the extension so its JS entry and native addon come from the same build",
                ),
            )
        })
    }

    /// The access token, or the auth error pi should show when there is none.
    ///
    /// # Errors
    ///
    /// A [`ErrorKind::Auth`] error whose next step is `/login cursor`.
    pub fn access_token(&self) -> Result<&str, ErrorInfo> {
        match self.api_key.as_deref().map(str::trim) {
            Some(token) if !token.is_empty() => Ok(token),
            _ => Err(ErrorInfo::new(
                ErrorKind::Auth,
                "no Cursor credentials reached the provider",
                NextStep::Login,
            )),
        }
    }
}

impl fmt::Debug for TurnOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TurnOptions")
            .field("session_id", &self.session_id)
            .field("reasoning", &self.reasoning)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("max_tokens", &self.max_tokens)
            .field(
                "refresh_token",
                &self.refresh_token.as_ref().map(|_| "<redacted>"),
            )
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_read_the_forwarded_fields_and_ignore_the_rest() {
        let options = TurnOptions::from_json(
            r#"{"sessionId":"s-1","reasoning":"high","apiKey":"tok","maxTokens":4096,"transport":"auto"}"#,
        )
        .unwrap();
        assert_eq!(options.session_id.as_deref(), Some("s-1"));
        assert_eq!(options.reasoning.as_deref(), Some("high"));
        assert_eq!(options.max_tokens, Some(4096));
        assert_eq!(options.access_token(), Ok("tok"));
    }

    #[test]
    fn debug_output_hides_the_access_token() {
        let options =
            TurnOptions::from_json(r#"{"apiKey":"secret-token","refreshToken":"secret-refresh"}"#)
                .unwrap();
        assert_eq!(options.refresh_token.as_deref(), Some("secret-refresh"));
        let shown = format!("{options:?}");
        assert!(!shown.contains("secret-token"), "{shown}");
        assert!(!shown.contains("secret-refresh"), "{shown}");
        assert!(shown.contains("<redacted>"), "{shown}");
    }

    #[test]
    fn a_missing_or_blank_key_is_an_auth_error_pointing_at_login() {
        for json in ["{}", r#"{"apiKey":"  "}"#, ""] {
            let error = TurnOptions::from_json(json)
                .unwrap()
                .access_token()
                .unwrap_err();
            assert_eq!(error.kind, ErrorKind::Auth);
            assert_eq!(error.next_step, NextStep::Login, "{error}");
        }
    }

    #[test]
    fn malformed_options_are_a_local_error() {
        let error = TurnOptions::from_json(r#"{"maxTokens":"many"}"#).unwrap_err();
        assert_eq!(error.kind, ErrorKind::Local);
    }
}
