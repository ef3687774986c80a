//! Protobuf wire-format primitives for the hand-written codecs, and their error type.
//!
//! Generated types go through prost; this module serves the few places that must work on raw
//! bytes: the [`selected_context_blob`](crate::selected_context_blob) codec and the lossless
//! [`checkpoint`](crate::checkpoint) overlay. Every read checks bounds and reports the byte
//! offset it failed at; nothing here panics on malformed input.

/// Wire type of varint fields.
pub(crate) const WIRE_VARINT: u8 = 0;
/// Wire type of 8-byte fixed fields.
pub(crate) const WIRE_FIXED64: u8 = 1;
/// Wire type of length-delimited fields (bytes, strings, messages, packed repeats).
pub(crate) const WIRE_LEN: u8 = 2;
/// Wire type of 4-byte fixed fields.
pub(crate) const WIRE_FIXED32: u8 = 5;

/// A protobuf varint is at most ten bytes long.
const MAX_VARINT_LEN: usize = 10;
/// The largest field number protobuf allows (2^29 - 1).
const MAX_FIELD_NUMBER: u64 = (1 << 29) - 1;

/// Why a byte string is not valid protobuf for the hand-written codecs.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// The input ended inside a field key, length or value.
    #[error("protobuf input is truncated at byte {offset}")]
    Truncated {
        /// Byte offset where more input was needed.
        offset: usize,
    },
    /// A varint ran past ten bytes or past 64 bits.
    #[error("protobuf input has an over-long varint at byte {offset}")]
    VarintOverflow {
        /// Byte offset where the varint starts.
        offset: usize,
    },
    /// A field key names field 0 or a number beyond the protobuf range.
    #[error("protobuf input has invalid field number {field} at byte {offset}")]
    InvalidFieldNumber {
        /// The field number read from the key.
        field: u64,
        /// Byte offset of the key.
        offset: usize,
    },
    /// A field key uses a wire type that cannot be skipped (groups, or the reserved 6 and 7).
    #[error("protobuf input has unsupported wire type {wire_type} at byte {offset}")]
    UnsupportedWireType {
        /// The wire type read from the key.
        wire_type: u8,
        /// Byte offset of the key.
        offset: usize,
    },
    /// A known field arrived with a wire type other than the one its declaration implies.
    #[error("protobuf field {field} has wire type {wire_type}, expected {expected}")]
    WrongWireType {
        /// The known field number.
        field: u32,
        /// The wire type it arrived with.
        wire_type: u8,
        /// The wire type its declaration implies.
        expected: u8,
    },
    /// A string field is not valid UTF-8.
    #[error("protobuf string field {field} is not valid UTF-8")]
    InvalidUtf8 {
        /// The string field's number.
        field: u32,
    },
}

/// One field as it appears on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RawField<'a> {
    /// The field number.
    pub(crate) field: u32,
    /// The wire type from the key.
    pub(crate) wire_type: u8,
    /// The whole field: key, length prefix (if any) and value.
    pub(crate) raw: &'a [u8],
    /// The value alone: for length-delimited fields, the bytes after the length prefix.
    pub(crate) value: &'a [u8],
}

