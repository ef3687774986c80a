//! Property tests: the envelope codec round-trips under arbitrary chunking.

use bytes::{Bytes, BytesMut};
use cursor_transport::envelope::{
    Code, Compression, ConnectError, Decoder, Encoder, EndStream, EnvelopeError, Frame,
};
use proptest::prelude::*;

fn compression() -> impl Strategy<Value = Compression> {
    prop_oneof![Just(Compression::Identity), Just(Compression::Gzip)]
}

/// Splits `wire` at the given cut points and decodes it chunk by chunk.
fn decode_chunked(
    wire: &[u8],
    cuts: &[usize],
    compression: Compression,
) -> Result<Vec<Frame>, EnvelopeError> {
    let mut points: Vec<usize> = cuts.iter().map(|c| c % (wire.len() + 1)).collect();
    points.sort_unstable();
    let mut decoder = Decoder::new(compression);
    let mut frames = Vec::new();
    let mut start = 0;
    for end in points.into_iter().chain([wire.len()]) {
        decoder.push_bytes(Bytes::copy_from_slice(&wire[start..end]));
        start = end;
        while let Some(frame) = decoder.next_frame()? {
            frames.push(frame);
        }
    }
    decoder.finish()?;
    Ok(frames)
}

proptest! {
    #[test]
    fn messages_round_trip_under_any_chunking(
        messages in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..3000), 0..8),
        cuts in prop::collection::vec(any::<usize>(), 0..16),
        compression in compression(),
        with_end in any::<bool>(),
    ) {
        let encoder = Encoder::new(compression);
        let mut wire = BytesMut::new();
        for message in &messages {
            encoder.encode(message, &mut wire).unwrap();
        }
        let end = EndStream::from_error(ConnectError::new(Code::Internal, "boom"));
        if with_end {
            encoder.encode_end_stream(&end, &mut wire).unwrap();
        }
        let frames = decode_chunked(&wire, &cuts, compression).unwrap();
        let mut expected: Vec<Frame> = messages.into_iter().map(|m| Frame::Message(Bytes::from(m))).collect();
        if with_end {
            expected.push(Frame::End(end));
        }
        prop_assert_eq!(frames, expected);
    }

    #[test]
    fn truncating_a_stream_inside_a_frame_is_always_an_error(
        messages in prop::collection::vec(prop::collection::vec(any::<u8>(), 1..500), 1..5),
        cut in any::<usize>(),
        cuts in prop::collection::vec(any::<usize>(), 0..8),
    ) {
        let encoder = Encoder::new(Compression::Identity);
        let mut wire = BytesMut::new();
        let mut boundaries = vec![0];
        for message in &messages {
            encoder.encode(message, &mut wire).unwrap();
            boundaries.push(wire.len());
        }
        let cut = cut % wire.len();
        let result = decode_chunked(&wire[..cut], &cuts, Compression::Identity);
        if boundaries.contains(&cut) {
            prop_assert!(result.is_ok());
        } else {
            let is_truncated = matches!(result, Err(EnvelopeError::TruncatedFrame { .. }));
            prop_assert!(is_truncated, "{:?}", result);
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..2048), cuts in prop::collection::vec(any::<usize>(), 0..8), compression in compression()) {
        let _ = decode_chunked(&bytes, &cuts, compression);
    }
}
