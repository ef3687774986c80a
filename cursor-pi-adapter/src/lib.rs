//! # cursor-pi-adapter (layer L6/L7)
//!
//! Binds the cursor crates into the pi coding agent as a model provider: pi shape compat, event mapping, orchestration and a Node binding.
//!
//! This crate owns everything that knows pi: pi's JSON shapes (per pi version) to and from `ir`, pi event objects, provider orchestration (channel choice, handle persistence, catalog snapshot, error text with a next step), and the Node binding (napi-rs, behind the `node` feature).
//!
//! - [`compat`]: pi's `streamSimple` context → [`cursor_proto::ir::Conversation`], and
//!   [`cursor_proto::ir::Event`]s → pi `AssistantMessageEvent` objects. Every assumption about
//!   pi's shapes lives there, each marked with the pi versions it holds for.
//! - [`provider`]: the `cursor` provider (layer L7): channel choice by
//!   `CURSOR_PROVIDER_CHANNEL`, one `streamSimple` call end to end, error text with a next step,
//!   OAuth callbacks, the model list and the `/cursor-doctor` report.
//! - `node` (feature `node`): the napi-rs binding the pi extension in `examples/pi-extension`
//!   loads.
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod compat;
/// The host-neutral conversation model (cursor-proto's) that the pi shapes map to and from.
pub use cursor_proto::ir;
#[cfg(feature = "node")]
#[cfg_attr(docsrs, doc(cfg(feature = "node")))]
pub mod node;
mod pi_words;
pub mod provider;
