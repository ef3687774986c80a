//! [`TextWindow`]: one chunk of the response body whose UTF-8 validity is learned once (with
//! SIMD, a stretch at a time), so the text of every delta inside it becomes a `&str` without
//! being validated again.
//!
//! Small frames put a Run's cost in std's byte-at-a-time UTF-8 check (its branches mispredict
//! on short, mixed texts). A chunk of small frames is mostly valid UTF-8 as a whole: Connect
//! and protobuf headers of small frames are ASCII bytes. Validating the chunk in long stretches
//! and slicing texts out of it gives the same answer as validating each text: a slice of valid
//! UTF-8 that starts and ends on character boundaries is valid UTF-8, and a text that is not
//! valid on its own never lies inside a valid stretch on character boundaries.

use std::ops::Range;

/// The validity of one chunk, learned lazily from the first text asked for.
#[derive(Debug)]
pub(crate) struct TextWindow<'a> {
    bytes: &'a [u8],
    /// The validated stretch of `bytes` that starts at `start`.
    valid: &'a str,
    start: usize,
}

impl<'a> TextWindow<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Self {
            bytes,
            valid: "",
            start: 0,
        }
    }

    /// `part` as text, when it is a slice of this chunk that is valid UTF-8. `None` when it
    /// is not inside the chunk or not valid there: the caller validates it on its own (and
    /// reports what that finds).
    #[inline]
    pub(crate) fn str_of(&mut self, part: &[u8]) -> Option<&'a str> {
        let range = range_within(self.bytes, part)?;
        if let Some(text) = self.lookup(&range) {
            return Some(text);
        }
        self.validate_from(range.start);
        self.lookup(&range)
    }

    #[inline]
    fn lookup(&self, range: &Range<usize>) -> Option<&'a str> {
        let from = range.start.checked_sub(self.start)?;
        // `str::get` refuses a range that leaves the stretch or splits a character.
        self.valid.get(from..from + range.len())
    }

    /// Makes the stretch from `at` to the first invalid byte (or the chunk's end) the valid one.
    #[inline(never)]
    fn validate_from(&mut self, at: usize) {
        let rest = &self.bytes[at..];
        self.start = at;
        self.valid = match simdutf8::compat::from_utf8(rest) {
            Ok(text) => text,
            // The prefix before the error is valid by the first pass; checked again because
            // only a validation yields a `&str` in safe Rust.
            Err(error) => simdutf8::basic::from_utf8(&rest[..error.valid_up_to()]).unwrap_or(""),
        };
    }
}

/// Where `part` lies inside `whole` when it is a slice of it: the stable spelling of the
/// unstable `<[T]>::subslice_range`. Addresses decide it: a live slice whose addresses lie
/// inside `whole`'s views the same bytes.
fn range_within(whole: &[u8], part: &[u8]) -> Option<Range<usize>> {
    let start = part.as_ptr().addr().checked_sub(whole.as_ptr().addr())?;
    let end = start.checked_add(part.len())?;
    (end <= whole.len()).then_some(start..end)
}

#[cfg(test)]
mod tests {
    use proptest::collection::vec;
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn texts_inside_a_valid_chunk_are_sliced_out_of_it() {
        let chunk = "\0\0\0\0\u{5}ab\0\0\0\0\u{6}é→".as_bytes();
        let mut window = TextWindow::new(chunk);
        assert_eq!(window.str_of(&chunk[5..7]), Some("ab"));
        assert_eq!(window.start, 5, "validated from the first text on");
        assert_eq!(window.valid.len(), chunk.len() - 5, "to the chunk's end");
        assert_eq!(window.str_of(&chunk[12..]), Some("é→"));
        assert_eq!(window.start, 5, "and not again");
    }

    #[test]
    fn a_split_character_or_an_invalid_byte_is_refused_and_later_text_still_found() {
        let chunk = [b'a', 0xc3, 0xa9, b'b', 0xff, b'c', b'd'];
        let mut window = TextWindow::new(&chunk);
        assert_eq!(window.str_of(&chunk[1..2]), None, "half of é");
        assert_eq!(window.str_of(&chunk[1..3]), Some("é"));
        assert_eq!(window.str_of(&chunk[3..5]), None, "b then 0xff");
        assert_eq!(
            window.str_of(&chunk[5..7]),
            Some("cd"),
            "validation resumes past it"
        );
    }

    #[test]
    fn a_slice_of_other_memory_is_not_inside_the_window() {
        let chunk = *b"abcdef";
        let other = *b"abcdef";
        let mut window = TextWindow::new(&chunk[1..4]);
        assert_eq!(window.str_of(&other[1..3]), None);
        assert_eq!(
            window.str_of(&chunk[0..2]),
            None,
            "starts before the window"
        );
        assert_eq!(window.str_of(&chunk[3..5]), None, "ends after it");
        assert_eq!(window.str_of(&chunk[2..4]), Some("cd"));
    }

    proptest! {
        /// Slicing out of the window and validating the slice alone always agree.
        #[test]
        fn the_window_agrees_with_validating_each_slice(
            chunk in vec(prop_oneof![any::<u8>(), Just(b'a'), Just(0xc3), Just(0xa9)], 0..200),
            cuts in vec((0usize..200, 0usize..40), 0..20),
        ) {
            let mut window = TextWindow::new(&chunk);
            // Frames come in order; any order must give the same answers (more slowly).
            for (at, len) in cuts {
                let range = at.min(chunk.len())..(at + len).min(chunk.len());
                let alone = std::str::from_utf8(&chunk[range.clone()]).ok();
                prop_assert_eq!(window.str_of(&chunk[range.clone()]), alone, "{:?}", range);
            }
        }
    }
}
