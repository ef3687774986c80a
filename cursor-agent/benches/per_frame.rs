//! The per-frame API against the zero-copy floor and the driver's path, on one recorded stream
//! (`support/stream.rs`: 100 000 mixed frames in 16 KiB chunks), in one run:
//!
//! - `floor`: a hand-written zero-copy decode: the envelopes framed in place, each bare text or
//!   thinking delta validated and appended to the host's text, the rest skipped;
//! - `per_frame`: `Decoder::next_frame` + `AgentRun::handle_server_bytes`, events (and frames
//!   to write) drained after every frame: each delta is its own event;
//! - `per_frame_ref`: the same with lent frames (`Decoder::next_frame_ref`);
//! - `per_frame_lent` and `per_frame_ref_lent`: the same two, drained with
//!   `AgentRun::poll_event_ref`, which lends each delta's text instead of handing over a new
//!   `String`;
//! - `per_frame_direct` and `per_frame_ref_direct`: the same two fed with
//!   `AgentRun::handle_server_bytes_ref`, which hands a delta back lent from the frame itself
//!   (one copy per delta, the floor's);
//! - `driver`: `AgentRun::handle_server_data` per chunk, drained per chunk, as the driver runs.
//!
//! Before criterion's rows it prints each path's median CPU time over interleaved rounds and
//! its ratio to the floor (the goal: the per-frame API within 1.5x of it, which its zero-copy
//! form, `per_frame_ref_direct`, meets). Times are the bench thread's CPU time
//! (`support/cpu_time.rs`). Run: `cargo bench -p cursor-agent --bench per_frame`.

use std::hint::black_box;
use std::time::{Duration, Instant};

use bytes::Bytes;
use cpu_time::CpuTime;
use criterion::measurement::Measurement as _;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use cursor_agent::{AgentEvent, AgentRun, EventRef, RunConfig};
use cursor_proto::ir::{Conversation, Event};
use cursor_transport::envelope::{Compression, Decoder, Frame, FrameRef};
use stream::{FRAMES, SEED, chunks, conversation, messages};

#[path = "support/cpu_time.rs"]
mod cpu_time;
#[path = "support/stream.rs"]
#[allow(dead_code)]
mod stream;

/// The host's view of a stream: the answer's text and thinking.
#[derive(Default)]
struct Answer {
    text: String,
    thinking: String,
}

/// A bare text or thinking delta (`interaction_update.{text,thinking}_delta.text`, one-byte
/// lengths): `(thinking, text bytes)`.
#[inline(always)]
fn bare_delta(frame: &[u8]) -> Option<(bool, &[u8])> {
    let &[
        0x0a,
        outer,
        arm @ (0x0a | 0x22),
        middle,
        0x0a,
        inner,
        ref text @ ..,
    ] = frame
    else {
        return None;
    };
    let len = text.len();
    (usize::from(outer) == len + 4 && usize::from(middle) == len + 2 && usize::from(inner) == len)
        .then_some((arm == 0x22, text))
}

/// The zero-copy floor: frames taken apart in place (a frame split across chunks is carried
/// over), each bare delta's text validated and appended to the answer.
fn floor(chunks: &[Bytes]) -> Answer {
    let mut answer = Answer::default();
    let mut carry: Vec<u8> = Vec::new();
    let take = |frame: &[u8], answer: &mut Answer| {
        if let Some((thinking, text)) = bare_delta(frame)
            && let Ok(text) = std::str::from_utf8(text)
        {
            if thinking {
                answer.thinking.push_str(text);
            } else {
                answer.text.push_str(text);
            }
        }
    };
    for chunk in chunks {
        let mut rest: &[u8] = chunk;
        if !carry.is_empty() {
            // Complete the frame the last chunk cut: its header, then its payload.
            if carry.len() < 5 {
                let n = (5 - carry.len()).min(rest.len());
                carry.extend_from_slice(&rest[..n]);
                rest = &rest[n..];
            }
            if carry.len() >= 5 {
                let n = (5 + frame_len(&carry) - carry.len()).min(rest.len());
                carry.extend_from_slice(&rest[..n]);
                rest = &rest[n..];
                if carry.len() == 5 + frame_len(&carry) {
                    take(&carry[5..], &mut answer);
                    carry.clear();
                }
            }
        }
        while rest.len() >= 5 && rest.len() >= 5 + frame_len(rest) {
            let len = frame_len(rest);
            take(&rest[5..5 + len], &mut answer);
            rest = &rest[5 + len..];
        }
        carry.extend_from_slice(rest);
    }
    answer
}

