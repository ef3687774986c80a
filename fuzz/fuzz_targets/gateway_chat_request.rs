//! Fuzzes the gateway's chat completions request parser and translation: no panic, whatever
//! the body.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| cursor_gateway::fuzzing::chat_request(data));
