//! The transport as cursor-auth's HTTP client and clock, so login and refresh share the origin
//! allowlist, TLS setup and timeouts of every other call (cursor-auth stays sans-IO and below).

use std::time::Instant;

use bytes::Bytes;
use cursor_auth::{Clock, HttpClient, HttpError};
use cursor_proto::ir::Classify as _;

use crate::Client;

#[async_trait::async_trait]
impl HttpClient for Client {
    async fn send(
        &self,
        request: http::Request<Bytes>,
    ) -> Result<http::Response<Bytes>, HttpError> {
        // The message names the failure, never the request (its query carries the verifier).
        self.send_http(request)
            .await
            .map_err(|error| HttpError::new(error.kind(), error.message()))
    }
}

/// cursor-auth's [`Clock`] on tokio's timer: what drives the login poll on a tokio runtime.
#[derive(Clone, Copy, Debug, Default)]
pub struct TokioClock;

#[async_trait::async_trait]
impl Clock for TokioClock {
    fn now(&self) -> Instant {
        Instant::now()
    }

    async fn sleep_until(&self, deadline: Instant) {
        tokio::time::sleep_until(deadline.into()).await;
    }
}
