//! Root-prompt rebuild time against history length (1 000, 10 000 and 100 000 messages): the
//! cost of a rebuild after a stale resume. Time must grow linearly; the goal is at most 20 ms
//! for 10 000 messages.

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use cursor_agent::{RunConfig, root_prompt_json};
use cursor_proto::ir::{Conversation, Message, Tool};
use serde_json::json;

fn conversation(messages: usize) -> Conversation {
    let mut conversation = Conversation::new("You are a careful engineer.").with_tool(Tool::new(
        "bash",
        "Run a shell command",
        json!({"type": "object", "properties": {"command": {"type": "string"}}}),
    ));
    for i in 0..messages {
        conversation.messages.push(if i % 2 == 0 {
            Message::user_text(format!("question {i}: what does module {i} do?"))
        } else {
            Message::assistant_text(format!("answer {i}: it wires the parser to the store."))
        });
    }
    conversation.messages.push(Message::user_text("and now?"));
    conversation
}

fn rebuild(c: &mut Criterion) {
    let config = RunConfig::new(
        "composer-2.5",
        "file:///work",
        cursor_agent::IdSeed::fixed([1; 16]),
    );
    let mut group = c.benchmark_group("root_prompt_rebuild");
    group.sample_size(10);
    for messages in [1_000usize, 10_000, 100_000] {
        let conversation = conversation(messages);
        group.throughput(Throughput::Elements(messages as u64));
        group.bench_with_input(
            BenchmarkId::from_parameter(messages),
            &conversation,
            |b, conversation| b.iter(|| black_box(root_prompt_json(conversation, &config))),
        );
    }
    group.finish();
}

criterion_group!(benches, rebuild);
criterion_main!(benches);
