//! Lossless resume: building the next run request from a checkpoint's raw bytes.
//!
//! The server's checkpoint (`AgentServerMessage.conversation_checkpoint_update`) is a serialized
//! `ConversationStateStructure`. Decoding it into the generated type and encoding it again would
//! drop every field this crate does not declare, and newer servers keep adding fields. Resume
//! therefore works on the bytes (docs/PROTOCOL-AGENT.md §3, §10):
//!
//! - every field is copied as received, in order, except `previous_workspace_uris` (9) and
//!   `client_name` (22), which are replaced;
//! - the current rules blob ids are appended to `root_prompt_messages_json` (1);
//! - the result is placed into the run request as raw bytes by
//!   [`encode_client_run_request`].
//!
//! ```
//! use cursor_proto::agent::v1::{AgentClientMessage, AgentRunRequest, ConversationStateStructure};
//! use cursor_proto::checkpoint::{ResumeOverlay, encode_client_run_request};
//! use prost::Message as _;
//!
//! let checkpoint = ConversationStateStructure {
//!     root_prompt_messages_json: vec![vec![1; 32]],
//!     turns: vec![vec![0xaa]],
//!     previous_workspace_uris: vec!["file:///old".into()],
//!     ..Default::default()
//! }
//! .encode_to_vec();
//! let overlay = ResumeOverlay {
//!     appended_root_prompt_ids: &[vec![2; 32]],
//!     workspace_uris: &["file:///new".to_owned()],
//!     client_name: "ed",
//! };
//! let state = overlay.apply(&checkpoint)?;
//! let frame = encode_client_run_request(AgentRunRequest::default(), &state);
//!
//! let decoded = AgentClientMessage::decode(frame.as_slice())?;
//! # let Some(cursor_proto::agent::v1::agent_client_message::Message::RunRequest(run)) = decoded.message else { panic!() };
//! let state = run.conversation_state.unwrap();
//! assert_eq!(state.root_prompt_messages_json, vec![vec![1; 32], vec![2; 32]]);
//! assert_eq!(state.turns, vec![vec![0xaa]]);
//! assert_eq!(state.previous_workspace_uris, vec!["file:///new".to_owned()]);
//! assert_eq!(state.client_name.as_deref(), Some("ed"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use prost::Message as _;

use crate::agent::v1::AgentRunRequest;
use crate::wire::{Reader, WIRE_LEN, WireError, expect_wire_type, put_len_delimited, varint_len};

/// `ConversationStateStructure.root_prompt_messages_json`.
const ROOT_PROMPT_FIELD: u32 = 1;
/// `ConversationStateStructure.previous_workspace_uris`.
const WORKSPACE_URIS_FIELD: u32 = 9;
/// `ConversationStateStructure.client_name`.
const CLIENT_NAME_FIELD: u32 = 22;
/// `AgentClientMessage.run_request` and `AgentRunRequest.conversation_state` are both field 1.
const FIRST_FIELD: u32 = 1;

/// What a resumed turn changes in the checkpointed state.
#[derive(Clone, Copy, Debug)]
pub struct ResumeOverlay<'a> {
    /// Blob ids to append to the root prompt (the current rules), in order; not appended again
    /// when the root prompt already ends with them (unchanged rules after an earlier resume),
    /// so the model reads them once however many turns resumed.
    pub appended_root_prompt_ids: &'a [Vec<u8>],
    /// Replaces `previous_workspace_uris`.
    pub workspace_uris: &'a [String],
    /// Replaces `client_name`; omitted when empty.
    pub client_name: &'a str,
}

impl ResumeOverlay<'_> {
    /// Applies the overlay to a checkpoint's bytes, keeping every other field byte for byte.
    ///
    /// Fails on malformed input, or when field 1, 9 or 22 is not length-delimited.
    pub fn apply(&self, checkpoint: &[u8]) -> Result<Vec<u8>, WireError> {
        let mut out =
            Vec::with_capacity(checkpoint.len() + 64 * self.appended_root_prompt_ids.len());
        let mut reader = Reader::new(checkpoint);
        let mut root_ids = Vec::new();
        while let Some(field) = reader.next_field()? {
            match field.field {
                WORKSPACE_URIS_FIELD | CLIENT_NAME_FIELD => expect_wire_type(&field, WIRE_LEN)?,
                ROOT_PROMPT_FIELD => {
                    expect_wire_type(&field, WIRE_LEN)?;
                    out.extend_from_slice(field.raw);
                    root_ids.push(field.value);
                }
                _ => out.extend_from_slice(field.raw),
            }
        }
        let appended = self.appended_root_prompt_ids;
        let already_last = !appended.is_empty()
            && root_ids.len() >= appended.len()
            && root_ids[root_ids.len() - appended.len()..]
                .iter()
                .zip(appended)
                .all(|(old, new)| *old == new.as_slice());
        // Repeated fields keep wire order, so ids written after the originals come after them.
        if !already_last {
            for id in appended {
                put_len_delimited(&mut out, ROOT_PROMPT_FIELD, id);
            }
        }
        for uri in self.workspace_uris {
            put_len_delimited(&mut out, WORKSPACE_URIS_FIELD, uri.as_bytes());
        }
        if !self.client_name.is_empty() {
            put_len_delimited(&mut out, CLIENT_NAME_FIELD, self.client_name.as_bytes());
        }
        Ok(out)
    }
}

