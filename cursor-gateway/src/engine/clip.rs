//! Stop sequences and output limits, which Cursor has no parameter for: the engine cuts the
//! streamed text itself.

/// Output tokens are counted as 4 bytes of UTF-8 each (Cursor reports no per-delta counts;
/// 4 bytes is the usual English average, so a limit cuts close to where the API would).
pub(crate) const BYTES_PER_TOKEN: usize = 4;

/// Why the engine ended a reply early.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Cut {
    /// A stop sequence appeared.
    Stop,
    /// The output limit was reached.
    Length,
}

/// Cuts streamed text at the first stop sequence (not included) or at the output limit. Text
/// is released as it comes, less a tail one byte shorter than the longest stop sequence, so a
/// sequence split across deltas is still caught before any of it went out.
///
/// Each delta is searched from where a match could still begin (the held-back tail), never from
/// the start of the reply: a long reply in small deltas costs linear time, not quadratic.
#[derive(Clone, Debug, Default)]
pub(crate) struct Clip {
    stops: Vec<String>,
    max_bytes: Option<usize>,
    text: String,
    sent: usize,
    /// No stop sequence starts before this offset of `text`.
    searched: usize,
    /// The stop sequence that ended the reply, once one did.
    matched: Option<usize>,
    /// Bytes searched so far (the search is linear in the reply; tests check it).
    scanned: usize,
}

impl Clip {
    /// Cuts at `stops` (empty ones ignored) and after `max_tokens` tokens; a limit too large to
    /// count in bytes is no limit.
    pub(crate) fn new(stops: Vec<String>, max_tokens: Option<u64>) -> Self {
        Self {
            stops: stops.into_iter().filter(|s| !s.is_empty()).collect(),
            max_bytes: max_tokens
                .and_then(|t| usize::try_from(t).ok())
                .and_then(|t| t.checked_mul(BYTES_PER_TOKEN)),
            ..Self::default()
        }
    }

    /// Starts over (a rebuild voided what streamed before).
    pub(crate) fn reset(&mut self) {
        self.text.clear();
        self.sent = 0;
        self.searched = 0;
        self.matched = None;
    }

    /// The stop sequence that ended the reply, if one did.
    pub(crate) fn matched(&self) -> Option<&str> {
        self.matched.map(|i| self.stops[i].as_str())
    }

    fn longest_stop(&self) -> usize {
        self.stops.iter().map(String::len).max().unwrap_or(0)
    }

    /// Takes one delta: the text that may go out now, and the cut if the reply ends here.
    pub(crate) fn push(&mut self, delta: &str) -> (String, Option<Cut>) {
        self.text.push_str(delta);
        let from = floor_boundary(&self.text, self.searched);
        let window = &self.text[from..];
        self.scanned += window.len();
        let first = self
            .stops
            .iter()
            .enumerate()
            .filter_map(|(i, s)| window.find(s.as_str()).map(|at| (from + at, i)))
            .min();
        // A match may still begin in the last `longest - 1` bytes, once more text arrives.
        let hold = self.longest_stop().saturating_sub(1);
        self.searched = self.text.len().saturating_sub(hold);
        let stop_at = first.map(|(at, _)| at);
        let over = self
            .max_bytes
            .filter(|max| self.text.len() > *max)
            .map(|max| floor_boundary(&self.text, max));
        let (end, cut) = match (stop_at, over) {
            (Some(at), Some(max)) if at > max => (max, Some(Cut::Length)),
            (Some(at), _) => {
                self.matched = first.map(|(_, i)| i);
                (at, Some(Cut::Stop))
            }
            (None, Some(max)) => (max, Some(Cut::Length)),
            (None, None) => (floor_boundary(&self.text, self.searched), None),
        };
        let end = end.max(self.sent);
        let out = self.text[self.sent..end].to_owned();
        self.sent = end;
        if cut.is_some() {
            self.text.truncate(end);
        }
        (out, cut)
    }

    /// The held-back tail, at the reply's natural end (or before a tool call).
    pub(crate) fn flush(&mut self) -> String {
        let out = self.text[self.sent..].to_owned();
        self.sent = self.text.len();
        self.searched = self.text.len();
        out
    }

