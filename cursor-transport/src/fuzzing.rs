//! Entry points of the fuzz targets, public so the corpus can be replayed in ordinary tests.
//! Not part of the stable API.

use crate::envelope::{Compression, Decoder, EndStream, Frame, FrameRef};

/// Fuzz target `envelope_decoder`: byte 0 picks compression and chunk size, the rest is fed
/// to two [`Decoder`]s in chunks, one drained with `next_frame`, one with `next_frame_ref`.
/// Must never panic; both must yield the same frames and fail at the same point with the
/// same error; a decoded end-of-stream frame must re-encode to JSON that parses back to the
/// same value.
pub fn envelope_decoder(data: &[u8]) {
    let Some((&selector, wire)) = data.split_first() else {
        return;
    };
    let compression = if selector & 0x80 != 0 {
        Compression::Gzip
    } else {
        Compression::Identity
    };
    let chunk = usize::from(selector & 0x7f) + 1;
    let mut owned = Decoder::new(compression).with_max_message_size(1 << 20);
    let mut lent = Decoder::new(compression).with_max_message_size(1 << 20);
    for piece in wire.chunks(chunk) {
        owned.push(piece);
        lent.push_bytes(bytes::Bytes::copy_from_slice(piece));
        loop {
            let from_owned = owned.next_frame();
            let from_lent = lent.next_frame_ref().map(|frame| frame.map(to_owned));
            assert_eq!(from_owned, from_lent, "owned and lent decoding disagree");
            match from_owned {
                Ok(Some(Frame::End(end))) => assert_round_trip(&end),
                Ok(Some(_)) => {}
                Ok(None) => break,
                Err(_) => return,
            }
        }
    }
    assert_eq!(
        owned.finish(),
        lent.finish(),
        "owned and lent finish disagree"
    );
}

fn to_owned(frame: FrameRef<'_>) -> Frame {
    match frame {
        FrameRef::Message(payload) => Frame::Message(bytes::Bytes::copy_from_slice(payload)),
        FrameRef::End(end) => Frame::End(end),
    }
}

/// Fuzz target `end_stream_json`: parses arbitrary bytes as an end-of-stream payload; a
/// successful parse must survive a JSON round trip unchanged.
pub fn end_stream_json(data: &[u8]) {
    if let Ok(end) = EndStream::parse(data) {
        assert_round_trip(&end);
    }
}

fn assert_round_trip(end: &EndStream) {
    let again = EndStream::parse(end.to_json().as_bytes());
    assert_eq!(
        again.as_ref(),
        Ok(end),
        "end-of-stream JSON does not round-trip"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_accept_empty_garbage_and_valid_input() {
        envelope_decoder(&[]);
        envelope_decoder(&[0x83, 0, 0, 0, 0, 1, b'x', 2, 0, 0, 0, 2, b'{', b'}']);
        envelope_decoder(&[0x00, 0xff, 0xff, 0xff, 0xff, 0xff]);
        end_stream_json(b"");
        end_stream_json(b"{\"error\":{\"code\":\"internal\",\"message\":\"m\"}}");
        end_stream_json(b"\xff\x00");
    }
}
