//! Fuzzes the hand-written `selected_context_blob` decoder: any input must decode or return a
//! typed error, and whatever decodes must re-encode to bytes that decode to the same value.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| cursor_proto::fuzzing::selected_context_blob(data));
