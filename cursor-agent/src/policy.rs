//! The exec policy: one row per arm of `ExecServerMessage.message`, and nothing that runs locally.
//!
//! [`decide`] is the single decision table. It matches the generated oneof without a wildcard,
//! so a new arm in the schema does not compile until it has a row here. The decision space
//! ([`Decision`]) has no "execute" variant: the worst a row can do is hand a host tool call to
//! the host, whose permission system decides (PROTOCOL-AGENT §0, §5; NOTES §1).

use cursor_proto::agent::v1::exec_server_message::Message as Exec;
use cursor_proto::agent::v1::{self as wire, McpArgs};

use crate::intent::Intent;

/// One arm of `agent.v1.ExecServerMessage.message`, or [`ExecArm::Unknown`] for a number this
/// version does not know. Reported in [`AgentEvent::Exec`](crate::AgentEvent::Exec) for audit.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ExecArm {
    /// `shell_args` (2).
    Shell,
    /// `write_args` (3).
    Write,
    /// `delete_args` (4).
    Delete,
    /// `grep_args` (5), Cursor's Grep and Glob.
    Grep,
    /// `read_args` (7).
    Read,
    /// `ls_args` (8).
    Ls,
    /// `diagnostics_args` (9).
    Diagnostics,
    /// `request_context_args` (10).
    RequestContext,
    /// `mcp_args` (11), a host tool call.
    Mcp,
    /// `shell_stream_args` (14).
    ShellStream,
    /// `background_shell_spawn_args` (16).
    BackgroundShellSpawn,
    /// `list_mcp_resources_exec_args` (17).
    ListMcpResources,
    /// `read_mcp_resource_exec_args` (18).
    ReadMcpResource,
    /// `fetch_args` (20).
    Fetch,
    /// `record_screen_args` (21).
    RecordScreen,
    /// `computer_use_args` (22).
    ComputerUse,
    /// `write_shell_stdin_args` (23).
    WriteShellStdin,
    /// `execute_hook_args` (27).
    ExecuteHook,
    /// `subagent_args` (28).
    Subagent,
    /// `redacted_read_args` (29).
    RedactedRead,
    /// `force_background_shell_args` (30).
    ForceBackgroundShell,
    /// `force_background_subagent_args` (31).
    ForceBackgroundSubagent,
    /// `mcp_state_exec_args` (36; the older spec table names 36 `start_grind_planning_args`).
    McpStateExec,
    /// `subagent_await_args` (37).
    SubagentAwait,
    /// `smart_mode_classifier_args` (38).
    SmartModeClassifier,
    /// `canvas_diagnostics_args` (40).
    CanvasDiagnostics,
    /// `shell_allowlist_precheck_args` (41).
    ShellAllowlistPrecheck,
    /// `mcp_allowlist_precheck_args` (42).
    McpAllowlistPrecheck,
    /// `web_fetch_allowlist_precheck_args` (43).
    WebFetchAllowlistPrecheck,
    /// `git_diff_request` (44).
    GitDiffRequest,
    /// `pi_read_args` (45).
    PiRead,
    /// `pi_bash_args` (46).
    PiBash,
    /// `pi_edit_args` (47).
    PiEdit,
    /// `pi_write_args` (48).
    PiWrite,
    /// `pi_grep_args` (49).
    PiGrep,
    /// `pi_find_args` (50).
    PiFind,
    /// `pi_ls_args` (51).
    PiLs,
    /// An arm this version does not know (the oneof decoded as unset).
    Unknown,
}