/// Encodes `AgentClientMessage{run_request}` with `raw_state` as the run request's
/// `conversation_state`, so state bytes reach the server exactly as given.
///
/// `request.conversation_state` is ignored (cleared) because the raw state replaces it; two
/// occurrences of the field would be merged by the server.
pub fn encode_client_run_request(mut request: AgentRunRequest, raw_state: &[u8]) -> Vec<u8> {
    request.conversation_state = None;
    let rest = request.encode_to_vec();
    let state_field_len = varint_len(u64::from(FIRST_FIELD) << 3)
        + varint_len(raw_state.len() as u64)
        + raw_state.len();
    let mut run_request = Vec::with_capacity(state_field_len + rest.len());
    put_len_delimited(&mut run_request, FIRST_FIELD, raw_state);
    run_request.extend_from_slice(&rest);
    let mut frame = Vec::with_capacity(run_request.len() + 6);
    put_len_delimited(&mut frame, FIRST_FIELD, &run_request);
    frame
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::v1::{
        AgentClientMessage, ConversationStateStructure, RequestedModel, agent_client_message,
    };

    /// A checkpoint with root id [1], an unknown field 99 (varint 5), workspace "a", turn [7]
    /// and client name "x", written out by hand.
    const CHECKPOINT: &[u8] = &[
        0x0a, 0x01, 0x01, // (1 << 3) | 2: root id [1]
        0x98, 0x06, 0x05, // (99 << 3) | 0 = 792: unknown field 99 = 5
        0x4a, 0x01, b'a', // (9 << 3) | 2 = 74: workspace "a"
        0x42, 0x01, 0x07, // (8 << 3) | 2 = 66: turn [7]
        0xb2, 0x01, 0x01, b'x', // (22 << 3) | 2: client name "x"
    ];

    #[test]
    fn keeps_unknown_fields_and_replaces_workspace_and_client_name() {
        let overlay = ResumeOverlay {
            appended_root_prompt_ids: &[vec![2]],
            workspace_uris: &["b".to_owned()],
            client_name: "ed",
        };
        let out = overlay.apply(CHECKPOINT).unwrap();
        assert_eq!(
            out,
            [
                0x0a, 0x01, 0x01, // original root id
                0x98, 0x06, 0x05, // unknown field kept
                0x42, 0x01, 0x07, // turn kept
                0x0a, 0x01, 0x02, // appended root id
                0x4a, 0x01, b'b', // new workspace
                0xb2, 0x01, 0x02, b'e', b'd', // new client name
            ]
        );
    }

    #[test]
    fn rules_the_root_prompt_already_ends_with_are_not_appended_again() {
        let overlay = |ids: &[Vec<u8>]| {
            ResumeOverlay {
                appended_root_prompt_ids: ids,
                workspace_uris: &[],
                client_name: "",
            }
            .apply(CHECKPOINT)
            .unwrap()
        };
        // The checkpoint's root prompt ends with id [1]: the same rules are not appended.
        assert_eq!(
            overlay(&[vec![1]]),
            [0x0a, 0x01, 0x01, 0x98, 0x06, 0x05, 0x42, 0x01, 0x07]
        );
        // Changed rules are, and so is a sequence the root prompt does not end with.
        assert!(overlay(&[vec![3]]).ends_with(&[0x0a, 0x01, 0x03]));
        assert!(overlay(&[vec![2], vec![1]]).ends_with(&[0x0a, 0x01, 0x02, 0x0a, 0x01, 0x01]));
    }

    #[test]
    fn empty_client_name_is_dropped_not_written() {
        let overlay = ResumeOverlay {
            appended_root_prompt_ids: &[],
            workspace_uris: &[],
            client_name: "",
        };
        assert_eq!(
            overlay.apply(CHECKPOINT).unwrap(),
            [0x0a, 0x01, 0x01, 0x98, 0x06, 0x05, 0x42, 0x01, 0x07]
        );
    }

    #[test]
    fn malformed_checkpoint_is_an_error() {
        let overlay = ResumeOverlay {
            appended_root_prompt_ids: &[],
            workspace_uris: &[],
            client_name: "",
        };
        assert_eq!(
            overlay.apply(&[0x0a, 0x09, 1]),
            Err(WireError::Truncated { offset: 3 })
        );
        // Field 9 as a varint: key (9 << 3) | 0 = 0x48.
        assert_eq!(
            overlay.apply(&[0x48, 0x01]),
            Err(WireError::WrongWireType {
                field: 9,
                wire_type: 0,
                expected: 2
            })
        );
    }

    #[test]
    fn run_request_frame_carries_raw_state_and_the_rest_of_the_request() {
        let request = AgentRunRequest {
            conversation_state: Some(ConversationStateStructure {
                turns: vec![vec![0xee]],
                ..Default::default()
            }),
            conversation_id: Some("c1".into()),
            requested_model: Some(RequestedModel {
                model_id: "m".into(),
                ..Default::default()
            }),
            ..Default::default()
        };
        let frame = encode_client_run_request(request, CHECKPOINT);
        let decoded = AgentClientMessage::decode(frame.as_slice()).unwrap();
        let Some(agent_client_message::Message::RunRequest(run)) = decoded.message else {
            panic!("expected a run request, got {:?}", decoded.message);
        };
        let state = run.conversation_state.unwrap();
        assert_eq!(
            state.turns,
            vec![vec![7]],
            "the request's own state was replaced"
        );
        assert_eq!(state.client_name.as_deref(), Some("x"));
        assert_eq!(run.conversation_id.as_deref(), Some("c1"));
        // The unknown field travels: the raw state sits verbatim inside the frame.
        assert!(
            frame
                .windows(CHECKPOINT.len())
                .any(|window| window == CHECKPOINT)
        );
    }
}
