//! Property tests: the envelope codec round-trips under arbitrary chunking, and the lending
//! decoder (`next_frame_ref`) yields exactly what the owning one (`next_frame`) does.

use bytes::{Bytes, BytesMut};
use cursor_transport::envelope::{
    Code, Compression, ConnectError, Decoder, Encoder, EndStream, EnvelopeError, Frame, FrameRef,
};
use proptest::prelude::*;

fn compression() -> impl Strategy<Value = Compression> {
    prop_oneof![Just(Compression::Identity), Just(Compression::Gzip)]
}

/// How a test drains the decoder.
#[derive(Clone, Copy, Debug)]
enum Drain {
    Owned,
    Lent,
    /// Lent and owned calls alternate, frame by frame.
    Mixed,
}

/// Splits `wire` at the given cut points and decodes it chunk by chunk with `next_frame`.
fn decode_chunked(
    wire: &[u8],
    cuts: &[usize],
    compression: Compression,
) -> Result<Vec<Frame>, EnvelopeError> {
    decode_with(wire, cuts, compression, Drain::Owned)
}

fn next(decoder: &mut Decoder, lent: bool) -> Result<Option<Frame>, EnvelopeError> {
    if !lent {
        return decoder.next_frame();
    }
    Ok(decoder.next_frame_ref()?.map(|frame| match frame {
        FrameRef::Message(payload) => Frame::Message(Bytes::copy_from_slice(payload)),
        FrameRef::End(end) => Frame::End(end),
    }))
}

fn decode_with(
    wire: &[u8],
    cuts: &[usize],
    compression: Compression,
    drain: Drain,
) -> Result<Vec<Frame>, EnvelopeError> {
    let mut points: Vec<usize> = cuts.iter().map(|c| c % (wire.len() + 1)).collect();
    points.sort_unstable();
    let mut decoder = Decoder::new(compression);
    let mut frames = Vec::new();
    let mut start = 0;
    for end in points.into_iter().chain([wire.len()]) {
        decoder.push_bytes(Bytes::copy_from_slice(&wire[start..end]));
        start = end;
        loop {
            let lent = match drain {
                Drain::Owned => false,
                Drain::Lent => true,
                Drain::Mixed => frames.len() % 2 == 1,
            };
            let Some(frame) = next(&mut decoder, lent)? else {
                break;
            };
            frames.push(frame);
        }
    }
    decoder.finish()?;
    Ok(frames)
}

/// `messages` framed with `compression`, then `end` when given.
fn wire_of(messages: &[Vec<u8>], compression: Compression, end: Option<&EndStream>) -> BytesMut {
    let encoder = Encoder::new(compression);
    let mut wire = BytesMut::new();
    for message in messages {
        encoder.encode(message, &mut wire).unwrap();
    }
    if let Some(end) = end {
        encoder.encode_end_stream(end, &mut wire).unwrap();
    }
    wire
}

proptest! {
    #[test]
    fn messages_round_trip_under_any_chunking(
        messages in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..3000), 0..8),
        cuts in prop::collection::vec(any::<usize>(), 0..16),
        compression in compression(),
        with_end in any::<bool>(),
    ) {
        let end = EndStream::from_error(ConnectError::new(Code::Internal, "boom"));
        let wire = wire_of(&messages, compression, with_end.then_some(&end));
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
    fn lent_and_mixed_draining_match_owned_draining_on_valid_streams(
        messages in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..300), 0..12),
        cuts in prop::collection::vec(any::<usize>(), 0..16),
        compression in compression(),
        with_end in any::<bool>(),
    ) {
        let wire = wire_of(&messages, compression, with_end.then_some(&EndStream::default()));
        let owned = decode_with(&wire, &cuts, compression, Drain::Owned);
        prop_assert!(owned.is_ok());
        prop_assert_eq!(&decode_with(&wire, &cuts, compression, Drain::Lent), &owned);
        prop_assert_eq!(&decode_with(&wire, &cuts, compression, Drain::Mixed), &owned);
    }

    #[test]
    fn lent_draining_fails_exactly_where_owned_draining_fails(
        bytes in prop::collection::vec(any::<u8>(), 0..2048),
        cuts in prop::collection::vec(any::<usize>(), 0..8),
        compression in compression(),
    ) {
        let owned = decode_with(&bytes, &cuts, compression, Drain::Owned);
        prop_assert_eq!(&decode_with(&bytes, &cuts, compression, Drain::Lent), &owned);
        prop_assert_eq!(&decode_with(&bytes, &cuts, compression, Drain::Mixed), &owned);
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..2048), cuts in prop::collection::vec(any::<usize>(), 0..8), compression in compression()) {
        let _ = decode_chunked(&bytes, &cuts, compression);
    }
}