impl ExecArm {
    /// Every known arm, in field-number order ([`ExecArm::Unknown`] excluded).
    pub const ALL: [Self; 37] = [
        Self::Shell,
        Self::Write,
        Self::Delete,
        Self::Grep,
        Self::Read,
        Self::Ls,
        Self::Diagnostics,
        Self::RequestContext,
        Self::Mcp,
        Self::ShellStream,
        Self::BackgroundShellSpawn,
        Self::ListMcpResources,
        Self::ReadMcpResource,
        Self::Fetch,
        Self::RecordScreen,
        Self::ComputerUse,
        Self::WriteShellStdin,
        Self::ExecuteHook,
        Self::Subagent,
        Self::RedactedRead,
        Self::ForceBackgroundShell,
        Self::ForceBackgroundSubagent,
        Self::McpStateExec,
        Self::SubagentAwait,
        Self::SmartModeClassifier,
        Self::CanvasDiagnostics,
        Self::ShellAllowlistPrecheck,
        Self::McpAllowlistPrecheck,
        Self::WebFetchAllowlistPrecheck,
        Self::GitDiffRequest,
        Self::PiRead,
        Self::PiBash,
        Self::PiEdit,
        Self::PiWrite,
        Self::PiGrep,
        Self::PiFind,
        Self::PiLs,
    ];

    /// The protobuf field number of the arm (`None` for [`ExecArm::Unknown`]).
    pub const fn field_number(self) -> Option<u32> {
        Some(match self {
            Self::Shell => 2,
            Self::Write => 3,
            Self::Delete => 4,
            Self::Grep => 5,
            Self::Read => 7,
            Self::Ls => 8,
            Self::Diagnostics => 9,
            Self::RequestContext => 10,
            Self::Mcp => 11,
            Self::ShellStream => 14,
            Self::BackgroundShellSpawn => 16,
            Self::ListMcpResources => 17,
            Self::ReadMcpResource => 18,
            Self::Fetch => 20,
            Self::RecordScreen => 21,
            Self::ComputerUse => 22,
            Self::WriteShellStdin => 23,
            Self::ExecuteHook => 27,
            Self::Subagent => 28,
            Self::RedactedRead => 29,
            Self::ForceBackgroundShell => 30,
            Self::ForceBackgroundSubagent => 31,
            Self::McpStateExec => 36,
            Self::SubagentAwait => 37,
            Self::SmartModeClassifier => 38,
            Self::CanvasDiagnostics => 40,
            Self::ShellAllowlistPrecheck => 41,
            Self::McpAllowlistPrecheck => 42,
            Self::WebFetchAllowlistPrecheck => 43,
            Self::GitDiffRequest => 44,
            Self::PiRead => 45,
            Self::PiBash => 46,
            Self::PiEdit => 47,
            Self::PiWrite => 48,
            Self::PiGrep => 49,
            Self::PiFind => 50,
            Self::PiLs => 51,
            Self::Unknown => return None,
        })
    }

    /// The name of the Cursor tool behind the arm, as redirect texts call it.
    pub const fn native_name(self) -> &'static str {
        match self {
            Self::Shell | Self::ShellStream => "Shell",
            Self::Write => "Write",
            Self::Delete => "Delete",
            Self::Grep => "Grep",
            Self::Read | Self::RedactedRead => "Read",
            Self::Ls => "LS",
            Self::Diagnostics => "Diagnostics",
            Self::RequestContext => "RequestContext",
            Self::Mcp => "MCP",
            Self::BackgroundShellSpawn | Self::ForceBackgroundShell => "BackgroundShell",
            Self::ListMcpResources => "ListMcpResources",
            Self::ReadMcpResource => "ReadMcpResource",
            Self::Fetch => "Fetch",
            Self::RecordScreen => "RecordScreen",
            Self::ComputerUse => "ComputerUse",
            Self::WriteShellStdin => "WriteShellStdin",
            Self::ExecuteHook => "ExecuteHook",
            Self::Subagent | Self::ForceBackgroundSubagent | Self::SubagentAwait => "Subagent",
            Self::McpStateExec => "McpState",
            Self::SmartModeClassifier => "SmartModeClassifier",
            Self::CanvasDiagnostics => "CanvasDiagnostics",
            Self::ShellAllowlistPrecheck => "ShellAllowlistPrecheck",
            Self::McpAllowlistPrecheck => "McpAllowlistPrecheck",
            Self::WebFetchAllowlistPrecheck => "WebFetchAllowlistPrecheck",
            Self::GitDiffRequest => "GitDiff",
            Self::PiRead => "pi_read",
            Self::PiBash => "pi_bash",
            Self::PiEdit => "pi_edit",
            Self::PiWrite => "pi_write",
            Self::PiGrep => "pi_grep",
            Self::PiFind => "pi_find",
            Self::PiLs => "pi_ls",
            Self::Unknown => "(unrecognized)",
        }
    }
}

