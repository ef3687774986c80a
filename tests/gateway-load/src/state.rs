//! Scenario `state`: 10 000 one-turn conversations (non-streaming chat, distinct user texts, 32
//! at a time) on a fresh gateway and state directory; the directory's size and the gateway's
//! RSS then, after a graceful stop (SIGTERM), after a plain restart on it, and, with
//! `--expire-flags`, after a restart with those flags and `--expire-wait` seconds.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::api::Api;
use crate::http::{self, Request};
use crate::procs::{DirSize, Gateway, Replica, dir_size, mem};
use crate::stats::{counts, counts_text, mib, ms, percentiles, round};
use crate::{BoxError, Setup, progress};

const AT_ONCE: usize = 32;
const TIMEOUT: Duration = Duration::from_secs(60);
const STOP_GRACE: Duration = Duration::from_secs(90);

/// One row of the report: a moment in the scenario.
struct Phase {
    name: String,
    size: DirSize,
    parts: Vec<(String, DirSize)>,
    rss_kib: Option<u64>,
    hwm_kib: Option<u64>,
    time_to_listening: Option<Duration>,
    note: String,
}

impl Phase {
    fn measure(name: &str, state: &Path, pid: Option<u32>) -> Self {
        let (size, parts) = dir_size(state);
        let memory = pid.and_then(mem);
        Self {
            name: name.to_owned(),
            size,
            parts,
            rss_kib: memory.map(|m| m.rss_kib),
            hwm_kib: memory.map(|m| m.hwm_kib),
            time_to_listening: None,
            note: String::new(),
        }
    }

    fn json(&self) -> Value {
        json!({
            "phase": self.name,
            "state": self.size.json(),
            "state_parts": self.parts.iter().map(|(name, size)| (name.clone(), size.json())).collect::<serde_json::Map<_, _>>(),
            "gateway_rss_mib": self.rss_kib.map(mib),
            "gateway_vmhwm_mib": self.hwm_kib.map(mib),
            "time_to_listening_ms": self.time_to_listening.map(ms),
            "note": self.note,
        })
    }
}

/// Runs the scenario.
pub(crate) async fn run(setup: &Setup) -> Result<Value, BoxError> {
    let total = setup.options.conversations;
    let replica = Replica::start(&setup.options.replica, &setup.work, &[]).await?;
    let state = setup.state_dir("state")?;
    let mut phases = Vec::new();
    let gateway =
        Gateway::start(&setup.spec, &replica.origin, &state, &[], "gateway-state-1").await?;
    let mut fresh = Phase::measure("fresh start (empty state)", &state, Some(gateway.pid));
    fresh.time_to_listening = Some(gateway.time_to_listening);
    phases.push(fresh);

    progress(&format!(
        "state: {total} one-turn conversations, {AT_ONCE} at a time"
    ));
    let addr = gateway.addr;
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let mut workers = tokio::task::JoinSet::new();
    for _ in 0..AT_ONCE {
        let next = next.clone();
        workers.spawn(async move {
            let mut outcomes = Vec::new();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= total {
                    break;
                }
                let request = Request {
                    path: Api::Chat.path(),
                    headers: Api::Chat.headers("load-a"),
                    body: Api::Chat.small_body(&format!("state conversation number {i}")),
                };
                outcomes.push(match http::send(addr, &request, TIMEOUT, false, 0).await {
                    Ok(response) => (response.status.to_string(), Some(response.total)),
                    Err(e) => (e.key(), None),
                });
                if i % 1000 == 999 {
                    progress(&format!("state: {} sent", i + 1));
                }
            }
            outcomes
        });
    }
    let mut outcomes = Vec::new();
    while let Some(done) = workers.join_next().await {
        outcomes.extend(done.unwrap_or_default());
    }
    let wall = started.elapsed();
    let statuses = counts(outcomes.iter().map(|(k, _)| k.clone()));
    let latencies: Vec<Duration> = outcomes.iter().filter_map(|(_, d)| *d).collect();
    let mut loaded = Phase::measure(
        &format!("after {total} conversations"),
        &state,
        Some(gateway.pid),
    );
    loaded.note = counts_text(&statuses);
    phases.push(loaded);

    let (exit, took) = gateway.terminate(STOP_GRACE).await;
    let mut stopped = Phase::measure("after SIGTERM", &state, None);
    stopped.note = format!(
        "{} in {:.0} ms",
        exit.map_or_else(|| "killed after the grace".to_owned(), |s| s.to_string()),
        ms(took)
    );
    phases.push(stopped);

    progress("state: plain restart");
    phases.push(
        restart(
            setup,
            &replica.origin,
            &state,
            &[],
            "plain restart",
            Duration::from_secs(1),
        )
        .await,
    );
    if let Some(flags) = &setup.options.expire_flags {
        progress(&format!("state: restart with {flags:?}"));
        let name = format!("restart with {}", flags.join(" "));
        phases.push(
            restart(
                setup,
                &replica.origin,
                &state,
                flags,
                &name,
                setup.options.expire_wait,
            )
            .await,
        );
        let mut after = Phase::measure("after that stop", &state, None);
        after.note = "state after the expiring gateway's SIGTERM".into();
        phases.push(after);
    }
    replica.stop().await;
    setup.drop_state(&state);

    print_tables(total, &phases, wall, &statuses);
    Ok(json!({
        "conversations": total,
        "at_once": AT_ONCE,
        "statuses": statuses,
        "wall_s": round(wall.as_secs_f64(), 2),
        "requests_per_second": round(outcomes.len() as f64 / wall.as_secs_f64(), 1),
        "request_latency": percentiles(&latencies),
        "expire_flags": setup.options.expire_flags,
        "expire_wait_s": setup.options.expire_wait.as_secs(),
        "phases": phases.iter().map(Phase::json).collect::<Vec<_>>(),
    }))
}

