//! Fuzzes the catalog snapshot parser (`Snapshot::from_json`): no panic, and what parses
//! round-trips.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| cursor_catalog::fuzzing::catalog_snapshot(data));
