//! The processes under measurement: the replica (Cursor's backend on loopback) and the gateway
//! binary, their memory from `/proc`, and a sampler that watches it.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt as _, BufReader};
use tokio::process::{Child, ChildStdout, Command};

use crate::BoxError;

/// A running replica.
#[derive(Debug)]
pub(crate) struct Replica {
    child: Child,
    pub(crate) origin: String,
    pub(crate) pid: u32,
}

impl Replica {
    /// Starts `binary --port 0 [extra]`, and waits for its `REPLICA_ORIGIN=` line.
    pub(crate) async fn start(
        binary: &Path,
        work: &Path,
        extra: &[String],
    ) -> Result<Self, BoxError> {
        let mut child = Command::new(binary)
            .args(["--port", "0"])
            .args(extra)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", work.join("home"))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log_file(work, "replica.err")?)
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("{}: {e}", binary.display()))?;
        let pid = child.id().ok_or("the replica exited at once")?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let (line, _) = wait_for_line(stdout, "REPLICA_ORIGIN=", Duration::from_secs(30))
            .await
            .map_err(|e| format!("the replica did not start: {e}"))?;
        Ok(Self {
            child,
            origin: line.trim_start_matches("REPLICA_ORIGIN=").trim().to_owned(),
            pid,
        })
    }

    /// Ends it (SIGKILL) and waits.
    pub(crate) async fn stop(mut self) {
        let _ = self.child.start_kill();
        let _ = self.child.wait().await;
    }
}

/// How a gateway is started.
#[derive(Clone, Debug)]
pub(crate) struct GatewaySpec {
    pub(crate) binary: PathBuf,
    pub(crate) work: PathBuf,
    pub(crate) keys_file: PathBuf,
    /// Flags every gateway of the run gets (`--gateway-flags`), before a scenario's own.
    pub(crate) flags: Vec<String>,
}

/// A running gateway.
#[derive(Debug)]
pub(crate) struct Gateway {
    child: Child,
    pub(crate) pid: u32,
    pub(crate) addr: SocketAddr,
    /// From spawn to its `LISTENING` line.
    pub(crate) time_to_listening: Duration,
    stderr: PathBuf,
}

impl Gateway {
    /// Starts the gateway on `state` against `origin` with `extra` flags, and waits for
    /// `LISTENING http://127.0.0.1:PORT`; the error carries its stderr's first and last lines.
    pub(crate) async fn start(
        spec: &GatewaySpec,
        origin: &str,
        state: &Path,
        extra: &[String],
        name: &str,
    ) -> Result<Self, BoxError> {
        let stderr = spec.work.join(format!("{name}.err"));
        let started = Instant::now();
        let mut child = Command::new(&spec.binary)
            .args(["--listen", "127.0.0.1:0", "--state"])
            .arg(state)
            .args([
                "--agent-origin",
                origin,
                "--api-origin",
                origin,
                "--api-keys-file",
            ])
            .arg(&spec.keys_file)
            .args(&spec.flags)
            .args(extra)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", spec.work.join("home"))
            .env("CURSOR_ACCESS_TOKEN", "token")
            .current_dir(spec.work.join("home"))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr)?)
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("{}: {e}", spec.binary.display()))?;
        let pid = child.id().ok_or("the gateway exited at once")?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let line = match wait_for_line(stdout, "LISTENING ", Duration::from_secs(120)).await {
            Ok((line, _)) => line,
            Err(e) => {
                let _ = child.start_kill();
                let _ = child.wait().await;
                return Err(format!("the gateway did not start ({e}): {}", tail(&stderr)).into());
            }
        };
        let time_to_listening = started.elapsed();
        let addr = line
            .trim_start_matches("LISTENING ")
            .trim()
            .trim_start_matches("http://")
            .trim_end_matches('/')
            .parse()
            .map_err(|e| format!("LISTENING line {line:?}: {e}"))?;
        Ok(Self {
            child,
            pid,
            addr,
            time_to_listening,
            stderr,
        })
    }

    /// The exit status when it has exited.
    pub(crate) fn exited(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// SIGTERM, then waits up to `grace` (then SIGKILL): the exit status (None: killed) and how
    /// long it took.
    pub(crate) async fn terminate(mut self, grace: Duration) -> (Option<ExitStatus>, Duration) {
        let started = Instant::now();
        if self.exited().is_none() {
            let _ = std::process::Command::new("kill")
                .args(["-TERM", &self.pid.to_string()])
                .status();
        }
        let status = match tokio::time::timeout(grace, self.child.wait()).await {
            Ok(status) => status.ok(),
            Err(_) => {
                let _ = self.child.start_kill();
                let _ = self.child.wait().await;
                None
            }
        };
        (status, started.elapsed())
    }

    /// SIGKILL and wait.
    pub(crate) async fn kill(mut self) {
        let _ = self.child.start_kill();
        let _ = self.child.wait().await;
    }

    /// The first and last lines of its stderr.
    pub(crate) fn stderr_tail(&self) -> String {
        tail(&self.stderr)
    }
}

fn log_file(work: &Path, name: &str) -> Result<std::fs::File, BoxError> {
    Ok(std::fs::File::create(work.join(name))?)
}

/// The first line of a log file (a usage error says what was wrong there) and its last 3.
fn tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    let from = lines.len().saturating_sub(3).max(1);
    let mut shown: Vec<&str> = lines.first().copied().into_iter().collect();
    if from > 1 {
        shown.push("…");
    }
    shown.extend(lines.iter().skip(from));
    shown.join(" | ")
}

