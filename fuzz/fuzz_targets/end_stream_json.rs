#![no_main]
//! Arbitrary bytes through the Connect end-of-stream JSON parser.

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    cursor_transport::fuzzing::end_stream_json(data);
});
