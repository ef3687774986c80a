//! The two seams the async drivers need from their host: an HTTP client and a clock.

use std::time::{Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use cursor_proto::ir::ErrorKind;

/// A failure of the HTTP client itself (no response was received).
///
/// The message must not contain credentials or a request's query (the login poll's query
/// holds the PKCE verifier); implementations build it from their own error.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct HttpError {
    kind: ErrorKind,
    message: String,
}

impl HttpError {
    /// A failure with an explicit classification.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }

    /// A network failure (DNS, connect, TLS, reset, timeout): the common case.
    pub fn network(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Network, message)
    }

    /// The classification.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The description.
    pub fn message(&self) -> &str {
        &self.message
    }
}

/// Sends one buffered HTTP request. The transport implements it; tests script it.
///
/// Implementations should apply their own timeout and report it as a network [`HttpError`].
#[async_trait::async_trait]
pub trait HttpClient: Send + Sync {
    /// Sends `request` and returns the complete response, whatever its status.
    async fn send(&self, request: http::Request<Bytes>)
    -> Result<http::Response<Bytes>, HttpError>;
}

/// Time for the async drivers: a monotonic clock, the wall clock, and a way to sleep.
///
/// It keeps the crate free of any async runtime, and lets tests simulate minutes of polling
/// without waiting.
#[async_trait::async_trait]
pub trait Clock: Send + Sync {
    /// The current monotonic instant.
    fn now(&self) -> Instant;

    /// Milliseconds since the Unix epoch (the unit of [`Credentials::expires`](crate::Credentials)).
    fn unix_time_ms(&self) -> u64 {
        system_unix_time_ms()
    }

    /// Completes at or after `deadline`.
    async fn sleep_until(&self, deadline: Instant);
}

/// The system wall clock in Unix milliseconds (0 if the clock is before 1970).
pub fn system_unix_time_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|elapsed| u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

#[async_trait::async_trait]
impl<T: HttpClient + ?Sized> HttpClient for &T {
    async fn send(
        &self,
        request: http::Request<Bytes>,
    ) -> Result<http::Response<Bytes>, HttpError> {
        (**self).send(request).await
    }
}

#[async_trait::async_trait]
impl<T: HttpClient + ?Sized> HttpClient for std::sync::Arc<T> {
    async fn send(
        &self,
        request: http::Request<Bytes>,
    ) -> Result<http::Response<Bytes>, HttpError> {
        (**self).send(request).await
    }
}

#[async_trait::async_trait]
impl<T: Clock + ?Sized> Clock for &T {
    fn now(&self) -> Instant {
        (**self).now()
    }

    fn unix_time_ms(&self) -> u64 {
        (**self).unix_time_ms()
    }

    async fn sleep_until(&self, deadline: Instant) {
        (**self).sleep_until(deadline).await;
    }
}

#[async_trait::async_trait]
impl<T: Clock + ?Sized> Clock for std::sync::Arc<T> {
    fn now(&self) -> Instant {
        (**self).now()
    }

    fn unix_time_ms(&self) -> u64 {
        (**self).unix_time_ms()
    }

    async fn sleep_until(&self, deadline: Instant) {
        (**self).sleep_until(deadline).await;
    }
}
