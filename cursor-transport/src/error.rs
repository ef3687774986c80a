//! `CursorError`: every failure of this crate, classified for the host.

use cursor_proto::ir::{Classify, ErrorInfo, ErrorKind, NextStep};

use crate::envelope::{Code, ConnectError, EnvelopeError};

/// Why the backend refused a call it understood, where the message lets us tell.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Refusal {
    /// The account's usage quota or spend limit is used up.
    Quota,
    /// `x-cursor-client-version` is below the backend's floor.
    ClientVersionFloor,
    /// Rate limited or out of capacity; retrying later may work.
    Capacity,
    /// The account is not entitled to this RPC or model.
    Entitlement,
    /// The backend failed while serving (Connect `internal` or `unknown`); retrying may work.
    ServerFault,
    /// The request is larger than the model's context window; compacting the conversation
    /// may make it fit.
    ContextOverflow,
    /// Any other refusal; the message says why.
    Other,
}

impl Refusal {
    /// What the user should do about this refusal.
    pub const fn next_step(self) -> NextStep {
        match self {
            Self::Quota => NextStep::WaitForQuota,
            Self::ClientVersionFloor => NextStep::UpdateClientVersion,
            Self::Capacity => NextStep::WaitAndRetry,
            Self::Entitlement => NextStep::SwitchModel,
            Self::ServerFault => NextStep::Retry,
            Self::ContextOverflow => NextStep::CompactConversation,
            Self::Other => NextStep::ReadServerMessage,
        }
    }

    /// What an end-of-stream `resource_exhausted` means (PROTOCOL-AGENT §13.2): the message's
    /// cue when it has one (version floor, spent quota, a model the plan lacks, transient
    /// capacity, an oversized prompt); a bare one (Cursor sends `Error`) is a context overflow
    /// when the call streamed no token (`streamed_tokens == Some(0)`), a spent quota otherwise.
    pub fn of_resource_exhausted(message: &str, streamed_tokens: Option<u64>) -> Self {
        match Self::from_text(message) {
            Some(refusal) => refusal,
            None if streamed_tokens == Some(0) => Self::ContextOverflow,
            None => Self::Quota,
        }
    }

    /// When a spent quota comes back, as the message words it: the words after `resets` or
    /// `try again` (`in 14 minutes`, `on Nov 1, 2026`), up to the end of their sentence.
    pub fn quota_resets(message: &str) -> Option<String> {
        let lower = message.to_ascii_lowercase();
        let start = ["resets ", "reset ", "try again "]
            .iter()
            .find_map(|cue| lower.find(cue).map(|at| at + cue.len()))?;
        let rest = &message[start..];
        let end = rest
            .char_indices()
            .find(|&(i, c)| {
                matches!(c, '!' | '?' | '\n')
                    || (c == '.' && !rest[i + 1..].starts_with(|d: char| d.is_ascii_digit()))
            })
            .map_or(rest.len(), |(i, _)| i);
        let when = rest[..end].trim();
        (!when.is_empty()).then(|| when.to_owned())
    }

    /// Tells a refusal apart by the words of its message (there is no structured field for it).
    fn from_text(text: &str) -> Option<Self> {
        let text = text.to_ascii_lowercase();
        let has = |needles: &[&str]| needles.iter().any(|n| text.contains(n));
        if has(&[
            "update to the latest version",
            "please update",
            "client version",
            "outdated",
            "version is no longer supported",
            "upgrade your client",
        ]) {
            Some(Self::ClientVersionFloor)
        } else if has(&[
            "quota",
            "usage limit",
            "usage-based",
            "limit reached",
            "out of credits",
            "spend limit",
            "hard limit",
            "included usage",
            "resets in",
            "resets on",
            "resets at",
        ]) {
            Some(Self::Quota)
        } else if has(&[
            "not enabled for",
            "not entitled",
            "entitlement",
            "not available on your plan",
            "not included in your plan",
            "not available on the free plan",
            "your plan does not include",
            "upgrade your plan",
        ]) {
            Some(Self::Entitlement)
        } else if has(&[
            "context length",
            "context window",
            "maximum context",
            "prompt is too long",
            "too many tokens",
        ]) {
            Some(Self::ContextOverflow)
        } else if has(&[
            "rate limit",
            "too many requests",
            "capacity",
            "overloaded",
            "high demand",
            "try again later",
            "temporarily unavailable",
        ]) {
            Some(Self::Capacity)
        } else {
            None
        }
    }
}

