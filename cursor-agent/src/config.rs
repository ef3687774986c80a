//! What a Run needs to know before it opens: model, workspace, names, timers and limits.

use std::time::Duration;

/// The configuration of one [`AgentRun`](crate::AgentRun).
///
/// Build it with [`RunConfig::new`] and adjust the public fields; every default follows
/// `docs/PROTOCOL-AGENT.md`.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunConfig {
    /// The published model slug, sent as `requested_model.model_id` (it already encodes the
    /// effort variant, so no effort or context parameters are ever sent).
    pub model: String,
    /// `requested_model.max_mode`.
    pub max_mode: bool,
    /// `file://` URLs of the workspace roots (`previous_workspace_uris`, request-context paths).
    pub workspace_uris: Vec<String>,
    /// The client name Cursor records (`client_name`, the selected-context blob): `pi`.
    pub host_name: String,
    /// The MCP provider the host's tools are projected under: `pi`. Model-facing tool names are
    /// `mcp_<provider>_<tool>`.
    pub provider_identifier: String,
    /// The remote conversation id to continue; `None` mints a new UUID.
    pub conversation_id: Option<String>,
    /// True when this Run resumes a remote conversation from a stored handle. A blob the server
    /// asks for and this run lacks then fails with
    /// [`AgentError::StaleResume`](crate::AgentError::StaleResume) so the caller can rebuild once,
    /// instead of the plain fail-closed [`AgentError::BlobMiss`](crate::AgentError::BlobMiss).
    pub resume: bool,
    /// Deadlines and intervals.
    pub timers: Timers,
    /// Size and count caps.
    pub limits: Limits,
    /// Seed for every id the run mints (conversation, message and image UUIDs). Give it fresh
    /// randomness in production and a constant in tests; the run never reads a random source.
    pub id_seed: [u8; 16],
}

impl RunConfig {
    /// A configuration for `model` in the workspace at `workspace_uri`, with spec defaults.
    pub fn new(model: impl Into<String>, workspace_uri: impl Into<String>) -> Self {
        Self {
            model: model.into(),
            max_mode: false,
            workspace_uris: vec![workspace_uri.into()],
            host_name: "pi".into(),
            provider_identifier: "pi".into(),
            conversation_id: None,
            resume: false,
            timers: Timers::default(),
            limits: Limits::default(),
            id_seed: [0; 16],
        }
    }

    /// Sets [`RunConfig::id_seed`].
    #[must_use]
    pub fn with_id_seed(mut self, seed: [u8; 16]) -> Self {
        self.id_seed = seed;
        self
    }

    /// Sets [`RunConfig::conversation_id`].
    #[must_use]
    pub fn with_conversation_id(mut self, id: impl Into<String>) -> Self {
        self.conversation_id = Some(id.into());
        self
    }

    /// The prefix Cursor puts before host tool names: `mcp_pi_`.
    pub fn tool_prefix(&self) -> String {
        format!("mcp_{}_", self.provider_identifier)
    }
}

/// Deadlines and intervals of a Run (PROTOCOL-AGENT §1, §8; NOTES §5).
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timers {
    /// How often the client sends an empty `ClientHeartbeat` while the stream is open (15 s; the
    /// official CLI is reported to use about 5 s).
    pub heartbeat_interval: Duration,
    /// How long to wait for the first work frame of a leg (30 s).
    pub first_frame_timeout: Duration,
    /// How long to wait between work frames (120 s). Heartbeats are not work.
    pub idle_timeout: Duration,
    /// Quiet time after the last `mcp_args` of a burst before the leg ends with `ToolUse` (150 ms).
    pub tool_call_debounce: Duration,
    /// How often each translated native exec parked on a host tool call gets an
    /// `ExecClientHeartbeat{id}` (3 s), so a long host-side run never trips a per-exec timeout.
    pub exec_heartbeat_interval: Duration,
}

impl Default for Timers {
    fn default() -> Self {
        Self {
            heartbeat_interval: Duration::from_secs(15),
            first_frame_timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(120),
            tool_call_debounce: Duration::from_millis(150),
            exec_heartbeat_interval: Duration::from_secs(3),
        }
    }
}

/// Size and count caps of a Run (PROTOCOL-AGENT §2.1, §3.1, §5, §6, §8).
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Total bytes the blob store may hold (64 MiB).
    pub blob_store_capacity: usize,
    /// Bytes one blob may hold (16 MiB).
    pub max_blob_len: usize,
    /// Bytes one live image of the current turn may hold (16 MiB).
    pub max_image_len: usize,
    /// UTF-8 bytes of tool-result text sent back in one `mcp_result` (512 KiB).
    pub max_tool_result_bytes: usize,
    /// Characters of one replayed tool result in the root prompt (20 000).
    pub max_replayed_result_chars: usize,
    /// Unproductive requests per model turn before the run fails closed (8).
    pub miss_budget: u32,
    /// Misses after which redirect texts harden into one imperative (3).
    pub escalate_after: u32,
    /// Tool calls that may wait for host results at once.
    pub max_pending_tool_calls: usize,
    /// Host events buffered while the host runs tools.
    pub max_deferred_events: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            blob_store_capacity: 64 << 20,
            max_blob_len: 16 << 20,
            max_image_len: 16 << 20,
            max_tool_result_bytes: 512 << 10,
            max_replayed_result_chars: 20_000,
            miss_budget: 8,
            escalate_after: 3,
            max_pending_tool_calls: 256,
            max_deferred_events: 16_384,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_follow_the_spec() {
        let config = RunConfig::new("grok-4.7-high", "file:///work");
        assert_eq!(config.host_name, "pi");
        assert_eq!(config.tool_prefix(), "mcp_pi_");
        assert_eq!(config.timers.heartbeat_interval, Duration::from_secs(15));
        assert_eq!(config.timers.idle_timeout, Duration::from_secs(120));
        assert_eq!(config.timers.first_frame_timeout, Duration::from_secs(30));
        assert_eq!(
            config.timers.exec_heartbeat_interval,
            Duration::from_secs(3)
        );
        assert_eq!(config.limits.blob_store_capacity, 64 * 1024 * 1024);
        assert_eq!(config.limits.miss_budget, 8);
        assert!(!config.resume);
    }
}
