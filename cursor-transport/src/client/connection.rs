//! HTTP/2 connections by origin: dialing, the driver task, keepalive PINGs and the pool.
//!
//! The pool keeps up to `max_connections_per_origin` connections to each origin. A stream
//! reserves a slot on the oldest usable connection whose open streams are below the server's
//! `SETTINGS_MAX_CONCURRENT_STREAMS`, and a new connection is dialed only when every one is
//! full; past the bound, opening fails at once. h2 would instead queue the stream until a slot
//! frees, which can be forever when the other streams are parked Runs.
//!
//! Idle connections: one with no open streams leaves the pool (and closes) whenever another
//! pooled connection has a free slot, so a burst's extra connections close as it drains and
//! one connection stays for the next call.

use std::{
    collections::HashMap,
    pin::Pin,
    sync::{
        Arc, MutexGuard, PoisonError,
        atomic::{AtomicBool, AtomicUsize, Ordering},
    },
    time::Duration,
};

use bytes::Bytes;
use h2::client::{ResponseFuture, SendRequest};
use http::Request;
use tokio::{
    io::{AsyncRead, AsyncWrite},
    net::TcpStream,
    sync::{Mutex, oneshot, watch},
};
use tokio_rustls::TlsConnector;

use super::{ClientConfig, h2_error, tls::ALPN_H2};
use crate::{
    error::CursorError,
    origin::{Origin, Scheme},
};

/// What unread small DATA frames may cost before h2 closes the connection with
/// `ENHANCE_YOUR_CALM` (it charges up to 256 bytes a frame). h2's default, half the connection
/// window, is about 8 900 one-word deltas: a burst a network stall can deliver at once. 32 MiB
/// is about 140 000, more than a whole long answer, and still bounds what a server can make
/// this client buffer.
const SMALL_FRAME_BUDGET: usize = 32 << 20;

/// h2's stream limit until the server's first SETTINGS arrive: on 64-bit targets no value
/// the peer can send (a `u32`, or `usize::MAX` when it names none), so its change marks
/// their arrival.
const UNSETTLED: usize = usize::MAX - 1;

/// Why a connection died, once it has.
pub(crate) type DeadSignal = watch::Receiver<Option<Arc<str>>>;

/// State shared by a connection's driver, its keepalive task and its streams.
#[derive(Debug)]
struct Shared {
    dead: watch::Sender<Option<Arc<str>>>,
    open_streams: AtomicUsize,
    /// Set once the peer refuses new streams (GOAWAY); streams already open carry on.
    retired: AtomicBool,
}

impl Shared {
    fn mark_dead(&self, reason: impl Into<Arc<str>>) {
        let reason = reason.into();
        self.dead.send_if_modified(|slot| {
            if slot.is_none() {
                *slot = Some(reason);
                true
            } else {
                false
            }
        });
    }
}

/// A live connection: a handle to open streams on it and its shared state.
#[derive(Clone, Debug)]
pub(crate) struct Connection {
    send_request: SendRequest<Bytes>,
    shared: Arc<Shared>,
}

impl Connection {
    fn is_usable(&self) -> bool {
        self.shared.dead.borrow().is_none() && !self.shared.retired.load(Ordering::Acquire)
    }

    fn open_streams(&self) -> usize {
        self.shared.open_streams.load(Ordering::Acquire)
    }

    /// Counts streams by their guards, which live at least as long as h2's count of them
    /// (a finished call kept undropped still holds its slot here): a full connection may
    /// look full a little longer than it is, never the reverse.
    fn has_free_slot(&self) -> bool {
        self.is_usable() && self.open_streams() < self.send_request.current_max_send_streams()
    }

    fn is(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.shared, &other.shared)
    }
}

/// One origin's connections, oldest first.
#[derive(Debug, Default)]
struct Entry {
    /// Held only for bookkeeping, never across an await.
    conns: std::sync::Mutex<Vec<Connection>>,
    /// Held across a dial so concurrent callers share it rather than each dialing.
    dialing: Mutex<()>,
}