/// What the client does with one exec request. Sealed: there is no variant that executes
/// anything in this process.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Decision {
    /// A native tool a host tool could serve (shell, read, write, ...): translated into a host
    /// tool call by the run when a registered tool has the capability, refused with this
    /// refusal otherwise.
    Translatable { refusal: Refusal, intent: Intent },
    /// A native tool with no host equivalent: typed refusal with a redirect.
    Refuse { refusal: Refusal, intent: Intent },
    /// No typed refusal exists for the arm (unknown arms; arms whose result has no refusal
    /// shape): `ExecClientControlMessage.throw` with a redirect.
    Throw { intent: Intent },
    /// `request_context_args`: success with the workspace paths and the tool list only.
    ReportContext,
    /// `mcp_args`: lift to a host tool call (if the gate admits the tool).
    Lift(McpArgs),
}

/// The refusal shape of one arm's result message: which oneof arm carries the reason text and
/// which request fields are echoed beside it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Refusal {
    Shell {
        command: String,
        working_directory: String,
    },
    ShellStream {
        command: String,
        working_directory: String,
    },
    Write {
        path: String,
    },
    Delete {
        path: String,
    },
    Grep,
    Read {
        path: String,
    },
    RedactedRead {
        path: String,
    },
    Ls {
        path: String,
    },
    Diagnostics {
        path: String,
    },
    BackgroundShellSpawn {
        command: String,
        working_directory: String,
    },
    ListMcpResources,
    ReadMcpResource {
        uri: String,
    },
    Fetch {
        url: String,
    },
    RecordScreen,
    ComputerUse,
    WriteShellStdin,
    PiRead,
    PiBash,
    PiEdit,
    PiWrite,
    PiGrep,
    PiFind,
    PiLs,
}

/// A table row: the arm, for audit, and the decision.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Row {
    pub(crate) arm: ExecArm,
    pub(crate) decision: Decision,
}

