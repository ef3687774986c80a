//! User API keys (`crsr_…`): the first-party headless credential, exchanged for an access token
//! by `POST /auth/exchange_user_api_key` with `Authorization: Bearer <key>` and the body `{}`
//! (docs/PROTOCOL.md §4.2).
//!
//! [`UserApiKey`] holds the key and the access token of its last exchange, in memory only:
//! nothing here writes either anywhere, and `Debug` shows neither. The token is reused until
//! its JWT `exp` (minus [`EXPIRY_MARGIN`](crate::EXPIRY_MARGIN)); a caller whose request was
//! refused with 401 calls [`UserApiKey::exchange_after_401`] to get a fresh one.

use std::fmt;
use std::sync::Mutex;

use bytes::Bytes;
use http::header::{AUTHORIZATION, CONTENT_TYPE};
use http::{HeaderValue, Method, Request, Response, StatusCode};
use serde::Deserialize;

use crate::config::checked_uri;
use crate::{AuthConfig, AuthError, Clock, Credentials, HttpClient};

const OPERATION: &str = "API key exchange";

/// The prefix of a Cursor user API key.
pub const USER_API_KEY_PREFIX: &str = "crsr_";

/// Whether `credential` is a user API key rather than an access token.
pub fn is_user_api_key(credential: &str) -> bool {
    credential.trim().starts_with(USER_API_KEY_PREFIX)
}

/// Builds the exchange request for `key`.
///
/// # Errors
///
/// A base URL that does not form a valid URI, or a key that cannot be a header value.
pub fn exchange_request(config: &AuthConfig, key: &str) -> Result<Request<Bytes>, AuthError> {
    let uri = checked_uri(
        &config.api_url("/auth/exchange_user_api_key"),
        "api",
        &config.api_base,
    )?;
    let mut bearer = HeaderValue::from_str(&format!("Bearer {}", key.trim()))
        .map_err(|_| AuthError::ApiKeyRefused { status: None })?;
    bearer.set_sensitive(true);
    let mut request = Request::new(Bytes::from_static(b"{}"));
    *request.method_mut() = Method::POST;
    *request.uri_mut() = uri;
    let headers = request.headers_mut();
    headers.insert(AUTHORIZATION, bearer);
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    Ok(request)
}

/// Reads the exchange answer (camelCase `{accessToken, refreshToken}`) into credentials that
/// expire at the access token's `exp`.
///
/// # Errors
///
/// [`AuthError::ApiKeyRefused`] for 400/401/403, a classified status error otherwise, or
/// protocol drift for a 200 without an access token.
pub fn handle_exchange_response(
    response: Response<Bytes>,
    now_unix_ms: u64,
) -> Result<Credentials, AuthError> {
    match response.status() {
        StatusCode::OK => {}
        status @ (StatusCode::BAD_REQUEST | StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN) => {
            return Err(AuthError::ApiKeyRefused {
                status: Some(status),
            });
        }
        status => return Err(AuthError::unexpected_status(OPERATION, status)),
    }
    let answer: ExchangeAnswer = serde_json::from_slice(response.body())
        .map_err(|error| AuthError::malformed_json(OPERATION, &error))?;
    let access = answer
        .access_token
        .filter(|token| !token.is_empty())
        .ok_or_else(|| AuthError::Malformed {
            operation: OPERATION,
            detail: "`accessToken` is missing or empty".into(),
        })?;
    Ok(Credentials::from_tokens(
        access,
        answer.refresh_token.unwrap_or_default(),
        now_unix_ms,
        None,
    ))
}

#[derive(Deserialize)]
struct ExchangeAnswer {
    #[serde(default, rename = "accessToken", alias = "access_token")]
    access_token: Option<String>,
    #[serde(default, rename = "refreshToken", alias = "refresh_token")]
    refresh_token: Option<String>,
}

/// Exchanges `key` for an access token once.
///
/// # Errors
///
/// As [`handle_exchange_response`], or the transport failure.
///
/// # Cancel safety
///
/// Cancel-safe: an exchange mints a token and changes nothing else; a dropped one is simply
/// repeated.
pub async fn exchange_user_api_key<C, K>(
    client: &C,
    clock: &K,
    config: &AuthConfig,
    key: &str,
) -> Result<Credentials, AuthError>
where
    C: HttpClient + ?Sized,
    K: Clock + ?Sized,
{
    let request = exchange_request(config, key)?;
    let response = client.send(request).await.map_err(AuthError::Http)?;
    handle_exchange_response(response, clock.unix_time_ms())
}

/// A user API key and the access token of its last exchange, both in memory only.
pub struct UserApiKey {
    key: String,
    current: Mutex<Option<Credentials>>,
}

impl fmt::Debug for UserApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UserApiKey")
            .field("key", &"crsr_<redacted>")
            .finish_non_exhaustive()
    }
}

