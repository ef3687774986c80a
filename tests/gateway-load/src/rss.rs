//! Scenario `rss`: N concurrent maximum-size bodies of many one-letter content blocks on a fresh
//! gateway, per API; the gateway's peak RSS, the statuses, and whether a second key's small
//! requests (one every 250 ms) are still answered meanwhile.

use std::os::unix::process::ExitStatusExt as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::api::Api;
use crate::http::{self, Request};
use crate::procs::{Gateway, Replica, Sampler, mem};
use crate::stats::{counts, counts_text, mib, ms, percentiles, round};
use crate::{BoxError, Setup, progress};

/// The gateway's default `--max-body-bytes`.
const DEFAULT_MAX_BODY: usize = 33_554_432;
/// How far under it the bodies stay.
const UNDER: usize = 1024;
const REQUEST_TIMEOUT: Duration = Duration::from_secs(120);
const PING_TIMEOUT: Duration = Duration::from_secs(30);
const PING_EVERY: Duration = Duration::from_millis(250);

/// Runs every (N, API) pair.
pub(crate) async fn run(setup: &Setup) -> Result<Value, BoxError> {
    let bodies: Vec<(Api, bytes::Bytes)> = setup
        .options
        .rss_apis
        .iter()
        .map(|&api| (api, api.many_blocks_body(DEFAULT_MAX_BODY - UNDER)))
        .collect();
    let mut runs = Vec::new();
    for &n in &setup.options.rss_concurrency {
        for (api, body) in &bodies {
            progress(&format!("rss: {} × {n}", api.path()));
            let result = match one(setup, *api, n, body.clone()).await {
                Ok(value) => value,
                Err(e) => json!({"path": api.path(), "concurrency": n, "error": e.to_string()}),
            };
            progress(&format!("rss: {result}"));
            runs.push(result);
        }
    }
    print_table(&runs);
    Ok(json!({
        "body_bytes": bodies.iter().map(|(api, b)| (api.path().to_owned(), json!(b.len()))).collect::<serde_json::Map<_, _>>(),
        "request_timeout_s": REQUEST_TIMEOUT.as_secs(),
        "ping_timeout_s": PING_TIMEOUT.as_secs(),
        "rss_cap_mib": setup.options.rss_cap_kib / 1024,
        "scenario_cap_s": setup.options.scenario_cap.as_secs(),
        "runs": runs,
    }))
}

