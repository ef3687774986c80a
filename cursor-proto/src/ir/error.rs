//! The one failure classification every layer of the family carries to the host, the typed
//! next step each host renders in its own words, and the [`Classify`] trait every crate's
//! error implements.

use serde::{Deserialize, Serialize};

/// What kind of failure ended a call: the single classification shared by all layers.
///
/// Each kind implies who can fix it, which is why hosts show a next step beside it.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// Missing, expired or refused credentials: the user must log in again.
    Auth,
    /// The network failed (DNS, connect, TLS, reset, timeout): retrying may help.
    Network,
    /// The backend sent something this version does not understand: upgrade the crates.
    ProtocolDrift,
    /// The backend understood and refused (quota, entitlement, policy, version floor).
    RemoteRefusal,
    /// A local problem: bad input, a full disk, a corrupt file, a misconfiguration.
    Local,
}

impl ErrorKind {
    /// The stable lower-case name used in logs and host error text (`auth`, `network`, ...).
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Auth => "auth",
            Self::Network => "network",
            Self::ProtocolDrift => "protocol_drift",
            Self::RemoteRefusal => "remote_refusal",
            Self::Local => "local",
        }
    }
}

impl std::fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the user (or the host) should do about a failure, typed so each host can word it its
/// own way: one host renders [`NextStep::Login`] as its login command, another as a button
/// command. [`Display`](std::fmt::Display) gives a host-neutral wording.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "step", rename_all = "camelCase")]
pub enum NextStep {
    /// Sign in to Cursor again (the credentials are missing, expired or refused).
    Login,
    /// Retry; if it keeps failing, check the network.
    Retry,
    /// Cursor is rate limiting or out of capacity: wait a minute, then retry.
    WaitAndRetry,
    /// The account's usage quota is used up: wait for it to reset or raise the plan's limits.
    WaitForQuota,
    /// The client version sent is below the backend's floor: send a current one.
    UpdateClientVersion,
    /// The account is not entitled to this model or channel: pick another.
    SwitchModel,
    /// The model is not in the catalog: pick one the catalog lists.
    PickModel,
    /// The backend sent something this version does not understand: update the crates, and
    /// report it with debug records if it persists.
    UpdateCrates,
    /// Ask again, telling the model to use this host tool (by its model-facing name).
    UseTool {
        /// The model-facing tool name.
        tool: String,
    },
    /// Register a host tool the model can use (for example a shell tool), then ask again.
    RegisterTool,
    /// Start a new session or compact the conversation (it outgrew a limit).
    StartNewSession,
    /// The conversation outgrew the model's context window: compact it (summarise older turns),
    /// then send the turn again. Hosts that compact on their own do it here.
    CompactConversation,
    /// Send a user message (the conversation has no turn to ask).
    SendUserMessage,
    /// Fix the input as described.
    FixInput {
        /// What to change.
        detail: String,
    },
    /// Fix the configuration as described.
    FixConfig {
        /// What to change.
        detail: String,
    },
    /// Fix the local environment (disk, permissions, entropy) as described, then retry.
    FixLocal {
        /// What to check.
        detail: String,
    },
    /// A bug in the host's use of the API: described for its developers.
    HostBug {
        /// What the host did wrong.
        detail: String,
    },
    /// Read the server's message: it says why it refused.
    ReadServerMessage,
    /// Nothing: the host or the user cancelled on purpose; start again when needed.
    Nothing,
}

impl NextStep {
    /// A [`NextStep::FixInput`].
    pub fn fix_input(detail: impl Into<String>) -> Self {
        Self::FixInput {
            detail: detail.into(),
        }
    }

    /// A [`NextStep::FixConfig`].
    pub fn fix_config(detail: impl Into<String>) -> Self {
        Self::FixConfig {
            detail: detail.into(),
        }
    }

    /// A [`NextStep::FixLocal`].
    pub fn fix_local(detail: impl Into<String>) -> Self {
        Self::FixLocal {
            detail: detail.into(),
        }
    }

    /// A [`NextStep::HostBug`].
    pub fn host_bug(detail: impl Into<String>) -> Self {
        Self::HostBug {
            detail: detail.into(),
        }
    }

    /// True when repeating the same request later may succeed as it is.
    pub const fn is_retry(&self) -> bool {
        matches!(self, Self::Retry | Self::WaitAndRetry)
    }
}

impl std::fmt::Display for NextStep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Login => f.write_str("sign in to Cursor again"),
            Self::Retry => f.write_str("retry; if it keeps failing, check the network"),
            Self::WaitAndRetry => {
                f.write_str("Cursor is rate limiting or at capacity: wait a minute and retry")
            }
            Self::WaitForQuota => f.write_str(
                "wait for the usage quota to reset, or raise the plan's limits at cursor.com/dashboard",
            ),
            Self::UpdateClientVersion => f.write_str(
                "raise the client version (x-cursor-client-version) to a current Cursor CLI release",
            ),
            Self::SwitchModel => {
                f.write_str("this account is not entitled to this model: pick another model")
            }
            Self::PickModel => f.write_str("pick a model the Cursor catalog lists"),
            Self::UpdateCrates => f.write_str(
                "update the cursor crates; if it persists, report it with a debug record of the turn",
            ),
            Self::UseTool { tool } => write!(
                f,
                "ask again and tell the model to use the tool `{tool}` (Cursor native tools are disabled)"
            ),
            Self::RegisterTool => f.write_str(
                "register a tool the model can use (for example a shell tool), then ask again",
            ),
            Self::StartNewSession => f.write_str("start a new session or compact the conversation"),
            Self::CompactConversation => f.write_str(
                "the conversation is too long for the model's context window: compact it, then send the turn again",
            ),
            Self::SendUserMessage => f.write_str("send a user message"),
            Self::FixInput { detail }
            | Self::FixConfig { detail }
            | Self::FixLocal { detail }
            | Self::HostBug { detail } => f.write_str(detail),
            Self::ReadServerMessage => {
                f.write_str("the server refused the request; its message says why")
            }
            Self::Nothing => {
                f.write_str("nothing: it was cancelled on purpose; start it again when needed")
            }
        }
    }
}

