//! pi's OAuth callbacks (`login`, `refreshToken`, `getApiKey`) over cursor-auth and the
//! transport's HTTP client.

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use cursor_auth::{AuthConfig, Clock, Credentials, HttpClient, UserApiKey};
use cursor_proto::ir::{Classify as _, ErrorInfo, ErrorKind, NextStep};

use cursor_agent::session::TokenSource;

use super::TurnOptions;
use super::headless::API_KEY_ENV;

/// The provider's OAuth: what pi's `oauth.login`, `oauth.refreshToken` and `oauth.getApiKey`
/// call. Credentials travel as pi's `auth.json` entry (JSON); pi stores them, this type never
/// does.
#[derive(Clone)]
pub struct CursorOAuth {
    http: Arc<dyn HttpClient>,
    clock: Arc<dyn Clock>,
    config: AuthConfig,
}

impl fmt::Debug for CursorOAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CursorOAuth")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl CursorOAuth {
    /// OAuth against Cursor's production endpoints through `http`, timed by `clock`.
    pub fn new(http: Arc<dyn HttpClient>, clock: Arc<dyn Clock>) -> Self {
        Self::with_config(http, clock, AuthConfig::default())
    }

    /// OAuth against the endpoints of `config` (loopback in tests).
    pub fn with_config(
        http: Arc<dyn HttpClient>,
        clock: Arc<dyn Clock>,
        config: AuthConfig,
    ) -> Self {
        Self {
            http,
            clock,
            config,
        }
    }

    /// Runs the login: `on_url` receives the deep link for the user to open; resolves to the
    /// `auth.json` entry once the browser sign-in completes.
    ///
    /// # Errors
    ///
    /// The classified failure (timeout, refusal, network) with its next step.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: dropping the future abandons the sign-in; nothing is stored.
    pub async fn login(&self, on_url: impl FnOnce(&str)) -> Result<String, ErrorInfo> {
        let credentials = cursor_auth::login(
            self.http.as_ref(),
            self.clock.as_ref(),
            &self.config,
            on_url,
        )
        .await
        .map_err(|error| error.to_info())?;
        to_json(&credentials)
    }

    /// Exchanges the refresh token of a stored entry for a new access token; fields of the
    /// entry this crate does not know are kept.
    ///
    /// # Errors
    ///
    /// A malformed entry, a refused refresh (next step `/login cursor`), or a network failure.
    ///
    /// # Cancel safety
    ///
    /// Not resumable: see [`cursor_auth::refresh`]; a dropped call may lose a rotated refresh token.
    pub async fn refresh(&self, credentials_json: &str) -> Result<String, ErrorInfo> {
        let credentials = parse(credentials_json)?;
        let refreshed = cursor_auth::refresh(
            self.http.as_ref(),
            self.clock.as_ref(),
            &self.config,
            &credentials,
        )
        .await
        .map_err(|error| error.to_info())?;
        to_json(&refreshed)
    }

    /// Exchanges `refresh` for a new access token, for a Run the server refused with 401
    /// (`access` is the token it refused). Only the access token comes back: pi keeps the
    /// stored entry and refreshes it itself when it expires.
    ///
    /// # Errors
    ///
    /// The classified refresh failure (a refused refresh asks for `/login cursor`).
    ///
    /// # Cancel safety
    ///
    /// Not resumable: see [`cursor_auth::refresh`].
    pub async fn refresh_access(&self, access: &str, refresh: &str) -> Result<String, ErrorInfo> {
        let credentials = Credentials::new(access, refresh, 0);
        let refreshed = cursor_auth::refresh(
            self.http.as_ref(),
            self.clock.as_ref(),
            &self.config,
            &credentials,
        )
        .await
        .map_err(|error| error.to_info())?;
        Ok(refreshed.access)
    }
}

impl CursorOAuth {
    /// The access token for the user API key `key` (`CURSOR_API_KEY`): the one exchanged last
    /// while it has not expired, else a fresh exchange. Kept in memory only.
    ///
    /// # Errors
    ///
    /// A refused key (an auth error naming `CURSOR_API_KEY`), or a network failure.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: see [`UserApiKey::access_token`].
    pub async fn api_key_access(&self, key: &UserApiKey) -> Result<String, ErrorInfo> {
        key.access_token(self.http.as_ref(), self.clock.as_ref(), &self.config)
            .await
            .map_err(|error| api_key_error(&error))
    }

    /// A fresh exchange of `key` after a Run made with `rejected` was refused with 401.
    ///
    /// # Errors
    ///
    /// As [`api_key_access`](Self::api_key_access).
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: see [`UserApiKey::exchange_after_401`].
    pub async fn api_key_after_401(
        &self,
        key: &UserApiKey,
        rejected: &str,
    ) -> Result<String, ErrorInfo> {
        key.exchange_after_401(
            self.http.as_ref(),
            self.clock.as_ref(),
            &self.config,
            rejected,
        )
        .await
        .map_err(|error| api_key_error(&error))
    }
}