/// THE decision table (PROTOCOL-AGENT §5 rows; NOTES §1 for 27–51). No wildcard arm.
pub(crate) fn decide(message: Option<Exec>) -> Row {
    use Decision::{Lift, Refuse, ReportContext, Throw, Translatable};
    let (arm, decision) = match message {
        None => (
            ExecArm::Unknown,
            Throw {
                intent: Intent::Other,
            },
        ),
        Some(Exec::ShellArgs(a)) => (
            ExecArm::Shell,
            Translatable {
                intent: Intent::Command {
                    command: a.command.clone(),
                },
                refusal: Refusal::Shell {
                    command: a.command,
                    working_directory: a.working_directory,
                },
            },
        ),
        Some(Exec::ShellStreamArgs(a)) => (
            ExecArm::ShellStream,
            Translatable {
                intent: Intent::Command {
                    command: a.command.clone(),
                },
                refusal: Refusal::ShellStream {
                    command: a.command,
                    working_directory: a.working_directory,
                },
            },
        ),
        Some(Exec::WriteArgs(a)) => (
            ExecArm::Write,
            Translatable {
                intent: Intent::Write {
                    path: a.path.clone(),
                },
                refusal: Refusal::Write { path: a.path },
            },
        ),
        Some(Exec::DeleteArgs(a)) => (
            ExecArm::Delete,
            Translatable {
                intent: Intent::Delete {
                    path: a.path.clone(),
                },
                refusal: Refusal::Delete { path: a.path },
            },
        ),
        Some(Exec::GrepArgs(a)) => (
            ExecArm::Grep,
            Translatable {
                intent: grep_intent(a),
                refusal: Refusal::Grep,
            },
        ),
        Some(Exec::ReadArgs(a)) => (
            ExecArm::Read,
            Translatable {
                intent: Intent::Read {
                    path: a.path.clone(),
                },
                refusal: Refusal::Read { path: a.path },
            },
        ),
        Some(Exec::RedactedReadArgs(a)) => (
            ExecArm::RedactedRead,
            Translatable {
                intent: Intent::Read {
                    path: a.path.clone(),
                },
                refusal: Refusal::RedactedRead { path: a.path },
            },
        ),
        Some(Exec::LsArgs(a)) => (
            ExecArm::Ls,
            Translatable {
                intent: Intent::List {
                    path: a.path.clone(),
                },
                refusal: Refusal::Ls { path: a.path },
            },
        ),
        Some(Exec::DiagnosticsArgs(a)) => (
            ExecArm::Diagnostics,
            Refuse {
                intent: Intent::Other,
                refusal: Refusal::Diagnostics { path: a.path },
            },
        ),
        Some(Exec::RequestContextArgs(_)) => (ExecArm::RequestContext, ReportContext),
        Some(Exec::McpArgs(a)) => (ExecArm::Mcp, Lift(a)),
        Some(Exec::BackgroundShellSpawnArgs(a)) => (
            ExecArm::BackgroundShellSpawn,
            Refuse {
                intent: Intent::Command {
                    command: a.command.clone(),
                },
                refusal: Refusal::BackgroundShellSpawn {
                    command: a.command,
                    working_directory: a.working_directory,
                },
            },
        ),
        Some(Exec::ListMcpResourcesExecArgs(_)) => (
            ExecArm::ListMcpResources,
            Refuse {
                intent: Intent::Other,
                refusal: Refusal::ListMcpResources,
            },
        ),
        Some(Exec::ReadMcpResourceExecArgs(a)) => (
            ExecArm::ReadMcpResource,
            Refuse {
                intent: Intent::Other,
                refusal: Refusal::ReadMcpResource { uri: a.uri },
            },
        ),
        // No local HTTP, ever.
        Some(Exec::FetchArgs(a)) => (
            ExecArm::Fetch,
            Refuse {
                intent: Intent::Fetch { url: a.url.clone() },
                refusal: Refusal::Fetch { url: a.url },
            },
        ),
        Some(Exec::RecordScreenArgs(_)) => (
            ExecArm::RecordScreen,
            Refuse {
                intent: Intent::Other,
                refusal: Refusal::RecordScreen,
            },
        ),
        Some(Exec::ComputerUseArgs(_)) => (
            ExecArm::ComputerUse,
            Refuse {
                intent: Intent::Other,
                refusal: Refusal::ComputerUse,
            },
        ),
        Some(Exec::WriteShellStdinArgs(_)) => (
            ExecArm::WriteShellStdin,
            Refuse {
                intent: Intent::Other,
                refusal: Refusal::WriteShellStdin,
            },
        ),
        // Arms 27–44 other than redacted read have no refusal shape in the schema: throw.
        Some(Exec::ExecuteHookArgs(_)) => (
            ExecArm::ExecuteHook,
            Throw {
                intent: Intent::Other,
            },
        ),
        Some(Exec::SubagentArgs(_)) => (
            ExecArm::Subagent,
            Throw {
                intent: Intent::Other,
            },
        ),
        Some(Exec::ForceBackgroundShellArgs(_)) => (
            ExecArm::ForceBackgroundShell,
            Throw {
                intent: Intent::Other,
            },
        ),
        Some(Exec::ForceBackgroundSubagentArgs(_)) => (
            ExecArm::ForceBackgroundSubagent,
            Throw {
                intent: Intent::Other,
            },
        ),
        Some(Exec::McpStateExecArgs(_)) => (
            ExecArm::McpStateExec,
            Throw {
                intent: Intent::Other,
            },
        ),
        Some(Exec::SubagentAwaitArgs(_)) => (
            ExecArm::SubagentAwait,
            Throw {
                intent: Intent::Other,
            },
        ),
        Some(Exec::SmartModeClassifierArgs(_)) => (
            ExecArm::SmartModeClassifier,
            Throw {
                intent: Intent::Other,
            },
        ),
        Some(Exec::CanvasDiagnosticsArgs(_)) => (
            ExecArm::CanvasDiagnostics,
            Throw {
                intent: Intent::Other,
            },
        ),
        Some(Exec::ShellAllowlistPrecheckArgs(_)) => (
            ExecArm::ShellAllowlistPrecheck,
            Throw {
                intent: Intent::Other,
            },
        ),
        Some(Exec::McpAllowlistPrecheckArgs(_)) => (
            ExecArm::McpAllowlistPrecheck,
            Throw {
                intent: Intent::Other,
            },
        ),
        Some(Exec::WebFetchAllowlistPrecheckArgs(_)) => (
            ExecArm::WebFetchAllowlistPrecheck,
            Throw {
                intent: Intent::Other,
            },
        ),
        Some(Exec::GitDiffRequest(_)) => (
            ExecArm::GitDiffRequest,
            Throw {
                intent: Intent::Other,
            },
        ),
        Some(Exec::PiReadArgs(a)) => (
            ExecArm::PiRead,
            Translatable {
                intent: Intent::Read { path: a.path },
                refusal: Refusal::PiRead,
            },
        ),
        Some(Exec::PiBashArgs(a)) => (
            ExecArm::PiBash,
            Translatable {
                intent: Intent::Command { command: a.command },
                refusal: Refusal::PiBash,
            },
        ),
        Some(Exec::PiEditArgs(a)) => (
            ExecArm::PiEdit,
            Translatable {
                intent: Intent::Edit { path: a.path },
                refusal: Refusal::PiEdit,
            },
        ),
        Some(Exec::PiWriteArgs(a)) => (
            ExecArm::PiWrite,
            Translatable {
                intent: Intent::Write { path: a.path },
                refusal: Refusal::PiWrite,
            },
        ),
        Some(Exec::PiGrepArgs(a)) => (
            ExecArm::PiGrep,
            Translatable {
                intent: Intent::Search {
                    pattern: a.pattern,
                    path: a.path,
                },
                refusal: Refusal::PiGrep,
            },
        ),
        Some(Exec::PiFindArgs(a)) => (
            ExecArm::PiFind,
            Translatable {
                intent: Intent::Find {
                    pattern: a.pattern,
                    path: a.path,
                },
                refusal: Refusal::PiFind,
            },
        ),
        Some(Exec::PiLsArgs(a)) => (
            ExecArm::PiLs,
            Translatable {
                intent: Intent::List {
                    path: a.path.unwrap_or_else(|| ".".into()),
                },
                refusal: Refusal::PiLs,
            },
        ),
    };
    Row { arm, decision }
}