/// A classified failure as hosts receive it: kind, message, typed next step, and what the
/// server said on the wire (Connect code, HTTP status) when a server said anything.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ErrorInfo {
    /// The classification.
    pub kind: ErrorKind,
    /// What went wrong, for humans; never contains a token.
    pub message: String,
    /// The concrete next step, for the host to word.
    pub next_step: NextStep,
    /// The Connect error code the server sent or implied (`unauthenticated`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// The HTTP status of a response that was not a 200.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_status: Option<u16>,
    /// When a spent quota comes back, in the server's words (`in 14 minutes`, `on Nov 1`), when
    /// the refusal said so ([`NextStep::WaitForQuota`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quota_resets: Option<String>,
}

impl ErrorInfo {
    /// Builds a classified failure with no wire details.
    pub fn new(kind: ErrorKind, message: impl Into<String>, next_step: NextStep) -> Self {
        Self {
            kind,
            message: message.into(),
            next_step,
            code: None,
            http_status: None,
            quota_resets: None,
        }
    }

    /// Sets [`ErrorInfo::quota_resets`].
    #[must_use]
    pub fn with_quota_resets(mut self, resets: Option<String>) -> Self {
        self.quota_resets = resets;
        self
    }

    /// Sets the Connect code and HTTP status the server answered with.
    #[must_use]
    pub fn with_wire(mut self, code: Option<&str>, http_status: Option<u16>) -> Self {
        self.code = code.map(str::to_owned);
        self.http_status = http_status;
        self
    }

    /// True when the server refused the credentials: HTTP 401 or Connect `unauthenticated`.
    /// Only such a failure may be answered by refreshing the token (not every auth-kind
    /// failure is the server's word: a missing token never reached it).
    pub fn is_unauthenticated(&self) -> bool {
        self.http_status == Some(401) || self.code.as_deref() == Some("unauthenticated")
    }
}

impl std::fmt::Display for ErrorInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} error: {} (next step: {})",
            self.kind, self.message, self.next_step
        )
    }
}

impl std::error::Error for ErrorInfo {}

/// The one error shape across layers: every crate's error says its kind and typed next step,
/// and keeps what the server said on the wire, so hosts act on fields, never on message text.
pub trait Classify: std::error::Error {
    /// The classification.
    fn kind(&self) -> ErrorKind;

    /// What to do next.
    fn next_step(&self) -> NextStep;

    /// The Connect code the server sent or implied, if a server answered.
    fn connect_code(&self) -> Option<&str> {
        None
    }

    /// The HTTP status of a non-200 response, if there was one.
    fn http_status(&self) -> Option<u16> {
        None
    }

    /// The failure as hosts receive it.
    fn to_info(&self) -> ErrorInfo {
        ErrorInfo::new(self.kind(), self.to_string(), self.next_step())
            .with_wire(self.connect_code(), self.http_status())
    }
}

impl Classify for ErrorInfo {
    fn kind(&self) -> ErrorKind {
        self.kind
    }

    fn next_step(&self) -> NextStep {
        self.next_step.clone()
    }

    fn to_info(&self) -> ErrorInfo {
        self.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_steps_serialize_with_a_step_tag() {
        assert_eq!(
            serde_json::to_value(NextStep::Login).unwrap(),
            serde_json::json!({"step": "login"})
        );
        assert_eq!(
            serde_json::to_value(NextStep::UseTool {
                tool: "mcp_x_bash".into()
            })
            .unwrap(),
            serde_json::json!({"step": "useTool", "tool": "mcp_x_bash"})
        );
    }

    #[test]
    fn only_a_401_or_unauthenticated_counts_as_refused_credentials() {
        let missing = ErrorInfo::new(ErrorKind::Auth, "no token", NextStep::Login);
        assert!(!missing.is_unauthenticated());
        assert!(
            missing
                .clone()
                .with_wire(None, Some(401))
                .is_unauthenticated()
        );
        assert!(
            missing
                .with_wire(Some("unauthenticated"), None)
                .is_unauthenticated()
        );
    }

    #[test]
    fn compact_conversation_serializes_with_its_own_tag() {
        assert_eq!(
            serde_json::to_value(NextStep::CompactConversation).unwrap(),
            serde_json::json!({"step": "compactConversation"})
        );
        assert!(!NextStep::CompactConversation.is_retry());
    }

    #[test]
    fn the_neutral_wording_never_names_a_host_command() {
        let text = NextStep::Login.to_string();
        assert!(!text.contains('/'), "{text}");
    }
}