impl Entry {
    fn conns(&self) -> MutexGuard<'_, Vec<Connection>> {
        // A poisoned list only means another caller panicked mid-update; it is still sound.
        self.conns.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Reserves a stream slot on the oldest connection with one free; `conn` joins the pool
    /// first. Reserving under the list lock keeps two callers from taking the last slot.
    fn reserve(self: &Arc<Self>, conn: Option<Connection>) -> Option<(Connection, StreamGuard)> {
        let mut conns = self.conns();
        conns.extend(conn);
        let dropped = prune(&mut conns);
        let reserved = conns.iter().find(|conn| conn.has_free_slot()).map(|conn| {
            let guard = StreamGuard::new(Arc::clone(&conn.shared), Arc::clone(self));
            (conn.clone(), guard)
        });
        drop(conns);
        // Closing a connection wakes its driver: done outside the lock.
        drop(dropped);
        reserved
    }

    /// Pooled connections and the streams open on them.
    fn load(&self) -> (usize, usize) {
        let conns = self.conns();
        let streams = conns.iter().map(Connection::open_streams).sum();
        (conns.len(), streams)
    }

    /// Takes `conn` out of the pool; streams already open on it carry on.
    fn retire(&self, conn: &Connection) {
        conn.shared.retired.store(true, Ordering::Release);
        let removed: Vec<_> = {
            let mut conns = self.conns();
            let (gone, kept) = conns.drain(..).partition(|c| c.is(conn));
            *conns = kept;
            gone
        };
        drop(removed);
    }
}

/// Drops dead and retired connections, and idle ones that are not needed: none if a
/// connection with open streams has a free slot, else all but the oldest. Returns the
/// dropped ones, for the caller to drop outside the lock.
fn prune(conns: &mut Vec<Connection>) -> Vec<Connection> {
    let mut dropped = Vec::new();
    let mut spare = conns
        .iter()
        .any(|conn| conn.open_streams() > 0 && conn.has_free_slot());
    for conn in std::mem::take(conns) {
        let idle = conn.open_streams() == 0;
        if !conn.is_usable() || (idle && spare) {
            dropped.push(conn);
        } else {
            spare |= idle;
            conns.push(conn);
        }
    }
    dropped
}

/// Counts an open stream on its connection (PINGs run only while one is open); it is taken
/// before the stream is opened, so it reserves a slot.
#[derive(Debug)]
pub(crate) struct StreamGuard {
    shared: Arc<Shared>,
    entry: Arc<Entry>,
}

impl StreamGuard {
    /// Only under the entry's list lock.
    fn new(shared: Arc<Shared>, entry: Arc<Entry>) -> Self {
        shared.open_streams.fetch_add(1, Ordering::AcqRel);
        Self { shared, entry }
    }

    /// A receiver that yields once the connection dies.
    pub(crate) fn dead_signal(&self) -> DeadSignal {
        self.shared.dead.subscribe()
    }
}

impl Drop for StreamGuard {
    fn drop(&mut self) {
        let dropped = {
            let mut conns = self.entry.conns();
            self.shared.open_streams.fetch_sub(1, Ordering::AcqRel);
            // A freed slot may leave an idle connection unneeded, this one included.
            prune(&mut conns)
        };
        drop(dropped);
    }
}

/// A stream just opened: its response, its send half and its guard.
pub(crate) struct OpenedStream {
    pub(crate) response: ResponseFuture,
    pub(crate) send: h2::SendStream<Bytes>,
    pub(crate) guard: StreamGuard,
}

/// Connections by origin.
#[derive(Debug)]
pub(crate) struct Pool {
    config: ClientConfig,
    tls: Arc<rustls::ClientConfig>,
    // A plain lock, held only to find an entry: a slow dial to one origin never blocks another.
    entries: std::sync::Mutex<HashMap<Origin, Arc<Entry>>>,
    /// Origins whose Run refused HTTP/2: later Runs go straight to HTTP/1.1.
    http1_origins: std::sync::Mutex<std::collections::HashSet<Origin>>,
    tls_http1: Arc<rustls::ClientConfig>,
}

