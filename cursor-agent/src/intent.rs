//! What a native exec asked for, in host terms: the capability it needs and the command, path or
//! pattern it carried. Redirect texts embed it; translation ranks host tools by its capability.

use crate::shell::{find_command, operand, shell_quote};

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

/// The request a native exec carried.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Intent {
    Command {
        command: String,
    },
    Read {
        path: String,
    },
    Write {
        path: String,
    },
    Edit {
        path: String,
    },
    Delete {
        path: String,
    },
    Search {
        pattern: String,
        path: Option<String>,
    },
    Find {
        pattern: String,
        path: Option<String>,
    },
    List {
        path: String,
    },
    Fetch {
        url: String,
    },
    /// A request with no host-tool equivalent (screen recording, subagents, unknown arms...).
    Other,
}

impl Intent {
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

    /// The same request as a shell command, for when only a command tool can serve it. Writes
    /// and edits are not turned into commands: their content cannot be embedded faithfully.
    pub(crate) fn as_command(&self) -> Option<String> {
        Some(match self {
            Self::Command { command } => command.clone(),
            Self::Read { path } => format!("cat -- {}", operand(path)),
            Self::Delete { path } => format!("rm -- {}", operand(path)),
            Self::Search { pattern, path } => format!(
                "grep -rn -- {} {}",
                shell_quote(pattern),
                operand(path.as_deref().unwrap_or("."))
            ),
            Self::Find { pattern, path } => find_command(pattern, path.as_deref(), None),
            Self::List { path } => format!("ls -la -- {}", operand(path)),
            Self::Write { .. } | Self::Edit { .. } | Self::Fetch { .. } | Self::Other => {
                return None;
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intents_become_commands_only_when_faithful() {
        let delete = Intent::Delete {
            path: "a b.txt".into(),
        };
        assert_eq!(delete.as_command().as_deref(), Some("rm -- 'a b.txt'"));
        assert_eq!(Intent::Write { path: "x".into() }.as_command(), None);
        assert_eq!(Intent::Other.capability(), None);
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
