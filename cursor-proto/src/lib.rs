//! # cursor-proto (layer L0)
//!
//! Wire types for Cursor's `agent.v1` and `aiserver.v1` protocols, the `selected_context_blob`
//! codec, and the host-neutral conversation model (`ir`).
//!
//! Modules:
//!
//! - [`agent::v1`]: prost types for `agent.v1.AgentService` (`Run`, `GetUsableModels`,
//!   `GetDefaultModelForCli`): the client and server envelopes, the run request, exec and blob
//!   channels, streamed updates and approval queries.
//! - [`aiserver::v1`]: prost types for `aiserver.v1` (`AvailableModels`, `GetServerConfig`,
//!   `RunInference`).
//! - [`selected_context_blob`]: the hand-written codec for the blob a user message points at.
//! - [`checkpoint`]: lossless resume, overlaying a turn's fields onto a checkpoint's raw bytes.
//! - [`wire`]: the error type of the hand-written codecs.
//! - [`uuid`]: the UUID text form of the ids the wire carries.
//! - [`ir`]: the host-neutral conversation model that L4 consumes and L6 produces.
//!
//! The prost types are generated from the `.proto` sources in `proto/` and checked in under
//! `src/gen/`; there is no build script. Each field's doc names the section of
//! `docs/PROTOCOL-AGENT.md` or `docs/PROTOCOL.md` that records it. Only what the family sends or
//! parses is declared; protobuf skips every other field on decode.
//!
//! ```
//! use cursor_proto::agent::v1::{AgentClientMessage, ClientHeartbeat, agent_client_message};
//! use prost::Message as _;
//!
//! let heartbeat = AgentClientMessage {
//!     message: Some(agent_client_message::Message::ClientHeartbeat(ClientHeartbeat {})),
//! };
//! // Field 7, length-delimited, empty.
//! assert_eq!(heartbeat.encode_to_vec(), [0x3a, 0x00]);
//! assert_eq!(AgentClientMessage::decode(&[0x3a, 0x00][..])?, heartbeat);
//! # Ok::<(), prost::DecodeError>(())
//! ```
#![cfg_attr(docsrs, feature(doc_cfg))]

/// `agent.v1`: the agent protocol.
pub mod agent {
    /// Version 1 of `agent.v1`, generated from `proto/agent/v1/*.proto`.
    #[allow(
        clippy::doc_lazy_continuation,
        clippy::large_enum_variant,
        clippy::use_self
    )]
    pub mod v1 {
        include!("gen/agent.v1.rs");
    }
}

/// `aiserver.v1`: catalog, server configuration, account usage and the inference channel.
pub mod aiserver {
    /// Version 1 of `aiserver.v1`, generated from `proto/aiserver/v1/*.proto`.
    #[allow(
        clippy::doc_lazy_continuation,
        clippy::large_enum_variant,
        clippy::use_self
    )]
    pub mod v1 {
        include!("gen/aiserver.v1.rs");
    }
}

pub mod checkpoint;
pub mod hex;
pub mod ir;
pub mod selected_context_blob;
pub mod uuid;
pub mod wire;

/// Entry points shared by the fuzz targets and the corpus replay test; not a stable API.
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing {
    use crate::selected_context_blob::SelectedContextBlob;

    /// Any input decodes or fails with a typed error; whatever decodes re-encodes to itself.
    pub fn selected_context_blob(data: &[u8]) {
        if let Ok(blob) = SelectedContextBlob::decode(data) {
            let again = SelectedContextBlob::decode(&blob.encode()).expect("own encoding decodes");
            assert_eq!(again, blob, "re-encoding changed the value");
        }
    }
}
