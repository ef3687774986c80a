//! What a native exec asked for, in host terms: the one vocabulary that redirect texts embed,
//! ranking scores host tools against, and translation turns into a host tool call.

use crate::shell::{find_command, in_directory, operand, shell_quote};

/// A capability a host tool may offer. The vocabulary is per native exec case, so it only grows
/// when Cursor adds a case (which the exec table already forces a commit for).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Capability {
    Command,
    Read,
    Write,
    Edit,
    Delete,
    Search,
    Find,
    List,
    Fetch,
}

impl Capability {
    /// Every capability, in the order the root-prompt intent map lists them.
    pub(crate) const ALL: [Self; 9] = [
        Self::Command,
        Self::Read,
        Self::Write,
        Self::Edit,
        Self::Delete,
        Self::Search,
        Self::Find,
        Self::List,
        Self::Fetch,
    ];

    /// Tool names that are this capability outright.
    pub(crate) fn aliases(self) -> &'static [&'static str] {
        match self {
            Self::Command => &["bash", "shell", "sh"],
            Self::Read => &["read", "read_file"],
            Self::Write => &["write", "write_file"],
            Self::Edit => &["edit", "edit_file"],
            Self::Delete => &["delete", "rm"],
            Self::Search => &["grep", "rg"],
            Self::Find => &["find", "glob"],
            Self::List => &["ls", "list"],
            Self::Fetch => &["fetch", "web_fetch"],
        }
    }

    /// Words that signal the capability in a tool's name or description.
    pub(crate) fn words(self) -> &'static [&'static str] {
        match self {
            Self::Command => &[
                "bash", "shell", "command", "exec", "execute", "terminal", "cmd",
            ],
            Self::Read => &["read", "cat", "view"],
            Self::Write => &["write", "create", "save"],
            Self::Edit => &["edit", "replace", "patch", "modify"],
            Self::Delete => &["delete", "remove", "rm", "unlink"],
            Self::Search => &["grep", "search", "ripgrep", "rg"],
            Self::Find => &["find", "glob"],
            Self::List => &["ls", "list", "dir", "directory"],
            Self::Fetch => &["fetch", "web", "http", "url", "browse"],
        }
    }

    /// The capability to try when no tool offers this one (a command tool can do most things).
    pub(crate) fn fallback(self) -> Option<Self> {
        match self {
            Self::Command | Self::Fetch => None,
            Self::Edit => Some(Self::Write),
            Self::Read | Self::Write | Self::Delete | Self::Search | Self::Find | Self::List => {
                Some(Self::Command)
            }
        }
    }

    /// What the model was trying to do, for redirect texts and the intent map.
    pub(crate) fn phrase(self) -> &'static str {
        match self {
            Self::Command => "run a command",
            Self::Read => "read a file",
            Self::Write => "write a file",
            Self::Edit => "edit a file",
            Self::Delete => "delete a file",
            Self::Search => "search file contents",
            Self::Find => "find files by name",
            Self::List => "list a directory",
            Self::Fetch => "fetch a URL",
        }
    }
}

/// One replacement of an edit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Replacement {
    pub(crate) old_text: String,
    pub(crate) new_text: String,
}

/// What a native request asks the host to do, independent of which tool does it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Intent {
    /// `cwd`: the directory the command must run in, when the request named one.
    Command {
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
    Delete {
        path: String,
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
    Fetch {
        url: String,
    },
    /// A request with no host-tool equivalent (screen recording, subagents, unknown arms...).
    Other,
}

impl Intent {
    /// A command with no working directory.
    pub(crate) fn command(command: impl Into<String>) -> Self {
        Self::Command {
            command: command.into(),
            cwd: None,
        }
    }

    /// A whole-file read.
    pub(crate) fn read(path: impl Into<String>) -> Self {
        Self::Read {
            path: path.into(),
            offset: None,
            limit: None,
        }
    }

    pub(crate) fn capability(&self) -> Option<Capability> {
        Some(match self {
            Self::Command { .. } => Capability::Command,
            Self::Read { .. } => Capability::Read,
            Self::Write { .. } => Capability::Write,
            Self::Edit { .. } => Capability::Edit,
            Self::Delete { .. } => Capability::Delete,
            Self::Search { .. } => Capability::Search,
            Self::Find { .. } => Capability::Find,
            Self::List { .. } => Capability::List,
            Self::Fetch { .. } => Capability::Fetch,
            Self::Other => return None,
        })
    }

    /// The same request as a POSIX shell command, when it can be expressed faithfully (edits,
    /// fetches and unknown requests cannot). Listings use `ls -1Ap` so directories carry a
    /// trailing `/`; a delete reports the pre-delete size (`D0:<bytes>`), which the backend
    /// needs (PROTOCOL-AGENT §5.1).
    pub(crate) fn as_command(&self) -> Option<String> {
        Some(match self {
            Self::Command { command, cwd } => match cwd {
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
            Self::Delete { path } => delete_composite(path),
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
            Self::Edit { .. } | Self::Fetch { .. } | Self::Other => return None,
        })
    }
}

/// `sz=$(wc -c < PATH) && rm -- PATH && printf 'D0:%s\n' "$sz"`.
pub(crate) fn delete_composite(path: &str) -> String {
    let path = operand(path);
    format!("sz=$(wc -c < {path}) && rm -- {path} && printf 'D0:%s\\n' \"$sz\"")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intents_become_commands_only_when_faithful() {
        let delete = Intent::Delete {
            path: "a b.txt".into(),
        };
        assert_eq!(
            delete.as_command().as_deref(),
            Some("sz=$(wc -c < 'a b.txt') && rm -- 'a b.txt' && printf 'D0:%s\\n' \"$sz\"")
        );
        let edit = Intent::Edit {
            path: "x".into(),
            edits: Vec::new(),
        };
        assert_eq!(edit.as_command(), None);
        assert_eq!(Intent::Other.capability(), None);
    }

    #[test]
    fn writes_and_partial_reads_become_faithful_commands() {
        let write = Intent::Write {
            path: "x".into(),
            content: "it's\n".into(),
        };
        assert_eq!(
            write.as_command().unwrap(),
            "printf '%s' 'it'\\''s\n' > 'x'"
        );
        let read = Intent::Read {
            path: "f".into(),
            offset: Some(3),
            limit: Some(2),
        };
        assert_eq!(read.as_command().unwrap(), "sed -n '3,4p' -- 'f'");
    }

    #[test]
    fn every_fallback_chain_ends() {
        for capability in Capability::ALL {
            let mut current = Some(capability);
            let mut steps = 0;
            while let Some(c) = current {
                current = c.fallback();
                steps += 1;
                assert!(steps < 5, "{capability:?} loops");
            }
        }
    }
}