/// A failed call: what went wrong, classified by [`ErrorKind`], with a next step for the user.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum CursorError {
    /// The server answered with a Connect error: an end-of-stream error, a unary error body, or
    /// a non-200 HTTP status (whose code then follows the Connect HTTP table).
    #[error("server error {error}{}", http_status.map(|s| format!(" (HTTP {s})")).unwrap_or_default())]
    Connect {
        /// The error as the server sent it.
        error: Box<ConnectError>,
        /// The HTTP status when the response was not a 200.
        http_status: Option<u16>,
    },
    /// The transport failed: connect refused, DNS, TLS, reset, GOAWAY with an error, a ping
    /// without a pong, a stream cut off.
    #[error("network failure: {message}")]
    Network {
        /// What failed.
        message: String,
        /// The underlying error, when there is one.
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync + 'static>>,
    },
    /// The peer sent bytes in a shape this version does not understand (not the envelope layer).
    #[error("protocol drift: {message}")]
    ProtocolDrift {
        /// What was unexpected.
        message: String,
    },
    /// The envelope stream was malformed or refused.
    #[error("malformed Connect stream: {0}")]
    Envelope(#[from] EnvelopeError),
    /// The origin is not on the allowlist; no socket was opened.
    #[error("origin {origin:?} refused: {reason}")]
    OriginRefused {
        /// The origin as given.
        origin: String,
        /// Why it was refused.
        reason: &'static str,
    },
    /// The request could not be built from the given configuration or input.
    #[error("invalid request: {message}")]
    InvalidRequest {
        /// What was wrong.
        message: String,
    },
    /// This client canceled the call.
    #[error("call canceled")]
    Canceled,
}

impl CursorError {
    /// A network failure with an underlying cause.
    pub fn network(
        message: impl Into<String>,
        source: impl Into<Box<dyn std::error::Error + Send + Sync + 'static>>,
    ) -> Self {
        Self::Network {
            message: message.into(),
            source: Some(source.into()),
        }
    }

    /// A network failure described only by `message`.
    pub fn network_msg(message: impl Into<String>) -> Self {
        Self::Network {
            message: message.into(),
            source: None,
        }
    }

    /// A protocol-drift failure.
    pub fn drift(message: impl Into<String>) -> Self {
        Self::ProtocolDrift {
            message: message.into(),
        }
    }

    /// A local invalid-request failure.
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::InvalidRequest {
            message: message.into(),
        }
    }

    /// A failure carrying a Connect error, optionally from a non-200 response.
    pub fn connect(error: ConnectError, http_status: Option<u16>) -> Self {
        Self::Connect {
            error: Box::new(error),
            http_status,
        }
    }

    /// The Connect code, when the server sent or implied one.
    pub fn code(&self) -> Option<Code> {
        match self {
            Self::Connect { error, .. } => Some(error.code),
            _ => None,
        }
    }

    /// The Connect error the server sent, if any.
    pub fn connect_error(&self) -> Option<&ConnectError> {
        match self {
            Self::Connect { error, .. } => Some(error),
            _ => None,
        }
    }

    /// For a [`ErrorKind::RemoteRefusal`], which kind of refusal it is.
    pub fn refusal(&self) -> Option<Refusal> {
        match self {
            Self::Connect { error, http_status } => classify(error, *http_status).1,
            _ => None,
        }
    }

    /// What went wrong, for humans.
    pub fn message(&self) -> String {
        self.to_string()
    }
}

impl Classify for CursorError {
    fn kind(&self) -> ErrorKind {
        match self {
            Self::Connect { error, http_status } => classify(error, *http_status).0,
            Self::Network { .. } => ErrorKind::Network,
            // Built here, from what the caller gave: the caller's to fix, not drift.
            Self::Envelope(EnvelopeError::MessageTooLarge { .. }) => ErrorKind::Local,
            Self::ProtocolDrift { .. } | Self::Envelope(_) => ErrorKind::ProtocolDrift,
            Self::OriginRefused { .. } | Self::InvalidRequest { .. } | Self::Canceled => {
                ErrorKind::Local
            }
        }
    }

