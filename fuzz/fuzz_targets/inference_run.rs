//! Fuzzes `InferenceRun` with arbitrary sequences of server frames, clock steps, stream ends,
//! transport errors and cancels: no panic, and the turn's frame and event contract holds
//! (checked by `cursor_inference::fuzzing`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| cursor_inference::fuzzing::inference_run(data));
