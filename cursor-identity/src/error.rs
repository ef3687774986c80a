//! The typed failures of identity resolution.

use cursor_proto::ir::{Classify, ErrorKind, NextStep};
use std::time::Duration;

use crate::Platform;

/// Why the host identity could not be resolved.
///
/// Every variant is a *local* failure in the family's classification: the host lacks an
/// identity source or a command misbehaved. There is deliberately no fallback to a generated id,
/// because a random id per run looks like a new machine to Cursor's risk controls.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum IdentityError {
    /// This operating system has no identity adapter.
    #[error("host identity is not supported on this operating system ({os})")]
    UnsupportedPlatform {
        /// The `target_os` the crate was built for.
        os: &'static str,
    },
    /// Every identity source of the platform was tried and none produced an id.
    #[error("no host identity source on {platform} produced a machine id ({tried})")]
    SourceMissing {
        /// The platform whose sources were tried.
        platform: Platform,
        /// What was tried and why each failed, in order.
        tried: String,
    },
    /// A command of the allowed table could not be started.
    #[error("could not start `{program}`: {source}")]
    Spawn {
        /// The program of the table entry.
        program: &'static str,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A command of the allowed table exited unsuccessfully.
    #[error("`{program}` exited unsuccessfully ({status})")]
    CommandFailed {
        /// The program of the table entry.
        program: &'static str,
        /// The exit status as the OS reports it.
        status: String,
    },
    /// A command of the allowed table ran past its time limit and was killed.
    #[error("`{program}` did not finish within {timeout:?} and was killed")]
    Timeout {
        /// The program of the table entry.
        program: &'static str,
        /// The limit that was exceeded.
        timeout: Duration,
    },
    /// A command's output did not contain the expected id.
    #[error("`{program}` printed no {expected}")]
    Unparseable {
        /// The program of the table entry.
        program: &'static str,
        /// What the parser looked for.
        expected: &'static str,
    },
    /// A spawn was requested for a command outside the allowed table.
    #[error("`{program}` is not in the table of allowed identity commands")]
    CommandNotAllowed {
        /// The program that was refused.
        program: &'static str,
    },
}

impl Classify for IdentityError {
    /// Every identity failure is this machine's: nothing reached the network.
    fn kind(&self) -> ErrorKind {
        ErrorKind::Local
    }

    fn next_step(&self) -> NextStep {
        match self {
            Self::UnsupportedPlatform { .. } => NextStep::fix_local(
                "run on macOS, Linux, Windows or FreeBSD; this platform has no identity source",
            ),
            Self::SourceMissing { .. } => NextStep::fix_local(
                "make sure the host has a machine id (on Linux: systemd-machine-id-setup or dbus-uuidgen)",
            ),
            Self::Spawn { .. } | Self::CommandFailed { .. } | Self::Timeout { .. } => {
                NextStep::fix_local(
                    "check that the system identity tool runs for this user, then retry",
                )
            }
            Self::Unparseable { .. } | Self::CommandNotAllowed { .. } => NextStep::host_bug(
                "report this: the host identity tool printed an unexpected format",
            ),
        }
    }
}
