//! `gateway-load`: the numbers an issue note about `cursor-gateway` needs, measured against any
//! gateway binary (old or new) and the standalone replica, so two builds can be compared:
//!
//! - `rss`: peak memory under N concurrent maximum-size bodies of many small content blocks,
//!   on each API, while a second key's small requests show whether the gateway still answers;
//! - `latency`: time to first content chunk and to the end of streamed chat turns, 100
//!   concurrent conversations of 5 turns against one at a time;
//! - `state`: the state directory and RSS after 10 000 one-turn conversations, after a
//!   graceful stop, and across restarts (optionally with expiry flags).
//!
//! A measuring harness, not a test: see README.md.
//!
//! `cargo run --release -p gateway-load -- --gateway PATH --replica PATH [--only rss|latency|state]
//! [--out FILE.json]`

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

mod api;
mod http;
mod latency;
mod procs;
mod rss;
mod state;
mod stats;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

const USAGE: &str = "\
usage: gateway-load --gateway PATH --replica PATH [options]
  --only rss|latency|state    run one scenario (repeatable, or comma-separated; default all)
  --out FILE.json             write every number as JSON
  --expire-flags \"FLAGS\"      state: restart once more with these extra gateway flags
  --expire-wait SECS          state: how long to wait after that restart (default 5)
  --conversations N           state: one-turn conversations (default 10000)
  --rss-concurrency LIST      rss: concurrent large requests (default 8,64)
  --rss-apis LIST             rss: messages,chat,responses (default all three)
  --rss-cap-mib MIB           rss: kill gateway and replica past this RSS together (default 12288)
  --scenario-cap-secs SECS    rss: stop waiting for a run's large requests after this (default 300)
  --gateway-flags \"FLAGS\"     extra flags for every gateway started (after the harness's own)
  --keep                      keep the work directory (state dirs, logs)";

/// The command line.
#[derive(Clone, Debug)]
pub(crate) struct Options {
    pub(crate) gateway: PathBuf,
    pub(crate) replica: PathBuf,
    pub(crate) only: Vec<String>,
    pub(crate) out: Option<PathBuf>,
    pub(crate) expire_flags: Option<Vec<String>>,
    /// Flags every gateway gets (a newer binary's settings, such as per-key caps).
    pub(crate) gateway_flags: Vec<String>,
    pub(crate) expire_wait: Duration,
    pub(crate) conversations: usize,
    pub(crate) rss_concurrency: Vec<usize>,
    pub(crate) rss_apis: Vec<api::Api>,
    pub(crate) rss_cap_kib: u64,
    pub(crate) scenario_cap: Duration,
    pub(crate) keep: bool,
}

fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Options, String> {
    let mut gateway = None;
    let mut replica = None;
    let mut options = Options {
        gateway: PathBuf::new(),
        replica: PathBuf::new(),
        only: Vec::new(),
        out: None,
        expire_flags: None,
        gateway_flags: Vec::new(),
        expire_wait: Duration::from_secs(5),
        conversations: 10_000,
        rss_concurrency: vec![8, 64],
        rss_apis: api::Api::ALL.to_vec(),
        rss_cap_kib: 12_288 * 1024,
        scenario_cap: Duration::from_secs(300),
        keep: false,
    };
    while let Some(flag) = args.next() {
        if flag == "--keep" {
            options.keep = true;
            continue;
        }
        if flag == "-h" || flag == "--help" {
            return Err(String::new());
        }
        let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let number = |v: &str| v.parse::<u64>().map_err(|e| format!("{flag} {v}: {e}"));
        match flag.as_str() {
            "--gateway" => gateway = Some(PathBuf::from(value)),
            "--replica" => replica = Some(PathBuf::from(value)),
            "--only" => {
                for name in value.split(',') {
                    if !matches!(name, "rss" | "latency" | "state") {
                        return Err(format!("--only {name}: rss, latency or state"));
                    }
                    options.only.push(name.to_owned());
                }
            }
            "--out" => options.out = Some(PathBuf::from(value)),
            "--expire-flags" => {
                options.expire_flags = Some(value.split_whitespace().map(String::from).collect());
            }
            "--gateway-flags" => {
                options.gateway_flags = value.split_whitespace().map(String::from).collect();
            }
            "--expire-wait" => options.expire_wait = Duration::from_secs(number(&value)?),
            "--conversations" => options.conversations = number(&value)? as usize,
            "--rss-concurrency" => {
                options.rss_concurrency = value
                    .split(',')
                    .map(|n| number(n).map(|n| n as usize))
                    .collect::<Result<_, _>>()?;
            }
            "--rss-apis" => {
                options.rss_apis = value
                    .split(',')
                    .map(|name| {
                        api::Api::named(name).ok_or_else(|| {
                            format!("--rss-apis {name}: messages, chat or responses")
                        })
                    })
                    .collect::<Result<_, _>>()?;
            }
            "--rss-cap-mib" => options.rss_cap_kib = number(&value)? * 1024,
            "--scenario-cap-secs" => options.scenario_cap = Duration::from_secs(number(&value)?),
            other => return Err(format!("unknown option {other}")),
        }
    }
    options.gateway = gateway.ok_or("--gateway is required")?;
    options.replica = replica.ok_or("--replica is required")?;
    Ok(options)
}

