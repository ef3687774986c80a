//! The `selected_context_blob` codec: the small protobuf blob a user message points at.
//!
//! `UserMessage.selected_context_blob` (field 10) carries the SHA-256 id of a blob the client
//! keeps in its blob store. That blob is not described by any generated type, so it is encoded
//! and decoded here by hand (docs/PROTOCOL-AGENT.md §2.3):
//!
//! | field | wire type | meaning |
//! |---|---|---|
//! | 1 | bytes, repeated | root prompt blob ids, in prompt order |
//! | 22 | string | host name (for example `"my-editor"`) |
//!
//! Decoding skips fields it does not know, as protobuf does, and reports malformed input with a
//! typed [`WireError`]; it never panics.
//!
//! ```
//! use cursor_proto::selected_context_blob::SelectedContextBlob;
//!
//! let blob = SelectedContextBlob::new(vec![vec![0xab; 32]], "ed");
//! let bytes = blob.encode();
//! // Field 1 (key 0x0a) with 32 bytes, then field 22 (key 0xb2 0x01) with "ed".
//! assert_eq!(&bytes[..2], &[0x0a, 32]);
//! assert_eq!(&bytes[34..], &[0xb2, 0x01, 2, b'e', b'd']);
//! assert_eq!(SelectedContextBlob::decode(&bytes)?, blob);
//! # Ok::<(), cursor_proto::wire::WireError>(())
//! ```

use crate::wire::{
    Reader, WIRE_LEN, WireError, expect_wire_type, len_delimited_field_len, put_len_delimited,
};

/// Field number of the repeated root prompt blob ids.
pub const ROOT_PROMPT_BLOB_IDS_FIELD: u32 = 1;
/// Field number of the host name.
pub const HOST_NAME_FIELD: u32 = 22;

/// The decoded content of a selected-context blob.
#[non_exhaustive]
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct SelectedContextBlob {
    /// Root prompt blob ids (each normally a 32-byte SHA-256), in prompt order.
    pub root_prompt_blob_ids: Vec<Vec<u8>>,
    /// Name of the host the client runs in (the host profile's client name).
    pub host_name: String,
}

impl SelectedContextBlob {
    /// Builds a blob from root prompt blob ids (in prompt order) and the host name.
    pub fn new(root_prompt_blob_ids: Vec<Vec<u8>>, host_name: impl Into<String>) -> Self {
        Self {
            root_prompt_blob_ids,
            host_name: host_name.into(),
        }
    }

    /// Number of bytes [`encode`](Self::encode) produces.
    pub fn encoded_len(&self) -> usize {
        let ids: usize = self
            .root_prompt_blob_ids
            .iter()
            .map(|id| len_delimited_field_len(ROOT_PROMPT_BLOB_IDS_FIELD, id.len()))
            .sum();
        let host = if self.host_name.is_empty() {
            0
        } else {
            len_delimited_field_len(HOST_NAME_FIELD, self.host_name.len())
        };
        ids + host
    }

