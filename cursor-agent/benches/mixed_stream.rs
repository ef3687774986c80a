//! End to end cost per server frame on a realistic Run stream: envelope framing, protobuf
//! decode, `AgentRun` and the event drain together, with allocations counted per frame.
//!
//! The stream is generated deterministically (seeded): 100 000 frames of ~16 bytes, 75 % text
//! deltas, 20 % thinking deltas, 4 % token deltas, 1 % heartbeats, a few KV blob requests and
//! one `turn_ended`, ~6 % multi-byte characters, cut into 16 KiB chunks as h2 DATA frames
//! arrive. Goal (issue 12): <= 50 ns per frame. Times are the bench thread's CPU time
//! (`support/cpu_time.rs`), so other load on a shared machine does not inflate them. Besides the full
//! path it times framing alone and the full path with prost's decode instead of the hot path.

use std::hint::black_box;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use cpu_time::CpuTime;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use cursor_agent::{AgentRun, RunConfig};
use cursor_proto::agent::v1::{
    AgentServerMessage, HeartbeatUpdate, InteractionUpdate, KvServerMessage, SetBlobArgs,
    TextDeltaUpdate, ThinkingDeltaUpdate, TokenDeltaUpdate, TurnEndedUpdate, agent_server_message,
    interaction_update, kv_server_message,
};
use cursor_proto::ir::{Conversation, Message};
use cursor_transport::envelope::{Compression, Decoder, Encoder, Frame};
use prost::Message as _;
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};

#[path = "support/cpu_time.rs"]
mod cpu_time;

#[global_allocator]
static GLOBAL: &StatsAlloc<std::alloc::System> = &INSTRUMENTED_SYSTEM;

const FRAMES: usize = 100_000;
/// h2's default max frame size: DATA frames arrive in chunks of this size.
const CHUNK: usize = 16 * 1024;
/// KV blob round trips (a set, then a get of the same blob) spread over the stream.
const KV_ROUNDS: usize = 5;

/// xorshift64*: deterministic and dependency free.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const ASCII: &[u8] = b"abcdefghijklmnopqrstuvwxyz      etaoinshr.,";
const MULTI: [char; 6] = ['é', 'ü', '—', '→', '你', '🙂'];

/// A delta of 4 to 14 characters, ~6 % of them multi-byte.
fn text(rng: &mut Rng) -> String {
    let chars = 4 + rng.below(11);
    let mut out = String::new();
    for _ in 0..chars {
        if rng.below(100) < 6 {
            out.push(MULTI[rng.below(MULTI.len() as u64) as usize]);
        } else {
            out.push(char::from(ASCII[rng.below(ASCII.len() as u64) as usize]));
        }
    }
    out
}

fn update(message: interaction_update::Message) -> AgentServerMessage {
    AgentServerMessage {
        message: Some(agent_server_message::Message::InteractionUpdate(
            InteractionUpdate {
                message: Some(message),
                ..Default::default()
            },
        )),
        ..Default::default()
    }
}

fn kv(id: u32, message: kv_server_message::Message) -> AgentServerMessage {
    AgentServerMessage {
        message: Some(agent_server_message::Message::KvServerMessage(
            KvServerMessage {
                id,
                message: Some(message),
            },
        )),
        ..Default::default()
    }
}

/// The stream's protobuf payloads, in order.
fn messages(seed: u64) -> Vec<Vec<u8>> {
    use interaction_update::Message as U;
    let mut rng = Rng(seed);
    let kv_every = FRAMES / (KV_ROUNDS + 1);
    let mut out = Vec::with_capacity(FRAMES);
    for i in 0..FRAMES - 1 {
        if i > 0 && i % kv_every == 0 && i / kv_every <= KV_ROUNDS {
            let round = (i / kv_every) as u32;
            let data = format!("blob {round}").into_bytes();
            let id = cursor_agent::BlobId::of(&data).as_bytes().to_vec();
            out.push(
                kv(
                    2 * round,
                    kv_server_message::Message::SetBlobArgs(SetBlobArgs {
                        blob_id: id.clone(),
                        blob_data: Some(data),
                    }),
                )
                .encode_to_vec(),
            );
            out.push(
                kv(
                    2 * round + 1,
                    kv_server_message::Message::GetBlobArgs(cursor_proto::agent::v1::GetBlobArgs {
                        blob_id: id,
                    }),
                )
                .encode_to_vec(),
            );
            continue;
        }
        let roll = rng.below(100);
        let message = match roll {
            0..75 => U::TextDelta(TextDeltaUpdate {
                text: text(&mut rng),
            }),
            75..95 => U::ThinkingDelta(ThinkingDeltaUpdate {
                text: text(&mut rng),
            }),
            95..99 => U::TokenDelta(TokenDeltaUpdate {
                tokens: 1 + rng.below(8) as i32,
            }),
            _ => U::Heartbeat(HeartbeatUpdate {}),
        };
        out.push(update(message).encode_to_vec());
    }
    out.truncate(FRAMES - 1);
    out.push(
        update(U::TurnEnded(TurnEndedUpdate {
            input_tokens: Some(1200),
            output_tokens: Some(40_000),
            ..Default::default()
        }))
        .encode_to_vec(),
    );
    out
}

