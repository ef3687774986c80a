//! Refusal replies: each arm's result in the exact rejected/error shape of its schema, echoing
//! the request fields the shape carries beside the reason.

use cursor_proto::agent::v1::{self as wire, exec_client_message::Message as Reply};

/// How to refuse one request once the run has chosen the reason text (which depends on the
/// host's tools and on how many requests the model wasted already).
pub(crate) struct Refusal(Box<dyn FnOnce(String) -> Reply + Send>);

impl Refusal {
    fn new(reply: impl FnOnce(String) -> Reply + Send + 'static) -> Self {
        Self(Box::new(reply))
    }

    /// The refusal carrying `reason`.
    pub(crate) fn reply(self, reason: String) -> Reply {
        (self.0)(reason)
    }
}

impl std::fmt::Debug for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Refusal(..)")
    }
}

fn shell_rejected(
    command: String,
    working_directory: String,
    reason: String,
) -> wire::ShellRejected {
    wire::ShellRejected {
        command,
        working_directory,
        reason,
        is_readonly: false,
    }
}

fn shell_result_rejected(args: &wire::ShellArgs, reason: String) -> wire::ShellResult {
    wire::ShellResult {
        result: Some(wire::shell_result::Result::Rejected(shell_rejected(
            args.command.clone(),
            args.working_directory.clone(),
            reason,
        ))),
    }
}

fn path_rejected(path: String, reason: String) -> wire::PathRejected {
    wire::PathRejected { path, reason }
}

fn error_text(error: String) -> wire::ErrorText {
    wire::ErrorText { error }
}

/// `shell_result.rejected`.
pub(crate) fn shell(args: &wire::ShellArgs) -> Refusal {
    let args = args.clone();
    Refusal::new(move |reason| Reply::ShellResult(shell_result_rejected(&args, reason)))
}

/// `shell_stream.rejected`.
pub(crate) fn shell_stream(args: &wire::ShellArgs) -> Refusal {
    let (command, cwd) = (args.command.clone(), args.working_directory.clone());
    Refusal::new(move |reason| {
        Reply::ShellStream(wire::ShellStream {
            event: Some(wire::shell_stream::Event::Rejected(shell_rejected(
                command, cwd, reason,
            ))),
        })
    })
}

/// `mini_swe_agent_bash_result` (55), shell-result shaped: `rejected`.
pub(crate) fn mini_swe_agent_bash(args: &wire::ShellArgs) -> Refusal {
    let args = args.clone();
    Refusal::new(move |reason| Reply::MiniSweAgentBashResult(shell_result_rejected(&args, reason)))
}

/// `background_shell_spawn_result.rejected`.
pub(crate) fn background_shell_spawn(args: &wire::BackgroundShellSpawnArgs) -> Refusal {
    let (command, cwd) = (args.command.clone(), args.working_directory.clone());
    Refusal::new(move |reason| {
        Reply::BackgroundShellSpawnResult(wire::BackgroundShellSpawnResult {
            result: Some(wire::background_shell_spawn_result::Result::Rejected(
                shell_rejected(command, cwd, reason),
            )),
        })
    })
}

/// `write_result.rejected`.
pub(crate) fn write(path: &str) -> Refusal {
    let path = path.to_owned();
    Refusal::new(move |reason| {
        Reply::WriteResult(wire::WriteResult {
            result: Some(wire::write_result::Result::Rejected(path_rejected(
                path, reason,
            ))),
        })
    })
}

/// `delete_result.rejected`.
pub(crate) fn delete(path: &str) -> Refusal {
    let path = path.to_owned();
    Refusal::new(move |reason| {
        Reply::DeleteResult(wire::DeleteResult {
            result: Some(wire::delete_result::Result::Rejected(path_rejected(
                path, reason,
            ))),
        })
    })
}

/// `grep_result.error` (the shape has no rejected arm).
pub(crate) fn grep() -> Refusal {
    Refusal::new(|reason| {
        Reply::GrepResult(wire::GrepResult {
            result: Some(wire::grep_result::Result::Error(wire::GrepError {
                error: reason,
            })),
        })
    })
}

/// `read_result.rejected`, at `read_result` or at `redacted_read_result`.
pub(crate) fn read(path: &str, redacted: bool) -> Refusal {
    let path = path.to_owned();
    Refusal::new(move |reason| {
        let result = wire::ReadResult {
            result: Some(wire::read_result::Result::Rejected(path_rejected(
                path, reason,
            ))),
        };
        if redacted {
            Reply::RedactedReadResult(result)
        } else {
            Reply::ReadResult(result)
        }
    })
}

