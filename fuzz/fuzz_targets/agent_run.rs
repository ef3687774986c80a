//! Fuzzes `AgentRun` with arbitrary sequences of server frames, timeouts, tool results, stream
//! ends and cancels: no panic, bounded growth, and no exec reply the policy does not allow
//! (every transmit is checked by `cursor_agent::fuzzing`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    cursor_agent::fuzzing::fuzz_one(data);
});
