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
    /// Who the host is, as Cursor and the model see it.
    pub profile: HostProfile,
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
    /// Seed for every id the run mints (conversation, message and image UUIDs); the run never
    /// reads a random source itself.
    pub id_seed: IdSeed,
}

impl RunConfig {
    /// A configuration for `model` in the workspace at `workspace_uri`, minting its ids from
    /// `id_seed`, with the generic [`HostProfile`] and spec defaults.
    pub fn new(
        model: impl Into<String>,
        workspace_uri: impl Into<String>,
        id_seed: IdSeed,
    ) -> Self {
        Self {
            model: model.into(),
            max_mode: false,
            workspace_uris: vec![workspace_uri.into()],
            profile: HostProfile::default(),
            conversation_id: None,
            resume: false,
            timers: Timers::default(),
            limits: Limits::default(),
            id_seed,
        }
    }

    /// Sets [`RunConfig::profile`].
    #[must_use]
    pub fn with_profile(mut self, profile: HostProfile) -> Self {
        self.profile = profile;
        self
    }

    /// Sets [`RunConfig::conversation_id`].
    #[must_use]
    pub fn with_conversation_id(mut self, id: impl Into<String>) -> Self {
        self.conversation_id = Some(id.into());
        self
    }

    /// Checks the settings a Run cannot work with; [`AgentRun::new`](crate::AgentRun::new)
    /// calls it, so a bad value fails before anything is sent.
    ///
    /// # Errors
    ///
    /// [`AgentError::Config`](crate::AgentError::Config) ([`Timers::validate`],
    /// [`Limits::validate`]).
    pub fn validate(&self) -> Result<(), crate::AgentError> {
        self.timers.validate()?;
        self.limits.validate()
    }

    /// The prefix Cursor puts before host tool names: `mcp_<provider>_`.
    pub fn tool_prefix(&self) -> String {
        self.profile.tool_prefix()
    }
}

/// The seed a Run mints its ids from (conversation, message and image UUIDs).
///
/// Production code takes [`IdSeed::random`]; tests take [`IdSeed::fixed`] for reproducible
/// requests. There is no default: a constant seed in production would give every run the
/// same conversation id.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct IdSeed([u8; 16]);

impl IdSeed {
    /// Fresh randomness from the operating system.
    ///
    /// # Errors
    ///
    /// [`AgentError::RandomSource`](crate::AgentError::RandomSource) when the system random
    /// source fails.
    pub fn random() -> Result<Self, crate::AgentError> {
        let mut seed = [0; 16];
        getrandom::fill(&mut seed)
            .map_err(|error| crate::AgentError::RandomSource(error.to_string()))?;
        Ok(Self(seed))
    }

    /// A constant seed (tests, reproducible fixtures).
    pub const fn fixed(bytes: [u8; 16]) -> Self {
        Self(bytes)
    }

    /// The seed's bytes.
    pub const fn bytes(&self) -> [u8; 16] {
        self.0
    }
}

impl std::fmt::Debug for IdSeed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Ids derive from it; a log line should not let anyone predict them.
        f.write_str("IdSeed(..)")
    }
}

/// Who the host is, as Cursor and the model see it: the names Cursor records, the MCP
/// namespace the host's tools are projected under, and how model-facing texts (redirects, the
/// root prompt's rules, truncation markers) name the host. A host builds its own with
/// [`HostProfile::new`]; nothing in this crate assumes any particular host.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostProfile {
    /// The client name Cursor records (`client_name` in the conversation state and the
    /// selected-context blob).
    pub host_name: String,
    /// The MCP provider the host's tools are projected under; model-facing tool names are
    /// `mcp_<provider>_<tool>` and the MCP namespace is `<provider>`.
    pub provider_identifier: String,
    /// How model-facing texts name the host: "`<display>`'s MCP tools", or the truncation
    /// marker "`[<display>: tool output truncated …]`".
    pub display_name: String,
    /// The user message a rebuilt Run sends when the turn being rebuilt already ran tools: the
    /// tool calls and results ride in the root prompt, and this asks the model to go on.
    pub continuation_prompt: String,
    /// The built-in Cursor tools the backend may offer the model, sent as
    /// `x-cursor-agent-allowed-tools` on every Run (docs/PROTOCOL-AGENT.md §12.3): by default only
    /// the MCP group ([`MCP_TOOL_GROUP`]), through which the host's own tools are called. `None`
    /// sends no header. Defence in depth only: whatever the backend does with it, every native exec
    /// that still arrives is translated, refused or thrown.
    pub allowed_tools: Option<Vec<String>>,
}

