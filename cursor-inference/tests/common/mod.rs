//! Helpers shared by the integration tests that talk to the replica.

use std::future::Future;
use std::time::Duration;

use cursor_transport::{AccessToken, IdeIdentity, RequestHeaders, RequestId};

/// `future`, or a panic once it has taken ten seconds: a hang fails the test instead of CI.
pub(crate) async fn within<T>(future: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(10), future)
        .await
        .expect("the test should not hang")
}

/// IDE-style request headers with a fixed test token and identity.
pub(crate) fn ide_headers() -> RequestHeaders {
    let identity = IdeIdentity::new("a".repeat(64), "b".repeat(64));
    RequestHeaders::ide(
        &AccessToken::new("test-token"),
        &identity,
        &RequestId::generate().unwrap(),
        1_700_000_000_000,
    )
    .unwrap()
}
