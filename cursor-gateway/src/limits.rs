//! What one gateway process lets its clients hold: sockets, request memory, turns, waiting tool
//! rounds, state on disk, and how long each may take. Every field has a command-line flag; the
//! defaults suit one machine shared by a team. Caps with a per-key share keep one client key
//! from taking what the others need.

use std::time::Duration;

/// Bounds and timeouts of a running gateway (see `docs/OPENAI-GATEWAY.md`, "Limits").
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// A connection must send a complete request head this long after it opened or after its
    /// previous response ended; it is the keep-alive idle limit too (`--header-timeout`).
    pub header_read: Duration,
    /// The whole request body must arrive within this (`--body-timeout`).
    pub body_read: Duration,
    /// A write to the client that makes no progress for this long ends the connection and
    /// cancels its Run: a client that stops reading (`--write-timeout`).
    pub write: Duration,
    /// Open connections; one more is answered 503 at once (`--max-connections`).
    pub max_connections: usize,
    /// Open connections from one peer address (`--max-connections-per-peer`).
    pub max_connections_per_peer: usize,
    /// Turns running at once; one more is answered 503 with `Retry-After` (`--max-turns`).
    pub max_turns: usize,
    /// Turns one client key runs at once; one more is answered 429 (`--max-turns-per-key`).
    pub max_turns_per_key: usize,
    /// Conversations kept in memory, waiting tool rounds included (`--max-conversations`);
    /// past it one is evicted, chosen within the key that needs the room when it holds any.
    pub max_conversations: usize,
    /// Runs parked waiting for a client's tool results, gateway-wide (`--max-parked-rounds`);
    /// each holds an upstream stream.
    pub max_parked_rounds: usize,
    /// Parked Runs of one client key (`--max-parked-per-key`): past it, that key's oldest
    /// parked Run is cancelled (its late results rebuild).
    pub max_parked_per_key: usize,
    /// The largest request body; a larger one is a 413 before it is read (`--max-body-bytes`).
    pub max_body_bytes: usize,
    /// Request bytes being read, parsed or held by running turns at once, gateway-wide
    /// (`--body-budget`); one key holds at most half of it.
    pub body_budget: usize,
    /// How long a request waits for room in the body budget before it is answered 503
    /// (`--body-wait`).
    pub body_wait: Duration,
    /// How long a Run waits for the client's tool results before it is cancelled
    /// (`--tool-round-timeout`).
    pub tool_round: Duration,
    /// On SIGTERM or Ctrl-C, how long running turns may finish before they are cancelled
    /// (`--shutdown-grace`).
    pub shutdown_grace: Duration,
    /// A streamed answer sends a keep-alive (Anthropic's `ping` event, an SSE comment on the
    /// OpenAI APIs) after this long without output (`--ping-interval`).
    pub ping_interval: Duration,
    /// A response stored for `previous_response_id` is kept this long after it was last used,
    /// then deleted (`--response-retention`; 30 days, as OpenAI keeps stored responses).
    pub response_retention: Duration,
    /// Stored responses on disk, in bytes (`--max-stored-response-bytes`); past it the least
    /// recently used are deleted.
    pub max_stored_response_bytes: u64,
    /// A conversation idle this long is forgotten: its index entries, resume handle and lock
    /// are deleted (`--conversation-retention`).
    pub conversation_retention: Duration,
    /// How often expired state is swept (`--sweep-interval`).
    pub sweep_interval: Duration,
}

impl Limits {
    /// The documented defaults.
    pub const DEFAULT: Self = Self {
        header_read: Duration::from_secs(15),
        body_read: Duration::from_secs(60),
        write: Duration::from_secs(30),
        max_connections: 1024,
        max_connections_per_peer: 256,
        max_turns: 64,
        max_turns_per_key: 32,
        max_conversations: 10_000,
        max_parked_rounds: 512,
        max_parked_per_key: 128,
        max_body_bytes: 32 * 1024 * 1024,
        body_budget: 256 * 1024 * 1024,
        body_wait: Duration::from_secs(2),
        tool_round: Duration::from_secs(300),
        shutdown_grace: Duration::from_secs(30),
        ping_interval: Duration::from_secs(5),
        response_retention: Duration::from_secs(30 * 24 * 3600),
        max_stored_response_bytes: 1024 * 1024 * 1024,
        conversation_retention: Duration::from_secs(30 * 24 * 3600),
        sweep_interval: Duration::from_secs(3600),
    };

    /// The bytes of the body budget one key may hold: half of it, and at least one
    /// maximum-size body (so a lone key can always send what the size limit allows).
    pub fn body_budget_per_key(&self) -> usize {
        (self.body_budget / 2).max(self.max_body_bytes.min(self.body_budget))
    }
}

impl Default for Limits {
    fn default() -> Self {
        Self::DEFAULT
    }
}
