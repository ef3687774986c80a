//! Start-up errors, and the OpenAI error objects every HTTP failure is answered with.

use std::net::SocketAddr;

use cursor_agent::ir::{ErrorInfo, ErrorKind, NextStep};
use serde_json::json;

/// Why the gateway did not start.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    /// A command-line mistake (the message says which; empty for `--help`).
    #[error("{0}")]
    Usage(String),
    /// A non-loopback listen address without an API key.
    #[error(
        "refusing to listen on {0} without an API key: anyone who reaches it could use your Cursor \
         account. Pass --api-key KEY (or set CURSOR_GATEWAY_API_KEY), or listen on 127.0.0.1"
    )]
    Exposed(SocketAddr),
    /// An origin flag names a host outside the allowlist.
    #[error("{flag}: {message}")]
    Origin {
        /// The flag.
        flag: &'static str,
        /// Why it was refused.
        message: String,
    },
    /// The listen address could not be bound, or the state directory created.
    #[error("{what}: {source}")]
    Io {
        /// What failed.
        what: String,
        /// The OS error.
        source: std::io::Error,
    },
}

impl GatewayError {
    /// The classification (all start-up failures are local: fix the configuration).
    pub fn kind(&self) -> ErrorKind {
        ErrorKind::Local
    }
}

/// An HTTP failure answered as an OpenAI error object.
#[derive(Clone, Debug, PartialEq)]
pub struct ApiError {
    /// The HTTP status.
    pub status: u16,
    /// OpenAI's `type`.
    pub kind: &'static str,
    /// OpenAI's `code`.
    pub code: String,
    /// The message, with this project's class and next step.
    pub message: String,
    /// The offending parameter, if one.
    pub param: Option<String>,
    /// Seconds for a `Retry-After` header, if the client should come back.
    pub retry_after: Option<u64>,
}

impl ApiError {
    /// A 400 for bad input: what is wrong, and that the stored conversation is untouched.
    pub fn bad_request(code: &str, message: impl Into<String>) -> Self {
        Self {
            status: 400,
            kind: "invalid_request_error",
            code: code.to_owned(),
            message: format!(
                "[local] {} (next step: fix the request; the conversation's stored state is unchanged)",
                message.into()
            ),
            param: None,
            retry_after: None,
        }
    }

    /// Sets the parameter the error is about.
    #[must_use]
    pub fn with_param(mut self, param: impl Into<String>) -> Self {
        self.param = Some(param.into());
        self
    }

    /// The same error with another HTTP status.
    #[must_use]
    pub fn with_status(mut self, status: u16) -> Self {
        self.status = status;
        self
    }

    /// A 503 with `Retry-After`: the gateway is at its bound of `what` (connections, turns).
    pub fn overloaded(what: &str) -> Self {
        Self {
            status: 503,
            kind: "server_error",
            code: "overloaded".into(),
            message: format!(
                "[remote_refusal] the gateway is at its limit of concurrent {what} (next step: retry \
                 after the Retry-After delay)"
            ),
            param: None,
            retry_after: Some(1),
        }
    }

    /// A 413: the body is larger than `limit` bytes (said before it is read).
    pub fn too_large(limit: usize) -> Self {
        Self {
            status: 413,
            kind: "invalid_request_error",
            code: "request_too_large".into(),
            message: format!(
                "[local] the request body exceeds the gateway's limit of {limit} bytes (next step: \
                 send less, for example smaller images, or raise --max-body-bytes)"
            ),
            param: None,
            retry_after: None,
        }
    }

    /// A 408: the body did not arrive within the body timeout.
    pub fn body_timeout() -> Self {
        Self {
            status: 408,
            kind: "invalid_request_error",
            code: "request_timeout".into(),
            message: "[network] the request body did not arrive in time (next step: retry; check \
                      the network, or raise --body-timeout)"
                .into(),
            param: None,
            retry_after: None,
        }
    }

    /// A 404 for an unknown path.
    pub fn not_found(path: &str) -> Self {
        Self {
            status: 404,
            kind: "invalid_request_error",
            code: "unknown_url".into(),
            message: format!(
                "[local] no route {path} (next step: use /v1/models, /v1/chat/completions or /v1/responses)"
            ),
            param: None,
            retry_after: None,
        }
    }

    /// A 405 for a known path with another method.
    pub fn method_not_allowed(path: &str) -> Self {
        Self {
            status: 405,
            kind: "invalid_request_error",
            code: "method_not_allowed".into(),
            message: format!(
                "[local] {path} does not take this method (next step: see docs/OPENAI-GATEWAY.md)"
            ),
            param: None,
            retry_after: None,
        }
    }

