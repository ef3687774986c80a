//! The server around the engine: listeners, connection caps (gateway-wide and per peer),
//! HTTP/1.1 with a header-read timer, a write timeout for clients that stop reading, the
//! routes and their key checks, the admin listener, the expiry sweeper, and graceful shutdown.

mod body;
mod router;
mod timed_io;

use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::net::IpAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::io::AsyncWriteExt as _;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;

use self::timed_io::TimedIo;
use crate::engine::{Engine, GatewayConfig, SweepReport};
use crate::metrics::{Refusal, RunKind};
use crate::sync::lock;

/// A running gateway: the engine and what the server tracks; cheap to clone.
#[derive(Clone, Debug)]
pub struct Gateway {
    engine: Engine,
    connections: Arc<Connections>,
}

/// Open client connections, gateway-wide and per peer address.
#[derive(Debug, Default)]
struct Connections {
    open: AtomicUsize,
    peers: Mutex<HashMap<IpAddr, usize>>,
}

/// One open connection; counted until dropped.
struct Counted {
    connections: Arc<Connections>,
    peer: IpAddr,
}

impl Connections {
    /// Counts a connection from `peer` if it is under the per-peer cap.
    fn admit(self: &Arc<Self>, peer: IpAddr, per_peer: usize) -> Option<Counted> {
        let mut peers = lock(&self.peers);
        let open = peers.entry(peer).or_default();
        if *open >= per_peer {
            return None;
        }
        *open += 1;
        self.open.fetch_add(1, Ordering::Relaxed);
        Some(Counted {
            connections: Arc::clone(self),
            peer,
        })
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        let mut peers = lock(&self.connections.peers);
        if let Some(open) = peers.get_mut(&self.peer) {
            *open -= 1;
            if *open == 0 {
                peers.remove(&self.peer);
            }
        }
        self.connections.open.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Gateway {
    /// A gateway over `config`. Reads nothing under the state directory but the gateway's
    /// secret; conversations are looked up when a request needs them.
    pub fn new(config: GatewayConfig) -> Self {
        Self {
            engine: Engine::new(config),
            connections: Arc::default(),
        }
    }

    /// Conversations in memory now.
    pub fn conversations(&self) -> usize {
        self.engine.conversations().counts().0
    }

    /// Runs waiting for a client's tool results now.
    pub fn waiting_tool_rounds(&self) -> usize {
        self.engine.conversations().counts().1
    }

    /// Entries of the in-memory history maps (bounded by the conversations in memory times
    /// the turns each keeps).
    pub fn history_entries(&self) -> usize {
        self.engine.conversations().map_entries()
    }

    /// Turns that continued a stored conversation from its checkpoint (no history replayed).
    pub fn resumed_turns(&self) -> u64 {
        self.engine.metrics().runs_of(RunKind::Resume)
    }

    /// Turns that rebuilt a conversation from the transcript the client sent.
    pub fn rebuilt_turns(&self) -> u64 {
        self.engine.metrics().runs_of(RunKind::Rebuild)
    }

    /// Open client connections now.
    pub fn open_connections(&self) -> usize {
        self.connections.open.load(Ordering::Relaxed)
    }

    /// Turns streaming now.
    pub fn open_runs(&self) -> u64 {
        self.engine.metrics().open_runs()
    }

    /// Request bytes held now by requests being read, parsed or run.
    pub fn body_budget_in_use(&self) -> usize {
        self.engine.admission().body_bytes()
    }

    /// Branch handles held in memory for turns in progress.
    pub fn seeded_branches(&self) -> usize {
        self.engine.handles().seeds()
    }

    /// Deletes what expired as of `now`: conversations idle past the conversation retention
    /// (index, handle and lock), stored responses past theirs or over the size cap, and what
    /// crashes left behind. The server runs it every `--sweep-interval`; `now` may be any time,
    /// which is how a test sees the state of next month.
    ///
    /// Blocks on the file system: call it from a blocking context (`spawn_blocking`).
    pub fn sweep(&self, now: SystemTime) -> SweepReport {
        self.engine.sweep_now(now)
    }

    pub(crate) fn metrics_text(&self) -> String {
        self.engine.metrics_text(self.open_connections())
    }

    /// Serves `listener` until the task is dropped.
    ///
    /// # Errors
    ///
    /// Never in practice: a failed accept is logged and serving goes on.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future stops accepting at once; connections already accepted are served
    /// on tasks of their own until they end.
    pub async fn serve(self, listener: TcpListener) -> io::Result<()> {
        self.serve_until(listener, std::future::pending()).await
    }

    /// Serves `/metrics` and `/healthz` on `listener`, without a key, until `shutdown`
    /// completes: the admin listener (`--admin-listen`), for the operator's network only.
    ///
    /// # Errors
    ///
    /// Never in practice: a failed accept is logged and serving goes on.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future stops accepting and ends the admin connections it serves; nothing
    /// of a turn is held there, so nothing is lost.
    pub async fn serve_admin_until(
        self,
        listener: TcpListener,
        shutdown: impl Future<Output = ()>,
    ) -> io::Result<()> {
        let service = TowerToHyperService::new(router::admin(self.clone()));
        let header_read = self.engine.limits().header_read;
        let mut connections = JoinSet::new();
        let mut shutdown = std::pin::pin!(shutdown);
        loop {
            while connections.try_join_next().is_some() {}
            let stream = tokio::select! {
                biased;
                () = &mut shutdown => break,
                accepted = listener.accept() => match accepted {
                    Ok((stream, _)) => stream,
                    Err(error) => {
                        tracing::warn!(%error, "admin accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                },
            };
            let connection = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(header_read)
                .serve_connection(TokioIo::new(stream), service.clone());
            connections.spawn(async move {
                let _ = connection.await;
            });
        }
        connections.shutdown().await;
        Ok(())
    }

    /// Serves `listener` until `shutdown` completes, then stops accepting, lets running
    /// requests finish for [`Limits::shutdown_grace`](crate::Limits::shutdown_grace), cancels
    /// what is left (each cancelled Run leaves its handle as it was before that turn) and
    /// returns. Expired state is swept every `--sweep-interval` meanwhile.
    ///
    /// # Errors
    ///
    /// Never in practice: a failed accept is logged and serving goes on.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future before `shutdown` completes stops accepting and cancels the
    /// connections it serves (their Runs are cancelled; each handle stays as it was before
    /// its turn). Prefer completing `shutdown` for a graceful stop.
    pub async fn serve_until(
        self,
        listener: TcpListener,
        shutdown: impl Future<Output = ()>,
    ) -> io::Result<()> {
        let limits = *self.engine.limits();
        {
            // What an earlier version left is converted before the first request looks for it.
            let engine = self.engine.clone();
            let _ = crate::engine::blocking::run(move || engine.prepare_state()).await;
        }
        let sweeper = tokio::spawn(self.engine.clone().sweep_periodically());
        let graceful = GracefulShutdown::new();
        let service = TowerToHyperService::new(router::api(self.clone()));
        let mut connections = JoinSet::new();
        let mut shutdown = std::pin::pin!(shutdown);
        loop {
            while connections.try_join_next().is_some() {}
            let (stream, peer) = tokio::select! {
                biased;
                () = &mut shutdown => break,
                accepted = listener.accept() => match accepted {
                    Ok(accepted) => accepted,
                    // Out of descriptors, or a connection reset before accept: keep serving.
                    Err(error) => {
                        tracing::warn!(%error, "accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                },
            };
            let _ = stream.set_nodelay(true);
            if self.open_connections() >= limits.max_connections {
                self.engine.metrics().refused(Refusal::Connections);
                drop(tokio::spawn(refuse(
                    stream,
                    "connections (--max-connections)",
                )));
                continue;
            }
            let Some(counted) = self
                .connections
                .admit(peer.ip(), limits.max_connections_per_peer)
            else {
                self.engine.metrics().refused(Refusal::PeerConnections);
                drop(tokio::spawn(refuse(
                    stream,
                    "connections from one address (--max-connections-per-peer)",
                )));
                continue;
            };
            let io = TokioIo::new(TimedIo::new(stream, limits.write));
            let connection = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(limits.header_read)
                .keep_alive(true)
                .serve_connection(io, service.clone());
            let connection = graceful.watch(connection);
            connections.spawn(async move {
                // A client that hangs up or times out is not the gateway's failure.
                if let Err(error) = connection.await {
                    tracing::debug!(%error, "connection ended");
                }
                drop(counted);
            });
        }
        drop(listener);
        sweeper.abort();
        tracing::info!(
            connections = self.open_connections(),
            grace_s = limits.shutdown_grace.as_secs_f64(),
            "shutting down: no new connections; running requests may finish"
        );
        if tokio::time::timeout(limits.shutdown_grace, graceful.shutdown())
            .await
            .is_err()
        {
            tracing::warn!(
                connections = self.open_connections(),
                "shutdown grace over: cancelling the requests still running"
            );
        }
        connections.shutdown().await;
        // Streaming turns run on tasks of their own: each stops once its client is gone.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(2);
        while self.open_runs() > 0 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        Ok(())
    }
}

/// Answers a connection over a cap with a 503 and closes it.
async fn refuse(mut stream: TcpStream, what: &str) {
    let body = crate::ApiError::overloaded(what).body().to_string();
    let response = format!(
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = tokio::time::timeout(Duration::from_secs(1), async {
        let _ = stream.write_all(response.as_bytes()).await;
        let _ = stream.shutdown().await;
    })
    .await;
}