/// An exchange failure, naming the variable the key came from (pi's next step for any auth
/// error is `/login cursor`, whose stored credential would then win over the key).
fn api_key_error(error: &cursor_auth::AuthError) -> ErrorInfo {
    let mut info = error.to_info();
    info.message = format!("{API_KEY_ENV}: {}", info.message);
    info
}

/// The access token for `credential`: itself, or, for a user API key (`CURSOR_API_KEY`), the
/// token it is exchanged for at `api` (kept in memory for the process, see [`CursorOAuth::api_key_access`]).
///
/// # Errors
///
/// A refused key or a failed exchange.
///
/// # Cancel safety
///
/// Cancel-safe: see [`UserApiKey::access_token`](cursor_auth::UserApiKey::access_token).
pub async fn access_token_for(
    http: Arc<dyn HttpClient>,
    api: &cursor_transport::Origin,
    credential: String,
) -> Result<String, ErrorInfo> {
    if !cursor_auth::is_user_api_key(&credential) {
        return Ok(credential);
    }
    let oauth = CursorOAuth::with_config(
        http,
        Arc::new(cursor_transport::TokioClock),
        super::auth_config(api),
    );
    oauth.api_key_access(&user_api_key(&credential)).await
}

/// The process's holder of the user API key `key`: the same one for every turn, so its
/// exchanged token is reused until it expires. The last few keys seen are kept (a process
/// normally sees one).
pub(crate) fn user_api_key(key: &str) -> Arc<UserApiKey> {
    const KEPT: usize = 4;
    static HELD: Mutex<Vec<Arc<UserApiKey>>> = Mutex::new(Vec::new());
    let mut held = HELD.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(found) = held.iter().find(|held| held.holds(key)) {
        return Arc::clone(found);
    }
    if held.len() == KEPT {
        held.remove(0);
    }
    let new = Arc::new(UserApiKey::new(key));
    held.push(Arc::clone(&new));
    new
}

/// pi's credentials for one call: the access token pi resolved (`getApiKey`) and, when the JS
/// entry found one, the stored refresh token for one refresh. A user API key (`crsr_…`, from
/// `CURSOR_API_KEY`) is exchanged for the access token instead, and exchanged again after a
/// 401.
pub(super) struct PiTokens {
    access: Option<String>,
    refresh: Option<String>,
    api_key: Option<Arc<UserApiKey>>,
    oauth: Option<CursorOAuth>,
}

impl fmt::Debug for PiTokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PiTokens")
            .field("access", &self.access.as_ref().map(|_| "<redacted>"))
            .field("refresh", &self.refresh.as_ref().map(|_| "<redacted>"))
            .finish_non_exhaustive()
    }
}

impl PiTokens {
    /// Whether a refused access token can be replaced: a user API key is exchanged again, a
    /// pi credential refreshed with its stored refresh token.
    pub(super) fn can_refresh(&self) -> bool {
        self.oauth.is_some() && (self.api_key.is_some() || self.refresh.is_some())
    }

    /// The Cursor endpoints a user API key is exchanged at.
    fn oauth(&self) -> Result<&CursorOAuth, ErrorInfo> {
        self.oauth.as_ref().ok_or_else(|| {
            ErrorInfo::new(
                ErrorKind::Local,
                "a user API key reached a channel built without the Cursor auth endpoints",
                NextStep::host_bug("build the channel with with_token_refresh"),
            )
        })
    }

    /// The credentials of `options`; `oauth` exchanges a user API key and refreshes.
    pub(super) fn of(options: &TurnOptions, oauth: Option<CursorOAuth>) -> Self {
        let refresh = options
            .refresh_token
            .as_deref()
            .map(str::trim)
            .filter(|token| !token.is_empty())
            .map(str::to_owned);
        let access = options.access_token().ok();
        let api_key = access
            .filter(|credential| cursor_auth::is_user_api_key(credential))
            .map(user_api_key);
        Self {
            access: access.filter(|_| api_key.is_none()).map(str::to_owned),
            refresh,
            api_key,
            oauth,
        }
    }
}

#[async_trait::async_trait]
impl TokenSource for PiTokens {
    async fn access_token(&self) -> Result<String, ErrorInfo> {
        if let Some(key) = &self.api_key {
            return self.oauth()?.api_key_access(key).await;
        }
        self.access.clone().ok_or_else(|| {
            ErrorInfo::new(
                ErrorKind::Auth,
                "no Cursor credentials reached the provider",
                NextStep::Login,
            )
        })
    }

    async fn refresh(&self, rejected: &str) -> Result<String, ErrorInfo> {
        if let Some(key) = &self.api_key {
            return self.oauth()?.api_key_after_401(key, rejected).await;
        }
        match (&self.oauth, &self.refresh) {
            (Some(oauth), Some(refresh)) => oauth.refresh_access(rejected, refresh).await,
            _ => Err(ErrorInfo::new(
                ErrorKind::Auth,
                "no refresh token is stored beside the access token",
                NextStep::Login,
            )),
        }
    }
}

