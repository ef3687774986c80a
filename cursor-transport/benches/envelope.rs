//! Envelope encode and decode throughput by payload size.

use std::hint::black_box;

use bytes::{Bytes, BytesMut};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use cursor_transport::envelope::{Compression, Decoder, Encoder, Frame};

const SIZES: [usize; 3] = [64, 1024, 64 * 1024];
/// Frames per iteration, so per-frame overhead is measured over a realistic batch.
const FRAMES: usize = 16;

fn wire(size: usize) -> Bytes {
    let encoder = Encoder::new(Compression::Identity);
    let payload = vec![0xabu8; size];
    let mut out = BytesMut::new();
    for _ in 0..FRAMES {
        encoder.encode(&payload, &mut out).unwrap();
    }
    out.freeze()
}

fn decode(c: &mut Criterion) {
    let mut group = c.benchmark_group("envelope/decode");
    for size in SIZES {
        let wire = wire(size);
        group.throughput(Throughput::Bytes((size * FRAMES) as u64));
        group.bench_with_input(BenchmarkId::from_parameter(size), &wire, |b, wire| {
            b.iter(|| {
                let mut decoder = Decoder::new(Compression::Identity);
                decoder.push_bytes(black_box(wire.clone()));
                let mut n = 0;
                while let Some(Frame::Message(m)) = decoder.next_frame().unwrap() {
                    n += m.len();
                }
                black_box(n)
            });
        });
    }
    group.finish();
}

/// Small frames (16-byte payloads, the typical streamed delta) arriving in 16 KiB chunks, as h2
/// DATA frames deliver them: the per-frame cost of framing (goal: <= 15 ns per frame).
fn decode_small_chunked(c: &mut Criterion) {
    const SMALL: usize = 16;
    const COUNT: usize = 100_000;
    const CHUNK: usize = 16 * 1024;
    let encoder = Encoder::new(Compression::Identity);
    let mut out = BytesMut::new();
    for i in 0..COUNT {
        encoder.encode(&[i as u8; SMALL], &mut out).unwrap();
    }
    let wire = out.freeze();
    let chunks: Vec<Bytes> = (0..wire.len())
        .step_by(CHUNK)
        .map(|at| wire.slice(at..wire.len().min(at + CHUNK)))
        .collect();
    let mut group = c.benchmark_group("envelope/decode_chunked");
    group.throughput(Throughput::Elements(COUNT as u64));
    group.bench_function("16B_frames_16KiB_chunks", |b| {
        b.iter(|| {
            let mut decoder = Decoder::new(Compression::Identity);
            let mut n = 0;
            for chunk in &chunks {
                decoder.push_bytes(chunk.clone());
                while let Some(Frame::Message(m)) = decoder.next_frame().unwrap() {
                    n += m.len();
                }
            }
            decoder.finish().unwrap();
            assert_eq!(n, SMALL * COUNT);
            black_box(n)
        });
    });
    group.finish();
}

fn encode(c: &mut Criterion) {
    let mut group = c.benchmark_group("envelope/encode");
    let encoder = Encoder::new(Compression::Identity);
    for size in SIZES {
        let payload = vec![0xabu8; size];
        let mut out = BytesMut::with_capacity((size + 5) * FRAMES);
        group.throughput(Throughput::Bytes((size * FRAMES) as u64));
        group.bench_with_input(BenchmarkId::from_parameter(size), &payload, |b, payload| {
            b.iter(|| {
                out.clear();
                for _ in 0..FRAMES {
                    encoder.encode(black_box(payload), &mut out).unwrap();
                }
                black_box(out.len())
            });
        });
    }
    group.finish();
}

criterion_group!(benches, decode, decode_small_chunked, encode);
criterion_main!(benches);
