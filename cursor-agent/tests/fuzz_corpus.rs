//! Replays the checked-in `agent_run` fuzz corpus, plus a deterministic batch of pseudo-random
//! scripts, through the same entry point the fuzz target uses (stable toolchain, no libFuzzer).

use std::path::Path;

use cursor_agent::fuzzing::fuzz_one;

#[test]
fn checked_in_corpus_replays_without_panics_or_forbidden_frames() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus/agent_run");
    let mut replayed = 0;
    for entry in std::fs::read_dir(&dir).expect("corpus directory exists") {
        let path = entry.expect("readable entry").path();
        fuzz_one(&std::fs::read(&path).expect("readable seed"));
        replayed += 1;
    }
    assert!(replayed >= 8, "corpus went missing: {replayed} seeds");
}

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