/// Reads `stdout` until a line starting with `prefix`; the rest of it is drained in the
/// background so the child never blocks on a full pipe.
async fn wait_for_line(
    stdout: ChildStdout,
    prefix: &str,
    timeout: Duration,
) -> Result<(String, Duration), BoxError> {
    let started = Instant::now();
    let mut lines = BufReader::new(stdout).lines();
    let found = tokio::time::timeout(timeout, async {
        while let Some(line) = lines.next_line().await? {
            if line.starts_with(prefix) {
                return Ok::<_, std::io::Error>(Some(line));
            }
        }
        Ok(None)
    })
    .await;
    let line = match found {
        Ok(Ok(Some(line))) => line,
        Ok(Ok(None)) => return Err("stdout closed (the process exited)".into()),
        Ok(Err(e)) => return Err(e.into()),
        Err(_) => return Err(format!("no {prefix:?} line within {timeout:?}").into()),
    };
    drop(tokio::spawn(async move {
        while let Ok(Some(_)) = lines.next_line().await {}
    }));
    Ok((line, started.elapsed()))
}

/// `VmRSS` and `VmHWM` of a process in KiB (None: it is gone).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Mem {
    pub(crate) rss_kib: u64,
    pub(crate) hwm_kib: u64,
}

/// Reads `/proc/PID/status`.
pub(crate) fn mem(pid: u32) -> Option<Mem> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
    };
    Some(Mem {
        rss_kib: field("VmRSS:")?,
        hwm_kib: field("VmHWM:")?,
    })
}

/// Samples the RSS of a gateway and a replica every 20 ms; past `cap_kib` of the two together
/// it kills both (SIGKILL), so a runaway gateway cannot take the machine into the OOM killer.
#[derive(Debug)]
pub(crate) struct Sampler {
    stop: Arc<AtomicBool>,
    peaks: Arc<Peaks>,
    task: tokio::task::JoinHandle<()>,
}

/// What a [`Sampler`] saw, in KiB.
#[derive(Debug, Default)]
pub(crate) struct Peaks {
    /// The largest gateway `VmRSS` sampled.
    pub(crate) gateway_rss: AtomicU64,
    /// The gateway's last `VmHWM` read (it only grows; kept for a gateway that died).
    pub(crate) gateway_hwm: AtomicU64,
    /// The largest replica `VmRSS` sampled.
    pub(crate) replica_rss: AtomicU64,
    /// The cap was passed and both processes were killed.
    pub(crate) capped: AtomicBool,
    /// Samples taken.
    pub(crate) samples: AtomicU64,
}

impl Sampler {
    /// Starts sampling.
    pub(crate) fn start(gateway: u32, replica: u32, cap_kib: u64) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let peaks = Arc::new(Peaks::default());
        let task = tokio::spawn({
            let (stop, peaks) = (stop.clone(), peaks.clone());
            async move {
                let mut tick = tokio::time::interval(Duration::from_millis(20));
                tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
                while !stop.load(Ordering::Relaxed) {
                    tick.tick().await;
                    let g = mem(gateway).unwrap_or_default();
                    let r = mem(replica).map_or(0, |m| m.rss_kib);
                    peaks.gateway_rss.fetch_max(g.rss_kib, Ordering::Relaxed);
                    peaks.gateway_hwm.fetch_max(g.hwm_kib, Ordering::Relaxed);
                    peaks.replica_rss.fetch_max(r, Ordering::Relaxed);
                    peaks.samples.fetch_add(1, Ordering::Relaxed);
                    if g.rss_kib + r > cap_kib && !peaks.capped.swap(true, Ordering::Relaxed) {
                        for pid in [gateway, replica] {
                            let _ = std::process::Command::new("kill")
                                .args(["-KILL", &pid.to_string()])
                                .status();
                        }
                    }
                }
            }
        });
        Self { stop, peaks, task }
    }

    /// Stops sampling, and what it saw.
    pub(crate) async fn finish(self) -> Arc<Peaks> {
        self.stop.store(true, Ordering::Relaxed);
        let _ = self.task.await;
        self.peaks
    }
}

/// A directory's size: apparent bytes (file lengths), allocated bytes (512-byte blocks), files.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct DirSize {
    pub(crate) bytes: u64,
    pub(crate) allocated: u64,
    pub(crate) files: u64,
}

impl DirSize {
    fn add(&mut self, other: Self) {
        self.bytes += other.bytes;
        self.allocated += other.allocated;
        self.files += other.files;
    }

    /// As JSON.
    pub(crate) fn json(self) -> serde_json::Value {
        serde_json::json!({"bytes": self.bytes, "allocated_bytes": self.allocated, "files": self.files})
    }
}

/// The size of `dir` and of each of its entries (a top-level file is its own entry).
pub(crate) fn dir_size(dir: &Path) -> (DirSize, Vec<(String, DirSize)>) {
    let mut total = DirSize::default();
    let mut parts = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return (total, parts);
    };
    let mut entries: Vec<_> = entries.flatten().collect();
    entries.sort_by_key(std::fs::DirEntry::file_name);
    for entry in entries {
        let size = walk(&entry.path());
        let mut name = entry.file_name().to_string_lossy().into_owned();
        if entry.path().is_dir() {
            name.push('/');
        }
        total.add(size);
        parts.push((name, size));
    }
    (total, parts)
}

fn walk(path: &Path) -> DirSize {
    use std::os::unix::fs::MetadataExt as _;
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return DirSize::default();
    };
    if !meta.is_dir() {
        return DirSize {
            bytes: meta.len(),
            allocated: meta.blocks() * 512,
            files: 1,
        };
    }
    let mut size = DirSize::default();
    for entry in std::fs::read_dir(path).into_iter().flatten().flatten() {
        size.add(walk(&entry.path()));
    }
    size
}