/// Cursor over protobuf bytes.
#[derive(Debug)]
pub(crate) struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Self { bytes, pos: 0 }
    }

    /// Reads the next whole field, or `None` at the end of the input.
    pub(crate) fn next_field(&mut self) -> Result<Option<RawField<'a>>, WireError> {
        if self.pos >= self.bytes.len() {
            return Ok(None);
        }
        let start = self.pos;
        let key = self.varint()?;
        let wire_type = (key & 0x7) as u8;
        let field = key >> 3;
        if field == 0 || field > MAX_FIELD_NUMBER {
            return Err(WireError::InvalidFieldNumber {
                field,
                offset: start,
            });
        }
        let value_start = self.pos;
        let value = match wire_type {
            WIRE_VARINT => {
                self.varint()?;
                &self.bytes[value_start..self.pos]
            }
            WIRE_FIXED64 => self.take(8)?,
            WIRE_LEN => {
                let len = self.varint()?;
                self.take(len)?
            }
            WIRE_FIXED32 => self.take(4)?,
            _ => {
                return Err(WireError::UnsupportedWireType {
                    wire_type,
                    offset: start,
                });
            }
        };
        Ok(Some(RawField {
            // In range: checked against MAX_FIELD_NUMBER above.
            field: field as u32,
            wire_type,
            raw: &self.bytes[start..self.pos],
            value,
        }))
    }

    fn varint(&mut self) -> Result<u64, WireError> {
        let start = self.pos;
        let mut value: u64 = 0;
        for index in 0..MAX_VARINT_LEN {
            let Some(&byte) = self.bytes.get(self.pos) else {
                return Err(WireError::Truncated { offset: self.pos });
            };
            self.pos += 1;
            let low = u64::from(byte & 0x7f);
            // The tenth byte may only contribute the single remaining bit.
            if index == MAX_VARINT_LEN - 1 && low > 1 {
                return Err(WireError::VarintOverflow { offset: start });
            }
            value |= low << (7 * index);
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(WireError::VarintOverflow { offset: start })
    }

    fn take(&mut self, len: u64) -> Result<&'a [u8], WireError> {
        let remaining = self.bytes.len() - self.pos;
        match usize::try_from(len) {
            Ok(len) if len <= remaining => {
                let slice = &self.bytes[self.pos..self.pos + len];
                self.pos += len;
                Ok(slice)
            }
            _ => Err(WireError::Truncated {
                offset: self.bytes.len(),
            }),
        }
    }
}

/// Checks that a known field has the wire type its declaration implies.
pub(crate) fn expect_wire_type(field: &RawField<'_>, expected: u8) -> Result<(), WireError> {
    if field.wire_type == expected {
        Ok(())
    } else {
        Err(WireError::WrongWireType {
            field: field.field,
            wire_type: field.wire_type,
            expected,
        })
    }
}

/// Number of bytes `value` takes as a varint.
pub(crate) fn varint_len(value: u64) -> usize {
    // Each byte carries seven bits; zero still takes one byte.
    let bits = 64 - (value | 1).leading_zeros() as usize;
    bits.div_ceil(7)
}

/// Number of bytes a length-delimited field with `len` value bytes takes, key included.
pub(crate) fn len_delimited_field_len(field: u32, len: usize) -> usize {
    varint_len(u64::from(field) << 3) + varint_len(len as u64) + len
}

pub(crate) fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8 & 0x7f) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// Appends a length-delimited field: key, length, bytes.
pub(crate) fn put_len_delimited(out: &mut Vec<u8>, field: u32, data: &[u8]) {
    put_varint(out, (u64::from(field) << 3) | u64::from(WIRE_LEN));
    put_varint(out, data.len() as u64);
    out.extend_from_slice(data);
}

