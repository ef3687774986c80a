//! The words that make pi retry a failed turn, and rewording that avoids them.
//!
//! pi (pi-ai `isRetryableAssistantError`, 0.99.1–1.6.0) retries a turn whose `errorMessage`
//! matches one case-insensitive pattern of transient-failure wording (`overloaded`,
//! `rate.?limit`, `server.?error`, `timeout`, bare 5xx codes, errno names, ...). A failure that
//! retrying cannot fix (an expired login, a refused entitlement, protocol drift) must not
//! contain those words, or pi retries it up to its budget before showing it. The table below
//! mirrors the union of those versions' patterns, each with a rewording that keeps the meaning
//! and matches none of them.

/// One trigger: its spellings and the rewording used instead.
struct Trigger {
    /// Each spelling is a list of literal pieces; between two pieces any one character (or
    /// none) may stand, as pi's `.?` allows.
    spellings: &'static [&'static [&'static str]],
    /// Characters that may not touch the match on either side (pi's look-arounds).
    boundary: Boundary,
    /// The wording used instead.
    replacement: &'static str,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Boundary {
    None,
    /// No ASCII letter or digit next to the match (status codes).
    Alphanumeric,
    /// No ASCII letter, digit or `_` next to the match (errno names).
    Identifier,
}

const fn word(spelling: &'static [&'static [&'static str]], replacement: &'static str) -> Trigger {
    Trigger {
        spellings: spelling,
        boundary: Boundary::None,
        replacement,
    }
}

const fn code(spelling: &'static [&'static [&'static str]], replacement: &'static str) -> Trigger {
    Trigger {
        spellings: spelling,
        boundary: Boundary::Alphanumeric,
        replacement,
    }
}

const fn errno(spelling: &'static [&'static [&'static str]], replacement: &'static str) -> Trigger {
    Trigger {
        spellings: spelling,
        boundary: Boundary::Identifier,
        replacement,
    }
}

const TRIGGERS: &[Trigger] = &[
    word(&[&["overloaded"]], "overload"),
    word(&[&["server_busy"]], "server busy"),
    word(&[&["servers are currently busy"]], "servers busy now"),
    word(
        &[&["currently experiencing high demand"]],
        "under high demand",
    ),
    word(&[&["model is at capacity"]], "model at capacity"),
    word(&[&["rate", "limit"]], "request-rate cap"),
    word(&[&["too many requests"]], "request cap reached"),
    code(&[&["429"]], "HTTP429"),
    code(&[&["500"]], "HTTP500"),
    code(&[&["502"]], "HTTP502"),
    code(&[&["503"]], "HTTP503"),
    code(&[&["504"]], "HTTP504"),
    code(&[&["520"]], "HTTP520"),
    code(&[&["524"]], "HTTP524"),
    word(
        &[
            &["service", "unavailable"],
            &["service", "is", "unavailable"],
            &["service", "temporarily", "unavailable"],
            &["service", "is", "temporarily", "unavailable"],
        ],
        "service not available",
    ),
    word(&[&["server", "error"]], "server-side failure"),
    word(&[&["internal", "error"]], "internal failure"),
    word(
        &[
            &["provider", "returned", "error"],
            &["provider", "returned", "an", "error"],
        ],
        "provider reported a failure",
    ),
    word(
        &[&["exceeded request buffer limit while retrying upstream"]],
        "request buffer exceeded upstream",
    ),
    word(
        &[&["unable to forward upstream"]],
        "upstream forwarding failed",
    ),
    word(
        &[&["upstream", "request", "failed"]],
        "upstream call failed",
    ),
    word(
        &[&["upstream_stream_read_error"]],
        "upstream stream read failure",
    ),
    word(&[&["stream was interrupted"]], "stream interrupted"),
    word(&[&["http", "2 stream failed"]], "HTTP/2 stream failure"),
    word(&[&["network", "error"]], "network failure"),
    word(&[&["connection", "error"]], "connection failure"),
    word(&[&["connection", "refused"]], "connection was refused"),
    word(&[&["connection", "lost"]], "connection was lost"),
    word(&[&["connection", "closed"]], "connection was closed"),
    word(&[&["other side closed"]], "peer closed"),
    word(&[&["fetch failed"]], "fetch did not succeed"),
    // pi: `request to \S+ failed, reason:`; matching the tail alone is stricter, never looser.
    word(&[&["failed, reason:"]], "failed; reason:"),
    word(&[&["getaddrinfo"]], "DNS lookup"),
    errno(&[&["econnreset"]], "connection reset"),
    errno(&[&["econnaborted"]], "connection aborted"),
    errno(&[&["econnrefused"]], "refused connection"),
    errno(&[&["etimedout"]], "connect time limit hit"),
    errno(&[&["epipe"]], "broken pipe"),
    word(
        &[&["connection reset by peer"]],
        "peer reset the connection",
    ),
    word(&[&["enotfound"]], "host not found"),
    word(&[&["eai_again"]], "DNS lookup pending"),
    word(&[&["upstream", "connect"]], "upstream link"),
    word(&[&["reset before headers"]], "reset ahead of headers"),
    word(&[&["socket hang up"]], "socket hung"),
    word(&[&["socket connection was closed"]], "socket closed"),
    word(&[&["timed out"], &["time out"]], "ran past its time limit"),
    word(&[&["timeout"]], "time limit"),
    word(&[&["terminated"]], "stopped"),
    word(&[&["websocket", "closed"]], "websocket shut"),
    word(&[&["websocket", "error"]], "websocket failure"),
    word(
        &[&["websocket", "connection", "limit", "reached"]],
        "websocket connection cap hit",
    ),
    word(&[&["ended without"]], "stopped without"),
    word(
        &[&["stream ended before message_stop"]],
        "stream stopped before message_stop",
    ),
    word(
        &[&["stream ended before a terminal response event"]],
        "stream stopped before a terminal response event",
    ),
    word(
        &[&["http2 request did not get a response"]],
        "http2 request got no response",
    ),
    word(
        &[&["stream disconnected before completion"]],
        "stream dropped before completion",
    ),
    word(
        &[&["cut short after the reply had begun"]],
        "cut off after the reply had begun",
    ),
    word(
        &[&["pending stream has been canceled"]],
        "pending stream was canceled",
    ),
    word(&[&["resourceexhausted"]], "resource exhausted"),
    word(
        &[&["subscription_sharing_usage_unavailable"]],
        "subscription sharing usage not available",
    ),
    word(
        &[&["subscription_sharing_user_unavailable"]],
        "subscription sharing user not available",
    ),
];

/// Whether pi (0.99.1–1.6.0) would treat an error message with this text as transient.
pub(crate) fn has_retry_trigger(text: &str) -> bool {
    let chars: Vec<char> = text.chars().map(|c| c.to_ascii_lowercase()).collect();
    first_match(&chars).is_some()
}

/// `text` with every retry trigger reworded, so pi shows the failure instead of retrying it.
pub(crate) fn without_retry_triggers(text: &str) -> String {
    let mut original: Vec<char> = text.chars().collect();
    // Each rewording removes one match and adds none of its own; the bound only guards
    // against a rewording that completes a trigger together with its neighbours.
    for _ in 0..256 {
        let lowered: Vec<char> = original.iter().map(char::to_ascii_lowercase).collect();
        let Some((start, end, trigger)) = first_match(&lowered) else {
            break;
        };
        original.splice(start..end, trigger.replacement.chars());
    }
    original.into_iter().collect()
}

/// The earliest match in `text` (already lower-cased): start, end and trigger.
fn first_match(text: &[char]) -> Option<(usize, usize, &'static Trigger)> {
    (0..text.len()).find_map(|start| {
        TRIGGERS.iter().find_map(|trigger| {
            trigger
                .spellings
                .iter()
                .find_map(|pieces| match_at(text, start, pieces, trigger.boundary))
                .map(|end| (start, end, trigger))
        })
    })
}

/// Where a spelling matched at `start` ends, if it does.
fn match_at(text: &[char], start: usize, pieces: &[&str], boundary: Boundary) -> Option<usize> {
    if start > 0 && touches(text[start - 1], boundary) {
        return None;
    }
    let ends = pieces
        .iter()
        .enumerate()
        .try_fold(vec![start], |ends, (i, piece)| {
            // Before every piece but the first, one optional character of any kind but a newline.
            let starts: Vec<usize> = if i == 0 {
                ends
            } else {
                ends.iter()
                    .flat_map(|&end| {
                        let skip = (end < text.len() && text[end] != '\n').then_some(end + 1);
                        std::iter::once(end).chain(skip)
                    })
                    .collect()
            };
            let next: Vec<usize> = starts
                .into_iter()
                .filter_map(|at| literal_at(text, at, piece))
                .collect();
            (!next.is_empty()).then_some(next)
        })?;
    ends.into_iter()
        .find(|&end| end == text.len() || !touches(text[end], boundary))
}

fn literal_at(text: &[char], at: usize, piece: &str) -> Option<usize> {
    let mut index = at;
    for expected in piece.chars() {
        if text.get(index) != Some(&expected) {
            return None;
        }
        index += 1;
    }
    Some(index)
}

fn touches(neighbour: char, boundary: Boundary) -> bool {
    match boundary {
        Boundary::None => false,
        Boundary::Alphanumeric => neighbour.is_ascii_alphanumeric(),
        Boundary::Identifier => neighbour.is_ascii_alphanumeric() || neighbour == '_',
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pi_transient_wordings_are_recognised() {
        for text in [
            "network error: connection reset",
            "Server Error 500",
            "rate-limit hit",
            "HTTP 503",
            "read ECONNRESET",
            "the request timed out",
            "Service is temporarily unavailable",
            "connection_refused",
        ] {
            assert!(has_retry_trigger(text), "{text}");
        }
    }

    #[test]
    fn codes_and_errno_names_inside_longer_tokens_are_not_triggers() {
        for text in [
            "request id a5003",
            "1500 bytes",
            "MY_ECONNRESET_X",
            "x-request-id 45029",
        ] {
            assert!(!has_retry_trigger(text), "{text}");
        }
    }

    #[test]
    fn every_rewording_is_free_of_triggers() {
        for trigger in TRIGGERS {
            assert!(
                !has_retry_trigger(trigger.replacement),
                "{}",
                trigger.replacement
            );
        }
    }

    #[test]
    fn every_spelling_is_reworded_away() {
        for trigger in TRIGGERS {
            for pieces in trigger.spellings {
                let text = format!("failure: {} (HTTP 401)", pieces.join(" "));
                assert!(has_retry_trigger(&text), "{text}");
                let reworded = without_retry_triggers(&text);
                assert!(!has_retry_trigger(&reworded), "{text} -> {reworded}");
            }
        }
    }

    #[test]
    fn rewording_keeps_the_rest_of_the_text() {
        assert_eq!(
            without_retry_triggers("server error unauthenticated: token expired (HTTP 401)"),
            "server-side failure unauthenticated: token expired (HTTP 401)"
        );
        assert_eq!(without_retry_triggers("Überall OK"), "Überall OK");
    }
}
