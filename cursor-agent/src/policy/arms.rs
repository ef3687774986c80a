//! THE table of exec arms: one row per arm of `ExecServerMessage.message`. [`ExecArm`], its
//! list, field numbers, native names and the arm of a decoded message are all generated from it,
//! so a new arm is one row here plus its decision in [`decide`](super::decide). The generated
//! [`ExecArm::of`] matches the prost oneof without a wildcard: an arm added to the schema does
//! not compile until it has a row.

use cursor_proto::agent::v1::exec_server_message::Message as Exec;

/// Generates [`ExecArm`] and its views from the rows below.
macro_rules! exec_arms {
    ($(
        $(#[doc = $doc:literal])*
        $arm:ident = $number:literal $field:ident $variant:ident $native:literal;
    )*) => {
        /// One arm of `agent.v1.ExecServerMessage.message`, or [`ExecArm::Unknown`] for a number
        /// this version does not know. Reported in [`AgentEvent::Exec`](crate::AgentEvent::Exec)
        /// for audit.
        #[non_exhaustive]
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum ExecArm {
            $(
                #[doc = concat!("`", stringify!($field), "` (", stringify!($number), ").")]
                $(#[doc = ""] #[doc = $doc])*
                $arm,
            )*
            /// An arm this version does not know (the oneof decoded as unset).
            Unknown,
        }

        /// How many rows the table has.
        const ROWS: usize = [$(stringify!($arm)),*].len();

        impl ExecArm {
            /// Every known arm, in field-number order ([`ExecArm::Unknown`] excluded).
            pub const ALL: [Self; ROWS] = [$(Self::$arm),*];

            /// The protobuf field number of the arm (`None` for [`ExecArm::Unknown`]).
            pub const fn field_number(self) -> Option<u32> {
                match self {
                    $(Self::$arm => Some($number),)*
                    Self::Unknown => None,
                }
            }

            /// The oneof field name of the arm (`None` for [`ExecArm::Unknown`]).
            pub const fn field_name(self) -> Option<&'static str> {
                match self {
                    $(Self::$arm => Some(stringify!($field)),)*
                    Self::Unknown => None,
                }
            }

            /// The name of the Cursor tool behind the arm, as redirect texts call it.
            pub const fn native_name(self) -> &'static str {
                match self {
                    $(Self::$arm => $native,)*
                    Self::Unknown => "(unrecognized)",
                }
            }

            /// The arm a decoded exec message carries.
            pub(crate) const fn of(message: &Exec) -> Self {
                match message {
                    $(Exec::$variant(_) => Self::$arm,)*
                }
            }
        }
    };
}

exec_arms! {
    Shell = 2 shell_args ShellArgs "Shell";
    Write = 3 write_args WriteArgs "Write";
    Delete = 4 delete_args DeleteArgs "Delete";
    /// Cursor's Grep, and its Glob (an empty pattern with `glob` set).
    Grep = 5 grep_args GrepArgs "Grep";
    Read = 7 read_args ReadArgs "Read";
    Ls = 8 ls_args LsArgs "LS";
    Diagnostics = 9 diagnostics_args DiagnosticsArgs "Diagnostics";
    RequestContext = 10 request_context_args RequestContextArgs "RequestContext";
    /// A host tool call.
    Mcp = 11 mcp_args McpArgs "MCP";
    ShellStream = 14 shell_stream_args ShellStreamArgs "Shell";
    BackgroundShellSpawn = 16 background_shell_spawn_args BackgroundShellSpawnArgs "BackgroundShell";
    ListMcpResources = 17 list_mcp_resources_exec_args ListMcpResourcesExecArgs "ListMcpResources";
    ReadMcpResource = 18 read_mcp_resource_exec_args ReadMcpResourceExecArgs "ReadMcpResource";
    Fetch = 20 fetch_args FetchArgs "Fetch";
    RecordScreen = 21 record_screen_args RecordScreenArgs "RecordScreen";
    ComputerUse = 22 computer_use_args ComputerUseArgs "ComputerUse";
    WriteShellStdin = 23 write_shell_stdin_args WriteShellStdinArgs "WriteShellStdin";
    ExecuteHook = 27 execute_hook_args ExecuteHookArgs "ExecuteHook";
    Subagent = 28 subagent_args SubagentArgs "Subagent";
    RedactedRead = 29 redacted_read_args RedactedReadArgs "Read";
    ForceBackgroundShell = 30 force_background_shell_args ForceBackgroundShellArgs "BackgroundShell";
    ForceBackgroundSubagent = 31 force_background_subagent_args ForceBackgroundSubagentArgs "Subagent";
    /// The host's MCP state (the older spec table names 36 `start_grind_planning_args`).
    McpStateExec = 36 mcp_state_exec_args McpStateExecArgs "McpState";
    SubagentAwait = 37 subagent_await_args SubagentAwaitArgs "Subagent";
    SmartModeClassifier = 38 smart_mode_classifier_args SmartModeClassifierArgs "SmartModeClassifier";
    CanvasDiagnostics = 40 canvas_diagnostics_args CanvasDiagnosticsArgs "CanvasDiagnostics";
    ShellAllowlistPrecheck = 41 shell_allowlist_precheck_args ShellAllowlistPrecheckArgs "ShellAllowlistPrecheck";
    McpAllowlistPrecheck = 42 mcp_allowlist_precheck_args McpAllowlistPrecheckArgs "McpAllowlistPrecheck";
    WebFetchAllowlistPrecheck = 43 web_fetch_allowlist_precheck_args WebFetchAllowlistPrecheckArgs "WebFetchAllowlistPrecheck";
    GitDiffRequest = 44 git_diff_request GitDiffRequest "GitDiff";
    PiRead = 45 pi_read_args PiReadArgs "pi_read";
    PiBash = 46 pi_bash_args PiBashArgs "pi_bash";
    PiEdit = 47 pi_edit_args PiEditArgs "pi_edit";
    PiWrite = 48 pi_write_args PiWriteArgs "pi_write";
    PiGrep = 49 pi_grep_args PiGrepArgs "pi_grep";
    PiFind = 50 pi_find_args PiFindArgs "pi_find";
    PiLs = 51 pi_ls_args PiLsArgs "pi_ls";
    /// Shell-shaped; its result sits at field 55.
    MiniSweAgentBash = 52 mini_swe_agent_bash_args MiniSweAgentBashArgs "Shell";
    ConversationSearch = 53 conversation_search_args ConversationSearchArgs "ConversationSearch";
    AgentStoreConflict = 54 agent_store_conflict_args AgentStoreConflictArgs "AgentStoreConflict";
    Adopt = 56 adopt_args AdoptArgs "Adopt";
}
