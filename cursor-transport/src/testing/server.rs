//! The listener, its connections, and how requests are routed to the script or the handler.

use std::{
    net::SocketAddr,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
};

use bytes::{Bytes, BytesMut};
use http::{Request, Response};
use tokio::{
    net::{TcpListener, TcpStream},
    sync::mpsc,
    task::JoinSet,
};

use super::Handler;
use super::call::{ConnCommand, ServerCall};
use super::http1::{BidiRegistry, Http1Routes};
use crate::{headers::CONTENT_TYPE_STREAM, origin::Origin};

/// How a server that speaks the Run only over HTTP/1.1 refuses an HTTP/2 streaming call
/// (see [`TestServerBuilder::refuse_h2`]; docs/PROTOCOL-AGENT.md §13.8).
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum H2Refusal {
    /// HTTP 421 Misdirected Request.
    Status421,
    /// HTTP 464, a load balancer's "incompatible protocol".
    Status464,
    /// `RST_STREAM` with `HTTP_1_1_REQUIRED` (0xd).
    Http11Required,
    /// `GOAWAY` with `HTTP_1_1_REQUIRED` (0xd): the whole connection. The stream is reset
    /// with the same code first and the GOAWAY follows 100 ms later, so a client writing
    /// meanwhile learns the reason rather than only a broken pipe.
    GoawayHttp11Required,
}

/// Configures a [`TestServer`].
#[must_use]
#[derive(Default)]
pub struct TestServerBuilder {
    max_concurrent_streams: Option<u32>,
    handler: Option<Handler>,
    bind: Option<SocketAddr>,
    refuse_h2: Option<H2Refusal>,
}

impl std::fmt::Debug for TestServerBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestServerBuilder")
            .field("max_concurrent_streams", &self.max_concurrent_streams)
            .field("handler", &self.handler.is_some())
            .field("bind", &self.bind)
            .field("refuse_h2", &self.refuse_h2)
            .finish()
    }
}

impl TestServerBuilder {
    /// Advertises `SETTINGS_MAX_CONCURRENT_STREAMS` (unlimited by default).
    pub fn max_concurrent_streams(mut self, max: u32) -> Self {
        self.max_concurrent_streams = Some(max);
        self
    }

    /// Answers every request that is not `application/connect+proto` with `handler`
    /// (without a handler they arrive through [`TestServer::accept`] like streams).
    pub fn handler(
        mut self,
        handler: impl Fn(Request<Bytes>) -> Response<Bytes> + Send + Sync + 'static,
    ) -> Self {
        self.handler = Some(Arc::new(handler));
        self
    }

    /// Listens on `addr` instead of a free loopback port (`127.0.0.1:0`), for a server other
    /// processes must find at a known address. [`TestServer::origin`] names the address
    /// bound, as loopback `http` (a port of 0 still picks a free one).
    pub fn bind(mut self, addr: SocketAddr) -> Self {
        self.bind = Some(addr);
        self
    }

    /// Refuses every HTTP/2 streaming call this way, as a network that passes only HTTP/1.1
    /// does, so clients must use the Run's HTTP/1.1 form (RunSSE plus BidiAppend, which this
    /// server always serves over HTTP/1.1). Unary HTTP/2 requests still reach the handler.
    pub fn refuse_h2(mut self, refusal: H2Refusal) -> Self {
        self.refuse_h2 = Some(refusal);
        self
    }

    /// Binds the chosen address (by default `127.0.0.1:0`) and starts serving.
    pub async fn start(self) -> std::io::Result<TestServer> {
        let addr = self
            .bind
            .unwrap_or_else(|| SocketAddr::from(([127, 0, 0, 1], 0)));
        let listener = TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let (calls_tx, calls) = mpsc::unbounded_channel();
        let stats = Arc::new(Stats::default());
        let bidi = Arc::new(BidiRegistry::default());
        let accept_stats = Arc::clone(&stats);
        let settings = Arc::new(self);
        let task = tokio::spawn(async move {
            let mut connections = JoinSet::new();
            while let Ok((tcp, _)) = listener.accept().await {
                // As production servers do (Go's net/http by default): without it a small
                // DATA frame waits for the client's delayed ACK, a 40 ms stall now and then.
                let _ = tcp.set_nodelay(true);
                accept_stats.connections.fetch_add(1, Ordering::AcqRel);
                connections.spawn(serve_connection(
                    tcp,
                    Arc::clone(&settings),
                    calls_tx.clone(),
                    Arc::clone(&accept_stats),
                    Arc::clone(&bidi),
                ));
            }
        });
        Ok(TestServer {
            addr,
            calls,
            stats,
            task,
        })
    }
}

#[derive(Debug, Default)]
struct Stats {
    connections: AtomicUsize,
    requests: AtomicUsize,
    refused_h2: AtomicUsize,
}

/// A loopback h2c Connect server scripted by the test. Dropping it stops the server and
/// closes every connection.
#[derive(Debug)]
pub struct TestServer {
    addr: SocketAddr,
    calls: mpsc::UnboundedReceiver<ServerCall>,
    stats: Arc<Stats>,
    task: tokio::task::JoinHandle<()>,
}

impl TestServer {
    /// Starts a server with default settings.
    pub async fn start() -> std::io::Result<Self> {
        TestServerBuilder::default().start().await
    }

    /// A builder for non-default settings.
    pub fn builder() -> TestServerBuilder {
        TestServerBuilder::default()
    }

