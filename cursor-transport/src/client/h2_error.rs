//! Classifying h2 failures: all of them are transport failures.

use crate::error::CursorError;

/// Maps an h2 error to a network failure whose message says what happened.
pub(crate) fn network(context: &str, err: h2::Error) -> CursorError {
    CursorError::network(describe(context, &err), err)
}

/// What happened, as `<context>: <what>` without a kind prefix (it may be nested in another
/// error's message, which adds its own).
pub(crate) fn describe(context: &str, err: &h2::Error) -> String {
    if err.is_go_away() {
        format!(
            "{context}: connection closed by GOAWAY ({})",
            reason_of(err)
        )
    } else if err.is_reset() {
        let side = if err.is_remote() { "server" } else { "client" };
        format!("{context}: stream reset by the {side} ({})", reason_of(err))
    } else if err.is_io() {
        format!("{context}: connection lost")
    } else {
        format!("{context}: HTTP/2 error")
    }
}

fn reason_of(err: &h2::Error) -> String {
    err.reason()
        .map_or_else(|| "no reason".to_owned(), |r| r.to_string())
}
