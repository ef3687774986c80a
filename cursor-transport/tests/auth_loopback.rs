//! T-AUTH over a real peer: cursor-auth's login, refresh and 401 replay driven by this crate's
//! client against the loopback testing server (the transport implements `HttpClient`).

use cursor_proto::ir::Classify as _;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use cursor_auth::{AuthConfig, AuthError, AuthedClient, Credentials};
use cursor_proto::ir::ErrorKind;
use cursor_transport::testing::TestServer;
use cursor_transport::{Client, TokioClock};
use http::{Request, Response};

/// What the fake Cursor endpoints saw, in order (`METHOD path`).
type Log = Arc<Mutex<Vec<String>>>;

fn respond(status: u16, body: &str) -> Response<Bytes> {
    Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(Bytes::from(body.to_owned()))
        .unwrap()
}

/// A loopback server whose handler sees every request after it is logged.
async fn server(
    answer: impl Fn(&Request<Bytes>, usize) -> Response<Bytes> + Send + Sync + 'static,
) -> (TestServer, Log) {
    let log: Log = Arc::default();
    let seen = Arc::clone(&log);
    let server = TestServer::builder()
        .handler(move |request| {
            let mut seen = seen.lock().unwrap();
            seen.push(format!("{} {}", request.method(), request.uri().path()));
            answer(&request, seen.len())
        })
        .start()
        .await
        .unwrap();
    (server, log)
}

fn config(server: &TestServer) -> AuthConfig {
    let origin = server.origin().to_string();
    let mut config = AuthConfig::with_bases(origin.clone(), origin);
    // Fast polls keep the test short; the 500 ms production cadence is tested sans-IO.
    config.poll_interval = Duration::from_millis(20);
    config.login_timeout = Duration::from_secs(10);
    config
}

fn now_ms() -> u64 {
    u64::try_from(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap()
}

async fn within<F: Future>(future: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(20), future)
        .await
        .expect("finished in time")
}

