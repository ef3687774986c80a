//! 1 000 concurrent Runs over one HTTP/2 connection to the loopback replica, each a short turn
//! with one MCP tool round; prints memory and turn-time numbers (issue 12, point 5).
//!
//! Every Run opens, streams its first leg until it yields the tool call, and then waits with
//! its stream open until all Runs are parked: that is when "RSS per idle Run" is taken. Then
//! every Run submits its tool result and finishes its second leg. One `Client` carries every
//! stream (the client keeps one connection per origin).
//!
//! Run with `cargo run --release -p cursor-examples --example many_runs [-- RUNS]`.
//! Numbers, not assertions: the goals (<= 64 KiB per idle Run, p99 turn time within 5x p50)
//! are for a reader to compare against.

use std::time::{Duration, Instant};

use cursor_agent::testing::Replica;
use cursor_agent::{AgentEvent, RunConfig, driver};
use cursor_proto::ir::{Conversation, Event, Message, StopReason, Tool, ToolResult};
use cursor_transport::{Client, RequestHeaders};
use serde_json::json;
use tokio::sync::Barrier;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// One Run's timings: its first leg (open → tool call), its second (submit → done).
struct Timing {
    first: Duration,
    second: Duration,
}

/// Resident set size and its peak, in KiB, from `/proc/self/status` (0 where unavailable).
fn rss_kib() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

fn conversation(i: usize) -> Conversation {
    Conversation::new("You are terse.")
        .with_tool(Tool::new(
            "add",
            "Add two numbers",
            json!({"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}}),
        ))
        .with_message(Message::user_text(format!(
            r#"tool: add {{"a": {i}, "b": 1}}"#
        )))
}

/// Reads events until the leg ends; returns the tool call ids seen and how it ended.
async fn leg(events: &mut driver::RunEvents) -> Result<(Vec<String>, StopReason), BoxError> {
    let mut calls = Vec::new();
    loop {
        match events.recv().await {
            Some(AgentEvent::Ir(Event::ToolCall(call))) => calls.push(call.id),
            Some(AgentEvent::Ir(Event::Done { reason })) => return Ok((calls, reason)),
            Some(AgentEvent::Ir(Event::Error(info))) => return Err(info.to_string().into()),
            Some(_) => {}
            None => return Err("the run ended without a final event".into()),
        }
    }
}

async fn one_run(
    client: Client,
    origin: cursor_transport::Origin,
    i: usize,
    parked: &Barrier,
    resume: &Barrier,
) -> Result<Timing, BoxError> {
    // A distinct seed per Run: the conversation id is minted from it.
    let mut seed = [7u8; 16];
    seed[..8].copy_from_slice(&(i as u64).to_le_bytes());
    let config = RunConfig::new(
        "composer-2.5",
        "file:///work",
        cursor_agent::IdSeed::fixed(seed),
    );
    let (handle, mut events, task) = driver::open(
        client,
        origin,
        RequestHeaders::new(),
        config,
        &conversation(i),
    )?;
    let task = tokio::spawn(task);
    let started = Instant::now();
    let (calls, reason) = leg(&mut events).await?;
    let first = started.elapsed();
    if reason != StopReason::ToolUse || calls.len() != 1 {
        return Err(format!("run {i}: first leg ended {reason:?} with {calls:?}").into());
    }
    parked.wait().await;
    resume.wait().await;
    let submitted = Instant::now();
    let sum = (i + 1).to_string();
    handle
        .submit_tool_results(vec![ToolResult::text(&calls[0], "add", &sum, false)])
        .await?;
    let (_, reason) = leg(&mut events).await?;
    let second = submitted.elapsed();
    if reason != StopReason::Stop {
        return Err(format!("run {i}: second leg ended {reason:?}").into());
    }
    drop(events);
    task.await?;
    Ok(Timing { first, second })
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let index = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[index.clamp(1, sorted.len()) - 1]
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), BoxError> {
    let runs: usize = match std::env::args().nth(1) {
        Some(arg) => arg.parse()?,
        None => 1_000,
    };
    let replica = Replica::start().await?;
    let client = Client::new()?;
    // Warm up: the connection, the runtime and the allocator, with one Run of the same shape.
    let (warm_parked, warm_resume) = (Barrier::new(1), Barrier::new(1));
    one_run(
        client.clone(),
        replica.origin(),
        0,
        &warm_parked,
        &warm_resume,
    )
    .await?;
    let (base_rss, _) = rss_kib();

    let parked = Barrier::new(runs + 1);
    let resume = Barrier::new(runs + 1);
    let wall = Instant::now();
    let all = futures_join(runs, |i| {
        one_run(client.clone(), replica.origin(), i, &parked, &resume)
    });
    let measure = async {
        parked.wait().await;
        let (idle_rss, _) = rss_kib();
        resume.wait().await;
        idle_rss
    };
    let (results, idle_rss) = tokio::join!(all, measure);
    let elapsed = wall.elapsed();
    let (_, peak_rss) = rss_kib();

    let mut failures = 0;
    let mut turns = Vec::with_capacity(runs);
    let mut firsts = Vec::with_capacity(runs);
    for result in results {
        match result {
            Ok(timing) => {
                firsts.push(timing.first);
                turns.push(timing.first + timing.second);
            }
            Err(error) => {
                failures += 1;
                eprintln!("{error}");
            }
        }
    }
    turns.sort_unstable();
    firsts.sort_unstable();
    let per_run = idle_rss.saturating_sub(base_rss) as f64 / runs as f64;
    println!(
        "{runs} concurrent runs (one tool round each) on one client: {} completed, {failures} failed, {:.2} s wall",
        turns.len(),
        elapsed.as_secs_f64()
    );
    println!(
        "rss: {base_rss} KiB before, {idle_rss} KiB with every run parked on its tool call, \
         peak {peak_rss} KiB; {per_run:.1} KiB per idle run (client and replica side together)"
    );
    if !turns.is_empty() {
        let p50 = percentile(&turns, 50.0);
        let p99 = percentile(&turns, 99.0);
        println!(
            "turn time (both legs, not the wait for the others): p50 {:.2} ms, p99 {:.2} ms, \
             max {:.2} ms, p99/p50 {:.2}; first leg p50 {:.2} ms, p99 {:.2} ms",
            p50.as_secs_f64() * 1e3,
            p99.as_secs_f64() * 1e3,
            turns[turns.len() - 1].as_secs_f64() * 1e3,
            p99.as_secs_f64() / p50.as_secs_f64(),
            percentile(&firsts, 50.0).as_secs_f64() * 1e3,
            percentile(&firsts, 99.0).as_secs_f64() * 1e3,
        );
    }
    if failures > 0 {
        return Err(format!("{failures} of {runs} runs failed").into());
    }
    Ok(())
}

/// Runs `count` futures made by `make` concurrently on this task and collects their outputs.
async fn futures_join<F, T>(count: usize, make: impl Fn(usize) -> F) -> Vec<T>
where
    F: Future<Output = T>,
{
    futures::future::join_all((0..count).map(make)).await
}