/// What pi's `getApiKey(credentials)` returns: the access token of a stored entry.
///
/// # Errors
///
/// An auth error (next step `/login cursor`) when the entry is malformed or has no token.
pub fn api_key(credentials_json: &str) -> Result<String, ErrorInfo> {
    let credentials = parse(credentials_json)?;
    if credentials.api_key().is_empty() {
        return Err(ErrorInfo::new(
            ErrorKind::Auth,
            "the stored Cursor credentials hold no access token",
            NextStep::Login,
        ));
    }
    Ok(credentials.api_key().to_owned())
}

fn parse(credentials_json: &str) -> Result<Credentials, ErrorInfo> {
    Credentials::from_json(credentials_json).map_err(|error| {
        let mut info = error.to_info();
        info.kind = ErrorKind::Auth;
        info.next_step = NextStep::Login;
        info
    })
}

fn to_json(credentials: &Credentials) -> Result<String, ErrorInfo> {
    serde_json::to_string(credentials).map_err(|error| {
        ErrorInfo::new(
            ErrorKind::Local,
            format!("could not serialize the credentials: {error}"),
            NextStep::Login,
        )
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use bytes::Bytes;
    use cursor_auth::HttpError;

    use super::*;

    /// Answers every request with one canned response and records the paths.
    #[derive(Debug)]
    struct Canned {
        status: u16,
        body: &'static str,
        paths: Mutex<Vec<String>>,
    }

    #[async_trait::async_trait]
    impl HttpClient for Canned {
        async fn send(
            &self,
            request: http::Request<Bytes>,
        ) -> Result<http::Response<Bytes>, HttpError> {
            self.paths
                .lock()
                .unwrap()
                .push(request.uri().path().to_owned());
            Ok(http::Response::builder()
                .status(self.status)
                .body(Bytes::from_static(self.body.as_bytes()))
                .unwrap())
        }
    }

    fn oauth(status: u16, body: &'static str) -> (CursorOAuth, Arc<Canned>) {
        let canned = Arc::new(Canned {
            status,
            body,
            paths: Mutex::new(Vec::new()),
        });
        let oauth = CursorOAuth::new(canned.clone(), Arc::new(cursor_transport::TokioClock));
        (oauth, canned)
    }

    const STORED: &str = r#"{"type":"oauth","access":"old-access","refresh":"old-refresh","expires":1000,"extra":"kept"}"#;

    #[tokio::test]
    async fn login_shows_the_deep_link_and_returns_a_pi_oauth_entry() {
        let (oauth, canned) = oauth(
            200,
            r#"{"accessToken":"new-access","refreshToken":"new-refresh"}"#,
        );
        let mut shown = String::new();
        let entry = oauth.login(|url| shown = url.to_owned()).await.unwrap();
        assert!(
            shown.starts_with("https://cursor.com/loginDeepControl?"),
            "{shown}"
        );
        assert_eq!(canned.paths.lock().unwrap().as_slice(), ["/auth/poll"]);
        let entry: serde_json::Value = serde_json::from_str(&entry).unwrap();
        assert_eq!(entry["type"], "oauth");
        assert_eq!(entry["access"], "new-access");
        assert!(entry["expires"].as_u64().unwrap() > 0);
    }

    #[tokio::test]
    async fn refresh_posts_to_the_token_endpoint_and_keeps_unknown_fields() {
        let (oauth, canned) = oauth(200, r#"{"access_token":"fresh-access"}"#);
        let entry = oauth.refresh(STORED).await.unwrap();
        assert_eq!(canned.paths.lock().unwrap().as_slice(), ["/oauth/token"]);
        let entry: serde_json::Value = serde_json::from_str(&entry).unwrap();
        assert_eq!(entry["access"], "fresh-access");
        assert_eq!(entry["extra"], "kept");
    }

    #[tokio::test]
    async fn a_refused_refresh_is_an_auth_error_pointing_at_login() {
        let (oauth, _) = oauth(401, r#"{"error":"invalid_grant"}"#);
        let error = oauth.refresh(STORED).await.unwrap_err();
        assert_eq!(error.kind, ErrorKind::Auth, "{error}");
        assert_eq!(error.next_step, NextStep::Login, "{error}");
    }

    #[test]
    fn api_key_is_the_access_token_and_a_malformed_entry_asks_for_login() {
        assert_eq!(api_key(STORED).unwrap(), "old-access");
        let error = api_key(r#"{"type":"api_key","key":"x"}"#).unwrap_err();
        assert_eq!(error.kind, ErrorKind::Auth);
        assert!(!error.message.contains("\"x\""), "{error}");
        assert_eq!(error.next_step, NextStep::Login);
    }
}