    /// The server's origin (`http://127.0.0.1:<port>`).
    pub fn origin(&self) -> Origin {
        Origin::loopback(self.addr.port())
    }

    /// The bound socket address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The next call a client opened, in arrival order; `None` once the server stopped.
    pub async fn accept(&mut self) -> Option<ServerCall> {
        self.calls.recv().await
    }

    /// TCP connections accepted so far.
    pub fn connections(&self) -> usize {
        self.stats.connections.load(Ordering::Acquire)
    }

    /// Requests (streams) received so far, over all connections.
    pub fn requests(&self) -> usize {
        self.stats.requests.load(Ordering::Acquire)
    }

    /// HTTP/2 streaming calls refused under [`TestServerBuilder::refuse_h2`].
    pub fn refused_h2(&self) -> usize {
        self.stats.refused_h2.load(Ordering::Acquire)
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        // Dropping the JoinSet inside the task aborts every connection task.
        self.task.abort();
    }
}

async fn serve_connection(
    tcp: TcpStream,
    settings: Arc<TestServerBuilder>,
    calls: mpsc::UnboundedSender<ServerCall>,
    stats: Arc<Stats>,
    bidi: Arc<BidiRegistry>,
) {
    let mut builder = h2::server::Builder::new();
    // Tests buffer many small frames on many streams before reading them; h2's flood guard
    // would otherwise close the connection with ENHANCE_YOUR_CALM.
    builder
        .data_frame_budget(64 << 20)
        .initial_connection_window_size(8 << 20);
    if let Some(max) = settings.max_concurrent_streams {
        builder.max_concurrent_streams(max);
    }
    // A client without the HTTP/2 preface speaks HTTP/1.1: unary calls to the handler, and
    // the Run as RunSSE plus BidiAppend.
    if super::http1::is_http1(&tcp).await {
        let counted = Arc::clone(&stats);
        let on_request = move || {
            counted.requests.fetch_add(1, Ordering::AcqRel);
        };
        let routes = Http1Routes {
            handler: settings.handler.clone(),
            calls: calls.clone(),
            bidi,
        };
        return super::http1::serve(tcp, routes, on_request).await;
    }
    let Ok(mut conn) = builder.handshake::<_, Bytes>(tcp).await else {
        return;
    };
    let (commands, mut command_rx) = mpsc::unbounded_channel();
    loop {
        tokio::select! {
            request = conn.accept() => {
                let Some(Ok((request, respond))) = request else { return };
                stats.requests.fetch_add(1, Ordering::AcqRel);
                let is_stream = crate::client::body::media_type(request.headers()) == CONTENT_TYPE_STREAM;
                if is_stream && let Some(refusal) = settings.refuse_h2 {
                    stats.refused_h2.fetch_add(1, Ordering::AcqRel);
                    refuse(refusal, respond);
                    if refusal == H2Refusal::GoawayHttp11Required {
                        // Shortly after, so the reset is read before the socket closes.
                        let commands = commands.clone();
                        tokio::spawn(async move {
                            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                            let _ = commands.send(ConnCommand::GoAwayHttp11Required);
                        });
                    }
                    continue;
                }
                match (&settings.handler, is_stream) {
                    (Some(handler), false) => {
                        tokio::spawn(answer_with_handler(Arc::clone(handler), request, respond));
                    }
                    _ => {
                        let _ = calls.send(ServerCall::new(request, respond, commands.clone()));
                    }
                }
            }
            command = command_rx.recv() => match command {
                Some(ConnCommand::GoAway(done)) => {
                    conn.graceful_shutdown();
                    let _ = done.send(());
                }
                Some(ConnCommand::GoAwayWithError) => conn.abrupt_shutdown(h2::Reason::INTERNAL_ERROR),
                Some(ConnCommand::GoAwayHttp11Required) => conn.abrupt_shutdown(h2::Reason::HTTP_1_1_REQUIRED),
                // Dropping the connection closes the socket under every stream on it.
                Some(ConnCommand::Sever) | None => return,
                Some(ConnCommand::Stall) => {
                    // Stop reading and writing (no PONG, no frames) but keep the socket open.
                    while let Some(command) = command_rx.recv().await {
                        if matches!(command, ConnCommand::Sever) {
                            return;
                        }
                    }
                    return;
                }
            }
        }
    }
}

fn refuse(refusal: H2Refusal, mut respond: h2::server::SendResponse<Bytes>) {
    let status = match refusal {
        H2Refusal::Status421 => 421,
        H2Refusal::Status464 => 464,
        H2Refusal::Http11Required | H2Refusal::GoawayHttp11Required => {
            respond.send_reset(h2::Reason::HTTP_1_1_REQUIRED);
            return;
        }
    };
    if let Ok(head) = Response::builder().status(status).body(()) {
        let _ = respond.send_response(head, true);
    }
}

async fn answer_with_handler(
    handler: Handler,
    request: Request<h2::RecvStream>,
    mut respond: h2::server::SendResponse<Bytes>,
) {
    let (parts, mut body) = request.into_parts();
    let mut collected = BytesMut::new();
    while let Some(Ok(chunk)) = body.data().await {
        let _ = body.flow_control().release_capacity(chunk.len());
        collected.extend_from_slice(&chunk);
    }
    let response = handler(Request::from_parts(parts, collected.freeze()));
    let (parts, body) = response.into_parts();
    let end_now = body.is_empty();
    if let Ok(mut send) = respond.send_response(Response::from_parts(parts, ()), end_now)
        && !end_now
    {
        let _ = crate::client::body::send_all(&mut send, body, true).await;
    }
}
