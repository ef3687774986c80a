//! The native request a translatable exec carried: what its result shape echoes back, and the
//! [`Intent`] that serves it.

use crate::intent::Intent;
use crate::shell::recursive_glob;

/// Which result arm answers a shell-shaped request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ShellReply {
    /// `shell_args` → `shell_result`.
    Result,
    /// `shell_stream_args` → `shell_stream` events.
    Stream,
    /// `mini_swe_agent_bash_args` (52) → `mini_swe_agent_bash_result` (55), shell-result shaped.
    MiniSweAgent,
}

/// A translatable native request, with everything its result shape echoes back.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Native {
    Shell {
        command: String,
        working_directory: String,
        reply: ShellReply,
    },
    /// `read_args` or `redacted_read_args`.
    Read {
        path: String,
        redacted: bool,
    },
    Write {
        path: String,
        text: String,
    },
    Delete {
        path: String,
    },
    /// `grep_args`; an empty pattern with a glob is Cursor's Glob.
    Grep {
        pattern: String,
        path: Option<String>,
        glob: Option<String>,
    },
    Ls {
        path: String,
    },
    PiRead(Intent),
    PiBash(Intent),
    PiEdit(Intent),
    PiWrite(Intent),
    PiGrep(Intent),
    PiFind(Intent),
    PiLs(Intent),
}

impl Native {
    /// What the host must do to serve the request. The one place Glob is told from Grep.
    pub(crate) fn intent(&self) -> Intent {
        match self {
            Self::Shell {
                command,
                working_directory,
                ..
            } => Intent::Command {
                command: command.clone(),
                cwd: (!working_directory.is_empty()).then(|| working_directory.clone()),
            },
            Self::Read { path, .. } => Intent::read(path.clone()),
            Self::Write { path, text } => Intent::Write {
                path: path.clone(),
                content: text.clone(),
            },
            Self::Delete { path } => Intent::Delete { path: path.clone() },
            // Cursor's Glob is `grep_args` with an empty pattern and `glob` set (§5.1).
            Self::Grep {
                pattern,
                path,
                glob: Some(glob),
            } if pattern.is_empty() => Intent::Find {
                pattern: recursive_glob(glob),
                path: path.clone(),
                limit: None,
            },
            Self::Grep {
                pattern,
                path,
                glob,
            } => Intent::Search {
                pattern: pattern.clone(),
                path: path.clone(),
                glob: glob.clone(),
                ignore_case: None,
                literal: None,
                context: None,
                limit: None,
            },
            Self::Ls { path } => Intent::List {
                path: path.clone(),
                limit: None,
            },
            Self::PiRead(intent)
            | Self::PiBash(intent)
            | Self::PiEdit(intent)
            | Self::PiWrite(intent)
            | Self::PiGrep(intent)
            | Self::PiFind(intent)
            | Self::PiLs(intent) => intent.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glob_becomes_a_find_and_grep_a_search() {
        let glob = Native::Grep {
            pattern: String::new(),
            path: None,
            glob: Some("*.rs".into()),
        };
        // Cursor searches a bare pattern at any depth.
        assert!(matches!(glob.intent(), Intent::Find { ref pattern, .. } if pattern == "**/*.rs"));
        let grep = Native::Grep {
            pattern: "fn".into(),
            path: None,
            glob: Some("*.rs".into()),
        };
        assert!(matches!(
            grep.intent(),
            Intent::Search { glob: Some(_), .. }
        ));
    }
}