/// Starts the gateway on `state` with `flags`, measures at once, waits `wait`, measures the
/// directory and RSS again, and stops it.
async fn restart(
    setup: &Setup,
    origin: &str,
    state: &Path,
    flags: &[String],
    name: &str,
    wait: Duration,
) -> Phase {
    let label = format!("gateway-state-{}", name.replace(' ', "_").replace('-', ""));
    let gateway = match Gateway::start(&setup.spec, origin, state, flags, &label).await {
        Ok(gateway) => gateway,
        Err(e) => {
            let mut phase = Phase::measure(name, state, None);
            phase.note = format!("did not start: {e}");
            return phase;
        }
    };
    let at_listening = mem(gateway.pid);
    tokio::time::sleep(wait).await;
    let mut phase = Phase::measure(name, state, Some(gateway.pid));
    phase.time_to_listening = Some(gateway.time_to_listening);
    phase.note = format!(
        "RSS at LISTENING {} MiB; measured {} s later",
        at_listening.map_or(0.0, |m| mib(m.rss_kib)),
        wait.as_secs()
    );
    let (exit, took) = gateway.terminate(STOP_GRACE).await;
    phase.note.push_str(&format!(
        "; SIGTERM: {} in {:.0} ms",
        exit.map_or_else(|| "killed after the grace".to_owned(), |s| s.to_string()),
        ms(took)
    ));
    phase
}

fn print_tables(
    total: usize,
    phases: &[Phase],
    wall: Duration,
    statuses: &std::collections::BTreeMap<String, u64>,
) {
    println!(
        "## state: {total} one-turn chat conversations, {AT_ONCE} at a time ({:.1} s, {:.0} req/s; {})\n",
        wall.as_secs_f64(),
        total as f64 / wall.as_secs_f64(),
        counts_text(statuses)
    );
    println!(
        "| phase | state bytes | allocated | files | gateway RSS | VmHWM | to LISTENING | note |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    let opt_mib = |k: Option<u64>| k.map_or_else(|| "-".into(), |k| format!("{} MiB", mib(k)));
    for phase in phases {
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            phase.name,
            phase.size.bytes,
            phase.size.allocated,
            phase.size.files,
            opt_mib(phase.rss_kib),
            opt_mib(phase.hwm_kib),
            phase
                .time_to_listening
                .map_or_else(|| "-".into(), |d| format!("{:.0} ms", ms(d))),
            phase.note,
        );
    }
    println!("\nstate directory by entry (bytes / files):\n");
    let mut names: Vec<&String> = phases
        .iter()
        .flat_map(|p| p.parts.iter().map(|(n, _)| n))
        .collect();
    names.sort();
    names.dedup();
    print!("| entry |");
    for phase in phases {
        print!(" {} |", phase.name);
    }
    println!();
    println!("|---|{}", "---|".repeat(phases.len()));
    for name in names {
        print!("| {name} |");
        for phase in phases {
            match phase.parts.iter().find(|(n, _)| n == name) {
                Some((_, size)) => print!(" {} / {} |", size.bytes, size.files),
                None => print!(" - |"),
            }
        }
        println!();
    }
    println!();
}
