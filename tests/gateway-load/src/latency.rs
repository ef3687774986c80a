//! Scenario `latency`: 100 conversations of 5 streamed chat-completion turns each (the history
//! grows: user, the streamed answer, the next user text), all at once on a gateway with
//! `--max-turns 128`, and the same load one conversation at a time as the unloaded baseline.
//! The replica answers at once, so this is the gateway's own overhead plus loopback.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::api::{Api, MODEL};
use crate::http::{self, Request};
use crate::procs::{Gateway, Replica, mem};
use crate::stats::{self, counts, mib, percentiles, round};
use crate::{BoxError, Setup, progress};

const CONVERSATIONS: usize = 100;
const TURNS: usize = 5;
const TIMEOUT: Duration = Duration::from_secs(60);

/// Runs the loaded and the baseline pass, each on a fresh replica and gateway.
pub(crate) async fn run(setup: &Setup) -> Result<Value, BoxError> {
    let mut passes = Vec::new();
    for (name, concurrency) in [("concurrent", CONVERSATIONS), ("baseline", 1)] {
        progress(&format!("latency: {name} ({concurrency} at a time)"));
        let pass = match pass(setup, name, concurrency).await {
            Ok(value) => value,
            Err(e) => json!({"pass": name, "concurrency": concurrency, "error": e.to_string()}),
        };
        progress(&format!("latency: {pass}"));
        passes.push(pass);
    }
    println!(
        "## latency: {CONVERSATIONS} conversations × {TURNS} streamed chat turns (--max-turns 128)\n"
    );
    println!(
        "| pass | at once | first chunk p50 / p99 / max ms | end p50 / p99 / max ms | req/s | non-200 | errors | replica Runs |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for pass in &passes {
        if let Some(error) = pass["error"].as_str() {
            println!(
                "| {} | {} | error: {error} ||||||",
                pass["pass"], pass["concurrency"]
            );
            continue;
        }
        let (first, end) = (&pass["first_content"], &pass["end"]);
        println!(
            "| {} | {} | {} / {} / {} | {} / {} / {} | {} | {} | {} | {} |",
            pass["pass"].as_str().unwrap_or(""),
            pass["concurrency"],
            stats::cell(first, "p50_ms"),
            stats::cell(first, "p99_ms"),
            stats::cell(first, "max_ms"),
            stats::cell(end, "p50_ms"),
            stats::cell(end, "p99_ms"),
            stats::cell(end, "max_ms"),
            pass["requests_per_second"],
            pass["non_200"],
            pass["errors"],
            replica_runs_text(&pass["replica_runs"]),
        );
    }
    println!();
    Ok(json!({
        "conversations": CONVERSATIONS,
        "turns": TURNS,
        "gateway_flags": ["--max-turns", "128"],
        "passes": passes,
    }))
}

fn replica_runs_text(runs: &Value) -> String {
    let Some(map) = runs["labels"].as_object() else {
        return "-".into();
    };
    let mut parts: Vec<String> = map.iter().map(|(k, v)| format!("{k}×{v}")).collect();
    parts.push(format!("history replayed×{}", runs["history_replayed"]));
    parts.join(", ")
}

/// One turn's outcome.
struct Turn {
    status: Option<u16>,
    error: Option<String>,
    first: Option<Duration>,
    total: Duration,
    done: bool,
}

