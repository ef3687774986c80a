//! Entry points for the fuzz targets (`fuzz/`) and the corpus replay in `cargo test`: every
//! request parser and state-file reader, on arbitrary bytes. Each must answer (an error is an
//! answer), never panic, whatever the bytes.

/// A chat completions body, parsed and translated as a request would be.
pub fn chat_request(body: &[u8]) {
    let _ = crate::dialects::chat::translate_body(body);
}

/// A Responses body, parsed and translated as a request would be.
pub fn responses_request(body: &[u8]) {
    let _ = crate::dialects::responses::translate_body(body);
}

/// A Messages body, parsed and translated as a turn and as `count_tokens` would.
pub fn messages_request(body: &[u8]) {
    let _ = crate::dialects::anthropic::translate_body(body, false);
    let _ = crate::dialects::anthropic::translate_body(body, true);
}

/// A conversation index record file.
pub fn index_record(bytes: &[u8]) {
    let _ = crate::state::index::Record::from_json(bytes);
}

/// A stored response file.
pub fn stored_response(bytes: &[u8]) {
    let _ = crate::state::responses::StoredFile::from_json(bytes);
}