#[tokio::test]
async fn login_polls_with_post_and_a_json_body_until_it_answers_with_tokens() {
    // A stand-in that knows the POST: "not yet" is 404 to either method, the third POST
    // brings the tokens.
    let (server, log) = server(|request, _| {
        assert_eq!(request.uri().path(), "/auth/poll");
        if request.method() != http::Method::POST {
            return respond(404, "");
        }
        assert_eq!(
            request.uri().query(),
            None,
            "the verifier stays out of the URL"
        );
        let body: serde_json::Value = serde_json::from_slice(request.body()).unwrap();
        assert!(
            body["uuid"].is_string() && body["verifier"].is_string(),
            "{body}"
        );
        static POSTS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        if POSTS.fetch_add(1, std::sync::atomic::Ordering::AcqRel) < 2 {
            respond(404, "")
        } else {
            respond(200, r#"{"accessToken":"acc","refreshToken":"ref"}"#)
        }
    })
    .await;
    let mut link = String::new();
    let credentials = within(cursor_auth::login(
        &Client::new().unwrap(),
        &TokioClock,
        &config(&server),
        |url| {
            link = url.to_owned();
        },
    ))
    .await
    .unwrap();
    assert_eq!(
        (credentials.access.as_str(), credentials.refresh.as_str()),
        ("acc", "ref")
    );
    assert!(link.contains("/loginDeepControl?challenge="), "{link}");
    assert!(link.ends_with("&mode=login&redirectTarget=cli"), "{link}");
    assert_eq!(
        *log.lock().unwrap(),
        [
            "POST /auth/poll",
            "GET /auth/poll",
            "POST /auth/poll",
            "GET /auth/poll",
            "POST /auth/poll"
        ],
        "two pending rounds, then the tokens"
    );
}

#[tokio::test]
async fn login_falls_back_to_get_on_a_server_without_the_post() {
    // The older endpoint: the POST is an unknown route (404), the GET answers.
    let (server, log) = server(|request, n| {
        assert_eq!(request.uri().path(), "/auth/poll");
        if request.method() == http::Method::POST {
            return respond(404, "");
        }
        let query = request.uri().query().unwrap_or_default();
        assert!(
            query.starts_with("uuid=") && query.contains("&verifier="),
            "{query}"
        );
        if n < 4 {
            respond(404, "")
        } else {
            respond(200, r#"{"accessToken":"acc","refreshToken":"ref"}"#)
        }
    })
    .await;
    let credentials = within(cursor_auth::login(
        &Client::new().unwrap(),
        &TokioClock,
        &config(&server),
        |_| {},
    ))
    .await
    .unwrap();
    assert_eq!(credentials.access, "acc");
    assert_eq!(
        *log.lock().unwrap(),
        [
            "POST /auth/poll",
            "GET /auth/poll",
            "POST /auth/poll",
            "GET /auth/poll"
        ]
    );
}

#[tokio::test]
async fn a_403_from_the_poll_endpoint_is_a_remote_refusal() {
    let (server, _) = server(|_, _| respond(403, r#"{"error":"team policy"}"#)).await;
    let error = within(cursor_auth::login(
        &Client::new().unwrap(),
        &TokioClock,
        &config(&server),
        |_| {},
    ))
    .await
    .unwrap_err();
    assert!(matches!(error, AuthError::LoginRefused { .. }), "{error:?}");
    assert_eq!(error.kind(), ErrorKind::RemoteRefusal);
}

#[tokio::test]
async fn refresh_posts_to_the_loopback_token_endpoint() {
    let (server, log) = server(|request, _| {
        assert_eq!(request.uri().path(), "/oauth/token");
        let body = String::from_utf8_lossy(request.body());
        assert!(
            body.contains("refresh_token") && body.contains("old-refresh"),
            "{body}"
        );
        respond(
            200,
            r#"{"access_token":"new-access","refresh_token":"new-refresh"}"#,
        )
    })
    .await;
    let old = Credentials::new("old-access", "old-refresh", 0);
    let fresh = within(cursor_auth::refresh(
        &Client::new().unwrap(),
        &TokioClock,
        &config(&server),
        &old,
    ))
    .await
    .unwrap();
    assert_eq!(
        (fresh.access.as_str(), fresh.refresh.as_str()),
        ("new-access", "new-refresh")
    );
    assert_eq!(log.lock().unwrap().as_slice(), ["POST /oauth/token"]);
}

#[tokio::test]
async fn a_refresh_answered_with_should_logout_asks_for_a_new_login() {
    let (server, _) = server(|_, _| respond(200, r#"{"shouldLogout":true}"#)).await;
    let old = Credentials::new("old-access", "old-refresh", 0);
    let error = within(cursor_auth::refresh(
        &Client::new().unwrap(),
        &TokioClock,
        &config(&server),
        &old,
    ))
    .await
    .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Auth);
    assert_eq!(error.next_step(), cursor_proto::ir::NextStep::Login);
}

/// An API that accepts only `accepted` as bearer token and a token endpoint that issues `issued`.
async fn api(accepted: &'static str, issued: &'static str) -> (TestServer, Log) {
    server(move |request, _| match request.uri().path() {
        "/oauth/token" => respond(200, &format!(r#"{{"access_token":"{issued}"}}"#)),
        _ => {
            let bearer = request
                .headers()
                .get("authorization")
                .and_then(|v| v.to_str().ok());
            if bearer == Some(&format!("Bearer {accepted}")) {
                respond(200, "{}")
            } else {
                respond(401, "")
            }
        }
    })
    .await
}

fn authed(server: &TestServer) -> AuthedClient<Client, TokioClock> {
    let unexpired = now_ms() + 3_600_000;
    AuthedClient::new(
        Client::new().unwrap(),
        TokioClock,
        config(server),
        Credentials::new("old", "ref", unexpired),
    )
}

fn call(origin: String) -> impl Fn(&cursor_auth::AccessToken) -> Request<Bytes> {
    move |token| {
        Request::get(format!("{origin}/v1/thing"))
            .header("authorization", token.bearer())
            .body(Bytes::new())
            .unwrap()
    }
}

#[tokio::test]
async fn a_401_is_refreshed_once_and_replayed_once() {
    let (server, log) = api("new", "new").await;
    let client = authed(&server);
    let response = within(client.send(call(server.origin().to_string())))
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(
        log.lock().unwrap().as_slice(),
        ["GET /v1/thing", "POST /oauth/token", "GET /v1/thing"]
    );
    assert_eq!(
        client.credentials().access,
        "new",
        "the host can store the refreshed token"
    );
}

#[tokio::test]
async fn a_second_401_after_the_refresh_is_an_auth_error_pointing_at_login() {
    let (server, log) = api("never-issued", "new").await;
    let client = authed(&server);
    let error = within(client.send(call(server.origin().to_string())))
        .await
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Auth);
    assert_eq!(error.next_step(), cursor_proto::ir::NextStep::Login);
    assert_eq!(
        log.lock().unwrap().len(),
        3,
        "one call, one refresh, one replay, no more"
    );
}

/// An unsigned JWT expiring at `exp` (seconds), numbered `n`.
fn jwt(exp: u64, n: usize) -> String {
    use base64::Engine as _;
    let engine = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    format!(
        "{}.{}.sig",
        engine.encode(r#"{"alg":"none"}"#),
        engine.encode(format!(r#"{{"exp":{exp},"n":{n}}}"#))
    )
}

/// The exchange stand-in: `crsr_good` gets a numbered token expiring at `exp`, any other key
/// a 401.
async fn exchange_server(exp: u64) -> (TestServer, Log) {
    server(move |request, n| {
        assert_eq!(request.method(), http::Method::POST);
        assert_eq!(request.uri().path(), "/auth/exchange_user_api_key");
        assert_eq!(request.body().as_ref(), b"{}");
        let bearer = request.headers()["authorization"].to_str().unwrap();
        if bearer == "Bearer crsr_good" {
            let body = format!(r#"{{"accessToken":"{}","refreshToken":"r"}}"#, jwt(exp, n));
            respond(200, &body)
        } else {
            respond(401, r#"{"error":"invalid api key"}"#)
        }
    })
    .await
}

#[tokio::test]
async fn a_user_api_key_is_exchanged_once_kept_until_exp_and_exchanged_again_after_a_401() {
    let in_a_day = now_ms() / 1000 + 86_400;
    let (server, log) = exchange_server(in_a_day).await;
    let client = Client::new().unwrap();
    let key = cursor_auth::UserApiKey::new("crsr_good");
    let config = config(&server);
    let first = within(key.access_token(&client, &TokioClock, &config))
        .await
        .unwrap();
    let again = within(key.access_token(&client, &TokioClock, &config))
        .await
        .unwrap();
    assert_eq!(first, again, "kept in memory until its exp");
    assert_eq!(log.lock().unwrap().len(), 1);
    let fresh = within(key.exchange_after_401(&client, &TokioClock, &config, &first))
        .await
        .unwrap();
    assert_ne!(fresh, first);
    // A second caller refused with the old token gets the new one without a third exchange.
    let shared = within(key.exchange_after_401(&client, &TokioClock, &config, &first))
        .await
        .unwrap();
    assert_eq!(shared, fresh);
    assert_eq!(log.lock().unwrap().len(), 2);
}

#[tokio::test]
async fn an_expired_exchanged_token_is_exchanged_again() {
    // exp within the five-minute margin: expired on arrival.
    let (server, log) = exchange_server(now_ms() / 1000 + 60).await;
    let client = Client::new().unwrap();
    let key = cursor_auth::UserApiKey::new("crsr_good");
    let config = config(&server);
    for _ in 0..2 {
        within(key.access_token(&client, &TokioClock, &config))
            .await
            .unwrap();
    }
    assert_eq!(log.lock().unwrap().len(), 2);
}

#[tokio::test]
async fn a_refused_user_api_key_is_an_auth_error_that_does_not_show_the_key() {
    let (server, _) = exchange_server(now_ms() / 1000 + 86_400).await;
    let key = cursor_auth::UserApiKey::new("crsr_refused_secret");
    let error = within(key.access_token(&Client::new().unwrap(), &TokioClock, &config(&server)))
        .await
        .unwrap_err();
    assert!(
        matches!(error, AuthError::ApiKeyRefused { .. }),
        "{error:?}"
    );
    assert_eq!(error.kind(), ErrorKind::Auth);
    assert!(!error.to_string().contains("refused_secret"), "{error}");
}