    /// Everything released so far.
    pub(crate) fn text(&self) -> &str {
        &self.text[..self.sent]
    }
}

fn floor_boundary(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn run(clip: &mut Clip, deltas: &[&str]) -> (String, Option<Cut>) {
        let mut out = String::new();
        for delta in deltas {
            let (text, cut) = clip.push(delta);
            out.push_str(&text);
            if cut.is_some() {
                return (out, cut);
            }
        }
        out.push_str(&clip.flush());
        (out, None)
    }

    #[test]
    fn a_stop_sequence_split_across_deltas_is_caught_and_left_out() {
        let mut clip = Clip::new(vec!["END".into(), "zz".into()], None);
        assert_eq!(
            run(&mut clip, &["one two E", "N", "D three"]),
            ("one two ".into(), Some(Cut::Stop))
        );
        assert_eq!(clip.matched(), Some("END"));
        let mut clip = Clip::new(vec!["END".into()], None);
        assert_eq!(
            run(&mut clip, &["no stop ", "here EN"]),
            ("no stop here EN".into(), None)
        );
    }

    #[test]
    fn the_output_limit_cuts_at_a_char_boundary() {
        let mut clip = Clip::new(Vec::new(), Some(1));
        assert_eq!(
            run(&mut clip, &["ab", "cdef"]),
            ("abcd".into(), Some(Cut::Length))
        );
        let mut clip = Clip::new(Vec::new(), Some(1));
        assert_eq!(run(&mut clip, &["aé", "éé"]).0, "aé");
    }

    #[test]
    fn a_limit_near_two_to_the_62_tokens_is_no_limit_rather_than_an_overflow() {
        // 2^62 tokens * 4 bytes overflowed: a panic in debug builds, and in release a limit
        // of 0 bytes that cut every reply empty.
        for max in [1u64 << 62, u64::MAX, (usize::MAX / 4 + 1) as u64] {
            let mut clip = Clip::new(Vec::new(), Some(max));
            assert_eq!(
                run(&mut clip, &["hello", " world"]),
                ("hello world".into(), None)
            );
        }
    }

    #[test]
    fn a_long_reply_in_small_deltas_is_searched_in_linear_time() {
        let mut clip = Clip::new(vec!["STOP-HERE".into(), "END".into()], None);
        let deltas = 20_000;
        for _ in 0..deltas {
            let (_, cut) = clip.push("ab");
            assert!(cut.is_none());
        }
        // Each delta is searched with at most the held-back tail before it (8 bytes here),
        // where rescanning the reply would be about deltas² bytes (4 * 10^8).
        assert!(
            clip.scanned <= deltas * (2 + 8),
            "searched {} bytes for {} bytes of reply",
            clip.scanned,
            deltas * 2
        );
    }

    proptest! {
        /// Whatever the deltas, the text released is the reply up to where the first stop
        /// sequence appeared (the earliest occurrence in the text received by the delta that
        /// completed one), or all of it: what searching the whole reply after each delta would
        /// cut, done without rescanning.
        #[test]
        fn incremental_cutting_equals_searching_the_reply_after_each_delta(
            deltas in proptest::collection::vec("[abé]{0,6}", 0..30),
            stops in proptest::collection::vec("[abé]{1,3}", 0..3),
        ) {
            let mut received = String::new();
            let mut expected_end = None;
            for delta in &deltas {
                received.push_str(delta);
                expected_end = stops.iter().filter_map(|s| received.find(s.as_str())).min();
                if expected_end.is_some() {
                    break;
                }
            }
            let whole: String = deltas.concat();
            let mut clip = Clip::new(stops, None);
            let refs: Vec<&str> = deltas.iter().map(String::as_str).collect();
            let (out, cut) = run(&mut clip, &refs);
            match expected_end {
                Some(end) => {
                    prop_assert_eq!(cut, Some(Cut::Stop));
                    prop_assert_eq!(out, received[..end].to_owned());
                }
                None => {
                    prop_assert_eq!(cut, None);
                    prop_assert_eq!(out, whole);
                }
            }
        }
    }
}