/// Where one run keeps its state directories, logs and the keys file.
#[derive(Debug)]
pub(crate) struct Setup {
    pub(crate) options: Options,
    pub(crate) work: PathBuf,
    pub(crate) spec: procs::GatewaySpec,
}

impl Setup {
    /// A fresh, empty state directory named `name`.
    pub(crate) fn state_dir(&self, name: &str) -> Result<PathBuf, BoxError> {
        let dir = self.work.join(format!("state-{name}"));
        if dir.exists() {
            std::fs::remove_dir_all(&dir)?;
        }
        std::fs::create_dir_all(&dir)?;
        Ok(dir)
    }

    /// Removes a state directory a scenario is done with (unless `--keep`).
    pub(crate) fn drop_state(&self, dir: &std::path::Path) {
        if !self.options.keep {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// Progress on stderr (stdout carries the report).
pub(crate) fn progress(message: &str) {
    eprintln!("[gateway-load] {message}");
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let options = match parse_args(std::env::args().skip(1)) {
        Ok(options) => options,
        Err(e) => {
            if !e.is_empty() {
                eprintln!("gateway-load: {e}");
            }
            eprintln!("{USAGE}");
            std::process::exit(2);
        }
    };
    if let Err(e) = run(options).await {
        eprintln!("gateway-load: {e}");
        std::process::exit(1);
    }
}

async fn run(options: Options) -> Result<(), BoxError> {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)?
        .subsec_nanos();
    let work = std::env::temp_dir().join(format!("gateway-load-{}-{nanos}", std::process::id()));
    std::fs::create_dir_all(work.join("home"))?;
    let keys_file = work.join("keys");
    std::fs::write(&keys_file, "# gateway-load's two clients\nload-a\nload-b\n")?;
    let version = std::process::Command::new(&options.gateway)
        .arg("--version")
        .env("HOME", work.join("home"))
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_else(|e| format!("--version failed: {e}"));
    let setup = Setup {
        spec: procs::GatewaySpec {
            binary: options.gateway.clone(),
            work: work.clone(),
            keys_file,
            flags: options.gateway_flags.clone(),
        },
        work: work.clone(),
        options,
    };
    println!("# gateway-load\n");
    println!("gateway: {} ({version})", setup.options.gateway.display());
    println!("replica: {}", setup.options.replica.display());
    println!(
        "machine: {} cores, {} MiB memory\n",
        std::thread::available_parallelism().map_or(0, usize::from),
        meminfo_total_kib() / 1024
    );
    let wanted =
        |name: &str| setup.options.only.is_empty() || setup.options.only.iter().any(|o| o == name);
    let mut report = json!({
        "gateway": setup.options.gateway.display().to_string(),
        "gateway_version": version,
        "replica": setup.options.replica.display().to_string(),
    });
    let mut timings = serde_json::Map::new();
    for name in ["rss", "latency", "state"] {
        if !wanted(name) {
            continue;
        }
        let started = Instant::now();
        let load = loadavg();
        progress(&format!("scenario {name} (load average {load})"));
        let result = match name {
            "rss" => rss::run(&setup).await,
            "latency" => latency::run(&setup).await,
            _ => state::run(&setup).await,
        };
        let mut result = result.unwrap_or_else(|e| {
            println!("\n{name}: FAILED: {e}\n");
            json!({"error": e.to_string()})
        });
        if let Some(object) = result.as_object_mut() {
            object.insert("load_average_before".into(), json!(load));
            object.insert("load_average_after".into(), json!(loadavg()));
        }
        let secs = started.elapsed().as_secs_f64();
        println!(
            "({name} took {secs:.1} s; load average before {load}, after {})\n",
            loadavg()
        );
        timings.insert(name.to_owned(), json!(stats::round(secs, 1)));
        report[name] = result;
    }
    report["scenario_seconds"] = Value::Object(timings);
    let text = serde_json::to_string_pretty(&report)?;
    if let Some(out) = &setup.options.out {
        std::fs::write(out, format!("{text}\n"))?;
        progress(&format!("wrote {}", out.display()));
    }
    println!("## JSON\n\n```json\n{text}\n```");
    if !setup.options.keep {
        let _ = std::fs::remove_dir_all(&work);
    } else {
        progress(&format!("kept {}", work.display()));
    }
    Ok(())
}

/// The first three fields of `/proc/loadavg`: other work on the machine skews the numbers.
fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

fn meminfo_total_kib() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("MemTotal:"))
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
        })
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_is_read() {
        let args = [
            "--gateway",
            "g",
            "--replica",
            "r",
            "--only",
            "rss,state",
            "--expire-flags",
            "--a 1 --b 2",
            "--rss-concurrency",
            "2",
        ];
        let options = parse_args(args.iter().map(|s| (*s).to_owned())).unwrap();
        assert_eq!(options.only, ["rss", "state"]);
        assert_eq!(options.expire_flags.unwrap(), ["--a", "1", "--b", "2"]);
        assert_eq!(options.rss_concurrency, [2]);
        assert!(parse_args(["--only", "x"].iter().map(|s| (*s).to_owned())).is_err());
    }
}