impl Pool {
    pub(crate) fn new(
        config: ClientConfig,
        tls: Arc<rustls::ClientConfig>,
        tls_http1: Arc<rustls::ClientConfig>,
    ) -> Self {
        Self {
            config,
            tls,
            entries: std::sync::Mutex::new(HashMap::new()),
            http1_origins: std::sync::Mutex::new(std::collections::HashSet::new()),
            tls_http1,
        }
    }

    /// Remembers that `origin` refused an HTTP/2 Run.
    pub(crate) fn prefer_http1(&self, origin: &Origin) {
        self.http1_origins
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(origin.clone());
    }

    /// Whether `origin` refused an HTTP/2 Run before.
    pub(crate) fn prefers_http1(&self, origin: &Origin) -> bool {
        self.http1_origins
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(origin)
    }

    /// The TLS configuration of the Run's HTTP/1.1 fallback (ALPN `http/1.1`).
    pub(crate) fn tls_http1(&self) -> Arc<rustls::ClientConfig> {
        Arc::clone(&self.tls_http1)
    }

    pub(crate) fn config(&self) -> &ClientConfig {
        &self.config
    }

    /// Opens a stream. A connection that refuses new streams (after GOAWAY) is retired and
    /// the open is tried on another connection: nothing was sent, so nothing is replayed.
    /// Each refusal retires a connection, so one try per pooled connection and one on a
    /// fresh dial are enough.
    pub(crate) async fn open(
        &self,
        origin: &Origin,
        request: impl Fn() -> Request<()>,
        end_of_stream: bool,
    ) -> Result<OpenedStream, CursorError> {
        let entry = self.entry(origin);
        let mut last_error = None;
        for _ in 0..=self.config.max_connections_per_origin.max(1) {
            let (conn, guard) = self.reserve(origin, &entry).await?;
            // A fresh handle has no stream of its own pending, so this only checks the
            // connection: it does not wait for a slot (the reservation found one).
            let mut ready = match conn.send_request.clone().ready().await {
                Ok(ready) => ready,
                Err(err) => {
                    drop(guard);
                    entry.retire(&conn);
                    last_error = Some(h2_error::network("opening a stream", err));
                    continue;
                }
            };
            match ready.send_request(request(), end_of_stream) {
                Ok((response, send)) => {
                    return Ok(OpenedStream {
                        response,
                        send,
                        guard,
                    });
                }
                Err(err) => {
                    drop(guard);
                    entry.retire(&conn);
                    last_error = Some(h2_error::network("opening a stream", err));
                }
            }
        }
        Err(last_error.unwrap_or_else(|| CursorError::network_msg("could not open a stream")))
    }

    /// A stream slot on a pooled connection to `origin`, dialing one if every pooled one is
    /// full; an error at once when the pool is at its bound.
    async fn reserve(
        &self,
        origin: &Origin,
        entry: &Arc<Entry>,
    ) -> Result<(Connection, StreamGuard), CursorError> {
        if let Some(reserved) = entry.reserve(None) {
            return Ok(reserved);
        }
        let _dialing = entry.dialing.lock().await;
        // Another caller may have dialed, or a stream closed, while this one waited.
        if let Some(reserved) = entry.reserve(None) {
            return Ok(reserved);
        }
        let max = self.config.max_connections_per_origin.max(1);
        if entry.load().0 < max {
            let conn = self.dial(origin).await?;
            if let Some(reserved) = entry.reserve(Some(conn)) {
                return Ok(reserved);
            }
        }
        let (conns, streams) = entry.load();
        Err(CursorError::network_msg(format!(
            "the stream slots of {origin} are all in use: {streams} streams open on \
             {conns} connections, as many as the server allows on each \
             (max_connections_per_origin {max})"
        )))
    }

    fn entry(&self, origin: &Origin) -> Arc<Entry> {
        // A poisoned map only means another caller panicked mid-insert; the map is still sound.
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        Arc::clone(entries.entry(origin.clone()).or_default())
    }