/// The `ToolCall` arms of Cursor's MCP group (the first-party SDK's `mcp` group,
/// docs/PROTOCOL-AGENT.md §12.3): calls of MCP tools and the meta tools that list and read them.
pub const MCP_TOOL_GROUP: [&str; 5] = [
    "mcp_tool_call",
    "get_mcp_tools_tool_call",
    "list_mcp_resources_tool_call",
    "read_mcp_resource_tool_call",
    "mcp_auth_tool_call",
];

/// The header that restricts the backend's built-in tools (docs/PROTOCOL-AGENT.md §12.3).
pub const ALLOWED_TOOLS_HEADER: &str = "x-cursor-agent-allowed-tools";

impl HostProfile {
    /// A profile for the host called `name`, used for all three names (the provider identifier
    /// keeps only ASCII letters, digits, `-` and `_`).
    pub fn new(name: impl Into<String>) -> Self {
        let name = name.into();
        let provider: String = name
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'))
            .collect();
        Self {
            host_name: name.clone(),
            provider_identifier: if provider.is_empty() {
                "host".into()
            } else {
                provider
            },
            display_name: name,
            continuation_prompt:
                "Continue the task: the results of the tool calls you made in this turn are above."
                    .into(),
            allowed_tools: Some(MCP_TOOL_GROUP.iter().map(|t| (*t).to_owned()).collect()),
        }
    }

    /// Sets [`HostProfile::provider_identifier`].
    #[must_use]
    pub fn with_provider_identifier(mut self, provider: impl Into<String>) -> Self {
        self.provider_identifier = provider.into();
        self
    }

    /// Sets [`HostProfile::display_name`].
    #[must_use]
    pub fn with_display_name(mut self, display: impl Into<String>) -> Self {
        self.display_name = display.into();
        self
    }

    /// Sets [`HostProfile::continuation_prompt`].
    #[must_use]
    pub fn with_continuation_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.continuation_prompt = prompt.into();
        self
    }

    /// Sets [`HostProfile::allowed_tools`] (`None`: send no header).
    #[must_use]
    pub fn with_allowed_tools<I, S>(mut self, tools: Option<I>) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.allowed_tools = tools.map(|tools| tools.into_iter().map(Into::into).collect());
        self
    }

    /// The prefix Cursor puts before host tool names: `mcp_<provider>_`.
    pub fn tool_prefix(&self) -> String {
        format!("mcp_{}_", self.provider_identifier)
    }

    /// The `x-cursor-agent-allowed-tools` value this profile sends, if any: the tool names
    /// joined by commas.
    pub fn allowed_tools_header(&self) -> Option<String> {
        self.allowed_tools.as_ref().map(|tools| tools.join(","))
    }
}

impl Default for HostProfile {
    /// A host with no name of its own: `host`.
    fn default() -> Self {
        Self::new("host")
    }
}

/// Deadlines and intervals of a Run (PROTOCOL-AGENT §1, §8; PROTOCOL-AGENT §11.5).
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
    /// How long a session waits before its one transparent retry of a capacity refusal that
    /// came before anything streamed (2 s; PROTOCOL-AGENT §13.2).
    pub capacity_retry_backoff: Duration,
}

impl Default for Timers {
    fn default() -> Self {
        Self {
            heartbeat_interval: Duration::from_secs(15),
            first_frame_timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(120),
            tool_call_debounce: Duration::from_millis(150),
            exec_heartbeat_interval: Duration::from_secs(3),
            capacity_retry_backoff: Duration::from_secs(2),
        }
    }
}

/// The longest any timer may be: anything past an hour is a unit mistake (seconds given as
/// milliseconds), not a wish.
pub const MAX_TIMER: Duration = Duration::from_secs(3600);

