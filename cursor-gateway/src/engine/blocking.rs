//! Work that may block (file locks, fsync, reading state, compiling and checking schemas) runs
//! on tokio's blocking pool, never on the async workers that serve every other request.

use crate::ApiError;

/// Runs `work` on the blocking pool. A panic inside it, or a runtime shutting down under it, is
/// an internal error of this request, not of the process.
pub(crate) async fn run<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(work).await.map_err(|error| {
        tracing::error!(%error, "blocking work of a request failed");
        ApiError::internal(None)
    })
}

/// Requests this large are parsed and translated on the blocking pool: a 32 MiB body takes a
/// worker for a good part of a second, which every other request would wait for.
pub(crate) const LARGE: usize = 256 * 1024;

/// Runs `work` on the blocking pool when `size` is [`LARGE`] or more, inline otherwise (a hop
/// to the pool costs more than a small request's parse).
pub(crate) async fn run_sized<T: Send + 'static>(
    size: usize,
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, ApiError> {
    if size >= LARGE {
        run(work).await
    } else {
        Ok(work())
    }
}
