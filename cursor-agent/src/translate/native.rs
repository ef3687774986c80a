//! The native request a translatable exec carried, and the host-side operation that serves it.

use cursor_proto::agent::v1::exec_server_message::Message as Exec;

use crate::intent::Capability;
use crate::shell::{find_command, in_directory, operand, recursive_glob, shell_quote};

/// A translatable native request, with everything its result shape echoes back.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Native {
    /// `shell_args` (`stream: false`) or `shell_stream_args` (`stream: true`).
    Shell {
        command: String,
        working_directory: String,
        stream: bool,
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
    PiRead(Op),
    PiBash(Op),
    PiEdit(Op),
    PiWrite(Op),
    PiGrep(Op),
    PiFind(Op),
    PiLs(Op),
}

/// One replacement of an edit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Replacement {
    pub(crate) old_text: String,
    pub(crate) new_text: String,
}

/// What the host must do, independent of which tool does it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Op {
    /// `cwd`: the directory the command must run in, when the request named one.
    Run {
        command: String,
        cwd: Option<String>,
    },
    Read {
        path: String,
        offset: Option<i32>,
        limit: Option<i32>,
    },
    Write {
        path: String,
        content: String,
    },
    Edit {
        path: String,
        edits: Vec<Replacement>,
    },
    Search {
        pattern: String,
        path: Option<String>,
        glob: Option<String>,
        ignore_case: Option<bool>,
        literal: Option<bool>,
        context: Option<i32>,
        limit: Option<i32>,
    },
    Find {
        pattern: String,
        path: Option<String>,
        limit: Option<i32>,
    },
    List {
        path: String,
        limit: Option<i32>,
    },
}

impl Native {
    /// The translatable request inside an exec message; `None` for every other arm.
    pub(crate) fn from_exec(message: &Exec) -> Option<Self> {
        Some(match message {
            Exec::ShellArgs(a) => Self::Shell {
                command: a.command.clone(),
                working_directory: a.working_directory.clone(),
                stream: false,
            },
            Exec::ShellStreamArgs(a) => Self::Shell {
                command: a.command.clone(),
                working_directory: a.working_directory.clone(),
                stream: true,
            },
            Exec::ReadArgs(a) => Self::Read {
                path: a.path.clone(),
                redacted: false,
            },
            Exec::RedactedReadArgs(a) => Self::Read {
                path: a.path.clone(),
                redacted: true,
            },
            Exec::WriteArgs(a) => Self::Write {
                path: a.path.clone(),
                text: a.file_text.clone(),
            },
            Exec::DeleteArgs(a) => Self::Delete {
                path: a.path.clone(),
            },
            Exec::GrepArgs(a) => Self::Grep {
                pattern: a.pattern.clone(),
                path: a.path.clone(),
                glob: a.glob.clone(),
            },
            Exec::LsArgs(a) => Self::Ls {
                path: a.path.clone(),
            },
            Exec::PiReadArgs(a) => Self::PiRead(Op::Read {
                path: a.path.clone(),
                offset: a.offset,
                limit: a.limit,
            }),
            Exec::PiBashArgs(a) => Self::PiBash(Op::Run {
                command: a.command.clone(),
                cwd: None,
            }),
            Exec::PiEditArgs(a) => Self::PiEdit(Op::Edit {
                path: a.path.clone(),
                edits: a
                    .edits
                    .iter()
                    .map(|e| Replacement {
                        old_text: e.old_text.clone(),
                        new_text: e.new_text.clone(),
                    })
                    .collect(),
            }),
            Exec::PiWriteArgs(a) => Self::PiWrite(Op::Write {
                path: a.path.clone(),
                content: a.content.clone(),
            }),
            Exec::PiGrepArgs(a) => Self::PiGrep(Op::Search {
                pattern: a.pattern.clone(),
                path: a.path.clone(),
                glob: a.glob.clone(),
                ignore_case: a.ignore_case,
                literal: a.literal,
                context: a.context,
                limit: a.limit,
            }),
            Exec::PiFindArgs(a) => Self::PiFind(Op::Find {
                pattern: a.pattern.clone(),
                path: a.path.clone(),
                limit: a.limit,
            }),
            Exec::PiLsArgs(a) => Self::PiLs(Op::List {
                path: a.path.clone().unwrap_or_else(|| ".".into()),
                limit: a.limit,
            }),
            _ => return None,
        })
    }

    /// The host operation that serves the request.
    pub(crate) fn op(&self) -> Op {
        match self {
            Self::Shell {
                command,
                working_directory,
                ..
            } => Op::Run {
                command: command.clone(),
                cwd: (!working_directory.is_empty()).then(|| working_directory.clone()),
            },
            Self::Read { path, .. } => Op::Read {
                path: path.clone(),
                offset: None,
                limit: None,
            },
            Self::Write { path, text } => Op::Write {
                path: path.clone(),
                content: text.clone(),
            },
            // The backend needs the real pre-delete size, so a delete is always this composite
            // through the command tool (PROTOCOL-AGENT §5.1).
            Self::Delete { path } => Op::Run {
                command: delete_composite(path),
                cwd: None,
            },
            Self::Grep {
                pattern,
                path,
                glob: Some(glob),
            } if pattern.is_empty() => Op::Find {
                pattern: recursive_glob(glob),
                path: path.clone(),
                limit: None,
            },
            Self::Grep {
                pattern,
                path,
                glob,
            } => Op::Search {
                pattern: pattern.clone(),
                path: path.clone(),
                glob: glob.clone(),
                ignore_case: None,
                literal: None,
                context: None,
                limit: None,
            },
            Self::Ls { path } => Op::List {
                path: path.clone(),
                limit: None,
            },
            Self::PiRead(op)
            | Self::PiBash(op)
            | Self::PiEdit(op)
            | Self::PiWrite(op)
            | Self::PiGrep(op)
            | Self::PiFind(op)
            | Self::PiLs(op) => op.clone(),
        }
    }
}