async fn pass(setup: &Setup, name: &str, concurrency: usize) -> Result<Value, BoxError> {
    let log = setup.work.join(format!("runs-{name}.jsonl"));
    let _ = std::fs::remove_file(&log);
    let replica = Replica::start(
        &setup.options.replica,
        &setup.work,
        &["--log".into(), log.display().to_string()],
    )
    .await?;
    let state = setup.state_dir(&format!("latency-{name}"))?;
    let gateway = Gateway::start(
        &setup.spec,
        &replica.origin,
        &state,
        &["--max-turns".into(), "128".into()],
        &format!("gateway-latency-{name}"),
    )
    .await?;
    let addr = gateway.addr;
    // One request first (key load-b): the upstream connection and lazy set-up are not timed.
    let warm = Request {
        path: Api::Chat.path(),
        headers: Api::Chat.headers("load-b"),
        body: Api::Chat.small_body("ping"),
    };
    let warm_status = match http::send(addr, &warm, TIMEOUT, false, 300).await {
        Ok(response) => response.status.to_string(),
        Err(e) => e.key(),
    };
    let before = mem(gateway.pid).unwrap_or_default();
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let mut workers = tokio::task::JoinSet::new();
    for _ in 0..concurrency {
        let next = next.clone();
        workers.spawn(async move {
            let mut turns = Vec::new();
            loop {
                let conversation = next.fetch_add(1, Ordering::Relaxed);
                if conversation >= CONVERSATIONS {
                    break;
                }
                conversation_turns(addr, conversation, &mut turns).await;
            }
            turns
        });
    }
    let mut turns = Vec::new();
    while let Some(done) = workers.join_next().await {
        turns.extend(done.unwrap_or_default());
    }
    let wall = started.elapsed();
    let after = mem(gateway.pid).unwrap_or_default();
    gateway.kill().await;
    replica.stop().await;
    setup.drop_state(&state);

    let ok: Vec<&Turn> = turns
        .iter()
        .filter(|t| t.status == Some(200) && t.done)
        .collect();
    let first: Vec<Duration> = ok.iter().filter_map(|t| t.first).collect();
    let end: Vec<Duration> = ok.iter().map(|t| t.total).collect();
    let statuses = counts(turns.iter().map(|t| match (t.status, &t.error) {
        (Some(status), _) => status.to_string(),
        (None, Some(e)) => e.clone(),
        (None, None) => "?".into(),
    }));
    let non_200 = turns
        .iter()
        .filter(|t| t.status.is_some_and(|s| s != 200))
        .count();
    let errors = turns.iter().filter(|t| t.status.is_none()).count();
    let without_done = turns
        .iter()
        .filter(|t| t.status == Some(200) && !t.done)
        .count();
    Ok(json!({
        "pass": name,
        "concurrency": concurrency,
        "warm_up_status": warm_status,
        "requests": turns.len(),
        "expected_requests": CONVERSATIONS * TURNS,
        "statuses": statuses,
        "non_200": non_200,
        "errors": errors,
        "ok_without_done": without_done,
        "first_content": percentiles(&first),
        "end": percentiles(&end),
        "wall_s": round(wall.as_secs_f64(), 3),
        "requests_per_second": round(turns.len() as f64 / wall.as_secs_f64(), 1),
        "gateway_rss_before_mib": mib(before.rss_kib),
        "gateway_rss_after_mib": mib(after.rss_kib),
        "gateway_vmhwm_mib": mib(after.hwm_kib),
        "replica_runs": replica_runs(&log),
    }))
}

/// The five turns of conversation `index`; stops at the first failed turn.
async fn conversation_turns(addr: std::net::SocketAddr, index: usize, turns: &mut Vec<Turn>) {
    let mut messages: Vec<Value> = Vec::new();
    for turn in 0..TURNS {
        let text = if turn == 0 {
            format!("conversation {index} starts here")
        } else {
            format!("conversation {index}, turn {turn}")
        };
        messages.push(json!({"role": "user", "content": text}));
        let body = json!({"model": MODEL, "stream": true, "messages": messages});
        let request = Request {
            path: Api::Chat.path(),
            headers: Api::Chat.headers("load-a"),
            body: body.to_string().into(),
        };
        let (outcome, answer) = match http::send(addr, &request, TIMEOUT, true, 300).await {
            Ok(response) => (
                Turn {
                    status: Some(response.status),
                    error: None,
                    first: response.first_content,
                    total: response.total,
                    done: response.done,
                },
                (response.status == 200 && response.done).then_some(response.streamed_text),
            ),
            Err(e) => (
                Turn {
                    status: None,
                    error: Some(e.key()),
                    first: None,
                    total: Duration::ZERO,
                    done: false,
                },
                None,
            ),
        };
        turns.push(outcome);
        let Some(answer) = answer else {
            return;
        };
        messages.push(json!({"role": "assistant", "content": answer}));
    }
}

/// The replica's Runs by label (`agent-resume`, `agent-rebuild`) and how many replayed history.
fn replica_runs(log: &std::path::Path) -> Value {
    let Ok(text) = std::fs::read_to_string(log) else {
        return Value::Null;
    };
    let records: Vec<Value> = text
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let labels = counts(records.iter().map(|r| {
        let label = r["label"].as_str().unwrap_or("");
        if label.is_empty() {
            "(none)".into()
        } else {
            label.to_owned()
        }
    }));
    json!({
        "runs": records.len(),
        "labels": labels,
        "history_replayed": records.iter().filter(|r| r["historyReplayed"] == true).count(),
        "outcomes": counts(records.iter().map(|r| r["outcome"].as_str().unwrap_or("").to_owned())),
    })
}