/// The enveloped stream cut into 16 KiB chunks.
fn chunks(messages: &[Vec<u8>]) -> Vec<Bytes> {
    let encoder = Encoder::new(Compression::Identity);
    let mut wire = BytesMut::new();
    for message in messages {
        encoder.encode(message, &mut wire).expect("small frame");
    }
    let wire = wire.freeze();
    (0..wire.len())
        .step_by(CHUNK)
        .map(|at| wire.slice(at..wire.len().min(at + CHUNK)))
        .collect()
}

/// How a frame's protobuf bytes reach the Run.
#[derive(Clone, Copy)]
enum Path {
    /// `handle_server_bytes`: the hot-path decoder, prost for the rest.
    Bytes,
    /// prost's full decode, then `handle_server_message` (the decode before the hot path).
    Prost,
}

/// One whole stream through a fresh Run, as a driver would run it. Returns the events seen.
fn run_stream(conversation: &Conversation, chunks: &[Bytes], path: Path) -> usize {
    let now = Instant::now();
    let mut run =
        AgentRun::new(RunConfig::new("m", "file:///w"), conversation, now).expect("run opens");
    while run.poll_transmit().is_some() {}
    let mut decoder = Decoder::new(Compression::Identity);
    let mut events = 0;
    for chunk in chunks {
        decoder.push_bytes(chunk.clone());
        while let Some(frame) = decoder.next_frame().expect("valid stream") {
            let Frame::Message(bytes) = frame else {
                break;
            };
            match path {
                Path::Bytes => run.handle_server_bytes(&bytes, now),
                Path::Prost => run.handle_server_message(
                    AgentServerMessage::decode(bytes).expect("valid frame"),
                    now,
                ),
            }
            while let Some(event) = run.poll_event() {
                black_box(&event);
                events += 1;
            }
            while let Some(frame) = run.poll_transmit() {
                black_box(frame);
            }
        }
    }
    assert!(
        run.is_finished() && run.failure().is_none(),
        "stream ends cleanly"
    );
    events
}

/// Envelope framing alone over the same chunks.
fn frame_only(chunks: &[Bytes]) -> usize {
    let mut decoder = Decoder::new(Compression::Identity);
    let mut bytes = 0;
    for chunk in chunks {
        decoder.push_bytes(chunk.clone());
        while let Some(Frame::Message(payload)) = decoder.next_frame().expect("valid stream") {
            bytes += black_box(payload).len();
        }
    }
    bytes
}

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

fn mixed_stream(c: &mut Criterion<CpuTime>) {
    let messages = messages(0x5eed_cafe_f00d_0001);
    let payload: usize = messages.iter().map(Vec::len).sum();
    let chunks = chunks(&messages);
    let conversation = Conversation::new("bench").with_message(Message::user_text("go"));
    println!(
        "mixed_stream: {FRAMES} frames, mean payload {:.1} B, {} chunks of 16 KiB, {} events",
        payload as f64 / FRAMES as f64,
        chunks.len(),
        run_stream(&conversation, &chunks, Path::Bytes),
    );
    // Allocations of one whole stream (the Run's own setup included), per frame.
    allocations("envelope", || frame_only(&chunks));
    allocations("prost", || run_stream(&conversation, &chunks, Path::Prost));
    allocations("hot", || run_stream(&conversation, &chunks, Path::Bytes));

    let mut group = c.benchmark_group("mixed_stream");
    group.throughput(Throughput::Elements(FRAMES as u64));
    group.sample_size(20);
    group.measurement_time(Duration::from_secs(8));
    group.bench_function("envelope_only_100k", |b| {
        b.iter(|| black_box(frame_only(&chunks)));
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
                black_box(cursor_agent::fuzzing::hot_decode(message));
            }
        });
    });
    group.bench_function("envelope_prost_run_drain_100k", |b| {
        b.iter(|| black_box(run_stream(&conversation, &chunks, Path::Prost)));
    });
    group.bench_function("envelope_decode_run_drain_100k", |b| {
        b.iter(|| black_box(run_stream(&conversation, &chunks, Path::Bytes)));
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().with_measurement(CpuTime);
    targets = mixed_stream
}
criterion_main!(benches);
