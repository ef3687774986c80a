//! The classified failures of login, refresh and authenticated requests.

use std::time::Duration;

use cursor_proto::ir::{Classify, ErrorInfo, ErrorKind, NextStep};
use http::StatusCode;

use crate::client::HttpError;

/// Why a login, a refresh or an authenticated request failed.
///
/// Messages never contain a token, a verifier or a response body that could hold one.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    /// The user did not finish the browser login within the time limit.
    #[error("the login was not completed within {}s", waited.as_secs())]
    LoginTimedOut {
        /// How long the flow polled.
        waited: Duration,
    },
    /// Cursor refused the sign-in by policy (HTTP 403 on the login poll).
    #[error("Cursor refused the sign-in: {reason}")]
    LoginRefused {
        /// The server's stated reason, or a placeholder when it gave none.
        reason: String,
    },
    /// Cursor answered the refresh with `shouldLogout`: the session is over.
    #[error("Cursor ended the session and asks to sign in again")]
    LogoutRequired,
    /// Cursor rejected the refresh token.
    #[error("Cursor rejected the refresh token (HTTP {status})")]
    RefreshRejected {
        /// The refresh response status.
        status: StatusCode,
    },
    /// Cursor refused the user API key at the exchange (or the key cannot be sent at all).
    #[error("Cursor refused the user API key{}", match status {
        Some(status) => format!(" (HTTP {status})"),
        None => " (it is not a valid header value)".to_owned(),
    })]
    ApiKeyRefused {
        /// The exchange response status; `None` when the key never left this process.
        status: Option<StatusCode>,
    },
    /// A request was refused with 401 even after refreshing the access token.
    #[error("Cursor refused the access token even after a refresh (HTTP 401)")]
    Unauthorized,
    /// An endpoint answered with a status this crate does not expect.
    #[error("the {operation} request got unexpected HTTP status {status}")]
    UnexpectedStatus {
        /// Which request (`login poll`, `token refresh`).
        operation: &'static str,
        /// The status received.
        status: StatusCode,
    },
    /// An endpoint answered 200 with a body this crate cannot read.
    #[error("the {operation} response was malformed: {detail}")]
    Malformed {
        /// Which request (`login poll`, `token refresh`).
        operation: &'static str,
        /// What was wrong, without any of the body's content.
        detail: String,
    },
    /// The HTTP client failed to deliver a request or its response.
    #[error("the HTTP request failed: {0}")]
    Http(#[source] HttpError),
    /// The operating system's random generator failed.
    #[error("the system random generator failed: {0}")]
    Randomness(String),
    /// A configured base URL does not form a valid request URI.
    #[error("invalid {which} base URL `{base}`")]
    InvalidBaseUrl {
        /// `api` or `website`.
        which: &'static str,
        /// The configured base (an origin; it holds no secret).
        base: String,
    },
    /// The login state machine was driven out of order.
    #[error("login flow misuse: {0}")]
    FlowMisuse(&'static str),
}

impl Classify for AuthError {
    fn kind(&self) -> ErrorKind {
        match self {
            Self::LoginTimedOut { .. }
            | Self::LogoutRequired
            | Self::RefreshRejected { .. }
            | Self::ApiKeyRefused { .. }
            | Self::Unauthorized => ErrorKind::Auth,
            Self::LoginRefused { .. } => ErrorKind::RemoteRefusal,
            Self::UnexpectedStatus { status, .. } => status_kind(*status),
            Self::Malformed { .. } => ErrorKind::ProtocolDrift,
            Self::Http(error) => error.kind(),
            Self::Randomness(_) | Self::InvalidBaseUrl { .. } | Self::FlowMisuse(_) => {
                ErrorKind::Local
            }
        }
    }

    fn next_step(&self) -> NextStep {
        match self {
            Self::LoginRefused { .. } => NextStep::fix_config(
                "ask the Cursor team admin whether this account may sign in here, then sign in again",
            ),
            Self::Randomness(_) | Self::FlowMisuse(_) => NextStep::host_bug(
                "report this as a bug; it is not caused by the account or the network",
            ),
            Self::InvalidBaseUrl { .. } => {
                NextStep::fix_config("fix the configured Cursor base URL")
            }
            Self::ApiKeyRefused { .. } => NextStep::fix_config(
                "create a new user API key in the Cursor dashboard and set CURSOR_API_KEY to it, or unset it and sign in",
            ),
            _ => match self.kind() {
                ErrorKind::Auth => NextStep::Login,
                ErrorKind::RemoteRefusal => NextStep::WaitAndRetry,
                ErrorKind::ProtocolDrift => NextStep::UpdateCrates,
                _ => NextStep::Retry,
            },
        }
    }

    fn http_status(&self) -> Option<u16> {
        match self {
            Self::RefreshRejected { status } | Self::UnexpectedStatus { status, .. } => {
                Some(status.as_u16())
            }
            Self::Unauthorized => Some(401),
            Self::ApiKeyRefused { status } => status.map(|status| status.as_u16()),
            _ => None,
        }
    }
}

impl AuthError {
    /// Classifies a status no endpoint of this crate documents.
    pub(crate) fn unexpected_status(operation: &'static str, status: StatusCode) -> Self {
        Self::UnexpectedStatus { operation, status }
    }

    /// Describes a JSON error by position only: serde's own text can quote the body.
    pub(crate) fn malformed_json(operation: &'static str, error: &serde_json::Error) -> Self {
        let category = match error.classify() {
            serde_json::error::Category::Io => "unreadable",
            serde_json::error::Category::Syntax => "not valid JSON",
            serde_json::error::Category::Data => "JSON of the wrong shape",
            serde_json::error::Category::Eof => "truncated JSON",
        };
        Self::Malformed {
            operation,
            detail: format!(
                "{category} at line {} column {}",
                error.line(),
                error.column()
            ),
        }
    }
}

/// 5xx and 408 are transient server or network trouble, 429 a refusal to serve, 401/403 a
/// credential problem; any other status means the endpoint no longer behaves as documented.
fn status_kind(status: StatusCode) -> ErrorKind {
    match status.as_u16() {
        401 | 403 => ErrorKind::Auth,
        408 | 500..=599 => ErrorKind::Network,
        429 => ErrorKind::RemoteRefusal,
        _ => ErrorKind::ProtocolDrift,
    }
}

impl From<&AuthError> for ErrorInfo {
    fn from(error: &AuthError) -> Self {
        error.to_info()
    }
}

impl From<AuthError> for ErrorInfo {
    fn from(error: AuthError) -> Self {
        error.to_info()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auth_failures_ask_for_a_new_login() {
        for error in [
            AuthError::LogoutRequired,
            AuthError::Unauthorized,
            AuthError::LoginTimedOut {
                waited: Duration::from_secs(180),
            },
            AuthError::RefreshRejected {
                status: StatusCode::UNAUTHORIZED,
            },
        ] {
            let info = error.to_info();
            assert_eq!(info.kind, ErrorKind::Auth, "{error}");
            assert_eq!(info.next_step, NextStep::Login, "{error}");
        }
    }

    #[test]
    fn unexpected_statuses_are_classified_by_who_can_fix_them() {
        let kind = |code: u16| {
            AuthError::unexpected_status("login poll", StatusCode::from_u16(code).unwrap()).kind()
        };
        assert_eq!(kind(503), ErrorKind::Network);
        assert_eq!(kind(429), ErrorKind::RemoteRefusal);
        assert_eq!(kind(401), ErrorKind::Auth);
        assert_eq!(kind(400), ErrorKind::ProtocolDrift);
        assert_eq!(kind(302), ErrorKind::ProtocolDrift);
    }

    #[test]
    fn malformed_json_errors_do_not_quote_the_body() {
        let error = serde_json::from_str::<u64>("\"eyJsecret-token\"").unwrap_err();
        let message = AuthError::malformed_json("login poll", &error).to_string();
        assert!(!message.contains("secret"), "{message}");
        assert!(message.contains("wrong shape"), "{message}");
    }
}
