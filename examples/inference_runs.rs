//! One RunInference run per turn, or one per session? Measured on the loopback replica
//! (issue 20, point 4).
//!
//! A session is `TURNS` turns alternating a tool call and its result (every turn sends the
//! whole conversation, as RunInference keeps none). Mode `per-turn` opens a run for every turn
//! with `cursor_inference::driver` (what the inference channel does); mode `per-session`
//! opens one run and issues every turn as another `invoke_model` on it, read frame by frame.
//! Both go over one `Client` (one HTTP/2 connection). Prints the turn time (p50, p95, mean)
//! and, for `per-session`, the time to `run_ready` that its turns no longer pay.
//!
//! Run with `cargo run --release -p cursor-examples --example inference_runs [-- SESSIONS TURNS]`
//! (defaults 200 and 8).

use std::time::{Duration, Instant};

use cursor_inference::driver::{self, RUN_INFERENCE_PATH};
use cursor_inference::testing::Replica;
use cursor_inference::{InferenceConfig, request};
use cursor_proto::aiserver::v1::{
    RunInferenceClientMessage, RunInferenceFinishRun, RunInferenceServerMessage,
    run_inference_client_message::Message as ClientArm,
    run_inference_server_message::Message as ServerArm,
};
use cursor_proto::ir::{AssistantContent, Conversation, Event, Message, ToolCall, ToolResult};
use cursor_transport::{AccessToken, Client, IdeIdentity, Origin, RequestHeaders, RequestId};
use futures::StreamExt as _;
use serde_json::json;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

fn headers() -> Result<RequestHeaders, BoxError> {
    let identity = IdeIdentity::new("a".repeat(64), "b".repeat(64));
    Ok(RequestHeaders::ide(
        &AccessToken::new("replica-token"),
        &identity,
        &RequestId::generate()?,
        1_700_000_000_000,
    )?)
}

/// The conversation of turn `n` (0-based): tool asks and tool results alternate.
fn conversation(n: usize) -> Conversation {
    let mut conversation = Conversation::new("You are terse.");
    for k in 0..=n {
        if k % 2 == 0 {
            conversation = conversation.with_message(Message::user_text(format!(
                "tool: echo {{\"text\": \"turn {k}\"}}"
            )));
        } else {
            let call = ToolCall::new("call-1", "echo", json!({"text": format!("turn {}", k - 1)}));
            conversation = conversation
                .with_message(Message::Assistant {
                    content: vec![AssistantContent::ToolCall(call)],
                })
                .with_message(Message::ToolResult(ToolResult::text(
                    "call-1",
                    "echo",
                    format!("turn {}", k - 1),
                    false,
                )));
        }
    }
    conversation
}

async fn per_turn(
    client: &Client,
    origin: &Origin,
    turns: usize,
    times: &mut Vec<Duration>,
) -> Result<(), BoxError> {
    for n in 0..turns {
        let started = Instant::now();
        let config = InferenceConfig::new("composer-2.5")?;
        let (events, task) = driver::open(
            client.clone(),
            origin.clone(),
            headers()?,
            config,
            &conversation(n),
        );
        let task = tokio::spawn(task.into_future());
        let events: Vec<Event> = events.collect().await;
        times.push(started.elapsed());
        if !matches!(events.last(), Some(Event::Done { .. })) {
            return Err(format!("turn {n} did not end well: {events:?}").into());
        }
        // The run's drain after finish_run is not part of the host's turn.
        task.await?;
    }
    Ok(())
}

async fn per_session(
    client: &Client,
    origin: &Origin,
    turns: usize,
    times: &mut Vec<Duration>,
    readies: &mut Vec<Duration>,
) -> Result<(), BoxError> {
    let opened = Instant::now();
    let mut call = client.bidi(origin, RUN_INFERENCE_PATH, headers()?).await?;
    let config = InferenceConfig::new("composer-2.5")?;
    call.send_message(&request::run_request(&config, &conversation(0)))
        .await?;
    match call.recv_message::<RunInferenceServerMessage>().await? {
        Some(RunInferenceServerMessage {
            message: Some(ServerArm::RunReady(_)),
        }) => readies.push(opened.elapsed()),
        other => return Err(format!("run_ready first, not {other:?}").into()),
    }
    for n in 0..turns {
        let started = Instant::now();
        let config = InferenceConfig::new("composer-2.5")?;
        call.send_message(&request::invoke_model(&config, &conversation(n)))
            .await?;
        loop {
            let message = call
                .recv_message::<RunInferenceServerMessage>()
                .await?
                .and_then(|message| message.message);
            match message {
                Some(ServerArm::InvocationEnd(end)) if end.error.is_none() => break,
                Some(ServerArm::InvocationResponse(_)) => {}
                other => return Err(format!("turn {n}: {other:?}").into()),
            }
        }
        times.push(started.elapsed());
    }
    call.send_message(&RunInferenceClientMessage {
        message: Some(ClientArm::FinishRun(RunInferenceFinishRun {})),
    })
    .await?;
    call.close_send()?;
    while call.recv().await?.is_some() {}
    Ok(())
}

fn report(mode: &str, times: &mut [Duration]) {
    times.sort_unstable();
    let at = |q: f64| times[((times.len() - 1) as f64 * q) as usize];
    let mean = times.iter().sum::<Duration>() / u32::try_from(times.len()).unwrap_or(u32::MAX);
    println!(
        "{mode:>12}: {} turns, p50 {:?}, p95 {:?}, mean {:?}",
        times.len(),
        at(0.5),
        at(0.95),
        mean
    );
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), BoxError> {
    let mut args = std::env::args().skip(1);
    let sessions: usize = args.next().map(|a| a.parse()).transpose()?.unwrap_or(200);
    let turns: usize = args.next().map(|a| a.parse()).transpose()?.unwrap_or(8);
    let server = Replica::start().await?;
    let origin = server.origin();
    let client = Client::new()?;
    // Warm the connection so neither mode pays the TCP and HTTP/2 handshakes.
    per_turn(&client, &origin, 1, &mut Vec::new()).await?;

    let mut turn_times = Vec::new();
    let started = Instant::now();
    for _ in 0..sessions {
        per_turn(&client, &origin, turns, &mut turn_times).await?;
    }
    let per_turn_total = started.elapsed();

    let mut session_times = Vec::new();
    let mut readies = Vec::new();
    let started = Instant::now();
    for _ in 0..sessions {
        per_session(&client, &origin, turns, &mut session_times, &mut readies).await?;
    }
    let per_session_total = started.elapsed();

    println!("{sessions} sessions of {turns} turns on the loopback replica");
    report("per-turn", &mut turn_times);
    report("per-session", &mut session_times);
    report("run_ready", &mut readies);
    println!("   total: per-turn {per_turn_total:?}, per-session {per_session_total:?}");
    Ok(())
}
