#![no_main]
//! Arbitrary bytes, in arbitrary chunks, through the Connect envelope decoder.

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    cursor_transport::fuzzing::envelope_decoder(data);
});
