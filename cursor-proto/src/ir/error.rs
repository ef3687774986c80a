//! The one failure classification every layer of the family carries to the host.

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

/// A classified failure as the host sees it: kind, message, and what the user should do next.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ErrorInfo {
    /// The classification.
    pub kind: ErrorKind,
    /// What went wrong, for humans; never contains a token.
    pub message: String,
    /// The concrete next step (for example `run /login cursor`).
    pub next_step: String,
}

impl ErrorInfo {
    /// Builds a classified failure.
    pub fn new(kind: ErrorKind, message: impl Into<String>, next_step: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            next_step: next_step.into(),
        }
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
