//! Fuzzes the resume handle file parser (`Handle::from_json`): no panic, and what parses
//! round-trips.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| cursor_agent::fuzzing::handle_file(data));