/// The fields of one message level as `(field number, value)` pairs, in wire order; the value
/// of a length-delimited field is its payload (a nested message can be walked again). Lets a
/// decoder see the arms prost drops as unknown fields.
///
/// # Errors
///
/// [`WireError`] when `bytes` is not well-formed protobuf.
pub fn fields(bytes: &[u8]) -> Result<Vec<(u32, &[u8])>, WireError> {
    let mut reader = Reader::new(bytes);
    let mut out = Vec::new();
    while let Some(field) = reader.next_field()? {
        out.push((field.field, field.value));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(bytes: &[u8]) -> Result<Vec<(u32, u8, Vec<u8>)>, WireError> {
        let mut reader = Reader::new(bytes);
        let mut out = Vec::new();
        while let Some(field) = reader.next_field()? {
            out.push((field.field, field.wire_type, field.value.to_vec()));
        }
        Ok(out)
    }

    #[test]
    fn reads_every_skippable_wire_type() {
        let bytes = [
            0x10, 0x96, 0x01, // field 2 varint 150
            0x19, 1, 2, 3, 4, 5, 6, 7, 8, // field 3 fixed64
            0x22, 0x01, 0xff, // field 4 length-delimited
            0x2d, 1, 2, 3, 4, // field 5 fixed32
        ];
        assert_eq!(
            fields(&bytes).unwrap(),
            vec![
                (2, 0, vec![0x96, 0x01]),
                (3, 1, vec![1, 2, 3, 4, 5, 6, 7, 8]),
                (4, 2, vec![0xff]),
                (5, 5, vec![1, 2, 3, 4]),
            ]
        );
    }

    #[test]
    fn raw_field_spans_key_length_and_value() {
        let bytes = [0xb2, 0x01, 0x02, b'o', b'k'];
        let field = Reader::new(&bytes).next_field().unwrap().unwrap();
        assert_eq!(field.field, 22);
        assert_eq!(field.raw, &bytes[..]);
        assert_eq!(field.value, b"ok");
    }

    #[test]
    fn truncated_length_is_reported_not_panicked() {
        assert_eq!(
            fields(&[0x0a, 0x05, 1, 2]),
            Err(WireError::Truncated { offset: 4 })
        );
    }

    #[test]
    fn truncated_key_is_reported() {
        assert_eq!(fields(&[0xb2]), Err(WireError::Truncated { offset: 1 }));
    }

    #[test]
    fn truncated_fixed_values_are_reported() {
        assert_eq!(
            fields(&[0x19, 1, 2]),
            Err(WireError::Truncated { offset: 3 })
        );
        assert_eq!(fields(&[0x2d, 1]), Err(WireError::Truncated { offset: 2 }));
    }

    #[test]
    fn over_long_varints_are_rejected() {
        assert_eq!(
            fields(&[0xff; 11]),
            Err(WireError::VarintOverflow { offset: 0 })
        );
        let mut bytes = [0xff; 10];
        bytes[9] = 0x02;
        assert_eq!(fields(&bytes), Err(WireError::VarintOverflow { offset: 0 }));
    }

    #[test]
    fn length_beyond_usize_or_input_is_truncation() {
        // Field 1, length = u64::MAX (ten-byte varint).
        let mut bytes = vec![0x0a];
        bytes.extend_from_slice(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]);
        assert_eq!(fields(&bytes), Err(WireError::Truncated { offset: 11 }));
    }

    #[test]
    fn field_zero_and_out_of_range_numbers_are_rejected() {
        assert_eq!(
            fields(&[0x02, 0x00]),
            Err(WireError::InvalidFieldNumber {
                field: 0,
                offset: 0
            })
        );
        // Field 2^29 as a varint key: (2^29 << 3) = 2^32 → 0x80 0x80 0x80 0x80 0x10.
        assert_eq!(
            fields(&[0x80, 0x80, 0x80, 0x80, 0x10, 0x00]),
            Err(WireError::InvalidFieldNumber {
                field: 1 << 29,
                offset: 0
            })
        );
    }

    #[test]
    fn groups_are_unsupported() {
        assert_eq!(
            fields(&[0x13]),
            Err(WireError::UnsupportedWireType {
                wire_type: 3,
                offset: 0
            })
        );
    }

    #[test]
    fn fields_lists_every_field_with_its_payload() {
        // field 3 (len 2: field 1 varint 5), then field 9 varint 1.
        let bytes = [0x1a, 0x02, 0x08, 0x05, 0x48, 0x01];
        assert_eq!(
            super::fields(&bytes).unwrap(),
            [(3, &[0x08, 0x05][..]), (9, &[0x01][..])]
        );
        assert!(super::fields(&[0x1a, 0x05]).is_err());
    }

    #[test]
    fn varint_len_matches_encoder() {
        for value in [
            0u64,
            1,
            127,
            128,
            16_383,
            16_384,
            u64::from(u32::MAX),
            u64::MAX,
        ] {
            let mut out = Vec::new();
            put_varint(&mut out, value);
            assert_eq!(out.len(), varint_len(value), "value {value}");
        }
    }
}
