//! One HTTP/2 connection per origin: dialing, the driver task, keepalive PINGs and the pool.

use std::{
    collections::HashMap,
    sync::{
        Arc,
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
    sync::{Mutex, watch},
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
}

/// Counts an open stream on its connection (PINGs run only while one is open).
#[derive(Debug)]
pub(crate) struct StreamGuard {
    shared: Arc<Shared>,
}

impl StreamGuard {
    fn new(shared: Arc<Shared>) -> Self {
        shared.open_streams.fetch_add(1, Ordering::AcqRel);
        Self { shared }
    }

    /// A receiver that yields once the connection dies.
    pub(crate) fn dead_signal(&self) -> DeadSignal {
        self.shared.dead.subscribe()
    }
}

impl Drop for StreamGuard {
    fn drop(&mut self) {
        self.shared.open_streams.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A stream just opened: its response, its send half and its guard.
pub(crate) struct OpenedStream {
    pub(crate) response: ResponseFuture,
    pub(crate) send: h2::SendStream<Bytes>,
    pub(crate) guard: StreamGuard,
}

/// One origin's connection slot; locked across a dial so concurrent callers share the result.
type Slot = Arc<Mutex<Option<Connection>>>;

/// Connections by origin.
#[derive(Debug)]
pub(crate) struct Pool {
    config: ClientConfig,
    tls: Arc<rustls::ClientConfig>,
    // A plain lock, held only to find a slot: a slow dial to one origin never blocks another.
    slots: std::sync::Mutex<HashMap<Origin, Slot>>,
}

impl Pool {
    pub(crate) fn new(config: ClientConfig, tls: Arc<rustls::ClientConfig>) -> Self {
        Self {
            config,
            tls,
            slots: std::sync::Mutex::new(HashMap::new()),
        }
    }

    pub(crate) fn config(&self) -> &ClientConfig {
        &self.config
    }

    /// Opens a stream. A connection that refuses new streams (after GOAWAY) is retired and
    /// the open is tried once on a fresh connection: nothing was sent, so nothing is replayed.
    pub(crate) async fn open(
        &self,
        origin: &Origin,
        request: impl Fn() -> Request<()>,
        end_of_stream: bool,
    ) -> Result<OpenedStream, CursorError> {
        let mut last_error = None;
        for _ in 0..2 {
            let conn = self.connection(origin).await?;
            let mut ready = match conn.send_request.clone().ready().await {
                Ok(ready) => ready,
                Err(err) => {
                    self.retire(origin, &conn).await;
                    last_error = Some(h2_error::network("opening a stream", err));
                    continue;
                }
            };
            match ready.send_request(request(), end_of_stream) {
                Ok((response, send)) => {
                    let guard = StreamGuard::new(Arc::clone(&conn.shared));
                    return Ok(OpenedStream {
                        response,
                        send,
                        guard,
                    });
                }
                Err(err) => {
                    self.retire(origin, &conn).await;
                    last_error = Some(h2_error::network("opening a stream", err));
                }
            }
        }
        Err(last_error.unwrap_or_else(|| CursorError::network_msg("could not open a stream")))
    }

    /// The pooled connection to `origin`, dialing one if there is none alive.
    async fn connection(&self, origin: &Origin) -> Result<Connection, CursorError> {
        let slot = self.slot(origin);
        let mut slot = slot.lock().await;
        if let Some(conn) = slot.as_ref().filter(|conn| conn.is_usable()) {
            return Ok(conn.clone());
        }
        let conn = self.dial(origin).await?;
        *slot = Some(conn.clone());
        Ok(conn)
    }

    fn slot(&self, origin: &Origin) -> Slot {
        // A poisoned map only means another caller panicked mid-insert; the map is still sound.
        let mut slots = self
            .slots
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        Arc::clone(slots.entry(origin.clone()).or_default())
    }

    /// Takes a connection out of the pool; streams already open on it carry on.
    async fn retire(&self, origin: &Origin, conn: &Connection) {
        conn.shared.retired.store(true, Ordering::Release);
        let slot = self.slot(origin);
        let mut slot = slot.lock().await;
        if slot
            .as_ref()
            .is_some_and(|c| Arc::ptr_eq(&c.shared, &conn.shared))
        {
            *slot = None;
        }
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

    async fn handshake<T>(&self, origin: &Origin, io: T) -> Result<Connection, CursorError>
    where
        T: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let (send_request, mut connection) = h2::client::Builder::new()
            .enable_push(false)
            .initial_window_size(1 << 20)
            .initial_connection_window_size(4 << 20)
            .data_frame_budget(SMALL_FRAME_BUDGET)
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
        let driver = tokio::spawn(async move {
            let reason = match connection.await {
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
        Ok(Connection {
            send_request,
            shared,
        })
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