impl Timers {
    /// Checks that every timer is non-zero, at most [`MAX_TIMER`], and that the heartbeats are
    /// shorter than the silences they must prevent (a heartbeat slower than the idle or
    /// first-frame timeout would let the stream die between beats).
    ///
    /// # Errors
    ///
    /// [`AgentError::Config`](crate::AgentError::Config) naming the timer and its value.
    pub fn validate(&self) -> Result<(), crate::AgentError> {
        let named = [
            ("heartbeat_interval", self.heartbeat_interval),
            ("first_frame_timeout", self.first_frame_timeout),
            ("idle_timeout", self.idle_timeout),
            ("tool_call_debounce", self.tool_call_debounce),
            ("exec_heartbeat_interval", self.exec_heartbeat_interval),
            ("capacity_retry_backoff", self.capacity_retry_backoff),
        ];
        for (name, value) in named {
            if value.is_zero() || value > MAX_TIMER {
                return Err(timer_error(format!(
                    "timer {name} is {value:?}; it must be above zero and at most {MAX_TIMER:?}"
                )));
            }
        }
        let shorter = [
            (
                "heartbeat_interval",
                self.heartbeat_interval,
                "idle_timeout",
                self.idle_timeout,
            ),
            (
                "heartbeat_interval",
                self.heartbeat_interval,
                "first_frame_timeout",
                self.first_frame_timeout,
            ),
            (
                "exec_heartbeat_interval",
                self.exec_heartbeat_interval,
                "idle_timeout",
                self.idle_timeout,
            ),
            (
                "tool_call_debounce",
                self.tool_call_debounce,
                "idle_timeout",
                self.idle_timeout,
            ),
        ];
        for (short, short_value, long, long_value) in shorter {
            if short_value >= long_value {
                return Err(timer_error(format!(
                    "timer {short} ({short_value:?}) must be shorter than {long} ({long_value:?})"
                )));
            }
        }
        Ok(())
    }
}

fn timer_error(message: String) -> crate::AgentError {
    crate::AgentError::Config(message)
}

/// Size and count caps of a Run (PROTOCOL-AGENT §2.1, §3.1, §5, §6, §8).
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Total bytes the blob store may hold (64 MiB).
    pub blob_store_capacity: usize,
    /// Bytes one blob may hold (15 MiB: a blob goes back in one frame, with room for its
    /// envelope below the transport's 16 MiB frame limit).
    pub max_blob_len: usize,
    /// Bytes one live image of the current turn may hold, and the images of one tool result
    /// together (15 MiB, for the same reason).
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
    /// User turns a rebuilt root prompt replays message by message (20); older turns are
    /// folded into one archive blob, so the server fetches a bounded number of blobs whatever
    /// the conversation's length (docs/PROTOCOL-AGENT.md §10, §12.5). 0 archives the whole history.
    pub archive_after_turns: usize,
    /// Bytes of structured history (the JSON of the turns a rebuilt root prompt replays
    /// message by message) a rebuild may send (48 KiB). The server resets a stream whose
    /// structured turns reach about 64 KiB, so older turns fold into the archive until the
    /// rest fit (docs/PROTOCOL-AGENT.md §13.4).
    pub max_structured_history_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            blob_store_capacity: 64 << 20,
            max_blob_len: 15 << 20,
            max_image_len: 15 << 20,
            max_tool_result_bytes: 512 << 10,
            max_replayed_result_chars: 20_000,
            miss_budget: 8,
            escalate_after: 3,
            max_pending_tool_calls: 256,
            max_deferred_events: 16_384,
            archive_after_turns: 20,
            max_structured_history_bytes: 48 << 10,
        }
    }
}

/// Bytes a frame needs besides one blob or image: the message fields around it.
pub const FRAME_OVERHEAD: usize = 64 << 10;