    /// How many connections to `origin` are pooled.
    #[cfg(test)]
    pub(crate) fn pooled(&self, origin: &Origin) -> usize {
        self.entry(origin).load().0
    }

    async fn dial(&self, origin: &Origin) -> Result<Connection, CursorError> {
        let connect_timeout = self.config.connect_timeout;
        let address = (origin.dial_host().to_owned(), origin.port());
        let tcp = tokio::time::timeout(connect_timeout, TcpStream::connect(address))
            .await
            .map_err(|_| CursorError::network_msg(format!("connecting to {origin} timed out")))?
            .map_err(|err| CursorError::network(format!("connecting to {origin}"), err))?;
        // Small frames matter more than throughput here.
        let _ = tcp.set_nodelay(true);
        match origin.scheme() {
            Scheme::Http => self.handshake(origin, tcp).await,
            _ => {
                let server_name =
                    rustls::pki_types::ServerName::try_from(origin.dial_host().to_owned())
                        .map_err(|err| {
                            CursorError::invalid(format!("TLS server name for {origin}: {err}"))
                        })?;
                let connector = TlsConnector::from(Arc::clone(&self.tls));
                let tls =
                    tokio::time::timeout(connect_timeout, connector.connect(server_name, tcp))
                        .await
                        .map_err(|_| {
                            CursorError::network_msg(format!(
                                "TLS handshake with {origin} timed out"
                            ))
                        })?
                        .map_err(|err| {
                            CursorError::network(format!("TLS handshake with {origin}"), err)
                        })?;
                if tls.get_ref().1.alpn_protocol() != Some(ALPN_H2) {
                    return Err(CursorError::network_msg(format!(
                        "{origin} did not negotiate HTTP/2"
                    )));
                }
                self.handshake(origin, tls).await
            }
        }
    }

    /// Returns once the server's SETTINGS arrived: until then its stream limit is unknown,
    /// and a stream past it would wait in h2's queue. That costs a new connection at most one
    /// round trip; its first request would wait for the server anyway.
    async fn handshake<T>(&self, origin: &Origin, io: T) -> Result<Connection, CursorError>
    where
        T: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let (send_request, mut connection) = h2::client::Builder::new()
            .enable_push(false)
            .initial_window_size(1 << 20)
            .initial_connection_window_size(4 << 20)
            .data_frame_budget(SMALL_FRAME_BUDGET)
            .initial_max_send_streams(UNSETTLED)
            .handshake::<T, Bytes>(io)
            .await
            .map_err(|err| h2_error::network(&format!("HTTP/2 handshake with {origin}"), err))?;
        let (dead, _) = watch::channel(None);
        let shared = Arc::new(Shared {
            dead,
            open_streams: AtomicUsize::new(0),
            retired: AtomicBool::new(false),
        });
        let ping_pong = connection.ping_pong();
        let driver_shared = Arc::clone(&shared);
        let (settled_tx, settled) = oneshot::channel();
        let driver = tokio::spawn(async move {
            let mut settled_tx = Some(settled_tx);
            // h2 applies SETTINGS while it is polled, so checking after each poll sees them.
            let result = std::future::poll_fn(|cx| {
                let poll = Pin::new(&mut connection).poll(cx);
                if settled_tx.is_some()
                    && connection.max_concurrent_send_streams() != UNSETTLED
                    && let Some(tx) = settled_tx.take()
                {
                    let _ = tx.send(());
                }
                poll
            })
            .await;
            let reason = match result {
                Ok(()) => "connection closed".to_owned(),
                Err(err) => h2_error::describe("connection", &err),
            };
            driver_shared.mark_dead(reason);
        });
        if let Some(ping_pong) = ping_pong {
            let keepalive = Keepalive {
                shared: Arc::clone(&shared),
                interval: self.config.ping_interval,
                timeout: self.config.ping_timeout,
                driver: driver.abort_handle(),
            };
            tokio::spawn(keepalive.run(ping_pong));
        }
        let conn = Connection {
            send_request,
            shared,
        };
        match tokio::time::timeout(self.config.connect_timeout, settled).await {
            Ok(Ok(())) => Ok(conn),
            // The driver ended first, after marking the connection dead.
            Ok(Err(_)) => {
                let reason = conn.shared.dead.borrow().clone();
                Err(CursorError::network_msg(format!(
                    "HTTP/2 handshake with {origin}: {}",
                    reason.as_deref().unwrap_or("connection closed")
                )))
            }
            Err(_) => {
                let reason = format!(
                    "{origin} sent no HTTP/2 SETTINGS within {} ms",
                    self.config.connect_timeout.as_millis()
                );
                // Marked first: the keepalive task ends on it, an aborted driver cannot say so.
                conn.shared.mark_dead(reason.as_str());
                driver.abort();
                Err(CursorError::network_msg(reason))
            }
        }
    }
}

