//! T-AUTH: the login driver against a scripted Cursor and simulated time.

mod support;

use std::time::{Duration, Instant};

use cursor_auth::{AuthConfig, AuthError, login};
use cursor_proto::ir::{Classify as _, ErrorKind, NextStep};
use futures::executor::block_on;
use support::{Answer, FakeClock, ScriptedHttp, jwt, status};

const NOW_MS: u64 = 1_700_000_000_000;

fn run_login(
    http: &ScriptedHttp,
    clock: &FakeClock,
) -> (Result<cursor_auth::Credentials, AuthError>, String) {
    let mut url = String::new();
    let result = block_on(login(http, clock, &AuthConfig::default(), |shown| {
        url = shown.to_owned()
    }));
    (result, url)
}

#[test]
fn pending_polls_continue_every_500ms_until_the_tokens_arrive() {
    let access = jwt(r#"{"exp":1800000000}"#);
    // A server without the POST route: each round is a POST (404) and the GET (404 = not yet).
    let http = ScriptedHttp::new(vec![
        status(404, ""),
        status(404, ""),
        status(404, ""),
        status(404, ""),
        status(
            200,
            &format!(r#"{{"accessToken":"{access}","refreshToken":"ref"}}"#),
        ),
    ]);
    let clock = FakeClock::at_unix_ms(NOW_MS);
    let (result, url) = run_login(&http, &clock);
    let credentials = result.unwrap();
    assert_eq!(credentials.access, access);
    assert_eq!(credentials.refresh, "ref");
    assert_eq!(credentials.expires, 1_800_000_000_000 - 300_000);
    assert_eq!(http.request_count(), 5);
    assert_eq!(
        clock.elapsed(),
        Duration::from_millis(1000),
        "two 500 ms pauses"
    );

    // The poll carries the uuid and the verifier whose challenge was in the link.
    let requests = http.requests.lock().unwrap();
    let methods: Vec<&str> = requests.iter().map(|r| r.method().as_str()).collect();
    assert_eq!(methods, ["POST", "GET", "POST", "GET", "POST"]);
    let query = requests[1].uri().query().unwrap().to_owned();
    let (uuid, verifier) = query
        .strip_prefix("uuid=")
        .unwrap()
        .split_once("&verifier=")
        .unwrap();
    let challenge = cursor_auth::Pkce::from_verifier(verifier.to_owned())
        .challenge()
        .to_owned();
    assert_eq!(
        url,
        format!(
            "https://cursor.com/loginDeepControl?challenge={challenge}&uuid={uuid}&mode=login&redirectTarget=cli"
        )
    );
    assert_eq!(requests[0].uri().host(), Some("api2.cursor.sh"));
    let body: serde_json::Value = serde_json::from_slice(requests[0].body()).unwrap();
    assert_eq!(
        body,
        serde_json::json!({"uuid": uuid, "verifier": verifier})
    );
    for (i, request) in requests.iter().enumerate() {
        let like = &requests[i % 2];
        assert_eq!(
            request.uri(),
            like.uri(),
            "every poll of a kind is the same"
        );
        assert_eq!(request.body(), like.body());
    }
}

#[test]
fn a_server_answering_the_post_needs_no_get() {
    let http = ScriptedHttp::new(vec![status(
        200,
        r#"{"accessToken":"acc","refreshToken":"ref"}"#,
    )]);
    let (result, _) = run_login(&http, &FakeClock::at_unix_ms(NOW_MS));
    assert_eq!(result.unwrap().access, "acc");
    let trace = http.trace();
    assert_eq!(trace.len(), 1);
    assert_eq!(
        (trace[0].0.as_str(), trace[0].1.as_str()),
        ("POST", "/auth/poll")
    );
}

#[test]
fn a_403_is_a_policy_refusal_with_the_servers_reason() {
    let http = ScriptedHttp::new(vec![
        status(404, ""),
        status(403, r#"{"error":"Team requires SSO"}"#),
    ]);
    let (result, _) = run_login(&http, &FakeClock::at_unix_ms(NOW_MS));
    let error = result.unwrap_err();
    assert!(
        matches!(&error, AuthError::LoginRefused { reason } if reason == "Team requires SSO"),
        "{error:?}"
    );
    assert_eq!(error.kind(), ErrorKind::RemoteRefusal);
    assert_eq!(http.request_count(), 2);
}

#[test]
fn a_login_left_pending_times_out_after_180_simulated_seconds() {
    let http = ScriptedHttp::new(vec![status(404, "")]);
    let clock = FakeClock::at_unix_ms(NOW_MS);
    let real_start = Instant::now();
    let (result, _) = run_login(&http, &clock);
    let error = result.unwrap_err();
    assert!(
        matches!(error, AuthError::LoginTimedOut { waited } if waited == Duration::from_secs(180)),
        "{error:?}"
    );
    assert_eq!(error.kind(), ErrorKind::Auth);
    assert_eq!(error.next_step(), NextStep::Login);
    assert_eq!(clock.elapsed(), Duration::from_secs(180));
    // One round at 0 s and one after each 500 ms pause that ends before the deadline, each
    // a POST and its GET fallback.
    assert_eq!(http.request_count(), 720);
    assert!(
        real_start.elapsed() < Duration::from_secs(10),
        "the test must not really wait"
    );
}

#[test]
fn a_malformed_success_body_is_protocol_drift_and_does_not_leak_it() {
    for body in [
        r#"{"accessToken":"tok-secret""#,
        r#"{"accessToken":"tok-secret"}"#,
        r#"{"accessToken":42}"#,
    ] {
        let http = ScriptedHttp::new(vec![status(200, body)]);
        let (result, _) = run_login(&http, &FakeClock::at_unix_ms(NOW_MS));
        let error = result.unwrap_err();
        assert!(
            matches!(error, AuthError::Malformed { .. }),
            "{body}: {error:?}"
        );
        assert_eq!(error.kind(), ErrorKind::ProtocolDrift);
        assert!(!error.to_string().contains("tok-secret"), "{error}");
    }
}

#[test]
fn other_statuses_end_the_login_classified() {
    for (code, kind) in [
        (500, ErrorKind::Network),
        (429, ErrorKind::RemoteRefusal),
        (400, ErrorKind::ProtocolDrift),
    ] {
        let http = ScriptedHttp::new(vec![status(code, "")]);
        let (result, _) = run_login(&http, &FakeClock::at_unix_ms(NOW_MS));
        assert_eq!(result.unwrap_err().kind(), kind, "HTTP {code}");
    }
}

#[test]
fn transient_send_failures_are_survived_but_three_in_a_row_are_not() {
    let body = r#"{"accessToken":"a","refreshToken":"r"}"#;
    let http = ScriptedHttp::new(vec![
        Answer::Fail("reset"),
        Answer::Fail("reset"),
        status(200, body),
    ]);
    let (result, _) = run_login(&http, &FakeClock::at_unix_ms(NOW_MS));
    assert_eq!(result.unwrap().access, "a");

    let http = ScriptedHttp::new(vec![
        Answer::Fail("reset"),
        Answer::Fail("reset"),
        Answer::Fail("dns"),
    ]);
    let (result, _) = run_login(&http, &FakeClock::at_unix_ms(NOW_MS));
    let error = result.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Network);
    assert!(error.to_string().contains("dns"));
}

#[test]
fn loopback_bases_are_used_for_both_the_link_and_the_poll() {
    let http = ScriptedHttp::new(vec![status(
        200,
        r#"{"accessToken":"a","refreshToken":"r"}"#,
    )]);
    let config = AuthConfig::with_bases("http://127.0.0.1:4010", "http://localhost:4011/");
    let mut url = String::new();
    block_on(login(&http, &FakeClock::at_unix_ms(NOW_MS), &config, |u| {
        url = u.to_owned()
    }))
    .unwrap();
    assert!(
        url.starts_with("http://localhost:4011/loginDeepControl?"),
        "{url}"
    );
    let requests = http.requests.lock().unwrap();
    assert_eq!(
        requests[0].uri().authority().unwrap().as_str(),
        "127.0.0.1:4010"
    );
}