    fn next_step(&self) -> NextStep {
        if let Some(refusal) = self.refusal() {
            return refusal.next_step();
        }
        match self.kind() {
            ErrorKind::Auth => NextStep::Login,
            ErrorKind::Network => NextStep::Retry,
            ErrorKind::ProtocolDrift => NextStep::UpdateCrates,
            _ => match self {
                Self::OriginRefused { .. } => NextStep::fix_config(
                    "use an allowlisted origin (https://api2.cursor.sh, an agent host under api5.cursor.sh such as https://agentn.api5.cursor.sh, or loopback http for tests)",
                ),
                Self::Canceled => NextStep::Nothing,
                Self::Envelope(EnvelopeError::MessageTooLarge { .. }) => {
                    NextStep::fix_input("send a smaller message (see the limit in the message)")
                }
                _ => NextStep::fix_input("fix the configuration or input named in the message"),
            },
        }
    }

    fn connect_code(&self) -> Option<&str> {
        self.code().map(Code::as_str)
    }

    fn http_status(&self) -> Option<u16> {
        match self {
            Self::Connect { http_status, .. } => *http_status,
            _ => None,
        }
    }

    /// The message without the kind prefix [`Display`](std::fmt::Display) adds: the
    /// [`ErrorInfo`] display says the kind itself (`network error: connection: connection lost`).
    fn to_info(&self) -> ErrorInfo {
        let message = match self {
            Self::Network { message, .. } | Self::ProtocolDrift { message } => message.clone(),
            other => other.to_string(),
        };
        let resets = match self {
            Self::Connect { error, .. } if self.refusal() == Some(Refusal::Quota) => {
                Refusal::quota_resets(&classification_text(error))
            }
            _ => None,
        };
        ErrorInfo::new(self.kind(), message, self.next_step())
            .with_wire(self.connect_code(), self.http_status())
            .with_quota_resets(resets)
    }
}

impl From<CursorError> for ErrorInfo {
    fn from(error: CursorError) -> Self {
        error.to_info()
    }
}

impl From<&CursorError> for ErrorInfo {
    fn from(error: &CursorError) -> Self {
        error.to_info()
    }
}

/// Kind and refusal of a server error. Status 401/403 and the two auth codes mean "log in again"
/// unless the text says the refusal is a version floor or a missing entitlement.
fn classify(error: &ConnectError, http_status: Option<u16>) -> (ErrorKind, Option<Refusal>) {
    let text = classification_text(error);
    let refusal_text = Refusal::from_text(&text);
    let auth_status = matches!(http_status, Some(401 | 403));
    let auth_code = matches!(error.code, Code::Unauthenticated | Code::PermissionDenied);
    if auth_status || auth_code {
        return match refusal_text {
            Some(r @ (Refusal::ClientVersionFloor | Refusal::Entitlement)) => {
                (ErrorKind::RemoteRefusal, Some(r))
            }
            _ => (ErrorKind::Auth, None),
        };
    }
    if http_status == Some(429) {
        return (
            ErrorKind::RemoteRefusal,
            Some(refusal_text.unwrap_or(Refusal::Capacity)),
        );
    }
    match error.code {
        // One code, several meanings, told apart by the words (PROTOCOL-AGENT §13.2); a bare
        // one is the quota's here, where the tokens the call streamed are not known.
        Code::ResourceExhausted => (
            ErrorKind::RemoteRefusal,
            Some(Refusal::of_resource_exhausted(&text, None)),
        ),
        Code::Unavailable | Code::DeadlineExceeded | Code::Canceled => (ErrorKind::Network, None),
        Code::Unimplemented => (ErrorKind::ProtocolDrift, None),
        // A server-side failure, not a decision about this request: worth one more try.
        Code::Internal | Code::Unknown => (
            ErrorKind::RemoteRefusal,
            Some(refusal_text.unwrap_or(Refusal::ServerFault)),
        ),
        _ => (
            ErrorKind::RemoteRefusal,
            Some(refusal_text.unwrap_or(Refusal::Other)),
        ),
    }
}

