//! Allocations per frame of the `mixed_stream` bench's stream (`support/stream.rs`), counted by
//! a global allocator: framing alone (lent and owned payloads), the whole path with prost's
//! decode, the whole path with the hot decoder (whose only allocation per event should be the
//! event's own string), drained every frame or every chunk, and fed as body data.

use std::hint::black_box;

use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};
use stream::{
    Drain, FRAMES, Path, SEED, chunks, conversation, frame_only, frame_only_owned, messages,
    run_stream, run_stream_data,
};

#[path = "support/stream.rs"]
mod stream;

#[global_allocator]
static GLOBAL: &StatsAlloc<std::alloc::System> = &INSTRUMENTED_SYSTEM;

fn allocations(label: &str, work: impl FnOnce() -> usize) {
    let region = Region::new(GLOBAL);
    black_box(work());
    let stats = region.change();
    println!(
        "mixed_stream/{label}: {:.3} allocations/frame, {:.1} allocated bytes/frame",
        stats.allocations as f64 / FRAMES as f64,
        stats.bytes_allocated as f64 / FRAMES as f64,
    );
}

fn main() {
    let messages = messages(SEED);
    let chunks = chunks(&messages);
    let conversation = conversation();
    // One whole stream each (the Run's own setup included), per frame.
    allocations("envelope", || frame_only(&chunks));
    allocations("envelope_owned", || frame_only_owned(&chunks));
    allocations("prost", || {
        run_stream(&conversation, &chunks, Path::Prost, Drain::EveryFrame)
    });
    allocations("hot", || {
        run_stream(&conversation, &chunks, Path::Bytes, Drain::EveryFrame)
    });
    allocations("hot_drain_per_chunk", || {
        run_stream(&conversation, &chunks, Path::Bytes, Drain::EveryChunk)
    });
    allocations("data_drain_per_chunk", || {
        run_stream_data(&conversation, &chunks)
    });
}
