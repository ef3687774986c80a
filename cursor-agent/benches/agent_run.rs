//! Frames per second through `AgentRun`: a recorded stream of 100 000 text deltas, protobuf
//! decode included, events drained as a driver would.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use cursor_agent::{AgentRun, RunConfig};
use cursor_proto::agent::v1::{
    AgentServerMessage, InteractionUpdate, TextDeltaUpdate, agent_server_message,
    interaction_update,
};
use cursor_proto::ir::{Conversation, Message};
use prost::Message as _;

const FRAMES: usize = 100_000;

fn recorded_stream() -> Vec<Vec<u8>> {
    (0..FRAMES)
        .map(|i| {
            AgentServerMessage {
                message: Some(agent_server_message::Message::InteractionUpdate(
                    InteractionUpdate {
                        message: Some(interaction_update::Message::TextDelta(TextDeltaUpdate {
                            text: format!("token {i} "),
                        })),
                        ..Default::default()
                    },
                )),
                ..Default::default()
            }
            .encode_to_vec()
        })
        .collect()
}

fn frames_per_second(c: &mut Criterion) {
    let stream = recorded_stream();
    let conversation = Conversation::new("bench").with_message(Message::user_text("go"));
    let mut group = c.benchmark_group("agent_run");
    group.throughput(Throughput::Elements(FRAMES as u64));
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(5));
    group.bench_function("text_deltas_100k", |b| {
        b.iter(|| {
            let now = Instant::now();
            let mut run = AgentRun::new(
                RunConfig::new("m", "file:///w", cursor_agent::IdSeed::fixed([1; 16])),
                &conversation,
                now,
            )
            .expect("run opens");
            while run.poll_transmit().is_some() {}
            for frame in &stream {
                run.handle_server_bytes(frame, now);
                while let Some(event) = run.poll_event() {
                    black_box(event);
                }
            }
            black_box(run.is_finished())
        });
    });
    group.finish();
}

/// Root prompt build time against history length: must grow linearly.
fn root_prompt_rebuild(c: &mut Criterion) {
    let config = RunConfig::new("m", "file:///w", cursor_agent::IdSeed::fixed([1; 16]));
    let mut group = c.benchmark_group("root_prompt");
    group.sample_size(10);
    for turns in [100usize, 1_000, 10_000] {
        let mut conversation = Conversation::new("system prompt");
        for i in 0..turns {
            conversation = conversation
                .with_message(Message::user_text(format!("question {i}")))
                .with_message(Message::assistant_text(format!("answer {i}")));
        }
        let conversation = conversation.with_message(Message::user_text("now"));
        group.throughput(Throughput::Elements(2 * turns as u64));
        group.bench_function(format!("history_{}", 2 * turns), |b| {
            b.iter(|| black_box(cursor_agent::root_prompt_json(&conversation, &config)));
        });
    }
    group.finish();
}

criterion_group!(benches, frames_per_second, root_prompt_rebuild);
criterion_main!(benches);
