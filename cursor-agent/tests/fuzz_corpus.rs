//! Replays a deterministic batch of pseudo-random scripts through the entry point the `agent_run`
//! fuzz target uses (stable toolchain, no libFuzzer); the checked-in corpus replays in
//! `tests/workspace`.

use cursor_agent::fuzzing::fuzz_one;

#[test]
fn pseudo_random_scripts_replay_without_panics_or_forbidden_frames() {
    // xorshift64*: deterministic, so a failure reproduces.
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = || {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        state.wrapping_mul(0x2545_f491_4f6c_dd1d)
    };
    for _ in 0..300 {
        let len = (next() % 512) as usize;
        let script: Vec<u8> = (0..len).map(|_| (next() >> 56) as u8).collect();
        fuzz_one(&script);
    }
}