/// `ls_result.rejected`.
pub(crate) fn ls(path: &str) -> Refusal {
    let path = path.to_owned();
    Refusal::new(move |reason| {
        Reply::LsResult(wire::LsResult {
            result: Some(wire::ls_result::Result::Rejected(path_rejected(
                path, reason,
            ))),
        })
    })
}

/// `diagnostics_result.rejected`.
pub(crate) fn diagnostics(path: &str) -> Refusal {
    let path = path.to_owned();
    Refusal::new(move |reason| {
        Reply::DiagnosticsResult(wire::DiagnosticsResult {
            result: Some(wire::diagnostics_result::Result::Rejected(path_rejected(
                path, reason,
            ))),
        })
    })
}

/// `list_mcp_resources_exec_result.rejected`.
pub(crate) fn list_mcp_resources() -> Refusal {
    Refusal::new(|reason| {
        Reply::ListMcpResourcesExecResult(wire::ListMcpResourcesExecResult {
            result: Some(wire::list_mcp_resources_exec_result::Result::Rejected(
                wire::ReasonRejected { reason },
            )),
        })
    })
}

/// `read_mcp_resource_exec_result.rejected`.
pub(crate) fn read_mcp_resource(uri: &str) -> Refusal {
    let uri = uri.to_owned();
    Refusal::new(move |reason| {
        Reply::ReadMcpResourceExecResult(wire::ReadMcpResourceExecResult {
            result: Some(wire::read_mcp_resource_exec_result::Result::Rejected(
                wire::ReadMcpResourceRejected { uri, reason },
            )),
        })
    })
}

/// `fetch_result.error`: no local HTTP, ever.
pub(crate) fn fetch(url: &str) -> Refusal {
    let url = url.to_owned();
    Refusal::new(move |reason| {
        Reply::FetchResult(wire::FetchResult {
            result: Some(wire::fetch_result::Result::Error(wire::FetchError {
                url,
                error: reason,
            })),
        })
    })
}

/// `record_screen_result.failure`.
pub(crate) fn record_screen() -> Refusal {
    Refusal::new(|reason| {
        Reply::RecordScreenResult(wire::RecordScreenResult {
            result: Some(wire::record_screen_result::Result::Failure(error_text(
                reason,
            ))),
        })
    })
}

/// `computer_use_result.error`.
pub(crate) fn computer_use() -> Refusal {
    Refusal::new(|reason| {
        Reply::ComputerUseResult(wire::ComputerUseResult {
            result: Some(wire::computer_use_result::Result::Error(error_text(reason))),
        })
    })
}

/// `write_shell_stdin_result.error`.
pub(crate) fn write_shell_stdin() -> Refusal {
    Refusal::new(|reason| {
        Reply::WriteShellStdinResult(wire::WriteShellStdinResult {
            result: Some(wire::write_shell_stdin_result::Result::Error(error_text(
                reason,
            ))),
        })
    })
}

/// Generates the refusal of one `pi_*` arm: its result's `$arm` carrying the reason.
macro_rules! pi_refusal {
    ($(#[$doc:meta] $name:ident => $reply:ident($result:ident :: $module:ident :: $arm:ident);)*) => {$(
        #[$doc]
        pub(crate) fn $name() -> Refusal {
            Refusal::new(|reason| {
                Reply::$reply(wire::$result {
                    result: Some(wire::$module::Result::$arm(pi_reason!($arm, reason))),
                })
            })
        }
    )*};
}

/// The payload of a `pi_*` refusal arm: `ErrorText` for `Error`, `ReasonRejected` for `Rejected`.
macro_rules! pi_reason {
    (Error, $reason:expr) => {
        error_text($reason)
    };
    (Rejected, $reason:expr) => {
        wire::ReasonRejected { reason: $reason }
    };
}

pi_refusal! {
    /// `pi_read_result.error`.
    pi_read => PiReadResult(PiReadExecResult::pi_read_exec_result::Error);
    /// `pi_bash_result.error`.
    pi_bash => PiBashResult(PiBashExecResult::pi_bash_exec_result::Error);
    /// `pi_edit_result.rejected`.
    pi_edit => PiEditResult(PiEditExecResult::pi_edit_exec_result::Rejected);
    /// `pi_write_result.rejected`.
    pi_write => PiWriteResult(PiWriteExecResult::pi_write_exec_result::Rejected);
    /// `pi_grep_result.error`.
    pi_grep => PiGrepResult(PiGrepExecResult::pi_grep_exec_result::Error);
    /// `pi_find_result.error`.
    pi_find => PiFindResult(PiFindExecResult::pi_find_exec_result::Error);
    /// `pi_ls_result.error`.
    pi_ls => PiLsResult(PiLsExecResult::pi_ls_exec_result::Error);
}
