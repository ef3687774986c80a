//! Incremental envelope decoding.
//!
//! Pushed chunks are kept as they arrive (h2 hands over `Bytes`), and headers are parsed in
//! place: a frame inside one chunk is returned as a slice of it, without copying or moving
//! the rest of the buffer. Only a frame that straddles chunks is copied, once, when complete.
//! [`Decoder::next_frame_ref`] goes one step further for the common small frame: it lends the
//! payload as a slice of the chunk, so no reference count moves per frame.

use std::collections::VecDeque;

use bytes::{Bytes, BytesMut};

use super::{
    Compression, DEFAULT_MAX_MESSAGE_SIZE, EndStream, EnvelopeError, HEADER_LEN, compression, flags,
};

/// One decoded envelope.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Frame {
    /// A message payload, already decompressed.
    Message(Bytes),
    /// The end-of-stream frame, parsed. No frame may follow it.
    End(EndStream),
}

/// One decoded envelope, lent by the decoder until its next call: see
/// [`Decoder::next_frame_ref`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FrameRef<'a> {
    /// A message payload, already decompressed.
    Message(&'a [u8]),
    /// The end-of-stream frame, parsed. No frame may follow it.
    End(EndStream),
}

/// Turns bytes, pushed in any chunking, into [`Frame`]s.
///
/// Feed bytes with [`push`](Self::push) (or [`push_bytes`](Self::push_bytes)), drain frames
/// with [`next_frame`](Self::next_frame) until it returns `Ok(None)`, and call
/// [`finish`](Self::finish) when the byte stream ends: a partial frame then is an error.
/// After any error the decoder stays failed; the stream it decodes must be abandoned.
#[derive(Debug)]
pub struct Decoder {
    /// Received chunks, oldest first; none is empty. The front one is consumed up to `pos`
    /// (it may be wholly consumed while a payload lent from it is still borrowed).
    chunks: VecDeque<Bytes>,
    pos: usize,
    /// Unconsumed bytes over all chunks.
    buffered: usize,
    compression: Compression,
    max_message_size: usize,
    ended: bool,
    failed: Option<EnvelopeError>,
    /// A gathered or decompressed payload lent by `next_frame_ref` until its next call.
    held: Bytes,
}

impl Decoder {
    /// A decoder for a call that negotiated `compression`, with the default 16 MiB bound.
    pub fn new(compression: Compression) -> Self {
        Self {
            chunks: VecDeque::new(),
            pos: 0,
            buffered: 0,
            compression,
            max_message_size: DEFAULT_MAX_MESSAGE_SIZE,
            ended: false,
            failed: None,
            held: Bytes::new(),
        }
    }

    /// Sets the bound on one frame's declared length and on its decompressed size.
    #[must_use]
    pub fn with_max_message_size(mut self, max: usize) -> Self {
        self.max_message_size = max;
        self
    }

    /// The bound on one message.
    pub fn max_message_size(&self) -> usize {
        self.max_message_size
    }

    /// What compressed frames are inflated with (the call's negotiated encoding).
    pub fn compression(&self) -> Compression {
        self.compression
    }

    /// Whether the end-of-stream frame has been decoded.
    pub fn is_ended(&self) -> bool {
        self.ended
    }

    /// Bytes received but not yet returned as a frame.
    pub fn buffered(&self) -> usize {
        self.buffered
    }

    /// Appends received bytes (copied once; prefer [`push_bytes`](Self::push_bytes)).
    pub fn push(&mut self, chunk: &[u8]) {
        if !chunk.is_empty() {
            self.push_bytes(Bytes::copy_from_slice(chunk));
        }
    }

    /// Appends received bytes without copying them.
    pub fn push_bytes(&mut self, chunk: Bytes) {
        if chunk.is_empty() {
            return;
        }
        self.buffered += chunk.len();
        self.chunks.push_back(chunk);
    }

    /// The next complete frame, `Ok(None)` if more bytes are needed.
    #[inline]
    pub fn next_frame(&mut self) -> Result<Option<Frame>, EnvelopeError> {
        // The common frame, an uncompressed message inside the front chunk, is sliced out
        // without the general path's checks (the same ones `lendable` makes).
        self.release_consumed();
        if let Some((start, end)) = self.lendable() {
            let payload = self.chunks[0].slice(start..end);
            self.buffered -= end - self.pos;
            self.pos = end;
            return Ok(Some(Frame::Message(payload)));
        }
        self.next_frame_general()
    }