fn frame_len(header: &[u8]) -> usize {
    u32::from_be_bytes([header[1], header[2], header[3], header[4]]) as usize
}

/// The per-frame API: owned frames from the decoder, each fed and its events taken by `feed`.
fn per_frame(conversation: &Conversation, chunks: &[Bytes], feed: impl Feed) -> Answer {
    let now = Instant::now();
    let mut run = open_run(conversation, now);
    let mut decoder = Decoder::new(Compression::Identity);
    let mut answer = Answer::default();
    for chunk in chunks {
        decoder.push_bytes(chunk.clone());
        while let Some(Frame::Message(frame)) = decoder.next_frame().expect("valid stream") {
            feed(&mut run, &frame, now, &mut answer);
        }
    }
    assert!(run.is_finished() && run.failure().is_none());
    answer
}

/// The per-frame API with lent frames (`next_frame_ref`: no reference count per frame).
fn per_frame_ref(conversation: &Conversation, chunks: &[Bytes], feed: impl Feed) -> Answer {
    let now = Instant::now();
    let mut run = open_run(conversation, now);
    let mut decoder = Decoder::new(Compression::Identity);
    let mut answer = Answer::default();
    for chunk in chunks {
        decoder.push_bytes(chunk.clone());
        while let Some(FrameRef::Message(frame)) = decoder.next_frame_ref().expect("valid stream") {
            feed(&mut run, frame, now, &mut answer);
        }
    }
    assert!(run.is_finished() && run.failure().is_none());
    answer
}

/// The driver's path: body bytes per chunk, drained per chunk.
fn driver(conversation: &Conversation, chunks: &[Bytes]) -> Answer {
    let now = Instant::now();
    let mut run = open_run(conversation, now);
    let mut answer = Answer::default();
    for chunk in chunks {
        run.handle_server_data(chunk.clone(), now);
        drain(&mut run, &mut answer);
    }
    assert!(run.is_finished() && run.failure().is_none());
    answer
}

fn open_run(conversation: &Conversation, now: Instant) -> AgentRun {
    let config = RunConfig::new("m", "file:///w", cursor_agent::IdSeed::fixed([1; 16]));
    let mut run = AgentRun::new(config, conversation, now).expect("run opens");
    while run.poll_transmit().is_some() {}
    run
}

/// How a per-frame path gives the Run one frame and takes what it produced (a host's loop; a
/// generic, so each path is compiled as a host would write it, with no indirect call).
trait Feed: Fn(&mut AgentRun, &[u8], Instant, &mut Answer) + Copy {}
impl<F: Fn(&mut AgentRun, &[u8], Instant, &mut Answer) + Copy> Feed for F {}

/// `handle_server_bytes`, then the events handed over (`poll_event`: a `String` per delta).
fn queued(run: &mut AgentRun, frame: &[u8], now: Instant, answer: &mut Answer) {
    run.handle_server_bytes(frame, now);
    drain(run, answer);
}

/// `handle_server_bytes`, then the events with their delta text lent (`poll_event_ref`).
fn queued_lent(run: &mut AgentRun, frame: &[u8], now: Instant, answer: &mut Answer) {
    run.handle_server_bytes(frame, now);
    drain_lent(run, answer);
}

/// `handle_server_bytes_ref`: a delta comes back lent from the frame itself; anything else is
/// polled as in `queued_lent`.
fn direct(run: &mut AgentRun, frame: &[u8], now: Instant, answer: &mut Answer) {
    if let Some(event) = run.handle_server_bytes_ref(frame, now) {
        take_lent(event, answer);
    }
    drain_lent(run, answer);
}

/// What a host does with the Run's events: appends the deltas to its answer; here the events
/// are handed over (`poll_event`: a `String` per delta). Frames to write are dropped.
#[inline]
fn drain(run: &mut AgentRun, answer: &mut Answer) {
    while let Some(event) = run.poll_event() {
        match event {
            AgentEvent::Ir(Event::TextDelta { text }) => answer.text.push_str(&text),
            AgentEvent::Ir(Event::ThinkingDelta { text }) => answer.thinking.push_str(&text),
            other => drop(black_box(other)),
        }
    }
    while let Some(frame) = run.poll_transmit() {
        black_box(frame);
    }
}

