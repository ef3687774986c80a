//! A hand-written decoder for the server frames a Run sees most: `interaction_update` text,
//! thinking, token, heartbeat and `turn_ended` arms, and `kv_server_message` blob requests.
//!
//! prost's generic merge loops cost more than the rest of a frame's handling put together, so
//! these shapes are read straight off the wire: text is validated as UTF-8 once, in place, and
//! copied only into the event's own string. Anything unusual (another arm, a repeated oneof
//! field, a wire type prost would refuse, a group, a truncated field) returns `None` and the
//! caller decodes the frame with prost, so errors and rare merges keep prost's exact semantics.
//! [`decode_view`] lends what it found as a [`HotFrame`] borrowing the frame's bytes. The
//! contract, checked by a property test and a fuzz target: whenever [`decode_view`] returns a
//! frame, prost decodes the same bytes to the message [`HotFrame::into_message`] builds.

use crate::event_queue::Delta;
use cursor_proto::agent::v1::{
    GetBlobArgs, KvServerMessage, SetBlobArgs, TurnEndedUpdate, kv_server_message::Message as Kv,
};

#[cfg(any(test, feature = "fuzzing"))]
mod prost_form;
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) use prost_form::decode;
#[cfg(feature = "fuzzing")]
pub(crate) use prost_form::decode_view;

/// The field numbers of `InteractionUpdate.message`'s arms (any other field is skipped as
/// unknown, as prost skips it).
macro_rules! update_arms {
    () => {
        1..=24 | 26 | 27
    };
}

/// Protobuf wire types this reader skips; groups (3, 4) and 6, 7 go to prost.
const VARINT: u8 = 0;
const FIXED64: u8 = 1;
const LEN: u8 = 2;
const FIXED32: u8 = 5;

/// A hot frame, borrowed from the frame's bytes: what `AgentRun` acts on without building
/// the prost tree.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Hot<'a> {
    /// `interaction_update.text_delta`.
    Text(&'a str),
    /// `interaction_update.thinking_delta`.
    Thinking(&'a str),
    /// `interaction_update.token_delta`.
    Tokens(i32),
    /// `interaction_update.heartbeat`.
    Heartbeat,
    /// An `interaction_update` with no arm set (only fields beside its oneof).
    NoArm,
    /// `interaction_update.turn_ended` (boxed, like `Kv`: rare, and it would triple the size
    /// of every frame the decoder returns).
    TurnEnded(Box<TurnEndedUpdate>),
    /// `kv_server_message`.
    Kv(Box<KvServerMessage>),
}

/// One hot frame and the `interaction_update` field beside its oneof that prost keeps.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct HotFrame<'a> {
    pub(crate) arm: Hot<'a>,
    pub(crate) message_started_at_ms: Option<u64>,
}

/// [`decode_view`] past its [`bare_delta`] fast path.
pub(crate) fn decode_general(frame: &[u8]) -> Option<HotFrame<'_>> {
    let mut reader = Reader(frame);
    let mut found = None;
    while !reader.0.is_empty() {
        let (field, wire) = reader.key()?;
        match (field, wire) {
            (1, LEN) if found.is_none() => found = Some(update(reader.len_delimited()?)?),
            (4, LEN) if found.is_none() => {
                found = Some(HotFrame {
                    arm: Hot::Kv(Box::new(kv(reader.len_delimited()?)?)),
                    message_started_at_ms: None,
                });
            }
            // Known fields: a repeated arm merges, the others are cold (prost decodes them).
            (1..=5 | 7 | 8, _) => return None,
            _ => reader.skip(wire)?,
        }
    }
    found
}

/// The commonest frame, byte for byte: a text (arm key `0x0a`) or thinking (`0x22`) delta with
/// nothing else set, every length in one byte and valid UTF-8. The general reader gives the
/// same answer; this only skips its loops.
#[inline(always)]
pub(crate) fn bare_delta(frame: &[u8]) -> Option<(Delta, &str)> {
    let (kind, text) = bare_delta_bytes(frame)?;
    Some((kind, std::str::from_utf8(text).ok()?))
}

