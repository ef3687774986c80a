//! Fuzzes the reader of the gateway's conversation index records: no panic, whatever the file.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| cursor_gateway::fuzzing::index_record(data));