    #[cold]
    fn next_frame_general(&mut self) -> Result<Option<Frame>, EnvelopeError> {
        if let Some(err) = &self.failed {
            return Err(err.clone());
        }
        let result = self.decode_one();
        if let Err(err) = &result {
            self.failed = Some(err.clone());
        }
        result
    }

    /// The next complete frame, lent until the next call, `Ok(None)` if more bytes are needed.
    ///
    /// Same frames, errors and sticky failure as [`next_frame`](Self::next_frame) (the two can
    /// be mixed), but an uncompressed message inside one pushed chunk comes back as a slice
    /// of that chunk: nothing is copied or reference-counted. A frame that straddles chunks
    /// or was compressed is gathered once and lent from the decoder.
    ///
    /// ```
    /// use cursor_transport::envelope::{Compression, Decoder, FrameRef};
    ///
    /// let mut decoder = Decoder::new(Compression::Identity);
    /// decoder.push(&[0, 0, 0, 0, 2, b'h', b'i', 0, 0, 0, 0, 1]);
    /// assert_eq!(decoder.next_frame_ref()?, Some(FrameRef::Message(b"hi")));
    /// assert_eq!(decoder.next_frame_ref()?, None); // the second frame is incomplete
    /// decoder.push(b"!");
    /// assert_eq!(decoder.next_frame_ref()?, Some(FrameRef::Message(b"!")));
    /// # Ok::<(), cursor_transport::envelope::EnvelopeError>(())
    /// ```
    #[inline]
    pub fn next_frame_ref(&mut self) -> Result<Option<FrameRef<'_>>, EnvelopeError> {
        self.release_consumed();
        if let Some((start, end)) = self.lendable() {
            self.buffered -= end - self.pos;
            self.pos = end;
            return Ok(Some(FrameRef::Message(&self.chunks[0][start..end])));
        }
        self.next_frame_ref_slow()
    }

    /// The payload range of the next frame when it is an uncompressed message wholly inside
    /// the front chunk and no error or end has been seen: the path with nothing to check later.
    #[inline(always)]
    fn lendable(&self) -> Option<(usize, usize)> {
        if self.ended || self.failed.is_some() {
            return None;
        }
        let rest = self.chunks.front()?.get(self.pos..)?;
        let &[0, a, b, c, d] = rest.first_chunk::<HEADER_LEN>()? else {
            return None;
        };
        let declared = usize::try_from(u32::from_be_bytes([a, b, c, d])).ok()?;
        if declared > self.max_message_size || rest.len() - HEADER_LEN < declared {
            return None;
        }
        let start = self.pos + HEADER_LEN;
        Some((start, start + declared))
    }

    #[cold]
    fn next_frame_ref_slow(&mut self) -> Result<Option<FrameRef<'_>>, EnvelopeError> {
        if !self.held.is_empty() {
            self.held = Bytes::new();
        }
        Ok(match self.next_frame_general()? {
            None => None,
            Some(Frame::End(end)) => Some(FrameRef::End(end)),
            Some(Frame::Message(payload)) => {
                self.held = payload;
                Some(FrameRef::Message(&self.held))
            }
        })
    }

    /// Drops the front chunk once it is wholly consumed. `next_frame_ref` leaves it in place
    /// while its last payload is lent out.
    #[inline(always)]
    fn release_consumed(&mut self) {
        if self
            .chunks
            .front()
            .is_some_and(|front| front.len() == self.pos)
        {
            self.chunks.pop_front();
            self.pos = 0;
        }
    }

    /// Declares the byte stream over: any buffered partial frame is an error.
    pub fn finish(&mut self) -> Result<(), EnvelopeError> {
        if let Some(err) = &self.failed {
            return Err(err.clone());
        }
        if self.buffered == 0 {
            return Ok(());
        }
        self.release_consumed();
        let expected = match self.header() {
            Some(header) => HEADER_LEN.saturating_add(declared_len(&header)),
            None => HEADER_LEN,
        };
        let err = EnvelopeError::TruncatedFrame {
            buffered: self.buffered,
            expected,
        };
        self.failed = Some(err.clone());
        Err(err)
    }

    /// The next frame's header, read in place when the front chunk holds it (the usual case).
    #[inline]
    fn header(&self) -> Option<[u8; HEADER_LEN]> {
        if self.buffered < HEADER_LEN {
            return None;
        }
        let front = &self.chunks[0][self.pos..];
        if let Some(header) = front.first_chunk::<HEADER_LEN>() {
            return Some(*header);
        }
        let mut header = [0u8; HEADER_LEN];
        let mut filled = 0;
        for chunk in self.chunks.iter() {
            let skip = if filled == 0 { self.pos } else { 0 };
            let take = (chunk.len() - skip).min(HEADER_LEN - filled);
            header[filled..filled + take].copy_from_slice(&chunk[skip..skip + take]);
            filled += take;
            if filled == HEADER_LEN {
                break;
            }
        }
        Some(header)
    }

    fn decode_one(&mut self) -> Result<Option<Frame>, EnvelopeError> {
        self.release_consumed();
        if self.buffered == 0 {
            return Ok(None);
        }
        if self.ended {
            return Err(EnvelopeError::DataAfterEndStream);
        }
        let Some(header) = self.header() else {
            return Ok(None);
        };
        let flag_byte = header[0];
        if flag_byte & !flags::KNOWN != 0 {
            return Err(EnvelopeError::ReservedFlags(flag_byte & !flags::KNOWN));
        }
        let declared = declared_len(&header);
        // Refuse before waiting for a body that may never be allowed.
        if declared > self.max_message_size {
            return Err(EnvelopeError::FrameTooLarge {
                declared,
                max: self.max_message_size,
            });
        }
        let total = HEADER_LEN + declared;
        if self.buffered < total {
            return Ok(None);
        }
        let raw = self.take(total);
        let payload = if flag_byte & flags::COMPRESSED != 0 {
            match self.compression {
                Compression::Identity => return Err(EnvelopeError::UnexpectedCompression),
                Compression::Gzip => compression::gunzip(&raw, self.max_message_size)?,
            }
        } else {
            raw
        };
        if flag_byte & flags::END_STREAM != 0 {
            self.ended = true;
            return EndStream::parse(&payload).map(|end| Some(Frame::End(end)));
        }
        Ok(Some(Frame::Message(payload)))
    }

    /// Consumes one buffered frame of `total` bytes and returns its payload (after the header).
    #[inline]
    fn take(&mut self, total: usize) -> Bytes {
        self.buffered -= total;
        let front = &self.chunks[0];
        let end = self.pos + total;
        if end <= front.len() {
            let payload = front.slice(self.pos + HEADER_LEN..end);
            if end == front.len() {
                self.chunks.pop_front();
                self.pos = 0;
            } else {
                self.pos = end;
            }
            return payload;
        }
        // The frame straddles chunks: gather it once.
        let mut skip = HEADER_LEN;
        let mut left = total;
        let mut out = BytesMut::with_capacity(total - HEADER_LEN);
        while left > 0 {
            let chunk = &self.chunks[0];
            let available = chunk.len() - self.pos;
            let take = available.min(left);
            let piece = &chunk[self.pos..self.pos + take];
            let dropped = skip.min(piece.len());
            out.extend_from_slice(&piece[dropped..]);
            skip -= dropped;
            left -= take;
            if take == available {
                self.chunks.pop_front();
                self.pos = 0;
            } else {
                self.pos += take;
            }
        }
        out.freeze()
    }
}

