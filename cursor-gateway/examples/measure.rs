//! The numbers for the gateway, against the in-process replica on loopback (a
//! measurement, not a timed test):
//!
//! 1. added latency per streamed request against calling `AgentSession` directly (p50/p99 of
//!    first text and whole turn; each request a new conversation, handles written on both
//!    sides);
//! 2. history bytes the replica receives per request over a 20-request conversation with tool
//!    rounds (the root prompt's replayed user texts and tool results), beside what the client
//!    sends the gateway;
//! 3. 100 concurrent conversations on one process: all complete, requests per second, and the
//!    heap each idle conversation keeps (live bytes by a counting allocator, and RSS);
//! 4. the Anthropic Messages API as Claude Code speaks it: added latency per streamed request,
//!    history bytes over a 20-request conversation with tool rounds, and the `ping` interval
//!    observed while the model is silent for 30 s (`MEASURE_SILENCE_SECS` to change it).
//!
//! `cargo run --release -p cursor-gateway --features testing --example measure [N]`
//! (N latency samples, default 200).

use std::alloc::System;
use std::sync::Arc;
use std::time::{Duration, Instant};

use cursor_agent::prelude::*;
use cursor_agent::testing::Replica;
use cursor_catalog::CatalogStore;
use cursor_gateway::{Gateway, GatewayConfig, Limits};
use serde_json::{Value, json};
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// One POST over a fresh loopback connection: (time to the first text chunk, time to the end,
/// response body).
async fn post(
    addr: std::net::SocketAddr,
    path: &str,
    body: &str,
) -> Result<(Duration, Duration, String), BoxError> {
    let started = Instant::now();
    let mut stream = tokio::net::TcpStream::connect(addr).await?;
    stream.set_nodelay(true)?;
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await?;
    let mut received = Vec::new();
    let mut first = None;
    let mut buffer = [0u8; 16 * 1024];
    loop {
        let n = stream.read(&mut buffer).await?;
        if n == 0 {
            break;
        }
        received.extend_from_slice(&buffer[..n]);
        if first.is_none()
            && (contains(&received, b"\"content\":\"pong")
                || contains(&received, b"\"text\":\"pong"))
        {
            first = Some(started.elapsed());
        }
    }
    let total = started.elapsed();
    Ok((
        first.unwrap_or(total),
        total,
        String::from_utf8_lossy(&received).into_owned(),
    ))
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

fn percentile(samples: &mut [Duration], p: f64) -> Duration {
    samples.sort();
    let index = ((samples.len() as f64 - 1.0) * p).round() as usize;
    samples[index]
}

fn micros(d: Duration) -> String {
    format!("{:.0} µs", d.as_secs_f64() * 1e6)
}

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), BoxError> {
    let samples: usize = std::env::args()
        .nth(1)
        .map(|n| n.parse())
        .transpose()?
        .unwrap_or(200);
    let replica = Replica::start().await?;
    let state = tempfile::tempdir()?;
    // Room for section 3's 100 concurrent turns (the default allows 64 at once).
    let mut limits = Limits::DEFAULT;
    limits.max_turns = 128;
    // One client (no key): its share of turns must hold all 100 at once too.
    limits.max_turns_per_key = 128;
    let gateway = Gateway::new(
        GatewayConfig::new(
            Client::new()?,
            replica.origin(),
            Arc::new(StaticToken::new("token")),
            state.path().to_owned(),
            CatalogStore::from_static().catalog().clone(),
            "file:///tmp",
        )
        .with_limits(limits),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    drop(tokio::spawn(gateway.clone().serve(listener)));

    // 1. Latency: the same one-turn conversation, directly and through the gateway.
    let direct_handles = tempfile::tempdir()?;
    let direct_client = Client::new()?;
    let model = ModelChoice::new("composer-2.5");
    let (mut direct_first, mut direct_total) = (Vec::new(), Vec::new());
    let (mut gateway_first, mut gateway_total) = (Vec::new(), Vec::new());
    for i in 0..samples + 20 {
        let system = format!("latency run {i}");
        let session = AgentSession::builder(
            direct_client.clone(),
            replica.origin(),
            Arc::new(StaticToken::new("token")),
        )
        .profile(HostProfile::new("measure"))
        .workspace_uri("file:///tmp")
        .session_id(format!("direct-{i}"))
        .handles(Arc::new(HandleStore::new(direct_handles.path())))
        .build();
        let conversation =
            Conversation::new(system.clone()).with_message(Message::user_text("ping"));
        let started = Instant::now();
        let mut first = None;
        let mut turn = session.turn(&conversation, &model);
        while let Some(event) = turn.next().await {
            if first.is_none() && matches!(event, AgentEvent::Ir(Event::TextDelta { .. })) {
                first = Some(started.elapsed());
            }
        }
        let total = started.elapsed();
        let body = json!({"model": "composer-2.5", "stream": true, "messages": [
            {"role": "system", "content": format!("gateway {system}")},
            {"role": "user", "content": "ping"}
        ]})
        .to_string();
        let (g_first, g_total, response) = post(addr, "/v1/chat/completions", &body).await?;
        if !response.contains("[DONE]") {
            return Err(format!("the gateway did not finish: {response}").into());
        }
        if i >= 20 {
            direct_first.push(first.unwrap_or(total));
            direct_total.push(total);
            gateway_first.push(g_first);
            gateway_total.push(g_total);
        }
    }
    println!("## 1. Latency, {samples} streamed one-turn requests (after 20 warm-up)\n");
    println!("| | direct p50 | gateway p50 | added p50 | direct p99 | gateway p99 | added p99 |");
    println!("|---|---|---|---|---|---|---|");
    for (name, direct, via) in [
        ("first text", &mut direct_first, &mut gateway_first),
        ("whole turn", &mut direct_total, &mut gateway_total),
    ] {
        let (d50, g50) = (percentile(direct, 0.5), percentile(via, 0.5));
        let (d99, g99) = (percentile(direct, 0.99), percentile(via, 0.99));
        println!(
            "| {name} | {} | {} | {} | {} | {} | {} |",
            micros(d50),
            micros(g50),
            micros(g50.saturating_sub(d50)),
            micros(d99),
            micros(g99),
            micros(g99.saturating_sub(d99)),
        );
    }

    // 2. History bytes over a 20-request conversation: 10 user turns, each a tool round.
    println!("\n## 2. History sent per request, 20 requests (10 user turns × a tool round)\n");
    println!("| request | client → gateway bytes | Run | history bytes replayed to the replica |");
    println!("|---|---|---|---|");
    let tools = json!([{"type": "function", "function": {"name": "shout", "parameters": {
        "type": "object", "properties": {"text": {"type": "string"}}}}}]);
    let mut messages = vec![json!({"role": "system", "content": "history run"})];
    let mut replayed_total = 0usize;
    for turn in 0..10 {
        let prompt = format!("tool: shout {{\"text\": \"turn {turn} of the conversation\"}}");
        messages.push(json!({"role": "user", "content": prompt}));
        let runs_before = replica.runs().len();
        let mut sizes = Vec::new();
        for leg in 0..2 {
            let body =
                json!({"model": "composer-2.5", "messages": messages, "tools": tools}).to_string();
            sizes.push(body.len());
            let (_, _, response) = post(addr, "/v1/chat/completions", &body).await?;
            let json_body = response
                .split_once("\r\n\r\n")
                .map(|(_, b)| b)
                .unwrap_or_default();
            let reply: Value = serde_json::from_str(json_body)?;
            let message = reply["choices"][0]["message"].clone();
            messages.push(message.clone());
            if leg == 0 {
                let call = &message["tool_calls"][0];
                let arguments = call["function"]["arguments"].as_str().unwrap_or("{}");
                let text: Value = serde_json::from_str(arguments)?;
                let shouted = text["text"].as_str().unwrap_or_default().to_uppercase();
                messages
                    .push(json!({"role": "tool", "tool_call_id": call["id"], "content": shouted}));
            }
        }
        // The replica records a Run when it ends: after the turn's second request.
        let runs = replica.runs();
        let opened = &runs[runs_before..];
        let replayed: usize = opened
            .iter()
            .map(|run| {
                let users: usize = run.root_prompt_user_texts.iter().map(String::len).sum();
                let results: usize = run.root_prompt_tool_results.iter().map(String::len).sum();
                users + results
            })
            .sum();
        replayed_total += replayed;
        let labels: Vec<&str> = opened.iter().map(|run| run.label.as_str()).collect();
        println!(
            "| {} | {} | opened: {} | {replayed} |",
            2 * turn + 1,
            sizes[0],
            labels.join(", ")
        );
        println!(
            "| {} | {} | continued the same Run (tool results) | 0 |",
            2 * turn + 2,
            sizes[1]
        );
    }
    println!(
        "\nreplayed in total: {replayed_total} bytes; Runs opened: {}",
        replica.runs().len() - 2 * samples - 40
    );

    // 3. 100 concurrent conversations: all complete; live heap per idle conversation. The
    // replica runs in this process and keeps every conversation too: its share is measured
    // first, with 100 direct one-turn sessions that are dropped afterwards.
    let region = Region::new(GLOBAL);
    let mut direct = Vec::new();
    for i in 0..100 {
        let session = AgentSession::builder(
            direct_client.clone(),
            replica.origin(),
            Arc::new(StaticToken::new("token")),
        )
        .profile(HostProfile::new("measure"))
        .workspace_uri("file:///tmp")
        .build();
        direct.push(tokio::spawn(async move {
            let conversation = Conversation::new(format!("replica share {i}"))
                .with_message(Message::user_text("ping"));
            let mut turn = session.turn(&conversation, &ModelChoice::new("composer-2.5"));
            while turn.next().await.is_some() {}
        }));
    }
    for task in direct {
        task.await?;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let change = region.change();
    let replica_share = change.bytes_allocated as i64 - change.bytes_deallocated as i64;

    // What the gateway itself holds per idle conversation: a session and its slot's lock,
    // built alone.
    let region = Region::new(GLOBAL);
    let held: Vec<(AgentSession, Arc<tokio::sync::Mutex<()>>)> = (0..100)
        .map(|i| {
            let session = AgentSession::builder(
                direct_client.clone(),
                replica.origin(),
                Arc::new(StaticToken::new("token")),
            )
            .profile(
                HostProfile::new("cursor-gateway")
                    .with_continuation_prompt("Continue from the tool results above."),
            )
            .workspace_uri("file:///tmp")
            .session_id(format!("chat-{i:032x}"))
            .handles(Arc::new(HandleStore::new(state.path())))
            .build();
            (session, Arc::new(tokio::sync::Mutex::new(())))
        })
        .collect();
    let change = region.change();
    let session_bytes = (change.bytes_allocated as i64 - change.bytes_deallocated as i64) / 100;
    drop(held);

    let conversations_before = gateway.conversations();
    let rss_before = rss_kib();
    let region = Region::new(GLOBAL);
    let burst = Instant::now();
    let mut tasks = Vec::new();
    for i in 0..100 {
        let body = json!({"model": "composer-2.5", "stream": true, "messages": [
            {"role": "system", "content": format!("concurrent {i}")},
            {"role": "user", "content": "ping"}
        ]})
        .to_string();
        tasks.push(tokio::spawn(async move {
            post(addr, "/v1/chat/completions", &body).await
        }));
    }
    let mut completed = 0;
    for task in tasks {
        let (_, _, response) = task.await??;
        if response.contains("[DONE]") && response.contains("pong") {
            completed += 1;
        }
    }
    let burst = burst.elapsed();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let change = region.change();
    let live = change.bytes_allocated as i64 - change.bytes_deallocated as i64;
    let new_conversations = gateway.conversations() - conversations_before;
    println!("\n## 3. 100 concurrent conversations\n");
    println!(
        "completed: {completed}/100 in {} ms ({:.0} requests/s); conversations held: {new_conversations}",
        burst.as_millis(),
        100.0 / burst.as_secs_f64()
    );
    println!(
        "live heap after they went idle, per conversation: {} bytes with the in-process \
         replica's copy; the replica's share alone (100 direct one-turn conversations, sessions \
         dropped): {} bytes; an idle session as the gateway holds it, built alone: \
         {session_bytes} bytes",
        live / 100,
        replica_share / 100
    );
    println!("RSS: {rss_before} KiB before, {} KiB after", rss_kib());

    anthropic(addr, &replica, samples, &direct_client).await
}

/// Section 4: the Anthropic Messages API.
async fn anthropic(
    addr: std::net::SocketAddr,
    replica: &cursor_agent::testing::ReplicaServer,
    samples: usize,
    direct_client: &Client,
) -> Result<(), BoxError> {
    let direct_handles = tempfile::tempdir()?;
    let model = ModelChoice::new("composer-2.5");
    let (mut direct_total, mut gateway_total) = (Vec::new(), Vec::new());
    for i in 0..samples + 20 {
        let session = AgentSession::builder(
            direct_client.clone(),
            replica.origin(),
            Arc::new(StaticToken::new("token")),
        )
        .profile(HostProfile::new("measure"))
        .workspace_uri("file:///tmp")
        .session_id(format!("direct-anthropic-{i}"))
        .handles(Arc::new(HandleStore::new(direct_handles.path())))
        .build();
        let conversation = Conversation::new(format!("anthropic latency {i}"))
            .with_message(Message::user_text("ping"));
        let started = Instant::now();
        let mut turn = session.turn(&conversation, &model);
        while turn.next().await.is_some() {}
        let total = started.elapsed();
        let body =
            json!({"model": "claude-cursor-composer-2.5", "max_tokens": 1024, "stream": true,
            "system": [{"type": "text", "text": format!("gateway anthropic latency {i}")}],
            "messages": [{"role": "user", "content": "ping"}]})
            .to_string();
        let (_, g_total, response) = post(addr, "/v1/messages", &body).await?;
        if !response.contains("message_stop") {
            return Err(format!("the gateway did not finish: {response}").into());
        }
        if i >= 20 {
            direct_total.push(total);
            gateway_total.push(g_total);
        }
    }
    println!("\n## 4. Anthropic Messages API\n");
    let (d50, g50) = (
        percentile(&mut direct_total, 0.5),
        percentile(&mut gateway_total, 0.5),
    );
    let (d99, g99) = (
        percentile(&mut direct_total, 0.99),
        percentile(&mut gateway_total, 0.99),
    );
    println!(
        "whole streamed turn, {samples} requests: direct p50 {} / gateway p50 {} (added {}); \
         direct p99 {} / gateway p99 {} (added {})",
        micros(d50),
        micros(g50),
        micros(g50.saturating_sub(d50)),
        micros(d99),
        micros(g99),
        micros(g99.saturating_sub(d99))
    );

    // History over 20 requests shaped as Claude Code sends them: context blocks before the
    // prompt, a system-role entry, tools, a tool round per user turn.
    let tools = json!([{"name": "shout", "input_schema": {"type": "object", "properties": {"text": {"type": "string"}}}}]);
    let mut messages: Vec<Value> = Vec::new();
    let runs_before = replica.runs().len();
    let mut client_bytes = Vec::new();
    for turn in 0..10 {
        messages.push(json!({"role": "user", "content": [
            {"type": "text", "text": "<system-reminder>\nproject facts\n</system-reminder>"},
            {"type": "text", "text": format!("tool: shout {{\"text\": \"turn {turn}\"}}")}
        ]}));
        if turn == 0 {
            messages.push(
                json!({"role": "system", "content": [{"type": "text", "text": "# Environment"}]}),
            );
        }
        for leg in 0..2 {
            let body = json!({"model": "claude-cursor-composer-2.5", "max_tokens": 32000,
                "system": [{"type": "text", "text": "You are Claude Code."}],
                "messages": messages, "tools": tools,
                "metadata": {"user_id": "{\"session_id\":\"measure-cc\"}"}})
            .to_string();
            client_bytes.push(body.len());
            let (_, _, response) = post(addr, "/v1/messages", &body).await?;
            let reply: Value = serde_json::from_str(
                response
                    .split_once("\r\n\r\n")
                    .map(|(_, b)| b)
                    .unwrap_or_default(),
            )?;
            messages.push(json!({"role": "assistant", "content": reply["content"].clone()}));
            if leg == 0 {
                let call = reply["content"]
                    .as_array()
                    .and_then(|c| c.iter().find(|b| b["type"] == "tool_use"))
                    .cloned()
                    .unwrap_or_default();
                let shouted = call["input"]["text"]
                    .as_str()
                    .unwrap_or_default()
                    .to_uppercase();
                messages.push(json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": call["id"], "content": shouted}]}));
            }
        }
    }
    let runs = &replica.runs()[runs_before..];
    let replayed: usize = runs
        .iter()
        .map(|run| {
            run.root_prompt_user_texts
                .iter()
                .map(String::len)
                .sum::<usize>()
                + run
                    .root_prompt_tool_results
                    .iter()
                    .map(String::len)
                    .sum::<usize>()
        })
        .sum();
    let labels: Vec<&str> = runs.iter().map(|run| run.label.as_str()).collect();
    println!(
        "20 requests (10 user turns, each a tool round): client sent {} → {} bytes per request; \
         Runs: {} ({}); history bytes replayed to the replica: {replayed}",
        client_bytes.first().unwrap_or(&0),
        client_bytes.last().unwrap_or(&0),
        runs.len(),
        labels.join(", ")
    );

    // Pings while the model says nothing.
    let silence: u64 = std::env::var("MEASURE_SILENCE_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(30);
    replica
        .replica()
        .script(cursor_agent::testing::Script::Silent);
    let body = json!({"model": "claude-cursor-composer-2.5", "max_tokens": 1024, "stream": true,
        "messages": [{"role": "user", "content": "think quietly"}]})
    .to_string();
    let mut stream = tokio::net::TcpStream::connect(addr).await?;
    let request = format!(
        "POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await?;
    let started = Instant::now();
    let mut pings = Vec::new();
    let mut buffer = [0u8; 4096];
    while started.elapsed() < Duration::from_secs(silence) {
        let left = Duration::from_secs(silence).saturating_sub(started.elapsed());
        match tokio::time::timeout(left, stream.read(&mut buffer)).await {
            Ok(Ok(0)) | Err(_) => break,
            Ok(Ok(n)) => {
                let text = String::from_utf8_lossy(&buffer[..n]);
                for _ in 0..text.matches("event: ping").count() {
                    pings.push(started.elapsed());
                }
            }
            Ok(Err(e)) => return Err(e.into()),
        }
    }
    let gaps: Vec<Duration> = pings.windows(2).map(|w| w[1] - w[0]).collect();
    let widest = gaps.iter().max().copied().unwrap_or_default();
    println!(
        "silent model for {silence} s: {} pings, first after {} ms, widest gap {} ms",
        pings.len(),
        pings.first().map_or(0, Duration::as_millis),
        widest.as_millis()
    );
    Ok(())
}
