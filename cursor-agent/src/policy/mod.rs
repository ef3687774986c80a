//! The exec policy: one row per arm of `ExecServerMessage.message` ([`arms`]), one decision per
//! arm ([`decide`]), and nothing that runs locally.
//!
//! [`decide`] matches the generated oneof without a wildcard, so a new arm in the schema does
//! not compile until it has a row and a decision. The decision space ([`Decision`]) has no
//! "execute" variant: the worst a row can do is hand a host tool call to the host, whose
//! permission system decides (PROTOCOL-AGENT §0, §5; PROTOCOL-AGENT §11.1).

mod arms;
mod refusal;

use cursor_proto::agent::v1::exec_server_message::Message as Exec;
use cursor_proto::agent::v1::{McpArgs, McpStateExecArgs};

pub use arms::ExecArm;
pub(crate) use refusal::Refusal;

use crate::intent::{Intent, Replacement};
use crate::translate::{Native, ShellReply};

/// What the client does with one exec request. Sealed: there is no variant that executes
/// anything in this process.
#[derive(Debug)]
pub(crate) enum Decision {
    /// A native tool a host tool could serve (shell, read, write, ...): translated into a host
    /// tool call by the run when a registered tool has the capability, refused otherwise.
    Translate { native: Native, refusal: Refusal },
    /// A native tool with no host equivalent: typed refusal with a redirect.
    Refuse { intent: Intent, refusal: Refusal },
    /// No typed refusal exists for the arm (unknown arms; arms whose result has no refusal
    /// shape): `ExecClientControlMessage.throw` with a redirect.
    Throw { intent: Intent },
    /// `request_context_args`: success with the workspace paths and the tool list only.
    ReportContext,
    /// `mcp_state_exec_args`: success describing the host's MCP projection, the tools the run
    /// advertised and nothing else (PROTOCOL-AGENT §5.5).
    ReportMcpState(McpStateExecArgs),
    /// `mcp_args`: lift to a host tool call (if the gate admits the tool).
    Lift(McpArgs),
}

/// A throw with no host equivalent to point at.
const fn throw() -> Decision {
    Decision::Throw {
        intent: Intent::Other,
    }
}

/// THE decision per arm (PROTOCOL-AGENT §5 rows; PROTOCOL-AGENT §5.3, §11.1 for 27–51; §5.5, §5.6
/// for 36 and 52–56). No wildcard.
pub(crate) fn decide(message: Option<Exec>) -> (ExecArm, Decision) {
    use Decision::{Lift, Refuse, ReportContext, ReportMcpState, Translate};
    let Some(message) = message else {
        return (ExecArm::Unknown, throw());
    };
    let arm = ExecArm::of(&message);
    let shell = |args: &cursor_proto::agent::v1::ShellArgs, reply| Native::Shell {
        command: args.command.clone(),
        working_directory: args.working_directory.clone(),
        reply,
    };
    let decision = match message {
        Exec::ShellArgs(a) => Translate {
            native: shell(&a, ShellReply::Result),
            refusal: refusal::shell(&a),
        },
        Exec::ShellStreamArgs(a) => Translate {
            native: shell(&a, ShellReply::Stream),
            refusal: refusal::shell_stream(&a),
        },
        Exec::MiniSweAgentBashArgs(a) => Translate {
            native: shell(&a, ShellReply::MiniSweAgent),
            refusal: refusal::mini_swe_agent_bash(&a),
        },
        Exec::WriteArgs(a) => Translate {
            refusal: refusal::write(&a.path),
            native: Native::Write {
                path: a.path,
                text: a.file_text,
            },
        },
        Exec::DeleteArgs(a) => Translate {
            refusal: refusal::delete(&a.path),
            native: Native::Delete { path: a.path },
        },
        Exec::GrepArgs(a) => Translate {
            native: Native::Grep {
                pattern: a.pattern,
                path: a.path,
                glob: a.glob,
            },
            refusal: refusal::grep(),
        },
        Exec::ReadArgs(a) => Translate {
            refusal: refusal::read(&a.path, false),
            native: Native::Read {
                path: a.path,
                redacted: false,
            },
        },
        Exec::RedactedReadArgs(a) => Translate {
            refusal: refusal::read(&a.path, true),
            native: Native::Read {
                path: a.path,
                redacted: true,
            },
        },
        Exec::LsArgs(a) => Translate {
            refusal: refusal::ls(&a.path),
            native: Native::Ls { path: a.path },
        },
        Exec::DiagnosticsArgs(a) => Refuse {
            intent: Intent::Other,
            refusal: refusal::diagnostics(&a.path),
        },
        Exec::RequestContextArgs(_) => ReportContext,
        Exec::McpStateExecArgs(a) => ReportMcpState(a),
        Exec::McpArgs(a) => Lift(a),
        Exec::BackgroundShellSpawnArgs(a) => Refuse {
            intent: Intent::command(a.command.clone()),
            refusal: refusal::background_shell_spawn(&a),
        },
        Exec::ListMcpResourcesExecArgs(_) => Refuse {
            intent: Intent::Other,
            refusal: refusal::list_mcp_resources(),
        },
        Exec::ReadMcpResourceExecArgs(a) => Refuse {
            intent: Intent::Other,
            refusal: refusal::read_mcp_resource(&a.uri),
        },
        Exec::FetchArgs(a) => Refuse {
            refusal: refusal::fetch(&a.url),
            intent: Intent::Fetch { url: a.url },
        },
        Exec::RecordScreenArgs(_) => Refuse {
            intent: Intent::Other,
            refusal: refusal::record_screen(),
        },
        Exec::ComputerUseArgs(_) => Refuse {
            intent: Intent::Other,
            refusal: refusal::computer_use(),
        },
        Exec::WriteShellStdinArgs(_) => Refuse {
            intent: Intent::Other,
            refusal: refusal::write_shell_stdin(),
        },
        // No refusal shape in the schema (27–44 but redacted read; 53, 54, 56 whose result
        // shapes no public source gives): throw.
        Exec::ExecuteHookArgs(_)
        | Exec::SubagentArgs(_)
        | Exec::ForceBackgroundShellArgs(_)
        | Exec::ForceBackgroundSubagentArgs(_)
        | Exec::SubagentAwaitArgs(_)
        | Exec::SmartModeClassifierArgs(_)
        | Exec::CanvasDiagnosticsArgs(_)
        | Exec::ShellAllowlistPrecheckArgs(_)
        | Exec::McpAllowlistPrecheckArgs(_)
        | Exec::WebFetchAllowlistPrecheckArgs(_)
        | Exec::GitDiffRequest(_)
        | Exec::ConversationSearchArgs(_)
        | Exec::AgentStoreConflictArgs(_)
        | Exec::AdoptArgs(_) => throw(),
        Exec::PiReadArgs(a) => Translate {
            native: Native::PiRead(Intent::Read {
                path: a.path,
                offset: a.offset,
                limit: a.limit,
            }),
            refusal: refusal::pi_read(),
        },
        Exec::PiBashArgs(a) => Translate {
            native: Native::PiBash(Intent::command(a.command)),
            refusal: refusal::pi_bash(),
        },
        Exec::PiEditArgs(a) => Translate {
            native: Native::PiEdit(Intent::Edit {
                path: a.path,
                edits: a
                    .edits
                    .into_iter()
                    .map(|e| Replacement {
                        old_text: e.old_text,
                        new_text: e.new_text,
                    })
                    .collect(),
            }),
            refusal: refusal::pi_edit(),
        },
        Exec::PiWriteArgs(a) => Translate {
            native: Native::PiWrite(Intent::Write {
                path: a.path,
                content: a.content,
            }),
            refusal: refusal::pi_write(),
        },
        Exec::PiGrepArgs(a) => Translate {
            native: Native::PiGrep(Intent::Search {
                pattern: a.pattern,
                path: a.path,
                glob: a.glob,
                ignore_case: a.ignore_case,
                literal: a.literal,
                context: a.context,
                limit: a.limit,
            }),
            refusal: refusal::pi_grep(),
        },
        Exec::PiFindArgs(a) => Translate {
            native: Native::PiFind(Intent::Find {
                pattern: a.pattern,
                path: a.path,
                limit: a.limit,
            }),
            refusal: refusal::pi_find(),
        },
        Exec::PiLsArgs(a) => Translate {
            native: Native::PiLs(Intent::List {
                path: a.path.unwrap_or_else(|| ".".into()),
                limit: a.limit,
            }),
            refusal: refusal::pi_ls(),
        },
    };
    (arm, decision)
}

