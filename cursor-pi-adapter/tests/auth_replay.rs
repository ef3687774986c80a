//! A Run refused with 401: one token refresh against the API origin, one replay, and otherwise
//! the auth error pi shows without retrying.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use cursor_agent::testing::{Replica, ReplicaServer, Script};
use cursor_catalog::CatalogStore;
use cursor_pi_adapter::provider::{
    AbortSignal, AgentChannel, ChannelKind, CursorOAuth, Provider, Sessions, Spawner, auth_config,
    pi_would_retry,
};
use cursor_transport::Client;
use cursor_transport::testing::TestServer;
use serde_json::{Value, json};

const MODEL: &str = r#"{"id": "composer-2.5", "name": "Composer 2.5", "api": "cursor-agent",
    "provider": "cursor", "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}}"#;

const WITH_REFRESH: &str =
    r#"{"sessionId": "session-1", "apiKey": "stale-access", "refreshToken": "stored-refresh"}"#;
const WITHOUT_REFRESH: &str = r#"{"sessionId": "session-1", "apiKey": "stale-access"}"#;

/// How the loopback `/oauth/token` answers.
#[derive(Clone, Copy)]
enum TokenEndpoint {
    Grants,
    LogsOut,
}

/// The refresh requests the token endpoint saw.
#[derive(Default)]
struct Refreshes {
    count: AtomicUsize,
    bodies: Mutex<Vec<String>>,
}

struct Fixture {
    replica: ReplicaServer,
    refreshes: Arc<Refreshes>,
    exchanges: Arc<AtomicUsize>,
    provider: Provider,
}

