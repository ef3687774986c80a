//! Where a session's access tokens come from.

use std::fmt;

use cursor_proto::ir::{ErrorInfo, ErrorKind, NextStep};

/// The credentials a session opens Runs with: the current access token, and one refresh
/// when the server refuses it.
///
/// The session asks for a token when a turn opens a Run, and calls [`refresh`](Self::refresh)
/// at most once per turn, only when the server answered 401 (or Connect `unauthenticated`)
/// before the Run streamed anything; it then replays the Run once with the fresh token.
#[async_trait::async_trait]
pub trait TokenSource: Send + Sync + fmt::Debug {
    /// The access token to open a Run with.
    ///
    /// # Errors
    ///
    /// An [`ErrorKind::Auth`] failure when there are no credentials (next step
    /// [`NextStep::Login`]).
    async fn access_token(&self) -> Result<String, ErrorInfo>;

    /// A fresh access token after the server refused `rejected`.
    ///
    /// # Errors
    ///
    /// The refresh failed; the turn ends with an auth error.
    async fn refresh(&self, rejected: &str) -> Result<String, ErrorInfo>;
}

/// A fixed access token with no way to refresh it (a token from the environment, a test).
#[derive(Clone)]
pub struct StaticToken {
    token: String,
}

impl StaticToken {
    /// A source that always answers `token`.
    pub fn new(token: impl Into<String>) -> Self {
        Self {
            token: token.into(),
        }
    }
}

impl fmt::Debug for StaticToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("StaticToken(<redacted>)")
    }
}

#[async_trait::async_trait]
impl TokenSource for StaticToken {
    async fn access_token(&self) -> Result<String, ErrorInfo> {
        if self.token.trim().is_empty() {
            return Err(ErrorInfo::new(
                ErrorKind::Auth,
                "no Cursor access token was given",
                NextStep::Login,
            ));
        }
        Ok(self.token.clone())
    }

    async fn refresh(&self, _rejected: &str) -> Result<String, ErrorInfo> {
        Err(ErrorInfo::new(
            ErrorKind::Auth,
            "the access token was refused and this token source cannot refresh it",
            NextStep::Login,
        ))
    }
}
