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
