//! What one gateway process lets its clients hold: sockets, bodies, turns, waiting tool rounds,
//! and how long each may take. Every field has a command-line flag; the defaults suit one
//! machine shared by a team.

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
    /// Turns streaming at once; one more is answered 503 with `Retry-After` (`--max-turns`).
    pub max_turns: usize,
    /// Conversations kept in memory, waiting tool rounds included; past it the least recently
    /// used is evicted (a waiting one has its Run cancelled) (`--max-conversations`).
    pub max_conversations: usize,
    /// The largest request body; a larger one is a 413 before it is read (`--max-body-bytes`).
    pub max_body_bytes: usize,
    /// How long a Run waits for the client's tool results before it is cancelled
    /// (`--tool-round-timeout`).
    pub tool_round: Duration,
    /// On SIGTERM or Ctrl-C, how long running turns may finish before they are cancelled
    /// (`--shutdown-grace`).
    pub shutdown_grace: Duration,
    /// A streamed Anthropic answer sends a `ping` event after this long without output
    /// (`--ping-interval`); Claude Code kills a stream that stays silent.
    pub ping_interval: Duration,
    /// A response stored for `previous_response_id` is kept this long after it was written,
    /// then deleted (`--response-retention`; 30 days, as OpenAI keeps stored responses).
    pub response_retention: Duration,
}

impl Limits {
    /// The documented defaults.
    pub const DEFAULT: Self = Self {
        header_read: Duration::from_secs(15),
        body_read: Duration::from_secs(60),
        write: Duration::from_secs(30),
        max_connections: 1024,
        max_turns: 64,
        max_conversations: 10_000,
        max_body_bytes: 32 * 1024 * 1024,
        tool_round: Duration::from_secs(300),
        shutdown_grace: Duration::from_secs(30),
        ping_interval: Duration::from_secs(5),
        response_retention: Duration::from_secs(30 * 24 * 3600),
    };
}

impl Default for Limits {
    fn default() -> Self {
        Self::DEFAULT
    }
}
