//! Connections: the accept loop, the connection cap, HTTP/1.1 with a header-read timer, a
//! write timeout for clients that stop reading, and graceful shutdown.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt as _, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio::time::Sleep;

use crate::Gateway;

/// Open client connections, for `/metrics`.
#[derive(Debug, Default)]
pub(crate) struct ConnectionCount(AtomicUsize);

impl ConnectionCount {
    pub(crate) fn get(&self) -> usize {
        self.0.load(Ordering::Relaxed)
    }
}

struct Counted(Arc<ConnectionCount>);

impl Counted {
    fn new(count: &Arc<ConnectionCount>) -> Self {
        count.0.fetch_add(1, Ordering::Relaxed);
        Self(Arc::clone(count))
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Gateway {
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

    /// Serves `listener` until `shutdown` completes, then stops accepting, lets running
    /// requests finish for [`Limits::shutdown_grace`](crate::Limits::shutdown_grace), cancels
    /// what is left (each cancelled Run leaves its handle as it was before that turn) and
    /// returns.
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
        let limits = *self.limits();
        let slots = Arc::new(Semaphore::new(limits.max_connections));
        let graceful = GracefulShutdown::new();
        let service = TowerToHyperService::new(crate::app::router(self.clone()));
        let mut connections = JoinSet::new();
        let mut shutdown = std::pin::pin!(shutdown);
        loop {
            while connections.try_join_next().is_some() {}
            let stream = tokio::select! {
                biased;
                () = &mut shutdown => break,
                accepted = listener.accept() => match accepted {
                    Ok((stream, _)) => stream,
                    // Out of descriptors, or a connection reset before accept: keep serving.
                    Err(error) => {
                        tracing::warn!(%error, "accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                },
            };
            let _ = stream.set_nodelay(true);
            let Ok(permit) = Arc::clone(&slots).try_acquire_owned() else {
                self.metrics().overloaded();
                drop(tokio::spawn(refuse(stream)));
                continue;
            };
            let counted = Counted::new(self.connection_count());
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
                drop((permit, counted));
            });
        }
        drop(listener);
        tracing::info!(
            connections = self.connection_count().get(),
            grace_s = limits.shutdown_grace.as_secs_f64(),
            "shutting down: no new connections; running requests may finish"
        );
        if tokio::time::timeout(limits.shutdown_grace, graceful.shutdown())
            .await
            .is_err()
        {
            tracing::warn!(
                connections = self.connection_count().get(),
                "shutdown grace over: cancelling the requests still running"
            );
        }
        connections.shutdown().await;
        // Streaming turns run on tasks of their own: each stops once its client is gone.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(2);
        while self.metrics().open_runs() > 0 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        Ok(())
    }
}

/// Answers a connection over the cap with a 503 and closes it.
async fn refuse(mut stream: TcpStream) {
    let body = crate::ApiError::overloaded("connections")
        .body()
        .to_string();
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

/// A stream whose writes fail once they make no progress for `timeout`: a client that stops
/// reading ends its connection (and with it its Run) instead of holding them forever.
pub(crate) struct TimedIo<T> {
    inner: T,
    timeout: Duration,
    stalled: Option<Pin<Box<Sleep>>>,
}

impl<T> TimedIo<T> {
    pub(crate) fn new(inner: T, timeout: Duration) -> Self {
        Self {
            inner,
            timeout,
            stalled: None,
        }
    }

    /// Maps a pending write to an error once it has been pending for the timeout.
    fn watch<R>(
        &mut self,
        cx: &mut Context<'_>,
        polled: Poll<io::Result<R>>,
    ) -> Poll<io::Result<R>> {
        match polled {
            Poll::Ready(result) => {
                self.stalled = None;
                Poll::Ready(result)
            }
            Poll::Pending => {
                let timeout = self.timeout;
                let stalled = self
                    .stalled
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep(timeout)));
                match stalled.as_mut().poll(cx) {
                    Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        "the client stopped reading",
                    ))),
                    Poll::Pending => Poll::Pending,
                }
            }
        }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for TimedIo<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for TimedIo<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.watch(cx, polled)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.watch(cx, polled)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let polled = Pin::new(&mut self.inner).poll_flush(cx);
        self.watch(cx, polled)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
