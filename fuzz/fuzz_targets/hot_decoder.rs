//! Fuzzes the hot-path `AgentServerMessage` decoder against prost: whenever the hot path
//! decodes a frame, prost must decode it to the same message (checked by
//! `cursor_agent::fuzzing::hot_decoder`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    cursor_agent::fuzzing::hot_decoder(data);
});