/// `sz=$(wc -c < PATH) && rm -- PATH && printf 'D0:%s\n' "$sz"`.
pub(crate) fn delete_composite(path: &str) -> String {
    let path = operand(path);
    format!("sz=$(wc -c < {path}) && rm -- {path} && printf 'D0:%s\\n' \"$sz\"")
}

impl Op {
    /// The capability a dedicated host tool needs to serve the operation.
    pub(crate) fn capability(&self) -> Capability {
        match self {
            Self::Run { .. } => Capability::Command,
            Self::Read { .. } => Capability::Read,
            Self::Write { .. } => Capability::Write,
            Self::Edit { .. } => Capability::Edit,
            Self::Search { .. } => Capability::Search,
            Self::Find { .. } => Capability::Find,
            Self::List { .. } => Capability::List,
        }
    }

    /// The same operation as a POSIX shell command, when it can be expressed faithfully.
    /// Listings use `ls -1Ap` so directories carry a trailing `/` (the listing convention).
    pub(crate) fn as_command(&self) -> Option<String> {
        Some(match self {
            Self::Run { command, cwd } => match cwd {
                Some(dir) => in_directory(dir, command),
                None => command.clone(),
            },
            Self::Read {
                path,
                offset,
                limit,
            } => match (offset, limit) {
                (None, None) => format!("cat -- {}", operand(path)),
                _ => {
                    let first = offset.unwrap_or(1).max(1);
                    let last = limit.map_or_else(
                        || "$".to_owned(),
                        |l| (i64::from(first) + i64::from(l.max(1)) - 1).to_string(),
                    );
                    format!("sed -n '{first},{last}p' -- {}", operand(path))
                }
            },
            // printf keeps the content byte for byte (single quotes escape everything).
            Self::Write { path, content } => {
                format!("printf '%s' {} > {}", shell_quote(content), operand(path))
            }
            Self::Edit { .. } => return None,
            Self::Search {
                pattern,
                path,
                glob,
                ignore_case,
                literal,
                context,
                limit,
            } => {
                let mut command = String::from("grep -rn");
                if *ignore_case == Some(true) {
                    command.push_str(" -i");
                }
                if *literal == Some(true) {
                    command.push_str(" -F");
                }
                if let Some(context) = context.filter(|c| *c > 0) {
                    command.push_str(&format!(" -C {context}"));
                }
                if let Some(glob) = glob {
                    command.push_str(&format!(" --include={}", shell_quote(glob)));
                }
                command.push_str(&format!(
                    " -- {} {}",
                    shell_quote(pattern),
                    operand(path.as_deref().unwrap_or("."))
                ));
                if let Some(limit) = limit.filter(|l| *l > 0) {
                    command.push_str(&format!(" | head -n {limit}"));
                }
                command
            }
            Self::Find {
                pattern,
                path,
                limit,
            } => find_command(pattern, path.as_deref(), *limit),
            Self::List { path, limit } => {
                let mut command = format!("ls -1Ap -- {}", operand(path));
                if let Some(limit) = limit.filter(|l| *l > 0) {
                    command.push_str(&format!(" | head -n {limit}"));
                }
                command
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cursor_proto::agent::v1::GrepArgs;

    #[test]
    fn delete_composite_quotes_the_path_and_reports_the_size() {
        assert_eq!(
            delete_composite("a b"),
            "sz=$(wc -c < 'a b') && rm -- 'a b' && printf 'D0:%s\\n' \"$sz\""
        );
    }

    #[test]
    fn glob_becomes_a_find_and_grep_a_search() {
        let glob = Native::from_exec(&Exec::GrepArgs(GrepArgs {
            glob: Some("*.rs".into()),
            ..GrepArgs::default()
        }))
        .unwrap();
        // Cursor searches a bare pattern at any depth.
        assert!(matches!(glob.op(), Op::Find { ref pattern, .. } if pattern == "**/*.rs"));
        let grep = Native::from_exec(&Exec::GrepArgs(GrepArgs {
            pattern: "fn".into(),
            glob: Some("*.rs".into()),
            ..GrepArgs::default()
        }))
        .unwrap();
        assert!(matches!(grep.op(), Op::Search { glob: Some(_), .. }));
    }

    #[test]
    fn writes_become_faithful_printf_commands() {
        let op = Op::Write {
            path: "x".into(),
            content: "it's\n".into(),
        };
        assert_eq!(op.as_command().unwrap(), "printf '%s' 'it'\\''s\n' > 'x'");
        let read = Op::Read {
            path: "f".into(),
            offset: Some(3),
            limit: Some(2),
        };
        assert_eq!(read.as_command().unwrap(), "sed -n '3,4p' -- 'f'");
    }
}