/// Cursor's Glob is `grep_args` with an empty pattern and `glob` set (PROTOCOL-AGENT §5.1).
fn grep_intent(args: wire::GrepArgs) -> Intent {
    match (args.pattern.is_empty(), args.glob) {
        (true, Some(glob)) => Intent::Find {
            pattern: glob,
            path: args.path,
        },
        _ => Intent::Search {
            pattern: args.pattern,
            path: args.path,
        },
    }
}

impl Refusal {
    /// The arm's result carrying `reason`, in the exact rejected/error shape of its schema.
    pub(crate) fn reply(self, reason: String) -> wire::exec_client_message::Message {
        use wire::exec_client_message::Message as Reply;
        let path_rejected = |path: String, reason: String| wire::PathRejected { path, reason };
        let error_text = |error: String| wire::ErrorText { error };
        let shell_rejected =
            |command: String, working_directory: String, reason: String| wire::ShellRejected {
                command,
                working_directory,
                reason,
                is_readonly: false,
            };
        match self {
            Self::Shell {
                command,
                working_directory,
            } => Reply::ShellResult(wire::ShellResult {
                result: Some(wire::shell_result::Result::Rejected(shell_rejected(
                    command,
                    working_directory,
                    reason,
                ))),
            }),
            Self::ShellStream {
                command,
                working_directory,
            } => Reply::ShellStream(wire::ShellStream {
                event: Some(wire::shell_stream::Event::Rejected(shell_rejected(
                    command,
                    working_directory,
                    reason,
                ))),
            }),
            Self::Write { path } => Reply::WriteResult(wire::WriteResult {
                result: Some(wire::write_result::Result::Rejected(path_rejected(
                    path, reason,
                ))),
            }),
            Self::Delete { path } => Reply::DeleteResult(wire::DeleteResult {
                result: Some(wire::delete_result::Result::Rejected(path_rejected(
                    path, reason,
                ))),
            }),
            Self::Grep => Reply::GrepResult(wire::GrepResult {
                result: Some(wire::grep_result::Result::Error(wire::GrepError {
                    error: reason,
                })),
            }),
            Self::Read { path } => Reply::ReadResult(wire::ReadResult {
                result: Some(wire::read_result::Result::Rejected(path_rejected(
                    path, reason,
                ))),
            }),
            Self::RedactedRead { path } => Reply::RedactedReadResult(wire::ReadResult {
                result: Some(wire::read_result::Result::Rejected(path_rejected(
                    path, reason,
                ))),
            }),
            Self::Ls { path } => Reply::LsResult(wire::LsResult {
                result: Some(wire::ls_result::Result::Rejected(path_rejected(
                    path, reason,
                ))),
            }),
            Self::Diagnostics { path } => Reply::DiagnosticsResult(wire::DiagnosticsResult {
                result: Some(wire::diagnostics_result::Result::Rejected(path_rejected(
                    path, reason,
                ))),
            }),
            Self::BackgroundShellSpawn {
                command,
                working_directory,
            } => Reply::BackgroundShellSpawnResult(wire::BackgroundShellSpawnResult {
                result: Some(wire::background_shell_spawn_result::Result::Rejected(
                    shell_rejected(command, working_directory, reason),
                )),
            }),
            Self::ListMcpResources => {
                Reply::ListMcpResourcesExecResult(wire::ListMcpResourcesExecResult {
                    result: Some(wire::list_mcp_resources_exec_result::Result::Rejected(
                        wire::ReasonRejected { reason },
                    )),
                })
            }
            Self::ReadMcpResource { uri } => {
                Reply::ReadMcpResourceExecResult(wire::ReadMcpResourceExecResult {
                    result: Some(wire::read_mcp_resource_exec_result::Result::Rejected(
                        wire::ReadMcpResourceRejected { uri, reason },
                    )),
                })
            }
            Self::Fetch { url } => Reply::FetchResult(wire::FetchResult {
                result: Some(wire::fetch_result::Result::Error(wire::FetchError {
                    url,
                    error: reason,
                })),
            }),
            Self::RecordScreen => Reply::RecordScreenResult(wire::RecordScreenResult {
                result: Some(wire::record_screen_result::Result::Failure(error_text(
                    reason,
                ))),
            }),
            Self::ComputerUse => Reply::ComputerUseResult(wire::ComputerUseResult {
                result: Some(wire::computer_use_result::Result::Error(error_text(reason))),
            }),
            Self::WriteShellStdin => Reply::WriteShellStdinResult(wire::WriteShellStdinResult {
                result: Some(wire::write_shell_stdin_result::Result::Error(error_text(
                    reason,
                ))),
            }),
            Self::PiRead => Reply::PiReadResult(wire::PiReadExecResult {
                result: Some(wire::pi_read_exec_result::Result::Error(error_text(reason))),
            }),
            Self::PiBash => Reply::PiBashResult(wire::PiBashExecResult {
                result: Some(wire::pi_bash_exec_result::Result::Error(error_text(reason))),
            }),
            Self::PiEdit => Reply::PiEditResult(wire::PiEditExecResult {
                result: Some(wire::pi_edit_exec_result::Result::Rejected(
                    wire::ReasonRejected { reason },
                )),
            }),
            Self::PiWrite => Reply::PiWriteResult(wire::PiWriteExecResult {
                result: Some(wire::pi_write_exec_result::Result::Rejected(
                    wire::ReasonRejected { reason },
                )),
            }),
            Self::PiGrep => Reply::PiGrepResult(wire::PiGrepExecResult {
                result: Some(wire::pi_grep_exec_result::Result::Error(error_text(reason))),
            }),
            Self::PiFind => Reply::PiFindResult(wire::PiFindExecResult {
                result: Some(wire::pi_find_exec_result::Result::Error(error_text(reason))),
            }),
            Self::PiLs => Reply::PiLsResult(wire::PiLsExecResult {
                result: Some(wire::pi_ls_exec_result::Result::Error(error_text(reason))),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message as _;

    /// Decodes an `ExecServerMessage` whose only field is an empty length-delimited `field`.
    fn probe(field: u32) -> Option<Exec> {
        let mut bytes = Vec::new();
        prost::encoding::encode_key(
            field,
            prost::encoding::WireType::LengthDelimited,
            &mut bytes,
        );
        bytes.push(0);
        wire::ExecServerMessage::decode(bytes.as_slice())
            .ok()
            .and_then(|m| m.message)
    }

    #[test]
    fn every_generated_arm_has_its_own_row_and_nothing_falls_through() {
        let mut seen = Vec::new();
        for field in 1..=120 {
            if let Some(message) = probe(field) {
                let row = decide(Some(message));
                assert_ne!(row.arm, ExecArm::Unknown, "field {field} fell through");
                assert_eq!(
                    row.arm.field_number(),
                    Some(field),
                    "field {field} has the wrong row"
                );
                seen.push(row.arm);
            }
        }
        assert_eq!(
            seen,
            ExecArm::ALL,
            "ExecArm::ALL and the generated oneof disagree"
        );
    }

    #[test]
    fn all_lists_every_variant() {
        // Exhaustive on purpose: a new variant must be added to ALL (and this match).
        let position = |arm: ExecArm| match arm {
            ExecArm::Unknown => None,
            known => ExecArm::ALL.iter().position(|a| *a == known),
        };
        for arm in ExecArm::ALL {
            assert!(position(arm).is_some());
        }
        let mut numbers: Vec<u32> = ExecArm::ALL
            .iter()
            .filter_map(|a| a.field_number())
            .collect();
        numbers.dedup();
        assert_eq!(numbers.len(), ExecArm::ALL.len());
        assert!(numbers.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn an_unset_oneof_is_unknown_and_thrown() {
        assert_eq!(
            decide(None),
            Row {
                arm: ExecArm::Unknown,
                decision: Decision::Throw {
                    intent: Intent::Other
                }
            }
        );
        assert_eq!(probe(33), None, "33 is not an arm of the extracted schema");
    }

    #[test]
    fn glob_is_grep_with_an_empty_pattern() {
        let row = decide(Some(Exec::GrepArgs(wire::GrepArgs {
            glob: Some("*.rs".into()),
            ..wire::GrepArgs::default()
        })));
        assert!(matches!(
            row.decision,
            Decision::Translatable { intent: Intent::Find { ref pattern, .. }, .. } if pattern == "*.rs"
        ));
    }
}