    /// Encodes the blob: every id as field 1, then the host name as field 22 (omitted when empty,
    /// as proto3 omits default strings).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.encoded_len());
        for id in &self.root_prompt_blob_ids {
            put_len_delimited(&mut out, ROOT_PROMPT_BLOB_IDS_FIELD, id);
        }
        if !self.host_name.is_empty() {
            put_len_delimited(&mut out, HOST_NAME_FIELD, self.host_name.as_bytes());
        }
        out
    }

    /// Decodes a blob, skipping unknown fields. A repeated host name keeps the last value, as
    /// protobuf does for singular fields.
    pub fn decode(bytes: &[u8]) -> Result<Self, WireError> {
        let mut reader = Reader::new(bytes);
        let mut blob = Self::default();
        while let Some(field) = reader.next_field()? {
            match field.field {
                ROOT_PROMPT_BLOB_IDS_FIELD => {
                    expect_wire_type(&field, WIRE_LEN)?;
                    blob.root_prompt_blob_ids.push(field.value.to_vec());
                }
                HOST_NAME_FIELD => {
                    expect_wire_type(&field, WIRE_LEN)?;
                    blob.host_name = std::str::from_utf8(field.value)
                        .map_err(|_| WireError::InvalidUtf8 {
                            field: HOST_NAME_FIELD,
                        })?
                        .to_owned();
                }
                _ => {}
            }
        }
        Ok(blob)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two ids of two bytes each and host "ed", written out from the tag arithmetic:
    /// field 1 wire type 2 → key (1 << 3) | 2 = 0x0a; field 22 → (22 << 3) | 2 = 178 = 0xb2 0x01.
    const TWO_IDS_AND_HOST: &[u8] = &[
        0x0a, 0x02, 0x01, 0x02, 0x0a, 0x02, 0x03, 0x04, 0xb2, 0x01, 0x02, b'e', b'd',
    ];

    #[test]
    fn encodes_ids_then_host_exactly_as_tag_arithmetic_says() {
        let blob = SelectedContextBlob::new(vec![vec![1, 2], vec![3, 4]], "ed");
        assert_eq!(blob.encode(), TWO_IDS_AND_HOST);
        assert_eq!(blob.encoded_len(), TWO_IDS_AND_HOST.len());
    }

    #[test]
    fn decodes_hand_built_bytes() {
        let blob = SelectedContextBlob::decode(TWO_IDS_AND_HOST).unwrap();
        assert_eq!(blob.root_prompt_blob_ids, vec![vec![1, 2], vec![3, 4]]);
        assert_eq!(blob.host_name, "ed");
    }

    #[test]
    fn empty_input_is_an_empty_blob() {
        assert_eq!(
            SelectedContextBlob::decode(&[]).unwrap(),
            SelectedContextBlob::default()
        );
        assert!(SelectedContextBlob::default().encode().is_empty());
    }

    #[test]
    fn empty_host_name_is_omitted() {
        let blob = SelectedContextBlob::new(vec![vec![9]], "");
        assert_eq!(blob.encode(), [0x0a, 0x01, 0x09]);
    }

    #[test]
    fn skips_unknown_fields_of_every_skippable_wire_type() {
        let bytes = [
            0x10, 0x96, 0x01, // field 2 varint 150
            0x19, 1, 2, 3, 4, 5, 6, 7, 8, // field 3 fixed64
            0x22, 0x01, 0xff, // field 4 length-delimited
            0x2d, 1, 2, 3, 4, // field 5 fixed32
            0x0a, 0x01, 0x07, // field 1: id [7]
            0xb2, 0x01, 0x01, b'x', // field 22: "x"
        ];
        let blob = SelectedContextBlob::decode(&bytes).unwrap();
        assert_eq!(blob, SelectedContextBlob::new(vec![vec![7]], "x"));
    }

    #[test]
    fn last_host_name_wins() {
        let bytes = [0xb2, 0x01, 0x01, b'a', 0xb2, 0x01, 0x01, b'b'];
        assert_eq!(SelectedContextBlob::decode(&bytes).unwrap().host_name, "b");
    }

    #[test]
    fn truncated_id_is_reported_not_panicked() {
        // Field 1 claims five bytes, two follow.
        let err = SelectedContextBlob::decode(&[0x0a, 0x05, 1, 2]).unwrap_err();
        assert_eq!(err, WireError::Truncated { offset: 4 });
    }

    #[test]
    fn known_field_with_wrong_wire_type_is_rejected() {
        // Field 1 as a varint: key (1 << 3) | 0 = 0x08.
        let err = SelectedContextBlob::decode(&[0x08, 0x01]).unwrap_err();
        assert_eq!(
            err,
            WireError::WrongWireType {
                field: 1,
                wire_type: 0,
                expected: 2
            }
        );
        // Field 22 as fixed32: key (22 << 3) | 5 = 181 = 0xb5 0x01.
        let err = SelectedContextBlob::decode(&[0xb5, 0x01, 1, 2, 3, 4]).unwrap_err();
        assert_eq!(
            err,
            WireError::WrongWireType {
                field: 22,
                wire_type: 5,
                expected: 2
            }
        );
    }

    #[test]
    fn invalid_utf8_host_name_is_rejected() {
        let err = SelectedContextBlob::decode(&[0xb2, 0x01, 0x01, 0xff]).unwrap_err();
        assert_eq!(err, WireError::InvalidUtf8 { field: 22 });
    }
}
