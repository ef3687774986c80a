//! A loopback replica of Cursor's agent backend (feature `testing`).
//!
//! [`Replica`] serves `agent.v1.AgentService/Run` on the transport's loopback
//! [`TestServer`](cursor_transport::testing::TestServer), the way the real backend does as far
//! as a client can tell: per Run stream it decodes the run request, asks for every root-prompt
//! blob over KV and checks that it parses as JSON, runs a small deterministic "model", sends
//! native exec requests (`shell_stream_args`) and MCP calls (`mcp_args`) and waits for their
//! results on the same stream, streams text and token deltas, emits a
//! `conversation_checkpoint_update` holding the turns so far, and ends the turn with
//! `turn_ended`. It keeps every conversation by id, so a resumed Run is told apart from a
//! rebuilt one, and records each Run ([`RunRecord`]) for tests to assert on.
//!
//! The model answers from the user text of the turn:
//!
//! | user text | what the replica does |
//! |---|---|
//! | `ping` | answers `pong` |
//! | `run: <command>` | asks for a native shell exec of `<command>` and answers with its output |
//! | `tool: <name> <json>` | calls the host's MCP tool `<name>` with `<json>` and answers with its result |
//! | `remember <fact>` | acknowledges; the fact is part of the conversation |
//! | `what did I ask you to remember?` | lists every fact of the conversation, from its stored turns on a resume or from the root prompt on a rebuild |
//! | anything else | echoes it |
//!
//! Tests script faults per Run with [`Script`] (a 401 on open, a malformed frame, a blob miss,
//! a `not_found` end of stream, exact frames, silence), can keep streams open after
//! `turn_ended` for a while or forever ([`Replica::set_hold_open`]) and send heartbeats while
//! it waits for the client ([`Replica::set_idle_heartbeat`]), as Cursor does. Downstream hosts can run their own tools against
//! it the same way: register the tool, ask `tool: <name> <json>`, and check the answer.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use cursor_agent::testing::{Replica, Script};
//!
//! let replica = Replica::start().await?;
//! replica.script(Script::Unauthenticated);
//! assert!(replica.origin().is_loopback());
//! assert!(replica.runs().is_empty());
//! # Ok(())
//! # }
//! ```

mod checkpoint;
mod exchange;
mod model;
mod record;
mod replica;
mod script;
mod server;

pub use model::ToolNaming;
pub use record::{ExecRecord, RunRecord};
pub use replica::{AllowedTools, HoldOpen, McpStateRequests, ModelIdForm, Replica};
pub use script::{Exhaustion, Fault, Script, StateLoss};
pub use server::ReplicaServer;
