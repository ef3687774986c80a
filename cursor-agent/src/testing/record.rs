//! What the replica records about each Run.

use serde::Serialize;

/// One Run as the replica saw it. Serializes to one JSON object (see
/// [`RunRecord::to_json_line`]).
#[non_exhaustive]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunRecord {
    /// `agent-resume` when the conversation id was known and the state carried its last
    /// checkpoint, `agent-rebuild` otherwise; empty when the Run never got that far.
    pub label: String,
    /// The conversation id of the run request.
    pub conversation_id: String,
    /// The requested model slug.
    pub model: String,
    /// The text of the current user turn.
    pub user_text: String,
    /// The user texts found in the root prompt blobs (`<user_query>` contents), in order.
    pub root_prompt_user_texts: Vec<String>,
    /// The tool results found in the root prompt (`tool-result` parts' text), in order.
    pub root_prompt_tool_results: Vec<String>,
    /// True when the root prompt carried history (anything besides `<rules>` messages).
    pub history_replayed: bool,
    /// Bytes of the root prompt's structured history: its JSON messages besides the rules
    /// and a `<conversation_archive>`.
    pub structured_history_bytes: usize,
    /// Bytes the client sent for the Run's prompt: the encoded run request plus every blob it
    /// answered over KV (what a resume saves over a rebuild's replayed history).
    pub request_bytes: usize,
    /// How many root-prompt blobs were fetched over KV (each one parsed as JSON).
    pub blobs_fetched: usize,
    /// The ids of the images the run request attached (`selected_images`), in order.
    pub images: Vec<String>,
    /// The interaction queries sent and how each was answered: `<arm> <answer>` (`2 approved`,
    /// `3 error`, `4 rejected`, `8 success`), in order.
    pub interactions: Vec<String>,
    /// True when the run request carried `mcp_tools`.
    pub mcp_tools_sent: bool,
    /// The `x-cursor-agent-allowed-tools` header of the request, if it had one.
    pub allowed_tools: Option<String>,
    /// The `x-cursor-client-version` header of the request.
    pub client_version: String,
    /// The exec requests sent and the results received, in order.
    pub execs: Vec<ExecRecord>,
    /// The answer text streamed.
    pub answer: String,
    /// The Run came over HTTP/1.1, as RunSSE plus BidiAppend (docs/PROTOCOL-AGENT.md §13.8),
    /// rather than as an HTTP/2 stream.
    pub http1: bool,
    /// How the Run ended: `completed`, `unauthenticated`, `not-found`, `model-not-found` (an id
    /// form the backend does not serve), `blob-miss`,
    /// `client-closed`, `scripted`, `silent`, `resource-exhausted`, `update-required`,
    /// `fault: <kind>`, `reset: <why>`, `image-not-found`, `stalled: <why>`, `rejected: <why>`.
    pub outcome: String,
}

/// One exec request of a Run and what came back.
#[non_exhaustive]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecRecord {
    /// `shell_stream`, `mcp`, `mcp_state`, or a native arm of `try every native tool`
    /// (`read`, `glob`, `fetch`, `mini_swe_agent_bash`, `conversation_search`,
    /// `agent_store_conflict`, `adopt`, `unknown`).
    pub kind: String,
    /// The command, or the tool name and its JSON arguments.
    pub request: String,
    /// The output text the client sent back (stdout, tool text, or the refusal reason).
    pub result: String,
    /// How the client answered: `success`, `translated` (a result only a host tool can have
    /// produced), `rejected`, `error`, `thrown`, `tool-not-found`, or `silent` (nothing before
    /// `stream_close`).
    pub status: String,
}

impl RunRecord {
    /// The record as one line of JSON (no trailing newline).
    pub fn to_json_line(&self) -> String {
        // A struct of strings, numbers and booleans always serializes.
        serde_json::to_string(self).unwrap_or_default()
    }
}
