//! End-to-end loopback latency: from a server frame written on the loopback h2 stream to the
//! driver's event on the host side (envelope, HTTP/2, decode, `AgentRun`, channel).
//!
//! Prints p50/p99 over 1 000 frames, then lets criterion measure the mean per frame.

use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use cursor_agent::driver::{self, RunEvents};
use cursor_agent::{AgentEvent, AgentRun, RunConfig};
use cursor_proto::agent::v1::{
    AgentClientMessage, AgentServerMessage, InteractionUpdate, TextDeltaUpdate,
    agent_server_message, interaction_update,
};
use cursor_proto::ir::{Conversation, Event, Message};
use cursor_transport::testing::{ServerCall, TestServer};
use cursor_transport::{Client, RequestHeaders};
use prost::Message as _;

const SAMPLES: usize = 1_000;

struct Loopback {
    _server: TestServer,
    call: ServerCall,
    events: RunEvents,
    frame: Vec<u8>,
    _task: tokio::task::JoinHandle<AgentRun>,
}

impl Loopback {
    async fn open() -> Self {
        let mut server = TestServer::start().await.expect("server");
        let conversation = Conversation::new("").with_message(Message::user_text("ping"));
        let run = AgentRun::new(
            RunConfig::new(
                "composer-2.5",
                "file:///work",
                cursor_agent::IdSeed::fixed([1; 16]),
            ),
            &conversation,
            driver::now(),
        )
        .expect("run");
        let client = Client::new().expect("client");
        let (_handle, events, task) =
            driver::start(client, server.origin(), RequestHeaders::new(), run);
        let task = tokio::spawn(task);
        let mut call = server.accept().await.expect("a call");
        let _: Option<AgentClientMessage> = call.recv_message().await.expect("run request");
        let frame = AgentServerMessage {
            message: Some(agent_server_message::Message::InteractionUpdate(
                InteractionUpdate {
                    message: Some(interaction_update::Message::TextDelta(TextDeltaUpdate {
                        text: "token ".into(),
                    })),
                    ..Default::default()
                },
            )),
            ..Default::default()
        }
        .encode_to_vec();
        Self {
            _server: server,
            call,
            events,
            frame,
            _task: task,
        }
    }

    /// One frame from the server to the host event.
    async fn one(&mut self) -> Duration {
        let start = Instant::now();
        self.call.send(&self.frame).await.expect("send");
        loop {
            match self.events.recv().await {
                Some(AgentEvent::Ir(Event::TextDelta { .. })) => return start.elapsed(),
                Some(_) => {}
                None => panic!("the run ended"),
            }
        }
    }
}

fn latency(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let mut loopback = runtime.block_on(Loopback::open());

    let mut samples: Vec<Duration> = runtime.block_on(async {
        let mut samples = Vec::with_capacity(SAMPLES);
        for _ in 0..SAMPLES {
            samples.push(loopback.one().await);
        }
        samples
    });
    samples.sort();
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q) as usize];
    println!(
        "loopback frame -> event over {SAMPLES} frames: p50 {:?}, p99 {:?}, max {:?}",
        at(0.50),
        at(0.99),
        samples[samples.len() - 1]
    );

    c.bench_function("loopback frame to driver event", |b| {
        b.iter_custom(|iters| {
            runtime.block_on(async {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    total += loopback.one().await;
                }
                total
            })
        });
    });
}

criterion_group!(benches, latency);
criterion_main!(benches);
