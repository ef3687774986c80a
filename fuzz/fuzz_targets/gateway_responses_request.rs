//! Fuzzes the gateway's Responses request parser and translation: no panic, whatever the body.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| cursor_gateway::fuzzing::responses_request(data));
