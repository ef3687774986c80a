//! Fuzzes `AgentRun::handle_server_data` (the Run framing a response body itself and slicing
//! texts out of chunks validated once) against the same body fed frame by frame: after every
//! chunk both Runs must show the same events, transmits, failure and deadline (checked by
//! `cursor_agent::fuzzing::body_data`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    cursor_agent::fuzzing::body_data(data);
});