/// Sends an HTTP/2 PING every interval while a stream is open; no PONG in time kills the
/// connection, which every stream on it then reports as a network failure.
struct Keepalive {
    shared: Arc<Shared>,
    interval: Duration,
    timeout: Duration,
    driver: tokio::task::AbortHandle,
}

impl Keepalive {
    async fn run(self, mut ping_pong: h2::PingPong) {
        let mut dead = self.shared.dead.subscribe();
        loop {
            tokio::select! {
                _ = dead.wait_for(Option::is_some) => return,
                () = tokio::time::sleep(self.interval) => {}
            }
            if self.shared.open_streams.load(Ordering::Acquire) == 0 {
                continue;
            }
            match tokio::time::timeout(self.timeout, ping_pong.ping(h2::Ping::opaque())).await {
                Ok(Ok(_pong)) => {}
                Ok(Err(err)) => {
                    self.shared
                        .mark_dead(h2_error::describe("keepalive PING", &err));
                    return;
                }
                Err(_) => {
                    self.shared.mark_dead(format!(
                        "connection dead: no PONG within {} ms",
                        self.timeout.as_millis()
                    ));
                    // Dropping the connection closes the socket and fails every stream on it.
                    self.driver.abort();
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::{sync::Arc, time::Duration};

    use crate::{
        client::{BidiCall, Client},
        headers::RequestHeaders,
        testing::{ServerCall, TestServer},
    };

    async fn within<T>(future: impl Future<Output = T>) -> T {
        tokio::time::timeout(Duration::from_secs(30), future)
            .await
            .expect("test step timed out")
    }

    /// A stream the server has answered on, so both ends hold it open.
    async fn live_stream(client: &Client, server: &mut TestServer) -> (BidiCall, ServerCall) {
        let origin = server.origin();
        let mut call = within(client.bidi(&origin, "/test.v1.Echo/Chat", RequestHeaders::new()))
            .await
            .unwrap();
        let mut incoming = within(server.accept()).await.unwrap();
        incoming.send(b"open").await.unwrap();
        assert!(within(call.recv()).await.unwrap().is_some());
        (call, incoming)
    }

    async fn finish(call: (BidiCall, ServerCall)) {
        let (mut call, incoming) = call;
        incoming.finish_ok().await.unwrap();
        assert_eq!(within(call.recv()).await.unwrap(), None);
    }

    #[tokio::test]
    async fn an_idle_extra_connection_leaves_the_pool_once_another_has_room() {
        let mut server = TestServer::builder()
            .max_concurrent_streams(1)
            .start()
            .await
            .unwrap();
        let client = Client::new().unwrap();
        let pool = Arc::clone(&client.pool);
        let origin = server.origin();
        let first = live_stream(&client, &mut server).await;
        let second = live_stream(&client, &mut server).await;
        assert_eq!(pool.pooled(&origin), 2);

        finish(second).await;
        assert_eq!(
            pool.pooled(&origin),
            2,
            "the idle one is the only free slot"
        );
        finish(first).await;
        assert_eq!(pool.pooled(&origin), 1, "one idle connection is enough");

        let _third = live_stream(&client, &mut server).await;
        assert_eq!(server.connections(), 2, "the kept connection was reused");
        assert_eq!(pool.pooled(&origin), 1);
    }
}
