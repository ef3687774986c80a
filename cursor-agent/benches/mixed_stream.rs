//! End to end cost per server frame on a realistic Run stream (`support/stream.rs`): envelope
//! framing, protobuf decode, `AgentRun` and the event drain together. Rows: framing alone
//! (lent and owned), decode alone (hot and prost), the whole path per frame with prost's
//! decode or the hot path, drained every frame or every 16 KiB chunk (undrained deltas merge),
//! and the whole path fed body bytes (`handle_server_data`: the Run frames the chunk itself and
//! validates its text once per chunk, with SIMD, instead of once per delta).
//! Goal (issue 12): <= 50 ns per frame. Times are the bench thread's CPU time
//! (`support/cpu_time.rs`), so other load on a shared machine does not inflate them.
//! Allocations per frame are counted by the `mixed_stream_allocs` bench (a counting allocator
//! would slow this one down).

use std::hint::black_box;
use std::time::Duration;

use cpu_time::CpuTime;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use cursor_proto::agent::v1::AgentServerMessage;
use prost::Message as _;
use stream::{
    Drain, FRAMES, Path, SEED, chunks, conversation, frame_only, frame_only_owned, messages,
    run_stream, run_stream_data,
};

#[path = "support/cpu_time.rs"]
mod cpu_time;
#[path = "support/stream.rs"]
mod stream;

fn mixed_stream(c: &mut Criterion<CpuTime>) {
    let messages = messages(SEED);
    let payload: usize = messages.iter().map(Vec::len).sum();
    let chunks = chunks(&messages);
    let conversation = conversation();
    println!(
        "mixed_stream: {FRAMES} frames, mean payload {:.1} B, {} chunks of 16 KiB, {} events \
         drained per frame, {} per chunk, {} per chunk fed as body data",
        payload as f64 / FRAMES as f64,
        chunks.len(),
        run_stream(&conversation, &chunks, Path::Bytes, Drain::EveryFrame),
        run_stream(&conversation, &chunks, Path::Bytes, Drain::EveryChunk),
        run_stream_data(&conversation, &chunks),
    );
    let mut group = c.benchmark_group("mixed_stream");
    group.throughput(Throughput::Elements(FRAMES as u64));
    group.sample_size(20);
    group.measurement_time(Duration::from_secs(8));
    group.bench_function("envelope_only_100k", |b| {
        b.iter(|| black_box(frame_only(&chunks)));
    });
    group.bench_function("envelope_owned_100k", |b| {
        b.iter(|| black_box(frame_only_owned(&chunks)));
    });
    group.bench_function("decode_only_prost_100k", |b| {
        b.iter(|| {
            for message in &messages {
                black_box(AgentServerMessage::decode(message.as_slice()).expect("valid"));
            }
        });
    });
    group.bench_function("decode_only_hot_100k", |b| {
        b.iter(|| {
            for message in &messages {
                black_box(cursor_agent::fuzzing::hot_decode_view(message));
            }
        });
    });
    group.bench_function("envelope_prost_run_drain_100k", |b| {
        b.iter(|| {
            black_box(run_stream(
                &conversation,
                &chunks,
                Path::Prost,
                Drain::EveryFrame,
            ))
        });
    });
    group.bench_function("envelope_decode_run_drain_100k", |b| {
        b.iter(|| {
            black_box(run_stream(
                &conversation,
                &chunks,
                Path::Bytes,
                Drain::EveryFrame,
            ))
        });
    });
    group.bench_function("envelope_decode_run_drain_per_chunk_100k", |b| {
        b.iter(|| {
            black_box(run_stream(
                &conversation,
                &chunks,
                Path::Bytes,
                Drain::EveryChunk,
            ))
        });
    });
    group.bench_function("data_run_drain_per_chunk_100k", |b| {
        b.iter(|| black_box(run_stream_data(&conversation, &chunks)));
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().with_measurement(CpuTime);
    targets = mixed_stream
}
criterion_main!(benches);
