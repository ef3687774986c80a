//! Signs in to Cursor the way `/login cursor` does: show the deep link, poll until the browser
//! finishes, print the credentials (tokens redacted). Or exchanges a user API key.
//!
//! ```sh
//! cargo run --example login                       # against a loopback stand-in of Cursor's endpoints
//! cargo run --example login -- --get-only         # a stand-in without the POST poll (older servers)
//! cargo run --example login -- --api-key crsr_x   # exchange a user API key at the stand-in
//! cargo run --example login -- --real             # against Cursor itself (opens nothing; copy the link)
//! cargo run --example login -- --real --api-key "$CURSOR_API_KEY"
//! ```
//!
//! The loopback stand-in answers the poll (`POST /auth/poll` with `{uuid, verifier}`, or the
//! older `GET /auth/poll?uuid=…&verifier=…`) with 404 ("not yet") twice, then with tokens,
//! which is what Cursor does while the user is still in the browser; with `--get-only` the
//! POST is an unknown route (404) and the login gets through on the GET fallback. It also
//! answers `POST /auth/exchange_user_api_key`: a key starting `crsr_` gets tokens, unless it
//! contains `refused`, which gets a 401.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;
use cursor_auth::AuthConfig;
use cursor_transport::testing::TestServer;
use cursor_transport::{Client, TokioClock};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let real = args.iter().any(|arg| arg == "--real");
    let get_only = args.iter().any(|arg| arg == "--get-only");
    let api_key = args
        .iter()
        .position(|arg| arg == "--api-key")
        .map(|at| args.get(at + 1).cloned().ok_or("--api-key needs a key"))
        .transpose()?;
    // Kept alive for the whole login when used.
    let mut stand_in = None;
    let config = if real {
        AuthConfig::default()
    } else {
        let server = stand_in_endpoints(get_only).await?;
        let origin = server.origin().to_string();
        stand_in = Some(server);
        AuthConfig::with_bases(origin.clone(), origin)
    };
    println!(
        "backend: {}",
        if real { "Cursor" } else { "loopback stand-in" }
    );
    let client = Client::new()?;
    if let Some(key) = api_key {
        let credentials =
            cursor_auth::exchange_user_api_key(&client, &TokioClock, &config, &key).await?;
        println!("exchanged the user API key: {credentials}");
        return Ok(());
    }
    let credentials = cursor_auth::login(&client, &TokioClock, &config, |link| {
        println!("open this link to sign in: {link}");
    })
    .await?;
    println!("signed in: {credentials}");
    drop(stand_in);
    Ok(())
}

/// Cursor's sign-in endpoints as the user sees them: the poll pending twice, then signed in;
/// the API key exchange.
async fn stand_in_endpoints(get_only: bool) -> std::io::Result<TestServer> {
    let polls = Arc::new(AtomicUsize::new(0));
    TestServer::builder()
        .handler(move |request| {
            let (status, body) = match (request.uri().path(), request.method().as_str()) {
                ("/auth/poll", "POST") if get_only => (404, String::new()),
                ("/auth/poll", "POST") => {
                    let body: serde_json::Value =
                        serde_json::from_slice(request.body()).unwrap_or_default();
                    if body["uuid"].is_string() && body["verifier"].is_string() {
                        poll(&polls)
                    } else {
                        (
                            400,
                            r#"{"error":"uuid and verifier are required"}"#.to_owned(),
                        )
                    }
                }
                ("/auth/poll", "GET") => poll(&polls),
                ("/auth/exchange_user_api_key", "POST") => {
                    let key = request
                        .headers()
                        .get("authorization")
                        .and_then(|v| v.to_str().ok())
                        .and_then(|v| v.strip_prefix("Bearer "))
                        .unwrap_or_default();
                    if key.starts_with("crsr_") && !key.contains("refused") {
                        (200, TOKENS.to_owned())
                    } else {
                        (401, r#"{"error":"invalid user api key"}"#.to_owned())
                    }
                }
                _ => (404, String::new()),
            };
            http::Response::builder()
                .status(status)
                .header("content-type", "application/json")
                .body(Bytes::from(body))
                .expect("static response")
        })
        .start()
        .await
}

const TOKENS: &str = r#"{"accessToken":"loopback-access","refreshToken":"loopback-refresh"}"#;

/// Two "not yet" answers, then the tokens.
fn poll(polls: &AtomicUsize) -> (u16, String) {
    if polls.fetch_add(1, Ordering::SeqCst) < 2 {
        (404, String::new())
    } else {
        (200, TOKENS.to_owned())
    }
}