impl UserApiKey {
    /// Holds `key` (surrounding blanks trimmed); nothing is exchanged yet.
    pub fn new(key: impl Into<String>) -> Self {
        Self {
            key: key.into().trim().to_owned(),
            current: Mutex::new(None),
        }
    }

    /// Whether this holds `key`.
    pub fn holds(&self, key: &str) -> bool {
        self.key == key.trim()
    }

    /// The access token: the last one while it has not expired, else a fresh exchange.
    ///
    /// # Errors
    ///
    /// As [`exchange_user_api_key`].
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: the held token is replaced only once an exchange completed.
    pub async fn access_token<C, K>(
        &self,
        client: &C,
        clock: &K,
        config: &AuthConfig,
    ) -> Result<String, AuthError>
    where
        C: HttpClient + ?Sized,
        K: Clock + ?Sized,
    {
        match self.held(clock.unix_time_ms(), None) {
            Some(access) => Ok(access),
            None => self.exchange(client, clock, config).await,
        }
    }

    /// A fresh exchange after a request made with `rejected` was refused with 401 (unless
    /// another caller already replaced that token).
    ///
    /// # Errors
    ///
    /// As [`exchange_user_api_key`].
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe, as [`access_token`](Self::access_token).
    pub async fn exchange_after_401<C, K>(
        &self,
        client: &C,
        clock: &K,
        config: &AuthConfig,
        rejected: &str,
    ) -> Result<String, AuthError>
    where
        C: HttpClient + ?Sized,
        K: Clock + ?Sized,
    {
        match self.held(clock.unix_time_ms(), Some(rejected)) {
            Some(access) => Ok(access),
            None => self.exchange(client, clock, config).await,
        }
    }

    /// The held access token while it is unexpired and not the `rejected` one.
    fn held(&self, now_ms: u64, rejected: Option<&str>) -> Option<String> {
        self.lock()
            .as_ref()
            .filter(|current| Some(current.access.as_str()) != rejected)
            .filter(|current| !current.is_expired(now_ms))
            .map(|current| current.access.clone())
    }

    async fn exchange<C, K>(
        &self,
        client: &C,
        clock: &K,
        config: &AuthConfig,
    ) -> Result<String, AuthError>
    where
        C: HttpClient + ?Sized,
        K: Clock + ?Sized,
    {
        let credentials = exchange_user_api_key(client, clock, config, &self.key).await?;
        let access = credentials.access.clone();
        *self.lock() = Some(credentials);
        Ok(access)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Credentials>> {
        self.current
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use cursor_proto::ir::{Classify as _, ErrorKind};

    use super::*;
    use crate::jwt::fake_jwt;
    use crate::test_support::response;

    #[test]
    fn the_exchange_posts_an_empty_object_with_the_key_as_bearer() {
        let request = exchange_request(&AuthConfig::default(), " crsr_abc ").unwrap();
        assert_eq!(request.method(), Method::POST);
        assert_eq!(
            request.uri().to_string(),
            "https://api2.cursor.sh/auth/exchange_user_api_key"
        );
        assert_eq!(request.headers()[AUTHORIZATION], "Bearer crsr_abc");
        assert!(request.headers()[AUTHORIZATION].is_sensitive());
        assert_eq!(request.body().as_ref(), b"{}");
    }

    #[test]
    fn the_answer_expires_at_the_jwt_exp_minus_the_margin() {
        let access = fake_jwt(r#"{"exp":2000000000}"#);
        let body = format!(r#"{{"accessToken":"{access}","refreshToken":"r"}}"#);
        let credentials = handle_exchange_response(response(200, &body), 1_000).unwrap();
        assert_eq!(credentials.access, access);
        assert_eq!(credentials.expires, 2_000_000_000_000 - 300_000);
    }

    #[test]
    fn a_refused_key_is_an_auth_error_that_never_shows_the_key() {
        for status in [400, 401, 403] {
            let error =
                handle_exchange_response(response(status, r#"{"error":"bad key crsr_secret"}"#), 0)
                    .unwrap_err();
            assert_eq!(error.kind(), ErrorKind::Auth, "{error}");
            assert!(!error.to_string().contains("crsr_secret"), "{error}");
            assert!(!format!("{error:?}").contains("crsr_secret"), "{error:?}");
        }
        let error = handle_exchange_response(response(200, "{}"), 0).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::ProtocolDrift);
    }

    #[test]
    fn debug_never_shows_the_key_and_keys_are_told_from_tokens() {
        let key = UserApiKey::new("crsr_very_secret");
        assert!(!format!("{key:?}").contains("very_secret"));
        assert!(key.holds(" crsr_very_secret"));
        assert!(is_user_api_key(" crsr_x"));
        assert!(!is_user_api_key("eyJhbGciOi.x.y"));
    }
}
