//! Start-up errors, and [`ApiError`]: every HTTP failure, classified once. Each dialect words it
//! in its own error shape; OpenAI's is the default (routes that belong to no dialect).

use std::net::SocketAddr;

use cursor_agent::ir::{ErrorInfo, ErrorKind, NextStep};
use serde_json::json;

/// Why the gateway did not start.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    /// A command-line or configuration mistake (the message says which).
    #[error("{0}")]
    Usage(String),
    /// `--help` or `--version` was asked for: the text to print, then exit successfully.
    #[error("{0}")]
    Help(String),
    /// A non-loopback listen address without an API key.
    #[error(
        "refusing to listen on {0} without an API key: anyone who reaches it could use your Cursor \
         account. Pass --api-key-file FILE (or set CURSOR_GATEWAY_API_KEY), or listen on 127.0.0.1"
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

/// An HTTP failure: its status, its classification and what the client can do next.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq)]
pub struct ApiError {
    /// The HTTP status.
    pub status: u16,
    /// OpenAI's error `type`.
    pub kind: &'static str,
    /// OpenAI's error `code`.
    pub code: String,
    /// The message, with this project's class and next step.
    pub message: String,
    /// The offending parameter, if one.
    pub param: Option<String>,
    /// Seconds for a `Retry-After` header, if the client should come back.
    pub retry_after: Option<u64>,
    /// The classification: `auth`, `network`, `protocol_drift`, `remote_refusal` or `local`.
    pub class: ErrorKind,
}

impl ApiError {
    fn new(status: u16, kind: &'static str, code: &str, class: ErrorKind, message: String) -> Self {
        Self {
            status,
            kind,
            code: code.to_owned(),
            message,
            param: None,
            retry_after: None,
            class,
        }
    }

