//! Signs in to Cursor the way `/login cursor` does: show the deep link, poll until the browser
//! finishes, print the credentials (tokens redacted).
//!
//! ```sh
//! cargo run --example login            # against a loopback stand-in of Cursor's endpoints
//! cargo run --example login -- --real  # against Cursor itself (opens nothing; copy the link)
//! ```
//!
//! The loopback stand-in answers the poll with 404 ("not yet") twice, then with tokens, which is
//! exactly what Cursor does while the user is still in the browser.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;
use cursor_auth::AuthConfig;
use cursor_transport::testing::TestServer;
use cursor_transport::{Client, TokioClock};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let real = std::env::args().any(|arg| arg == "--real");
    // Kept alive for the whole login when used.
    let mut stand_in = None;
    let config = if real {
        AuthConfig::default()
    } else {
        let server = stand_in_endpoints().await?;
        let origin = server.origin().to_string();
        stand_in = Some(server);
        AuthConfig::with_bases(origin.clone(), origin)
    };
    println!(
        "backend: {}",
        if real { "Cursor" } else { "loopback stand-in" }
    );
    let credentials = cursor_auth::login(&Client::new()?, &TokioClock, &config, |link| {
        println!("open this link to sign in: {link}");
    })
    .await?;
    println!("signed in: {credentials}");
    drop(stand_in);
    Ok(())
}

/// Cursor's poll endpoint as the user sees it: pending twice, then signed in.
async fn stand_in_endpoints() -> std::io::Result<TestServer> {
    let polls = Arc::new(AtomicUsize::new(0));
    TestServer::builder()
        .handler(move |request| {
            let pending =
                request.uri().path() == "/auth/poll" && polls.fetch_add(1, Ordering::SeqCst) < 2;
            let (status, body) = if pending {
                (404, String::new())
            } else {
                (
                    200,
                    r#"{"accessToken":"loopback-access","refreshToken":"loopback-refresh"}"#
                        .to_owned(),
                )
            };
            http::Response::builder()
                .status(status)
                .body(Bytes::from(body))
                .expect("static response")
        })
        .start()
        .await
}