/// [`bare_delta`]'s shape, its text not yet validated (a [`TextWindow`] may know it is valid).
///
/// [`TextWindow`]: crate::text_window::TextWindow
#[inline(always)]
pub(crate) fn bare_delta_bytes(frame: &[u8]) -> Option<(Delta, &[u8])> {
    let &[
        0x0a,
        outer,
        arm @ (0x0a | 0x22),
        middle,
        0x0a,
        inner,
        ref text @ ..,
    ] = frame
    else {
        return None;
    };
    let len = text.len();
    if outer >= 0x80 || usize::from(outer) != len + 4 {
        return None;
    }
    if usize::from(middle) != len + 2 || usize::from(inner) != len {
        return None;
    }
    let kind = if arm == 0x0a {
        Delta::Text
    } else {
        Delta::Thinking
    };
    Some((kind, text))
}

fn update(body: &[u8]) -> Option<HotFrame<'_>> {
    let mut reader = Reader(body);
    let mut arm = None;
    let mut message_started_at_ms = None;
    while !reader.0.is_empty() {
        let (field, wire) = reader.key()?;
        if arm.is_some() && matches!(field, update_arms!()) {
            return None;
        }
        arm = Some(match (field, wire) {
            (1, LEN) => Hot::Text(text(reader.len_delimited()?)?),
            (4, LEN) => Hot::Thinking(text(reader.len_delimited()?)?),
            (8, LEN) => Hot::Tokens(token_delta(reader.len_delimited()?)?),
            (13, LEN) => {
                Reader(reader.len_delimited()?).skip_all()?;
                Hot::Heartbeat
            }
            (14, LEN) => Hot::TurnEnded(Box::new(turn_ended(reader.len_delimited()?)?)),
            (25, VARINT) => {
                message_started_at_ms = Some(reader.varint()?);
                continue;
            }
            (update_arms!() | 25, _) => return None,
            _ => {
                reader.skip(wire)?;
                continue;
            }
        });
    }
    Some(HotFrame {
        arm: arm.unwrap_or(Hot::NoArm),
        message_started_at_ms,
    })
}

/// `TextDeltaUpdate` / `ThinkingDeltaUpdate`: the last `text` wins, as in prost.
fn text(body: &[u8]) -> Option<&str> {
    let mut reader = Reader(body);
    let mut text = "";
    while !reader.0.is_empty() {
        match reader.key()? {
            (1, LEN) => text = std::str::from_utf8(reader.len_delimited()?).ok()?,
            (1, _) => return None,
            (_, wire) => reader.skip(wire)?,
        }
    }
    Some(text)
}

fn token_delta(body: &[u8]) -> Option<i32> {
    let mut reader = Reader(body);
    let mut tokens = 0;
    while !reader.0.is_empty() {
        match reader.key()? {
            // int32 on the wire is a varint truncated to 32 bits.
            (1, VARINT) => tokens = reader.varint()? as i32,
            (1, _) => return None,
            (_, wire) => reader.skip(wire)?,
        }
    }
    Some(tokens)
}

fn turn_ended(body: &[u8]) -> Option<TurnEndedUpdate> {
    let mut reader = Reader(body);
    let mut out = TurnEndedUpdate::default();
    while !reader.0.is_empty() {
        let (field, wire) = reader.key()?;
        let slot = match field {
            1 => &mut out.input_tokens,
            2 => &mut out.output_tokens,
            3 => &mut out.cache_read_tokens,
            4 => &mut out.cache_write_tokens,
            5 => &mut out.reasoning_tokens,
            _ => {
                reader.skip(wire)?;
                continue;
            }
        };
        if wire != VARINT {
            return None;
        }
        *slot = Some(reader.varint()? as i64);
    }
    Some(out)
}

