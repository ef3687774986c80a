//! The host-neutral conversation model.
//!
//! L6 (a host adapter) produces a [`Conversation`]; L4 (the agent and inference
//! channels) consumes it and produces [`Event`]s, which L6 maps back to host events. Nothing in
//! here knows any host's or Cursor's wire shapes, so a host upgrade and a protocol change never
//! meet in one file.
//!
//! Every type round-trips through JSON (images as base64), which is how fixtures and snapshots
//! are stored.
//!
//! ```
//! use cursor_proto::ir::{Conversation, Message, Tool};
//!
//! let conversation = Conversation::new("You are terse.")
//!     .with_tool(Tool::new("bash", "Run a shell command", serde_json::json!({"type": "object"})))
//!     .with_message(Message::user_text("ping"));
//! let json = serde_json::to_string(&conversation)?;
//! assert_eq!(serde_json::from_str::<Conversation>(&json)?, conversation);
//! # Ok::<(), serde_json::Error>(())
//! ```

mod conversation;
mod error;
mod event;
mod image;

pub use conversation::{
    AssistantContent, Conversation, Message, Tool, ToolCall, ToolResult, ToolResultContent,
    UserContent,
};
pub use error::{Classify, ErrorInfo, ErrorKind, NextStep};
pub use event::{Event, StopReason, Usage, Warning, WarningCode};
pub use image::{Image, ImageFormat};