/// One fresh replica and gateway, N large requests from `load-a`, pings from `load-b`.
async fn one(setup: &Setup, api: Api, n: usize, body: bytes::Bytes) -> Result<Value, BoxError> {
    let replica = Replica::start(&setup.options.replica, &setup.work, &[]).await?;
    let name = format!(
        "rss-{}-{n}",
        api.path().trim_start_matches("/v1/").replace('/', "-")
    );
    let state = setup.state_dir(&name)?;
    let mut gateway = Gateway::start(
        &setup.spec,
        &replica.origin,
        &state,
        &[],
        &format!("gateway-{name}"),
    )
    .await?;
    let addr = gateway.addr;
    let ping = Request {
        path: api.path(),
        headers: api.headers("load-b"),
        body: api.small_body("ping"),
    };
    // One answered request first: the upstream connection and lazy set-up are not the peak.
    let warm = http::send(addr, &ping, PING_TIMEOUT, false, 400).await;
    let warm_status = match &warm {
        Ok(r) => r.status.to_string(),
        Err(e) => e.key(),
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let before = mem(gateway.pid).unwrap_or_default();
    let replica_before = mem(replica.pid).unwrap_or_default();
    let sampler = Sampler::start(gateway.pid, replica.pid, setup.options.rss_cap_kib);
    let big = Request {
        path: api.path(),
        headers: api.headers("load-a"),
        body,
    };
    let started = Instant::now();
    let mut requests = tokio::task::JoinSet::new();
    for _ in 0..n {
        let big = big.clone();
        requests.spawn(async move { http::send(addr, &big, REQUEST_TIMEOUT, false, 400).await });
    }
    let finished = Arc::new(AtomicBool::new(false));
    let pinger = tokio::spawn({
        let finished = finished.clone();
        async move {
            let mut sent = Vec::new();
            let mut tick = tokio::time::interval(PING_EVERY);
            loop {
                tick.tick().await;
                if finished.load(Ordering::Relaxed) {
                    break;
                }
                let at = started.elapsed();
                let ping = ping.clone();
                sent.push(tokio::spawn(async move {
                    (at, http::send(addr, &ping, PING_TIMEOUT, false, 400).await)
                }));
            }
            let mut results = Vec::new();
            for handle in sent {
                if let Ok(result) = handle.await {
                    results.push(result);
                }
            }
            results
        }
    });
    let deadline = tokio::time::sleep(setup.options.scenario_cap);
    tokio::pin!(deadline);
    let mut results = Vec::new();
    let mut timed_out_scenario = false;
    loop {
        tokio::select! {
            next = requests.join_next() => match next {
                Some(Ok(result)) => results.push(result),
                Some(Err(e)) => results.push(Err(http::Failure::Io(format!("task: {e}")))),
                None => break,
            },
            () = &mut deadline => {
                timed_out_scenario = true;
                requests.abort_all();
                break;
            }
        }
    }
    let wall = started.elapsed();
    let unfinished = n - results.len();
    finished.store(true, Ordering::Relaxed);
    let pings = pinger.await.unwrap_or_default();
    let end = mem(gateway.pid);
    let peaks = sampler.finish().await;
    let exit = gateway.exited();
    let alive = exit.is_none();
    let hwm = end.map_or_else(|| peaks.gateway_hwm.load(Ordering::Relaxed), |m| m.hwm_kib);
    let sampled = peaks.gateway_rss.load(Ordering::Relaxed);
    let capped = peaks.capped.load(Ordering::Relaxed);
    let stderr_tail = gateway.stderr_tail();
    gateway.kill().await;
    replica.stop().await;
    setup.drop_state(&state);

    let statuses = counts(results.iter().map(|r| match r {
        Ok(response) => response.status.to_string(),
        Err(e) => e.key(),
    }));
    let write_errors = counts(results.iter().filter_map(|r| match r {
        Ok(response) => response.write_error.clone(),
        Err(_) => None,
    }));
    let mut samples = serde_json::Map::new();
    for response in results.iter().flatten() {
        samples
            .entry(response.status.to_string())
            .or_insert_with(|| json!(String::from_utf8_lossy(&response.body_start)));
    }
    let mut ping_samples = serde_json::Map::new();
    for (_, response) in &pings {
        if let Ok(response) = response
            && response.status != 200
        {
            ping_samples
                .entry(response.status.to_string())
                .or_insert_with(|| json!(String::from_utf8_lossy(&response.body_start)));
        }
    }
    let latencies: Vec<Duration> = results.iter().flatten().map(|r| r.total).collect();
    let ping_statuses = counts(pings.iter().map(|(_, r)| match r {
        Ok(response) => response.status.to_string(),
        Err(e) => e.key(),
    }));
    let ping_answered: Vec<Duration> = pings
        .iter()
        .filter_map(|(_, r)| r.as_ref().ok().map(|r| r.total))
        .collect();
    let ping_ok = pings
        .iter()
        .filter(|(_, r)| r.as_ref().is_ok_and(|r| r.status == 200))
        .count();
    let exit_text = exit.map(|status| match status.signal() {
        Some(signal) => format!("killed by signal {signal}"),
        None => format!("exited {}", status.code().unwrap_or(-1)),
    });
    Ok(json!({
        "path": api.path(),
        "concurrency": n,
        "warm_up_status": warm_status,
        "gateway_rss_before_mib": mib(before.rss_kib),
        "gateway_vmhwm_mib": mib(hwm),
        "gateway_sampled_max_rss_mib": mib(sampled),
        "gateway_peak_minus_before_mib": mib(hwm.max(sampled).saturating_sub(before.rss_kib)),
        "gateway_rss_end_mib": end.map(|m| mib(m.rss_kib)),
        "replica_rss_before_mib": mib(replica_before.rss_kib),
        "replica_sampled_max_rss_mib": mib(peaks.replica_rss.load(Ordering::Relaxed)),
        "rss_samples": peaks.samples.load(Ordering::Relaxed),
        "statuses": statuses,
        "write_errors": write_errors,
        "response_samples": samples,
        "request_latency": percentiles(&latencies),
        "response_bytes_max": results.iter().flatten().map(|r| r.body_len).max(),
        "unfinished_at_scenario_cap": unfinished,
        "scenario_capped_by_time": timed_out_scenario,
        "killed_at_rss_cap": capped,
        "gateway_alive_at_end": alive,
        "gateway_exit": exit_text,
        "gateway_stderr_tail": if alive { Value::Null } else { json!(stderr_tail) },
        "wall_s": round(wall.as_secs_f64(), 2),
        "pings": {
            "sent": pings.len(),
            "ok_200": ping_ok,
            "statuses": ping_statuses,
            "response_samples": ping_samples,
            "latency": percentiles(&ping_answered),
            "max_latency_ms": ping_answered.iter().max().map(|d| ms(*d)),
        },
    }))
}

fn print_table(runs: &[Value]) {
    println!("## rss: N concurrent ~32 MiB bodies of one-letter content blocks (key load-a)\n");
    println!(
        "| API | N | RSS before | VmHWM | sampled max | peak − before | replica max | statuses | alive | key B pings (every 250 ms): statuses; max latency | wall s |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    for run in runs {
        if let Some(error) = run["error"].as_str() {
            println!(
                "| {} | {} | error: {error} |||||||||",
                run["path"].as_str().unwrap_or(""),
                run["concurrency"]
            );
            continue;
        }
        let statuses: std::collections::BTreeMap<String, u64> =
            serde_json::from_value(run["statuses"].clone()).unwrap_or_default();
        let mut status_text = counts_text(&statuses);
        if run["unfinished_at_scenario_cap"].as_u64().unwrap_or(0) > 0 {
            status_text.push_str(&format!(
                ", unfinished×{}",
                run["unfinished_at_scenario_cap"]
            ));
        }
        let alive = if run["gateway_alive_at_end"] == true {
            "yes".to_owned()
        } else if run["killed_at_rss_cap"] == true {
            "killed at RSS cap".to_owned()
        } else {
            format!("NO ({})", run["gateway_exit"].as_str().unwrap_or("?"))
        };
        let pings = &run["pings"];
        let ping_statuses: std::collections::BTreeMap<String, u64> =
            serde_json::from_value(pings["statuses"].clone()).unwrap_or_default();
        println!(
            "| {} | {} | {} MiB | {} MiB | {} MiB | {} MiB | {} MiB | {} | {} | {}; max {} ms | {} |",
            run["path"].as_str().unwrap_or(""),
            run["concurrency"],
            run["gateway_rss_before_mib"],
            run["gateway_vmhwm_mib"],
            run["gateway_sampled_max_rss_mib"],
            run["gateway_peak_minus_before_mib"],
            run["replica_sampled_max_rss_mib"],
            status_text,
            alive,
            counts_text(&ping_statuses),
            pings["max_latency_ms"]
                .as_f64()
                .map_or_else(|| "-".into(), |v| format!("{v:.0}")),
            run["wall_s"],
        );
    }
    println!();
    println!("Distinct non-200 answers (large requests and pings):\n");
    let mut seen = Vec::new();
    for run in runs {
        let big = run["response_samples"].as_object().into_iter().flatten();
        let pings = run["pings"]["response_samples"]
            .as_object()
            .into_iter()
            .flatten();
        for (status, text) in big.chain(pings) {
            let text = text.as_str().unwrap_or("");
            if status != "200" && !seen.contains(&(status.clone(), text.to_owned())) {
                seen.push((status.clone(), text.to_owned()));
                let short: String = text.chars().take(240).collect();
                println!(
                    "- {} × {}: {status}: {short}",
                    run["path"].as_str().unwrap_or(""),
                    run["concurrency"]
                );
            }
        }
    }
    if !seen.is_empty() {
        println!();
    }
}
