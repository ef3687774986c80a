//! Property tests for the hand-written `selected_context_blob` codec.
//!
//! The codec is checked against prost itself: a derived message with the same two fields must
//! produce the same bytes, and each side must read the other's output.

use cursor_proto::selected_context_blob::SelectedContextBlob;
use cursor_proto::wire::WireError;
use proptest::prelude::*;
use prost::Message as _;

/// The blob's layout expressed as a prost message, as an independent reference encoder.
#[derive(Clone, PartialEq, prost::Message)]
struct ProstMirror {
    #[prost(bytes = "vec", repeated, tag = "1")]
    root_prompt_blob_ids: Vec<Vec<u8>>,
    #[prost(string, tag = "22")]
    host_name: String,
}

fn blob_strategy() -> impl Strategy<Value = SelectedContextBlob> {
    (
        prop::collection::vec(prop::collection::vec(any::<u8>(), 0..200), 0..8),
        ".{0,40}",
    )
        .prop_map(|(ids, host)| SelectedContextBlob::new(ids, host))
}

proptest! {
    #[test]
    fn decode_inverts_encode(blob in blob_strategy()) {
        let bytes = blob.encode();
        prop_assert_eq!(bytes.len(), blob.encoded_len());
        prop_assert_eq!(SelectedContextBlob::decode(&bytes)?, blob);
    }

    #[test]
    fn encoding_matches_prost(blob in blob_strategy()) {
        let mirror = ProstMirror {
            root_prompt_blob_ids: blob.root_prompt_blob_ids.clone(),
            host_name: blob.host_name.clone(),
        };
        prop_assert_eq!(blob.encode(), mirror.encode_to_vec());
    }

    #[test]
    fn arbitrary_bytes_never_panic_and_agree_with_prost_on_success(
        bytes in prop::collection::vec(any::<u8>(), 0..256)
    ) {
        // Whatever the input, decode returns; when it succeeds, prost must read the same content.
        if let Ok(blob) = SelectedContextBlob::decode(&bytes) {
            let mirror = ProstMirror::decode(bytes.as_slice())
                .expect("prost accepts what the codec accepts");
            prop_assert_eq!(blob.root_prompt_blob_ids, mirror.root_prompt_blob_ids);
            prop_assert_eq!(blob.host_name, mirror.host_name);
        }
    }

    #[test]
    fn any_strict_prefix_of_a_non_empty_field_is_truncated(
        blob in blob_strategy(),
        cut in any::<prop::sample::Index>(),
    ) {
        let bytes = blob.encode();
        prop_assume!(!bytes.is_empty());
        // Cutting inside the last field leaves an incomplete field.
        let last_field_start = bytes.len() - last_field_len(&blob);
        let end = last_field_start + 1 + cut.index(bytes.len() - last_field_start - 1);
        prop_assume!(end < bytes.len());
        let result = SelectedContextBlob::decode(&bytes[..end]);
        prop_assert!(
            matches!(result, Err(WireError::Truncated { .. })),
            "cut at {} of {}: {:?}", end, bytes.len(), result
        );
    }
}

/// Encoded length of the last field `encode` writes.
fn last_field_len(blob: &SelectedContextBlob) -> usize {
    if blob.host_name.is_empty() {
        let id = blob
            .root_prompt_blob_ids
            .last()
            .expect("non-empty encoding has an id");
        SelectedContextBlob::new(vec![id.clone()], "").encoded_len()
    } else {
        SelectedContextBlob::new(Vec::new(), blob.host_name.clone()).encoded_len()
    }
}