fn kv(body: &[u8]) -> Option<KvServerMessage> {
    let mut reader = Reader(body);
    let mut out = KvServerMessage::default();
    while !reader.0.is_empty() {
        match reader.key()? {
            (1, VARINT) => out.id = reader.varint()? as u32,
            (2, LEN) if out.message.is_none() => {
                out.message = Some(Kv::GetBlobArgs(get_blob(reader.len_delimited()?)?));
            }
            (3, LEN) if out.message.is_none() => {
                out.message = Some(Kv::SetBlobArgs(set_blob(reader.len_delimited()?)?));
            }
            (1..=3, _) => return None,
            (_, wire) => reader.skip(wire)?,
        }
    }
    Some(out)
}

fn get_blob(body: &[u8]) -> Option<GetBlobArgs> {
    let mut reader = Reader(body);
    let mut id: &[u8] = &[];
    while !reader.0.is_empty() {
        match reader.key()? {
            (1, LEN) => id = reader.len_delimited()?,
            (1, _) => return None,
            (_, wire) => reader.skip(wire)?,
        }
    }
    Some(GetBlobArgs {
        blob_id: id.to_vec(),
    })
}

fn set_blob(body: &[u8]) -> Option<SetBlobArgs> {
    let mut reader = Reader(body);
    let (mut id, mut data): (&[u8], Option<&[u8]>) = (&[], None);
    while !reader.0.is_empty() {
        match reader.key()? {
            (1, LEN) => id = reader.len_delimited()?,
            (2, LEN) => data = Some(reader.len_delimited()?),
            (1 | 2, _) => return None,
            (_, wire) => reader.skip(wire)?,
        }
    }
    Some(SetBlobArgs {
        blob_id: id.to_vec(),
        blob_data: data.map(<[u8]>::to_vec),
    })
}

/// A cursor over one message's bytes. Every method returns `None` where prost would either
/// fail or do something this reader does not replicate.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    /// A base-128 varint of at most ten bytes; the tenth may only carry bit 63.
    #[inline(always)]
    fn varint(&mut self) -> Option<u64> {
        match self.0.split_first() {
            Some((&first, rest)) if first < 0x80 => {
                self.0 = rest;
                Some(u64::from(first))
            }
            _ => self.long_varint(),
        }
    }

    /// [`varint`](Self::varint) past its one-byte case.
    #[inline(never)]
    fn long_varint(&mut self) -> Option<u64> {
        let (&first, rest) = self.0.split_first()?;
        let mut value = u64::from(first & 0x7f);
        for (i, &byte) in rest.iter().enumerate().take(9) {
            let shift = 7 * (i as u32 + 1);
            if i == 8 && byte > 1 {
                return None;
            }
            value |= u64::from(byte & 0x7f) << shift;
            if byte < 0x80 {
                self.0 = &rest[i + 1..];
                return Some(value);
            }
        }
        None
    }

    /// A field key: its number and wire type.
    #[inline(always)]
    fn key(&mut self) -> Option<(u32, u8)> {
        let key = u32::try_from(self.varint()?).ok()?;
        let field = key >> 3;
        (field != 0).then_some((field, (key & 7) as u8))
    }

    /// A length-delimited field's bytes.
    #[inline(always)]
    fn len_delimited(&mut self) -> Option<&'a [u8]> {
        let len = usize::try_from(self.varint()?).ok()?;
        if len > self.0.len() {
            return None;
        }
        let (body, rest) = self.0.split_at(len);
        self.0 = rest;
        Some(body)
    }

    /// Skips one field's value by its wire type.
    fn skip(&mut self, wire: u8) -> Option<()> {
        let width = match wire {
            VARINT => return self.varint().map(drop),
            LEN => return self.len_delimited().map(drop),
            FIXED64 => 8,
            FIXED32 => 4,
            _ => return None,
        };
        self.0 = self.0.get(width..)?;
        Some(())
    }

    /// Skips every field of a message with no known fields.
    fn skip_all(&mut self) -> Option<()> {
        while !self.0.is_empty() {
            let (_, wire) = self.key()?;
            self.skip(wire)?;
        }
        Some(())
    }
}

#[cfg(test)]
mod tests;