async fn fixture(endpoint: TokenEndpoint) -> Fixture {
    let refreshes = Arc::new(Refreshes::default());
    let seen = Arc::clone(&refreshes);
    let exchanges = Arc::new(AtomicUsize::new(0));
    let exchanged = Arc::clone(&exchanges);
    let builder = TestServer::builder().handler(move |request| {
        if request.uri().path() == "/auth/exchange_user_api_key" {
            // Keys naming "good" are accepted; the token is opaque (an hour by default).
            let bearer = request.headers()["authorization"].to_str().unwrap();
            if !bearer.starts_with("Bearer crsr_good") {
                return status(401, r#"{"error":"invalid user api key"}"#);
            }
            exchanged.fetch_add(1, Ordering::AcqRel);
            return status(
                200,
                r#"{"accessToken":"exchanged-access","refreshToken":"r"}"#,
            );
        }
        if request.uri().path() != "/oauth/token" {
            return status(404, "{}");
        }
        seen.count.fetch_add(1, Ordering::AcqRel);
        let body = String::from_utf8_lossy(request.body()).into_owned();
        seen.bodies.lock().unwrap().push(body);
        match endpoint {
            TokenEndpoint::Grants => status(200, r#"{"access_token":"fresh-access"}"#),
            TokenEndpoint::LogsOut => {
                status(401, r#"{"error":"invalid_grant","shouldLogout":true}"#)
            }
        }
    });
    let replica = Replica::new().listen(builder).await.unwrap();
    let client = Client::new().unwrap();
    let oauth = CursorOAuth::with_config(
        Arc::new(client.clone()),
        Arc::new(cursor_transport::TokioClock),
        auth_config(&replica.origin()),
    );
    let spawner: Spawner = Arc::new(|task| {
        tokio::spawn(task);
    });
    let channel = AgentChannel::new(
        client,
        replica.origin(),
        CatalogStore::from_static().catalog().clone(),
        "file:///work",
        Sessions::new(),
        spawner,
    )
    .with_token_refresh(oauth);
    Fixture {
        replica,
        refreshes,
        exchanges,
        provider: Provider::select(
            Ok(ChannelKind::Agent),
            || Arc::new(channel),
            || -> Arc<dyn cursor_pi_adapter::provider::Channel> {
                unreachable!("the agent choice never builds the inference channel")
            },
        ),
    }
}

fn status(code: u16, body: &'static str) -> http::Response<Bytes> {
    http::Response::builder()
        .status(code)
        .header("content-type", "application/json")
        .body(Bytes::from_static(body.as_bytes()))
        .unwrap()
}

async fn ping(provider: &Provider, options: &str) -> Vec<Value> {
    let context = json!({"messages": [
        {"role": "user", "content": [{"type": "text", "text": "ping"}], "timestamp": 0}
    ]})
    .to_string();
    let mut events = Vec::new();
    tokio::time::timeout(
        Duration::from_secs(20),
        provider.stream(MODEL, &context, options, AbortSignal::never(), |e| {
            events.push(e);
        }),
    )
    .await
    .expect("the turn ends");
    events
}

/// The Runs the replica finished, once every one of them was recorded.
async fn runs(f: &Fixture, expected: usize) -> Vec<String> {
    for _ in 0..50 {
        if f.replica.replica().runs().len() >= expected {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // A moment more, so a Run beyond the expected ones would show.
    tokio::time::sleep(Duration::from_millis(100)).await;
    f.replica
        .replica()
        .runs()
        .into_iter()
        .map(|run| run.outcome)
        .collect()
}

fn assert_login_error(events: &[Value]) {
    let last = events.last().expect("an event");
    assert_eq!(last["type"], "error", "{events:?}");
    let text = last["error"]["errorMessage"].as_str().unwrap();
    assert!(text.starts_with("auth error: "), "{text}");
    assert!(text.contains("/login cursor"), "{text}");
    assert!(!pi_would_retry(text), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_401_refreshes_once_and_the_replay_with_the_new_token_answers() {
    let f = fixture(TokenEndpoint::Grants).await;
    f.replica.replica().script(Script::Unauthenticated);
    let events = ping(&f.provider, WITH_REFRESH).await;
    let done = events.last().unwrap();
    assert_eq!(done["type"], "done", "{events:?}");
    assert_eq!(done["message"]["content"][0]["text"], "pong");
    assert_eq!(runs(&f, 2).await, ["unauthenticated", "completed"]);
    assert_eq!(f.refreshes.count.load(Ordering::Acquire), 1);
    let body = f.refreshes.bodies.lock().unwrap()[0].clone();
    assert!(body.contains("stored-refresh"), "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replay_refused_again_ends_with_the_login_error_after_one_refresh() {
    let f = fixture(TokenEndpoint::Grants).await;
    f.replica.replica().set_fail_auth(true);
    let events = ping(&f.provider, WITH_REFRESH).await;
    assert_login_error(&events);
    assert_eq!(runs(&f, 2).await, ["unauthenticated", "unauthenticated"]);
    assert_eq!(f.refreshes.count.load(Ordering::Acquire), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_refresh_ends_with_the_login_error_without_a_replay() {
    let f = fixture(TokenEndpoint::LogsOut).await;
    f.replica.replica().set_fail_auth(true);
    let events = ping(&f.provider, WITH_REFRESH).await;
    assert_login_error(&events);
    let text = events.last().unwrap()["error"]["errorMessage"]
        .as_str()
        .unwrap();
    assert!(text.contains("refreshing it failed"), "{text}");
    assert_eq!(runs(&f, 1).await, ["unauthenticated"]);
    assert_eq!(f.refreshes.count.load(Ordering::Acquire), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_refresh_token_a_401_is_the_login_error_at_once() {
    let f = fixture(TokenEndpoint::Grants).await;
    f.replica.replica().script(Script::Unauthenticated);
    let events = ping(&f.provider, WITHOUT_REFRESH).await;
    assert_login_error(&events);
    assert_eq!(runs(&f, 1).await, ["unauthenticated"]);
    assert_eq!(f.refreshes.count.load(Ordering::Acquire), 0);
}

/// Options whose credential is the user API key `key` (as pi resolves `$CURSOR_API_KEY`).
fn with_api_key(key: &str) -> String {
    json!({"sessionId": format!("session-{key}"), "apiKey": key}).to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_api_key_is_exchanged_once_and_its_token_kept_for_the_next_turn() {
    let f = fixture(TokenEndpoint::Grants).await;
    let options = with_api_key("crsr_good_kept");
    for _ in 0..2 {
        let events = ping(&f.provider, &options).await;
        assert_eq!(events.last().unwrap()["type"], "done", "{events:?}");
    }
    assert_eq!(runs(&f, 2).await, ["completed", "completed"]);
    assert_eq!(f.exchanges.load(Ordering::Acquire), 1);
    assert_eq!(f.refreshes.count.load(Ordering::Acquire), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_401_with_a_user_api_key_exchanges_it_again_and_replays_once() {
    let f = fixture(TokenEndpoint::Grants).await;
    f.replica.replica().script(Script::Unauthenticated);
    let events = ping(&f.provider, &with_api_key("crsr_good_replayed")).await;
    let done = events.last().unwrap();
    assert_eq!(done["type"], "done", "{events:?}");
    assert_eq!(runs(&f, 2).await, ["unauthenticated", "completed"]);
    assert_eq!(f.exchanges.load(Ordering::Acquire), 2);
    assert_eq!(f.refreshes.count.load(Ordering::Acquire), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_user_api_key_ends_the_turn_before_any_run_without_showing_the_key() {
    let f = fixture(TokenEndpoint::Grants).await;
    let events = ping(&f.provider, &with_api_key("crsr_refused_secret")).await;
    let last = events.last().unwrap();
    assert_eq!(last["type"], "error", "{events:?}");
    let text = last["error"]["errorMessage"].as_str().unwrap();
    assert!(text.starts_with("auth error: "), "{text}");
    assert!(text.contains("CURSOR_API_KEY"), "{text}");
    assert!(!text.contains("refused_secret"), "{text}");
    assert!(!pi_would_retry(text), "{text}");
    assert!(runs(&f, 0).await.is_empty());
}