impl Limits {
    /// Checks that what the caps admit can be sent: a blob or an image of the largest allowed
    /// size, plus [`FRAME_OVERHEAD`], fits the transport's frame limit, and so does a tool
    /// result's capped text beside its images.
    ///
    /// # Errors
    ///
    /// [`AgentError::Config`](crate::AgentError::Config) naming the cap and the limit.
    pub fn validate(&self) -> Result<(), crate::AgentError> {
        let frame = cursor_transport::envelope::DEFAULT_MAX_MESSAGE_SIZE;
        for (name, value) in [
            ("max_blob_len", self.max_blob_len),
            ("max_image_len", self.max_image_len),
            ("max_tool_result_bytes", self.max_tool_result_bytes),
        ] {
            if value.saturating_add(FRAME_OVERHEAD) > frame {
                return Err(crate::AgentError::Config(format!(
                    "limit {name} ({value} bytes) leaves no room for its frame: at most {} bytes fit the {frame}-byte frame limit",
                    frame - FRAME_OVERHEAD
                )));
            }
        }
        let result = self
            .max_tool_result_bytes
            .saturating_add(self.max_image_len);
        if result.saturating_add(FRAME_OVERHEAD) > frame {
            return Err(crate::AgentError::Config(format!(
                "limits max_tool_result_bytes and max_image_len ({result} bytes together) leave no room for a tool result's frame: at most {} bytes fit the {frame}-byte frame limit",
                frame - FRAME_OVERHEAD
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_caps_fit_a_frame_with_their_envelope() {
        Limits::default().validate().unwrap();
        let too_big = Limits {
            max_blob_len: cursor_transport::envelope::DEFAULT_MAX_MESSAGE_SIZE,
            ..Limits::default()
        };
        let error = too_big.validate().unwrap_err().to_string();
        assert!(error.contains("max_blob_len"), "{error}");
    }

    #[test]
    fn a_tool_results_text_and_images_must_fit_one_frame_together() {
        let half = (cursor_transport::envelope::DEFAULT_MAX_MESSAGE_SIZE - FRAME_OVERHEAD) / 2;
        let fits = Limits {
            max_image_len: half,
            max_tool_result_bytes: half,
            ..Limits::default()
        };
        fits.validate().unwrap();
        let too_big = Limits {
            max_tool_result_bytes: half + 1,
            ..fits
        };
        let error = too_big.validate().unwrap_err().to_string();
        assert!(
            error.contains("max_tool_result_bytes and max_image_len"),
            "{error}"
        );
    }

    fn timers(edit: impl FnOnce(&mut Timers)) -> Result<(), String> {
        let mut timers = Timers::default();
        edit(&mut timers);
        timers.validate().map_err(|e| {
            assert!(matches!(e, crate::AgentError::Config(_)), "{e:?}");
            e.to_string()
        })
    }

    #[test]
    fn zero_absurd_or_inverted_timers_are_config_errors() {
        assert_eq!(timers(|_| ()), Ok(()));
        let zero = timers(|t| t.idle_timeout = Duration::ZERO).unwrap_err();
        assert!(zero.contains("idle_timeout"), "{zero}");
        let absurd = timers(|t| t.first_frame_timeout = Duration::from_secs(30_000)).unwrap_err();
        assert!(absurd.contains("first_frame_timeout"), "{absurd}");
        let inverted = timers(|t| t.idle_timeout = Duration::from_secs(10)).unwrap_err();
        assert!(
            inverted.contains("heartbeat_interval") && inverted.contains("idle_timeout"),
            "{inverted}"
        );
        assert!(timers(|t| t.exec_heartbeat_interval = Duration::from_secs(200)).is_err());
        assert!(timers(|t| t.heartbeat_interval = Duration::from_secs(30)).is_err());
        // Tight but consistent values are fine.
        assert_eq!(
            timers(|t| {
                t.heartbeat_interval = Duration::from_millis(100);
                t.first_frame_timeout = Duration::from_millis(500);
                t.idle_timeout = Duration::from_secs(1);
                t.exec_heartbeat_interval = Duration::from_millis(200);
                t.tool_call_debounce = Duration::from_millis(50);
            }),
            Ok(())
        );
    }

    #[test]
    fn defaults_follow_the_spec() {
        let config = RunConfig::new("grok-4.7-high", "file:///work", IdSeed::fixed([1; 16]));
        assert_eq!(config.profile.host_name, "host");
        assert_eq!(config.tool_prefix(), "mcp_host_");
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

    #[test]
    fn a_profile_names_every_model_facing_part_after_its_host() {
        let profile = HostProfile::new("mini host!");
        assert_eq!(profile.provider_identifier, "minihost");
        assert_eq!(profile.tool_prefix(), "mcp_minihost_");
        assert_eq!(profile.display_name, "mini host!");
        assert_eq!(HostProfile::new("$$").provider_identifier, "host");
    }

    #[test]
    fn the_default_profile_allows_only_the_mcp_group() {
        let profile = HostProfile::new("acme");
        assert_eq!(
            profile.allowed_tools_header().as_deref(),
            Some(
                "mcp_tool_call,get_mcp_tools_tool_call,list_mcp_resources_tool_call,read_mcp_resource_tool_call,mcp_auth_tool_call"
            )
        );
        let none = profile.with_allowed_tools(None::<Vec<String>>);
        assert_eq!(none.allowed_tools_header(), None);
    }

    #[test]
    fn seeds_never_show_their_bytes() {
        assert_eq!(format!("{:?}", IdSeed::fixed([9; 16])), "IdSeed(..)");
        assert_ne!(IdSeed::random().unwrap(), IdSeed::random().unwrap());
    }
}
