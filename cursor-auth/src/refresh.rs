//! The sans-IO token refresh: `POST /oauth/token` with the refresh token.

use std::time::Duration;

use bytes::Bytes;
use http::header::CONTENT_TYPE;
use http::{HeaderValue, Method, Request, Response, StatusCode};
use serde::Deserialize;

use crate::config::checked_uri;
use crate::{AuthConfig, AuthError, CLIENT_ID, Credentials};

const OPERATION: &str = "token refresh";

/// Builds the refresh request for `credentials`.
pub fn refresh_request(
    config: &AuthConfig,
    credentials: &Credentials,
) -> Result<Request<Bytes>, AuthError> {
    let uri = checked_uri(&config.api_url("/oauth/token"), "api", &config.api_base)?;
    let body = serde_json::json!({
        "grant_type": "refresh_token",
        "client_id": CLIENT_ID,
        "refresh_token": credentials.refresh,
    });
    let mut request = Request::new(Bytes::from(body.to_string()));
    *request.method_mut() = Method::POST;
    *request.uri_mut() = uri;
    let headers = request.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    headers.insert("x-cursor-client-type", HeaderValue::from_static("ide"));
    Ok(request)
}

/// Reads the refresh answer into new credentials.
///
/// The refresh token is kept unless Cursor issues a new one, and `previous`'s extra fields are
/// carried over. `shouldLogout` (or `should_logout`) ends the session whatever the status.
pub fn handle_refresh_response(
    response: Response<Bytes>,
    previous: &Credentials,
    now_unix_ms: u64,
) -> Result<Credentials, AuthError> {
    let status = response.status();
    let parsed = serde_json::from_slice::<RefreshAnswer>(response.body());
    if parsed
        .as_ref()
        .is_ok_and(|answer| answer.should_logout == Some(true))
    {
        return Err(AuthError::LogoutRequired);
    }
    match status {
        StatusCode::OK => {}
        StatusCode::BAD_REQUEST | StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => {
            return Err(AuthError::RefreshRejected { status });
        }
        _ => return Err(AuthError::unexpected_status(OPERATION, status)),
    }
    let answer = parsed.map_err(|error| AuthError::malformed_json(OPERATION, &error))?;
    let access = answer
        .access_token
        .filter(|token| !token.is_empty())
        .ok_or_else(|| AuthError::Malformed {
            operation: OPERATION,
            detail: "`access_token` is missing or empty".into(),
        })?;
    let refresh = answer
        .refresh_token
        .filter(|token| !token.is_empty())
        .unwrap_or_else(|| previous.refresh.clone());
    let lifetime = answer
        .expires_in
        .filter(|s| s.is_finite() && *s > 0.0)
        .map(Duration::from_secs_f64);
    let mut credentials = Credentials::from_tokens(access, refresh, now_unix_ms, lifetime);
    credentials.extra = previous.extra.clone();
    Ok(credentials)
}

/// The refresh answer: snake_case tokens, camelCase or snake_case logout flag.
#[derive(Deserialize)]
struct RefreshAnswer {
    #[serde(default, alias = "accessToken")]
    access_token: Option<String>,
    #[serde(default, alias = "refreshToken")]
    refresh_token: Option<String>,
    #[serde(default, rename = "shouldLogout", alias = "should_logout")]
    should_logout: Option<bool>,
    #[serde(default)]
    expires_in: Option<f64>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jwt::fake_jwt;
    use crate::test_support::response;
    use cursor_proto::ir::{Classify as _, NextStep};

    #[test]
    fn the_request_posts_grant_client_id_and_refresh_token_as_json() {
        let request =
            refresh_request(&AuthConfig::default(), &Credentials::new("a", "ref-1", 0)).unwrap();
        assert_eq!(request.method(), Method::POST);
        assert_eq!(
            request.uri().to_string(),
            "https://api2.cursor.sh/oauth/token"
        );
        assert_eq!(request.headers()[CONTENT_TYPE], "application/json");
        let body: serde_json::Value = serde_json::from_slice(request.body()).unwrap();
        assert_eq!(
            body,
            serde_json::json!({
                "grant_type": "refresh_token",
                "client_id": "KbZUR41cY7W6zRSdpSUJ7I7mLYBKOCmB",
                "refresh_token": "ref-1",
            })
        );
    }

    #[test]
    fn success_keeps_the_old_refresh_token_and_extra_fields() {
        let mut previous = Credentials::new("old", "ref-1", 0);
        previous.extra.insert("note".into(), "kept".into());
        let access = fake_jwt(r#"{"exp":1900000000}"#);
        let body = format!(r#"{{"access_token":"{access}","id_token":"i","shouldLogout":false}}"#);
        let fresh = handle_refresh_response(response(200, &body), &previous, 0).unwrap();
        assert_eq!(fresh.access, access);
        assert_eq!(fresh.refresh, "ref-1");
        assert_eq!(fresh.expires, 1_900_000_000_000 - 300_000);
        assert_eq!(fresh.extra, previous.extra);
    }

    #[test]
    fn a_rotated_refresh_token_replaces_the_old_one() {
        let body = r#"{"access_token":"opaque","refresh_token":"ref-2","expires_in":7200}"#;
        let fresh =
            handle_refresh_response(response(200, body), &Credentials::new("o", "ref-1", 0), 10)
                .unwrap();
        assert_eq!(fresh.refresh, "ref-2");
        assert_eq!(fresh.expires, 10 + 7_200_000 - 300_000);
    }

    #[test]
    fn should_logout_in_either_spelling_requires_a_new_login() {
        for body in [
            r#"{"shouldLogout":true}"#,
            r#"{"should_logout":true,"access_token":""}"#,
        ] {
            let error =
                handle_refresh_response(response(200, body), &Credentials::new("a", "r", 0), 0)
                    .unwrap_err();
            assert!(matches!(error, AuthError::LogoutRequired), "{body}");
            assert_eq!(error.to_info().next_step, NextStep::Login);
        }
    }

    #[test]
    fn a_rejected_refresh_token_is_an_auth_error() {
        let error = handle_refresh_response(response(401, "{}"), &Credentials::new("a", "r", 0), 0)
            .unwrap_err();
        assert!(matches!(error, AuthError::RefreshRejected { status } if status == 401));
        assert_eq!(error.kind(), cursor_proto::ir::ErrorKind::Auth);
    }

    #[test]
    fn a_200_without_an_access_token_is_protocol_drift() {
        for body in ["{}", r#"{"access_token":""}"#, "<html>"] {
            let error =
                handle_refresh_response(response(200, body), &Credentials::new("a", "r", 0), 0)
                    .unwrap_err();
            assert_eq!(
                error.kind(),
                cursor_proto::ir::ErrorKind::ProtocolDrift,
                "{body}"
            );
        }
    }

    #[test]
    fn a_server_error_is_a_network_class_failure() {
        let error = handle_refresh_response(
            response(502, "bad gateway"),
            &Credentials::new("a", "r", 0),
            0,
        )
        .unwrap_err();
        assert_eq!(error.kind(), cursor_proto::ir::ErrorKind::Network);
    }
}