#[cfg(test)]
mod tests {
    use super::*;
    use cursor_proto::agent::v1 as wire;
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
                let (arm, _) = decide(Some(message));
                assert_ne!(arm, ExecArm::Unknown, "field {field} fell through");
                assert_eq!(
                    arm.field_number(),
                    Some(field),
                    "field {field} has the wrong row"
                );
                seen.push(arm);
            }
        }
        assert_eq!(
            seen,
            ExecArm::ALL,
            "ExecArm::ALL and the generated oneof disagree"
        );
    }

    #[test]
    fn rows_are_in_field_order_and_name_their_oneof_field() {
        let numbers: Vec<u32> = ExecArm::ALL
            .iter()
            .filter_map(|a| a.field_number())
            .collect();
        assert!(numbers.windows(2).all(|w| w[0] < w[1]), "{numbers:?}");
        // prost names a oneof variant after its field in CamelCase: the row's field name must
        // be the one decoded at the row's number.
        let camel = |field: &str| -> String {
            field
                .split('_')
                .map(|word| word[..1].to_uppercase() + &word[1..])
                .collect()
        };
        for arm in ExecArm::ALL {
            let number = arm.field_number().unwrap();
            let decoded = format!("{:?}", probe(number).unwrap());
            let name = camel(arm.field_name().unwrap());
            assert!(
                decoded.starts_with(&format!("{name}(")),
                "{arm:?}: {decoded}"
            );
        }
        assert_eq!(ExecArm::Unknown.field_number(), None);
    }

    #[test]
    fn an_unset_oneof_is_unknown_and_thrown() {
        let (arm, decision) = decide(None);
        assert_eq!(arm, ExecArm::Unknown);
        assert!(matches!(
            decision,
            Decision::Throw {
                intent: Intent::Other
            }
        ));
        assert_eq!(probe(33), None, "33 is not an arm of the extracted schema");
    }

    #[test]
    fn glob_is_grep_with_an_empty_pattern() {
        let (_, decision) = decide(Some(Exec::GrepArgs(wire::GrepArgs {
            glob: Some("*.rs".into()),
            ..wire::GrepArgs::default()
        })));
        let Decision::Translate { native, .. } = decision else {
            panic!("grep is translatable")
        };
        assert!(
            matches!(native.intent(), Intent::Find { ref pattern, .. } if pattern == "**/*.rs")
        );
    }
}
