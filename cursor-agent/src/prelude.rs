//! Everything a host needs, in one import: `use cursor_agent::prelude::*;`.
//!
//! With it and a tokio runtime a host builds an [`AgentSession`], sends a [`Conversation`]
//! with its [`Tool`]s and reads the turn's [`AgentEvent`]s; nothing else is needed in
//! `Cargo.toml` (implementing [`TokenSource`] needs [`macro@async_trait`] too, re-exported here).
//!
//! ```
//! use cursor_agent::prelude::*;
//!
//! # #[cfg(feature = "testing")]
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let replica = cursor_agent::testing::Replica::start().await?;
//! # let origin = replica.origin();
//! let session = AgentSession::builder(Client::new()?, origin, Arc::new(StaticToken::new("token")))
//!     .profile(HostProfile::new("my-editor"))
//!     .workspace_uri("file:///work")
//!     .build();
//! let conversation = Conversation::new("").with_message(Message::user_text("ping"));
//! let mut turn = session.turn(&conversation, &ModelChoice::new("composer-2.5"));
//! while let Some(event) = turn.next().await {
//!     if let AgentEvent::Ir(Event::TextDelta { text }) = event {
//!         print!("{text}");
//!     }
//! }
//! # Ok(())
//! # }
//! # #[cfg(not(feature = "testing"))]
//! # fn main() {}
//! ```

pub use std::sync::Arc;

pub use async_trait::async_trait;

pub use crate::ir::{
    Conversation, ErrorInfo, ErrorKind, Event, Message, NextStep, StopReason, Tool, ToolCall,
    ToolResult, Warning, WarningCode,
};
pub use crate::session::{
    AgentSession, Client, ModelChoice, Origin, SessionBuilder, SessionConfig, StaticToken,
    TokenSource, TurnEvents,
};
pub use crate::{AgentEvent, HandleStore, HostProfile, json};