    /// A 400 for bad input: what is wrong, and that the stored conversation is untouched.
    pub fn bad_request(code: &str, message: impl Into<String>) -> Self {
        Self::new(
            400,
            "invalid_request_error",
            code,
            ErrorKind::Local,
            format!(
                "[local] {} (next step: fix the request; the conversation's stored state is unchanged)",
                message.into()
            ),
        )
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

    /// A 503 with `Retry-After`: the gateway as a whole is at its bound of `what`
    /// (connections, turns, request memory).
    pub fn overloaded(what: &str) -> Self {
        let mut error = Self::new(
            503,
            "server_error",
            "overloaded",
            ErrorKind::RemoteRefusal,
            format!(
                "[remote_refusal] the gateway is at its limit of {what} (next step: retry after the \
                 Retry-After delay)"
            ),
        );
        error.retry_after = Some(1);
        error
    }

    /// A 429 with `Retry-After`: this client key is at its own share of `what`; other keys are
    /// still served.
    pub fn key_limit(what: &str) -> Self {
        let mut error = Self::new(
            429,
            "rate_limit_error",
            "key_limit_reached",
            ErrorKind::RemoteRefusal,
            format!(
                "[remote_refusal] this API key is at its limit of {what} (next step: retry after \
                 the Retry-After delay, or finish the requests it has running)"
            ),
        );
        error.retry_after = Some(1);
        error
    }

    /// A 413: the body is larger than `limit` bytes (said before it is read).
    pub fn too_large(limit: usize) -> Self {
        Self::new(
            413,
            "invalid_request_error",
            "request_too_large",
            ErrorKind::Local,
            format!(
                "[local] the request body exceeds the gateway's limit of {limit} bytes (next step: \
                 send less, for example smaller images, or raise --max-body-bytes)"
            ),
        )
    }

    /// A 408: the body did not arrive within the body timeout.
    pub fn body_timeout() -> Self {
        Self::new(
            408,
            "invalid_request_error",
            "request_timeout",
            ErrorKind::Network,
            "[network] the request body did not arrive in time (next step: retry; check the \
             network, or raise --body-timeout)"
                .into(),
        )
    }

    /// A 404 for an unknown path.
    pub fn not_found(path: &str) -> Self {
        Self::new(
            404,
            "invalid_request_error",
            "unknown_url",
            ErrorKind::Local,
            format!(
                "[local] no route {path} (next step: use /v1/models, /v1/chat/completions, \
                 /v1/responses or /v1/messages)"
            ),
        )
    }

    /// A 405 for a known path with another method.
    pub fn method_not_allowed(path: &str) -> Self {
        Self::new(
            405,
            "invalid_request_error",
            "method_not_allowed",
            ErrorKind::Local,
            format!(
                "[local] {path} does not take this method (next step: see docs/OPENAI-GATEWAY.md)"
            ),
        )
    }

    /// A 401 for a missing or wrong gateway API key.
    pub fn gateway_key() -> Self {
        Self::new(
            401,
            "authentication_error",
            "invalid_api_key",
            ErrorKind::Auth,
            "[auth] missing or wrong gateway API key (next step: send a key the gateway was \
             started with as `Authorization: Bearer KEY` or `x-api-key: KEY`)"
                .into(),
        )
    }

    /// A 401 for a missing or wrong admin key on an admin route.
    pub fn admin_key() -> Self {
        Self::new(
            401,
            "authentication_error",
            "invalid_admin_key",
            ErrorKind::Auth,
            "[auth] this route needs the gateway's admin key (next step: send it as \
             `Authorization: Bearer KEY`, or read it on the --admin-listen address)"
                .into(),
        )
    }

    /// A 500 for a failure inside the gateway. The client learns that it happened and the
    /// request id; what failed, with paths and OS errors, goes to the gateway's log only.
    pub fn internal(request_id: Option<&str>) -> Self {
        let id = request_id.map_or(String::new(), |id| format!(" (request {id})"));
        Self::new(
            500,
            "server_error",
            "internal_error",
            ErrorKind::Local,
            format!(
                "[local] the gateway failed inside{id} (next step: retry; if it persists, the \
                 gateway's operator finds the cause in its log under the response's x-request-id)"
            ),
        )
    }

    /// A classified failure from the crates: 401 auth, 429 quota and rate limits, 400 bad
    /// input, 502 network and drift, and a redacted 500 for the gateway's own failures.
    pub fn from_info(info: &ErrorInfo) -> Self {
        // A prompt Cursor refused as too long: OpenAI's own code, so clients compact.
        if info.next_step == NextStep::CompactConversation {
            let mut error = Self::new(
                400,
                "invalid_request_error",
                "context_length_exceeded",
                info.kind,
                format!(
                    "[{}] prompt is too long: {} (next step: {})",
                    info.kind, info.message, info.next_step
                ),
            );
            error.param = Some("messages".into());
            return error;
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
        if status == 500 {
            // The gateway's own failure (its state directory, a task): the details name paths
            // and OS errors of the machine it runs on, which are the operator's, not the
            // client's.
            tracing::error!(message = %info.message, next_step = %info.next_step, "a turn failed inside the gateway");
            return Self::internal(None);
        }
        Self::new(
            status,
            kind,
            info.kind.as_str(),
            info.kind,
            format!(
                "[{}] {} (next step: {})",
                info.kind, info.message, info.next_step
            ),
        )
    }

    /// The classification as text (`auth`, `local`, …), for metrics.
    pub fn class(&self) -> &'static str {
        self.class.as_str()
    }

    /// OpenAI's JSON body: `{"error": {message, type, param, code}}`.
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
        assert_eq!(error.class(), "remote_refusal");
        let body = error.body();
        assert_eq!(body["error"]["type"], "rate_limit_error");
        assert_eq!(body["error"]["code"], "remote_refusal");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(
            message
                .starts_with("[remote_refusal] quota spent (next step: wait for the usage quota")
        );
    }

    #[test]
    fn a_failure_inside_the_gateway_never_shows_its_paths_to_the_client() {
        let info = ErrorInfo::new(
            ErrorKind::Local,
            "write /srv/secret-state/handles/c-1.json: No space left on device",
            NextStep::fix_local("check that the handle directory exists"),
        );
        let error = ApiError::from_info(&info);
        assert_eq!(error.status, 500);
        let body = error.body().to_string();
        assert!(!body.contains("/srv/secret-state"), "{body}");
        assert!(!body.contains("handle directory"), "{body}");
        assert_eq!(error.class(), "local");
    }
}
