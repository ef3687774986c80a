//! T-AUTH: refresh and the 401 → refresh → replay rule of `AuthedClient`.

mod support;

use std::time::Duration;

use bytes::Bytes;
use cursor_auth::{
    AccessToken, Attempt, AuthConfig, AuthError, AuthedClient, Credentials, refresh,
};
use cursor_proto::ir::{Classify as _, ErrorKind, NextStep};
use futures::executor::block_on;
use support::{FakeClock, ScriptedHttp, jwt, status};

const NOW_MS: u64 = 1_700_000_000_000;

fn api_request(token: &AccessToken) -> http::Request<Bytes> {
    http::Request::builder()
        .method("POST")
        .uri("https://api2.cursor.sh/aiserver.v1.AiService/AvailableModels")
        .header("authorization", token.bearer())
        .body(Bytes::new())
        .unwrap()
}

fn fresh_credentials() -> Credentials {
    Credentials::new("access-1", "refresh-1", NOW_MS + 3_600_000)
}

fn refreshed(access: &str) -> String {
    format!(r#"{{"access_token":"{access}","shouldLogout":false}}"#)
}

#[test]
fn refresh_exchanges_the_refresh_token_for_a_new_access_token() {
    let access = jwt(r#"{"exp":1700003600}"#);
    let http = ScriptedHttp::new(vec![status(200, &refreshed(&access))]);
    let clock = FakeClock::at_unix_ms(NOW_MS);
    let fresh = block_on(refresh(
        &http,
        &clock,
        &AuthConfig::default(),
        &fresh_credentials(),
    ))
    .unwrap();
    assert_eq!(fresh.access, access);
    assert_eq!(fresh.refresh, "refresh-1");
    assert_eq!(fresh.expires, 1_700_003_600_000 - 300_000);
    let requests = http.requests.lock().unwrap();
    assert_eq!(
        requests[0].uri().to_string(),
        "https://api2.cursor.sh/oauth/token"
    );
    let body: serde_json::Value = serde_json::from_slice(requests[0].body()).unwrap();
    assert_eq!(body["refresh_token"], "refresh-1");
    assert_eq!(body["grant_type"], "refresh_token");
}

#[test]
fn refresh_with_should_logout_asks_for_a_new_login() {
    let http = ScriptedHttp::new(vec![status(
        200,
        r#"{"access_token":"","shouldLogout":true}"#,
    )]);
    let clock = FakeClock::at_unix_ms(NOW_MS);
    let error = block_on(refresh(
        &http,
        &clock,
        &AuthConfig::default(),
        &fresh_credentials(),
    ))
    .unwrap_err();
    assert!(matches!(error, AuthError::LogoutRequired));
    let info = error.to_info();
    assert_eq!(info.kind, ErrorKind::Auth);
    assert_eq!(info.next_step, NextStep::Login);
}

#[test]
fn a_401_refreshes_once_and_replays_the_request_with_the_new_token() {
    let http = ScriptedHttp::new(vec![
        status(401, ""),
        status(200, &refreshed("access-2")),
        status(200, "models"),
    ]);
    let client = AuthedClient::new(
        http,
        FakeClock::at_unix_ms(NOW_MS),
        AuthConfig::default(),
        fresh_credentials(),
    );
    let response = block_on(client.send(api_request)).unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.body(), "models");
    let trace = client.client().trace();
    let path = "/aiserver.v1.AiService/AvailableModels";
    assert_eq!(
        trace,
        vec![
            ("POST".into(), path.into(), Some("Bearer access-1".into())),
            ("POST".into(), "/oauth/token".into(), None),
            ("POST".into(), path.into(), Some("Bearer access-2".into())),
        ]
    );
    assert_eq!(
        client.credentials().access,
        "access-2",
        "the host can persist the new set"
    );
}

#[test]
fn a_second_401_after_the_refresh_is_an_auth_error() {
    let http = ScriptedHttp::new(vec![
        status(401, ""),
        status(200, &refreshed("access-2")),
        status(401, ""),
    ]);
    let client = AuthedClient::new(
        http,
        FakeClock::at_unix_ms(NOW_MS),
        AuthConfig::default(),
        fresh_credentials(),
    );
    let error = block_on(client.send(api_request)).unwrap_err();
    assert!(matches!(error, AuthError::Unauthorized), "{error:?}");
    assert_eq!(error.kind(), ErrorKind::Auth);
    assert_eq!(error.next_step(), NextStep::Login);
    assert_eq!(
        client.client().request_count(),
        3,
        "exactly one refresh and one replay"
    );
}

#[test]
fn expired_credentials_are_refreshed_before_the_first_request() {
    let http = ScriptedHttp::new(vec![status(200, &refreshed("access-2")), status(200, "ok")]);
    let expired = Credentials::new("access-1", "refresh-1", NOW_MS - 1);
    let client = AuthedClient::new(
        http,
        FakeClock::at_unix_ms(NOW_MS),
        AuthConfig::default(),
        expired,
    );
    block_on(client.send(api_request)).unwrap();
    let trace = client.client().trace();
    assert_eq!(trace[0].1, "/oauth/token");
    assert_eq!(trace[1].2.as_deref(), Some("Bearer access-2"));
    assert_eq!(trace.len(), 2);
}

#[test]
fn credentials_are_refreshed_once_simulated_time_reaches_their_expiry() {
    let http = ScriptedHttp::new(vec![
        status(200, "ok"),
        status(200, &refreshed("access-2")),
        status(200, "ok"),
    ]);
    let clock = FakeClock::at_unix_ms(NOW_MS);
    let client = AuthedClient::new(&http, &clock, AuthConfig::default(), fresh_credentials());
    block_on(client.send(api_request)).unwrap();
    clock.advance(Duration::from_secs(3599));
    assert_eq!(
        block_on(client.access_token()).unwrap().as_str(),
        "access-1",
        "not yet due"
    );
    clock.advance(Duration::from_secs(1));
    block_on(client.send(api_request)).unwrap();
    let trace = http.trace();
    assert_eq!(trace.len(), 3);
    assert_eq!(trace[1].1, "/oauth/token");
    assert_eq!(trace[2].2.as_deref(), Some("Bearer access-2"));
}

#[test]
fn non_401_failures_are_returned_without_a_refresh() {
    let http = ScriptedHttp::new(vec![status(503, "")]);
    let client = AuthedClient::new(
        http,
        FakeClock::at_unix_ms(NOW_MS),
        AuthConfig::default(),
        fresh_credentials(),
    );
    let response = block_on(client.send(api_request)).unwrap();
    assert_eq!(response.status(), 503);
    assert_eq!(client.client().request_count(), 1);
}

#[test]
fn a_refresh_that_ends_the_session_surfaces_through_with_refresh() {
    let http = ScriptedHttp::new(vec![status(200, r#"{"shouldLogout":true}"#)]);
    let client = AuthedClient::new(
        http,
        FakeClock::at_unix_ms(NOW_MS),
        AuthConfig::default(),
        fresh_credentials(),
    );
    let result: Result<(), AuthError> = block_on(client.with_refresh(|token| async move {
        assert!(
            !format!("{token:?}").contains("access"),
            "the token is redacted in Debug"
        );
        Ok(Attempt::Unauthorized)
    }));
    assert!(matches!(result.unwrap_err(), AuthError::LogoutRequired));
}

#[test]
fn a_failed_refresh_leaves_the_old_credentials_in_place() {
    let http = ScriptedHttp::new(vec![status(401, ""), status(500, "")]);
    let client = AuthedClient::new(
        http,
        FakeClock::at_unix_ms(NOW_MS),
        AuthConfig::default(),
        fresh_credentials(),
    );
    let error = block_on(client.send(api_request)).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Network);
    assert_eq!(client.credentials(), fresh_credentials());
}

#[test]
fn the_driver_futures_are_send_so_a_multithreaded_runtime_can_spawn_them() {
    fn assert_send<T: Send>(_: &T) {}
    let http = ScriptedHttp::new(vec![]);
    let clock = FakeClock::at_unix_ms(NOW_MS);
    let config = AuthConfig::default();
    assert_send(&cursor_auth::login(&http, &clock, &config, |_| {}));
    assert_send(&refresh(&http, &clock, &config, &fresh_credentials()));
    let client = AuthedClient::new(&http, &clock, config, fresh_credentials());
    assert_send(&client.send(api_request));
    assert_send(&client.access_token());
}