/// Events with their delta text lent (`poll_event_ref`).
#[inline]
fn drain_lent(run: &mut AgentRun, answer: &mut Answer) {
    while let Some(event) = run.poll_event_ref() {
        take_lent(event, answer);
    }
    while let Some(frame) = run.poll_transmit() {
        black_box(frame);
    }
}

#[inline]
fn take_lent(event: EventRef<'_>, answer: &mut Answer) {
    match event {
        EventRef::TextDelta(text) => answer.text.push_str(&text),
        EventRef::ThinkingDelta(text) => answer.thinking.push_str(&text),
        other => drop(black_box(other)),
    }
}

/// Runs of a path per sample: the thread's CPU time advances in scheduler ticks (a few ms),
/// so one sample spans many runs.
const BATCH: usize = 64;

/// The paths' median CPU time per frame, in nanoseconds, over `rounds` rounds that
/// sample each path in turn (so drift of a shared machine affects all alike).
fn medians<const N: usize>(
    rounds: usize,
    paths: &mut [(&str, &mut dyn FnMut() -> Answer); N],
) -> [f64; N] {
    let mut times = [const { Vec::new() }; N];
    for round in 0..=rounds {
        for ((_, path), times) in paths.iter_mut().zip(&mut times) {
            let started = CpuTime.start();
            for _ in 0..BATCH {
                black_box(path());
            }
            // The first round warms caches and the allocator up.
            if round > 0 {
                times.push(CpuTime.end(started));
            }
        }
    }
    times.map(|mut times| {
        times.sort_unstable();
        times[times.len() / 2] as f64 / (BATCH * FRAMES) as f64
    })
}

fn per_frame_vs_floor(c: &mut Criterion<CpuTime>) {
    let messages = messages(SEED);
    let chunks = chunks(&messages);
    let conversation = conversation();
    // All three paths give the host the same answer.
    let want = floor(&chunks);
    for got in [
        per_frame(&conversation, &chunks, queued),
        per_frame(&conversation, &chunks, queued_lent),
        per_frame(&conversation, &chunks, direct),
        per_frame_ref(&conversation, &chunks, queued_lent),
        per_frame_ref(&conversation, &chunks, direct),
        driver(&conversation, &chunks),
    ] {
        assert!(got.text == want.text && got.thinking == want.thinking);
    }
    // `PER_FRAME_PROFILE=<a row's name, or floor>`: run that path alone (for callgrind).
    let mut paths: [(&str, &mut dyn FnMut() -> Answer); 8] = [
        ("floor", &mut || floor(&chunks)),
        ("per_frame", &mut || {
            per_frame(&conversation, &chunks, queued)
        }),
        ("per_frame_lent", &mut || {
            per_frame(&conversation, &chunks, queued_lent)
        }),
        ("per_frame_direct", &mut || {
            per_frame(&conversation, &chunks, direct)
        }),
        ("per_frame_ref", &mut || {
            per_frame_ref(&conversation, &chunks, queued)
        }),
        ("per_frame_ref_lent", &mut || {
            per_frame_ref(&conversation, &chunks, queued_lent)
        }),
        ("per_frame_ref_direct", &mut || {
            per_frame_ref(&conversation, &chunks, direct)
        }),
        ("driver", &mut || driver(&conversation, &chunks)),
    ];
    if let Ok(wanted) = std::env::var("PER_FRAME_PROFILE") {
        let (_, path) = paths
            .iter_mut()
            .find(|(name, _)| *name == wanted)
            .expect("PER_FRAME_PROFILE names a row");
        for _ in 0..5 {
            black_box(path());
        }
        std::process::exit(0);
    }

    let times = medians(9, &mut paths);
    let floor_ns = times[0];
    let rows: Vec<String> = paths[1..]
        .iter()
        .zip(&times[1..])
        .map(|((name, _), ns)| format!("{name} {ns:.1} ns/frame = {:.2}x floor", ns / floor_ns))
        .collect();
    println!(
        "per_frame ratios (median CPU time of 9 interleaved rounds of {BATCH} runs): floor \
         {floor_ns:.1} ns/frame; {}",
        rows.join("; ")
    );

    let mut group = c.benchmark_group("per_frame");
    group.throughput(Throughput::Elements(FRAMES as u64));
    group.sample_size(20);
    group.measurement_time(Duration::from_secs(5));
    for (name, path) in &mut paths {
        group.bench_function(format!("{name}_100k"), |b| b.iter(|| black_box(path())));
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().with_measurement(CpuTime);
    targets = per_frame_vs_floor
}
criterion_main!(benches);