/// The message plus any human-readable detail renderings (Cursor puts titles there).
fn classification_text(error: &ConnectError) -> String {
    let mut text = error.message.clone();
    for detail in &error.details {
        if let Some(debug) = &detail.debug {
            text.push(' ');
            text.push_str(&debug.to_string());
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn remote(code: Code, message: &str, status: Option<u16>) -> CursorError {
        CursorError::connect(ConnectError::new(code, message), status)
    }

    #[test]
    fn a_server_fault_is_a_refusal_worth_one_more_try() {
        for code in [Code::Internal, Code::Unknown] {
            let error = remote(code, "something broke", None);
            assert_eq!(error.kind(), ErrorKind::RemoteRefusal);
            assert_eq!(error.refusal(), Some(Refusal::ServerFault));
            assert_eq!(error.next_step(), NextStep::Retry);
        }
    }

    #[test]
    fn an_outgoing_message_over_the_limit_is_the_callers_to_fix() {
        let error = CursorError::from(EnvelopeError::MessageTooLarge { len: 20, max: 10 });
        assert_eq!(error.kind(), ErrorKind::Local);
        assert!(matches!(error.next_step(), NextStep::FixInput { .. }));
        let frame = CursorError::from(EnvelopeError::FrameTooLarge {
            declared: 20,
            max: 10,
        });
        assert_eq!(
            frame.kind(),
            ErrorKind::ProtocolDrift,
            "what the server sent"
        );
    }

    #[test]
    fn the_host_message_names_the_kind_once() {
        let error = CursorError::network_msg("connection: connection lost");
        let shown = ErrorInfo::from(&error).to_string();
        assert!(
            shown.starts_with("network error: connection: connection lost (next step: "),
            "{shown}"
        );
    }

    #[test]
    fn auth_codes_and_statuses_ask_for_login() {
        for err in [
            remote(Code::Unauthenticated, "", None),
            remote(Code::PermissionDenied, "denied", None),
            remote(Code::Unknown, "", Some(401)),
            remote(Code::Unknown, "", Some(403)),
        ] {
            assert_eq!(err.kind(), ErrorKind::Auth, "{err}");
            assert_eq!(err.next_step(), NextStep::Login);
        }
    }

    #[test]
    fn resource_exhausted_splits_by_message() {
        let floor = remote(
            Code::ResourceExhausted,
            "Please update to the latest version of Cursor at cursor.com/downloads to continue using the Agent",
            None,
        );
        let quota = remote(
            Code::ResourceExhausted,
            "You have hit your usage limit",
            None,
        );
        let timed = remote(
            Code::ResourceExhausted,
            "Rate limit exceeded for grok-4.7. Resets in 14 minutes.",
            None,
        );
        // Bare: the quota's where the streamed tokens are unknown.
        let vague = remote(Code::ResourceExhausted, "Error", None);
        let entitlement = remote(
            Code::ResourceExhausted,
            "grok-4.7 is not available on your plan",
            None,
        );
        let capacity = remote(Code::ResourceExhausted, "Rate limit exceeded", None);
        let overflow = remote(
            Code::ResourceExhausted,
            "The prompt is too long for this model's context window",
            None,
        );
        assert_eq!(floor.refusal(), Some(Refusal::ClientVersionFloor));
        assert_eq!(floor.next_step(), NextStep::UpdateClientVersion);
        for quota in [&quota, &timed, &vague] {
            assert_eq!(quota.refusal(), Some(Refusal::Quota), "{quota}");
            assert_eq!(quota.next_step(), NextStep::WaitForQuota, "{quota}");
        }
        assert_eq!(
            ErrorInfo::from(&timed).quota_resets.as_deref(),
            Some("in 14 minutes")
        );
        assert_eq!(ErrorInfo::from(&quota).quota_resets, None);
        assert_eq!(entitlement.refusal(), Some(Refusal::Entitlement));
        assert_eq!(entitlement.next_step(), NextStep::SwitchModel);
        assert_eq!(capacity.refusal(), Some(Refusal::Capacity));
        assert_eq!(capacity.next_step(), NextStep::WaitAndRetry);
        assert_eq!(overflow.refusal(), Some(Refusal::ContextOverflow));
        assert_eq!(overflow.next_step(), NextStep::CompactConversation);
        for err in [floor, quota, vague, entitlement, capacity, overflow] {
            assert_eq!(err.kind(), ErrorKind::RemoteRefusal);
        }
        // A 429 without a Connect code is the capacity's, not the quota's.
        let busy = remote(Code::Unknown, "", Some(429));
        assert_eq!(busy.refusal(), Some(Refusal::Capacity));
    }

    #[test]
    fn a_bare_resource_exhausted_before_any_token_is_a_context_overflow() {
        assert_eq!(
            Refusal::of_resource_exhausted("Error", Some(0)),
            Refusal::ContextOverflow
        );
        assert_eq!(
            Refusal::of_resource_exhausted("Error", Some(12)),
            Refusal::Quota
        );
        // A cue wins over the token count.
        assert_eq!(
            Refusal::of_resource_exhausted("You have hit your usage limit", Some(0)),
            Refusal::Quota
        );
    }

    #[test]
    fn the_quota_reset_is_read_to_the_end_of_its_sentence() {
        assert_eq!(
            Refusal::quota_resets(
                "Usage limit reached. Your limit resets on Nov 1, 2026. Upgrade for more."
            )
            .as_deref(),
            Some("on Nov 1, 2026")
        );
        assert_eq!(
            Refusal::quota_resets("Quota spent, try again in 2.5 hours").as_deref(),
            Some("in 2.5 hours")
        );
        assert_eq!(Refusal::quota_resets("quota spent"), None);
    }

    #[test]
    fn version_floor_in_detail_debug_is_found() {
        let mut error = ConnectError::new(Code::ResourceExhausted, "Error");
        error.details.push(crate::envelope::ErrorDetail {
            type_name: "aiserver.v1.ErrorDetails".into(),
            value: bytes::Bytes::new(),
            debug: Some(
                serde_json::json!({"title": "Please update to the latest version of Cursor"}),
            ),
        });
        assert_eq!(
            CursorError::connect(error, None).refusal(),
            Some(Refusal::ClientVersionFloor)
        );
    }

    #[test]
    fn permission_denied_entitlement_is_a_refusal_not_auth() {
        let err = remote(
            Code::PermissionDenied,
            "RunInference is not enabled for this account",
            None,
        );
        assert_eq!(err.kind(), ErrorKind::RemoteRefusal);
        assert_eq!(err.refusal(), Some(Refusal::Entitlement));
    }

    #[test]
    fn transport_codes_are_network_and_unimplemented_is_drift() {
        assert_eq!(
            remote(Code::Unavailable, "", None).kind(),
            ErrorKind::Network
        );
        assert_eq!(
            remote(Code::Unavailable, "", Some(503)).kind(),
            ErrorKind::Network
        );
        assert_eq!(
            remote(Code::DeadlineExceeded, "", None).kind(),
            ErrorKind::Network
        );
        assert_eq!(
            remote(Code::Unimplemented, "", Some(404)).kind(),
            ErrorKind::ProtocolDrift
        );
        assert_eq!(
            remote(Code::Unavailable, "", Some(429)).refusal(),
            Some(Refusal::Capacity)
        );
    }

    #[test]
    fn local_and_drift_variants_classify() {
        assert_eq!(
            CursorError::from(EnvelopeError::UnexpectedCompression).kind(),
            ErrorKind::ProtocolDrift
        );
        assert_eq!(CursorError::drift("x").kind(), ErrorKind::ProtocolDrift);
        assert_eq!(CursorError::network_msg("reset").kind(), ErrorKind::Network);
        assert_eq!(CursorError::invalid("bad").kind(), ErrorKind::Local);
        assert_eq!(CursorError::Canceled.kind(), ErrorKind::Local);
    }

    #[test]
    fn error_info_carries_kind_message_and_step() {
        let info = ErrorInfo::from(remote(Code::Unauthenticated, "expired", Some(401)));
        assert_eq!(info.kind, ErrorKind::Auth);
        assert!(
            info.message.contains("unauthenticated: expired"),
            "{}",
            info.message
        );
        assert!(info.message.contains("HTTP 401"), "{}", info.message);
        assert_eq!(info.next_step, NextStep::Login);
        assert_eq!(info.http_status, Some(401));
        assert_eq!(info.code.as_deref(), Some("unauthenticated"));
    }
}