    /// A 401 for a missing or wrong gateway API key.
    pub fn gateway_key() -> Self {
        Self {
            status: 401,
            kind: "authentication_error",
            code: "invalid_api_key".into(),
            message:
                "[auth] missing or wrong gateway API key (next step: send the key the gateway \
                      was started with as `Authorization: Bearer KEY`)"
                    .into(),
            param: None,
            retry_after: None,
        }
    }

    /// A classified failure from the crates: 401 auth, 429 quota and rate limits, 400 bad
    /// input, 502 network and drift.
    pub fn from_info(info: &ErrorInfo) -> Self {
        // A prompt Cursor refused as too long: OpenAI's own code, so clients compact.
        if info.next_step == NextStep::CompactConversation {
            return Self {
                status: 400,
                kind: "invalid_request_error",
                code: "context_length_exceeded".into(),
                message: format!(
                    "[{}] prompt is too long: {} (next step: {})",
                    info.kind, info.message, info.next_step
                ),
                param: Some("messages".into()),
                retry_after: None,
            };
        }
        let (status, kind) = match info.kind {
            ErrorKind::Auth => (401, "authentication_error"),
            ErrorKind::RemoteRefusal => match info.next_step {
                NextStep::WaitForQuota | NextStep::WaitAndRetry => (429, "rate_limit_error"),
                NextStep::SwitchModel | NextStep::PickModel => (400, "invalid_request_error"),
                _ => (502, "api_error"),
            },
            ErrorKind::Network | ErrorKind::ProtocolDrift => (502, "api_error"),
            ErrorKind::Local => match info.next_step {
                NextStep::FixInput { .. }
                | NextStep::SendUserMessage
                | NextStep::PickModel
                | NextStep::StartNewSession => (400, "invalid_request_error"),
                _ => (500, "server_error"),
            },
            _ => (502, "api_error"),
        };
        Self {
            status,
            kind,
            code: info.kind.as_str().to_owned(),
            message: format!(
                "[{}] {} (next step: {})",
                info.kind, info.message, info.next_step
            ),
            param: None,
            retry_after: None,
        }
    }

    /// The classification this error carries (`auth`, `local`, …), for metrics.
    pub fn class(&self) -> &str {
        self.message
            .strip_prefix('[')
            .and_then(|rest| rest.split_once(']'))
            .map_or("local", |(class, _)| class)
    }

    /// The JSON body: `{"error": {message, type, param, code}}`.
    pub fn body(&self) -> serde_json::Value {
        json!({"error": {
            "message": self.message,
            "type": self.kind,
            "param": self.param,
            "code": self.code,
        }})
    }
}

impl axum::response::IntoResponse for ApiError {
    fn into_response(self) -> axum::response::Response {
        let status =
            http::StatusCode::from_u16(self.status).unwrap_or(http::StatusCode::BAD_GATEWAY);
        let mut response = (status, axum::Json(self.body())).into_response();
        if let Some(seconds) = self.retry_after {
            response
                .headers_mut()
                .insert(http::header::RETRY_AFTER, http::HeaderValue::from(seconds));
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_follow_the_classification() {
        let status = |kind, step| ApiError::from_info(&ErrorInfo::new(kind, "m", step)).status;
        assert_eq!(status(ErrorKind::Auth, NextStep::Login), 401);
        assert_eq!(
            status(ErrorKind::RemoteRefusal, NextStep::WaitForQuota),
            429
        );
        assert_eq!(
            status(ErrorKind::RemoteRefusal, NextStep::WaitAndRetry),
            429
        );
        assert_eq!(status(ErrorKind::Network, NextStep::Retry), 502);
        assert_eq!(
            status(ErrorKind::ProtocolDrift, NextStep::UpdateCrates),
            502
        );
        assert_eq!(status(ErrorKind::Local, NextStep::fix_input("x")), 400);
    }

    #[test]
    fn a_context_overflow_is_openais_context_length_exceeded() {
        let error = ApiError::from_info(&ErrorInfo::new(
            ErrorKind::RemoteRefusal,
            "resource exhausted",
            NextStep::CompactConversation,
        ));
        assert_eq!(
            (error.status, error.code.as_str()),
            (400, "context_length_exceeded")
        );
        assert!(
            error.message.contains("prompt is too long"),
            "{}",
            error.message
        );
    }

    #[test]
    fn the_message_carries_class_and_next_step() {
        let error = ApiError::from_info(&ErrorInfo::new(
            ErrorKind::RemoteRefusal,
            "quota spent",
            NextStep::WaitForQuota,
        ));
        let body = error.body();
        assert_eq!(body["error"]["type"], "rate_limit_error");
        assert_eq!(body["error"]["code"], "remote_refusal");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(
            message
                .starts_with("[remote_refusal] quota spent (next step: wait for the usage quota")
        );
    }
}