fn declared_len(header: &[u8; HEADER_LEN]) -> usize {
    let len = u32::from_be_bytes([header[1], header[2], header[3], header[4]]);
    usize::try_from(len).unwrap_or(usize::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::envelope::{Code, Encoder};

    fn frame(flag: u8, payload: &[u8]) -> Vec<u8> {
        let mut out = vec![flag];
        out.extend_from_slice(&u32::try_from(payload.len()).unwrap().to_be_bytes());
        out.extend_from_slice(payload);
        out
    }

    #[test]
    fn decodes_messages_then_end_stream_byte_by_byte() {
        let mut wire = frame(0, b"one");
        wire.extend(frame(0, b""));
        wire.extend(frame(2, br#"{"metadata":{"k":["v"]}}"#));
        let mut decoder = Decoder::new(Compression::Identity);
        let mut frames = Vec::new();
        for byte in &wire {
            decoder.push(std::slice::from_ref(byte));
            while let Some(frame) = decoder.next_frame().unwrap() {
                frames.push(frame);
            }
        }
        decoder.finish().unwrap();
        assert_eq!(frames.len(), 3);
        assert_eq!(frames[0], Frame::Message(Bytes::from_static(b"one")));
        assert_eq!(frames[1], Frame::Message(Bytes::new()));
        let Frame::End(end) = &frames[2] else {
            panic!("expected end, got {:?}", frames[2])
        };
        assert_eq!(end.metadata.get("k"), Some(&vec!["v".to_owned()]));
        assert!(decoder.is_ended());
    }

    #[test]
    fn oversize_declared_length_is_refused_from_the_header_alone() {
        let mut decoder = Decoder::new(Compression::Identity).with_max_message_size(10);
        decoder.push(&[0, 0, 0, 0, 11]);
        assert_eq!(
            decoder.next_frame(),
            Err(EnvelopeError::FrameTooLarge {
                declared: 11,
                max: 10
            })
        );
        // The failure sticks.
        assert!(decoder.next_frame().is_err());
    }

    #[test]
    fn default_bound_is_sixteen_mebibytes() {
        let mut decoder = Decoder::new(Compression::Identity);
        decoder.push(&[0, 0x01, 0, 0, 1]);
        assert_eq!(
            decoder.next_frame(),
            Err(EnvelopeError::FrameTooLarge {
                declared: (16 << 20) + 1,
                max: 16 << 20
            })
        );
    }

    #[test]
    fn partial_frame_at_end_is_an_error() {
        let mut decoder = Decoder::new(Compression::Identity);
        decoder.push(&frame(0, b"abcdef")[..8]);
        assert_eq!(decoder.next_frame(), Ok(None));
        assert_eq!(
            decoder.finish(),
            Err(EnvelopeError::TruncatedFrame {
                buffered: 8,
                expected: 11
            })
        );
    }

    #[test]
    fn partial_header_at_end_is_an_error() {
        let mut decoder = Decoder::new(Compression::Identity);
        decoder.push(&[0, 0]);
        assert_eq!(
            decoder.finish(),
            Err(EnvelopeError::TruncatedFrame {
                buffered: 2,
                expected: 5
            })
        );
    }

    #[test]
    fn compressed_frame_without_negotiation_is_refused() {
        let mut decoder = Decoder::new(Compression::Identity);
        decoder.push(&frame(1, &compression::gzip(b"x")));
        assert_eq!(
            decoder.next_frame(),
            Err(EnvelopeError::UnexpectedCompression)
        );
    }

    #[test]
    fn gzip_frames_decode_when_negotiated() {
        let mut decoder = Decoder::new(Compression::Gzip);
        decoder.push(&frame(1, &compression::gzip(b"payload")));
        decoder.push(&frame(
            3,
            &compression::gzip(br#"{"error":{"code":"internal"}}"#),
        ));
        assert_eq!(
            decoder.next_frame().unwrap(),
            Some(Frame::Message(Bytes::from_static(b"payload")))
        );
        let Some(Frame::End(end)) = decoder.next_frame().unwrap() else {
            panic!("expected end")
        };
        assert_eq!(end.error.map(|e| e.code), Some(Code::Internal));
    }

    #[test]
    fn decompression_is_bounded() {
        let mut decoder = Decoder::new(Compression::Gzip).with_max_message_size(100);
        decoder.push(&frame(1, &compression::gzip(&[7u8; 101])));
        assert_eq!(
            decoder.next_frame(),
            Err(EnvelopeError::DecompressedTooLarge { max: 100 })
        );
    }

    #[test]
    fn reserved_flags_are_refused() {
        let mut decoder = Decoder::new(Compression::Identity);
        decoder.push(&frame(0x80, b""));
        assert_eq!(
            decoder.next_frame(),
            Err(EnvelopeError::ReservedFlags(0x80))
        );
    }

    #[test]
    fn data_after_end_stream_is_refused() {
        let mut decoder = Decoder::new(Compression::Identity);
        decoder.push(&frame(2, b"{}"));
        decoder.push(&frame(0, b"late"));
        assert!(matches!(decoder.next_frame(), Ok(Some(Frame::End(_)))));
        assert_eq!(decoder.next_frame(), Err(EnvelopeError::DataAfterEndStream));
    }

    #[test]
    fn push_bytes_and_encoder_agree() {
        let mut wire = BytesMut::new();
        let encoder = Encoder::new(Compression::Identity);
        encoder.encode(b"a", &mut wire).unwrap();
        encoder.encode(&[9u8; 3000], &mut wire).unwrap();
        let mut decoder = Decoder::new(Compression::Identity);
        decoder.push_bytes(wire.freeze());
        assert_eq!(
            decoder.next_frame().unwrap(),
            Some(Frame::Message(Bytes::from_static(b"a")))
        );
        assert_eq!(
            decoder.next_frame().unwrap(),
            Some(Frame::Message(Bytes::from(vec![9u8; 3000])))
        );
        assert_eq!(decoder.next_frame().unwrap(), None);
    }

    #[test]
    fn lent_payload_is_a_slice_of_the_pushed_chunk() {
        let mut wire = frame(0, b"one");
        wire.extend(frame(0, b"two"));
        let chunk = Bytes::from(wire);
        let range = chunk.as_ptr_range();
        let mut decoder = Decoder::new(Compression::Identity);
        decoder.push_bytes(chunk);
        for expected in [&b"one"[..], b"two"] {
            let Some(FrameRef::Message(payload)) = decoder.next_frame_ref().unwrap() else {
                panic!("expected a message")
            };
            assert_eq!(payload, expected);
            assert!(range.contains(&payload.as_ptr()), "payload was copied");
        }
        assert_eq!(decoder.next_frame_ref(), Ok(None));
        assert_eq!(decoder.buffered(), 0);
        decoder.finish().unwrap();
    }

    #[test]
    fn lent_decoding_gathers_straddling_frames_and_keeps_failures() {
        let wire = frame(0, b"straddles");
        let mut decoder = Decoder::new(Compression::Identity).with_max_message_size(20);
        decoder.push(&wire[..7]);
        assert_eq!(decoder.next_frame_ref(), Ok(None));
        decoder.push(&wire[7..]);
        assert_eq!(
            decoder.next_frame_ref(),
            Ok(Some(FrameRef::Message(b"straddles")))
        );
        decoder.push(&frame(0, &[0; 21]));
        let refused = Err(EnvelopeError::FrameTooLarge {
            declared: 21,
            max: 20,
        });
        assert_eq!(decoder.next_frame_ref(), refused);
        // Sticky on both drains, even once a valid frame follows.
        decoder.push(&frame(0, b"ok"));
        assert_eq!(decoder.next_frame_ref(), refused);
        assert_eq!(
            decoder.next_frame(),
            refused.map(|_: Option<FrameRef<'_>>| None)
        );
    }

    #[test]
    fn lent_decoding_refuses_data_after_end_stream_and_finishes_cleanly() {
        let mut decoder = Decoder::new(Compression::Identity);
        decoder.push(&frame(0, b"a"));
        decoder.push(&frame(2, b"{}"));
        assert_eq!(decoder.next_frame_ref(), Ok(Some(FrameRef::Message(b"a"))));
        assert!(matches!(
            decoder.next_frame_ref(),
            Ok(Some(FrameRef::End(_)))
        ));
        decoder.finish().unwrap();
        decoder.push(&frame(0, b"late"));
        assert_eq!(
            decoder.next_frame_ref(),
            Err(EnvelopeError::DataAfterEndStream)
        );
    }

    #[test]
    fn finish_after_a_lent_frame_reports_the_partial_frame_behind_it() {
        let mut decoder = Decoder::new(Compression::Identity);
        let mut first = frame(0, b"done");
        first.extend(&frame(0, b"partial")[..3]);
        decoder.push(&first);
        decoder.push(&[0]);
        assert_eq!(
            decoder.next_frame_ref(),
            Ok(Some(FrameRef::Message(b"done")))
        );
        assert_eq!(decoder.next_frame_ref(), Ok(None));
        assert_eq!(
            decoder.finish(),
            Err(EnvelopeError::TruncatedFrame {
                buffered: 4,
                expected: 5
            })
        );
    }
}
