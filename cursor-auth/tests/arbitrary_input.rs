//! Whatever Cursor or the credential store sends, the parsers return a classified error and
//! never echo a token.

use std::time::Instant;

use bytes::Bytes;
use cursor_auth::{
    AuthConfig, Credentials, LoginFlow, LoginStep, Pkce, handle_refresh_response, jwt,
};
use cursor_proto::ir::Classify as _;
use proptest::prelude::*;

const MARKER: &str = "SECRETMARKER";

fn response(status: u16, body: Vec<u8>) -> http::Response<Bytes> {
    http::Response::builder()
        .status(status)
        .body(Bytes::from(body))
        .unwrap()
}

/// Bodies that are JSON-ish and carry the marker in places a token could be.
fn bodies() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        any::<Vec<u8>>(),
        "[ -~]{0,60}".prop_map(|s| format!("{{\"accessToken\":{s}\"{MARKER}\"").into_bytes()),
        any::<i64>().prop_map(
            |n| format!("{{\"accessToken\":\"{MARKER}\",\"refreshToken\":{n}}}").into_bytes()
        ),
        Just(format!("{{\"access_token\":{{\"x\":\"{MARKER}\"}}}}").into_bytes()),
        Just(format!("{{\"expires_in\":\"{MARKER}\",\"access_token\":\"a\"}}").into_bytes()),
    ]
}

proptest! {
    #[test]
    fn poll_answers_never_panic_or_leak(status in 100_u16..600, body in bodies()) {
        let now = Instant::now();
        let pkce = Pkce::from_verifier("v".into());
        let mut flow = LoginFlow::with_secrets(&AuthConfig::default(), pkce, "u".into(), now, 0).unwrap();
        prop_assert!(matches!(flow.step(now).unwrap(), LoginStep::Send(_)));
        if let Err(error) = flow.handle_response(response(status, body), now) {
            prop_assert!(!error.to_string().contains(MARKER), "{}", error);
            prop_assert!(!error.next_step().to_string().is_empty());
        }
    }

    #[test]
    fn refresh_answers_never_panic_or_leak(status in 100_u16..600, body in bodies()) {
        let previous = Credentials::new("a", "r", 0);
        if let Err(error) = handle_refresh_response(response(status, body), &previous, 0) {
            prop_assert!(!error.to_string().contains(MARKER), "{}", error);
        }
    }

    #[test]
    fn stored_credentials_never_panic_or_leak(text in "[ -~]{0,80}") {
        let json = format!("{{\"type\":\"oauth\",\"access\":\"{MARKER}\",\"refresh\":{text},\"expires\":\"{MARKER}\"}}");
        if let Err(error) = Credentials::from_json(&json) {
            prop_assert!(!error.to_string().contains(MARKER), "{}", error);
        }
    }

    #[test]
    fn any_token_has_an_expiry_or_none(token in any::<String>()) {
        if let Some(ms) = jwt::expiry_unix_ms(&token) {
            prop_assert!(ms >= 1000);
        }
    }
}
