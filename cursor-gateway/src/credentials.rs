//! Cursor credentials, in the issue's order: `CURSOR_API_KEY` (exchanged for tokens),
//! `CURSOR_ACCESS_TOKEN` / `CURSOR_REFRESH_TOKEN`, then the `cursor` entry of pi's `auth.json`.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use cursor_agent::ir::{ErrorInfo, ErrorKind, NextStep};
use cursor_agent::prelude::async_trait;
use cursor_agent::session::{Client, Origin, TokenSource};
use cursor_auth::{AuthConfig, Credentials, UserApiKey};
use cursor_transport::TokioClock;

/// Where the gateway's Cursor credentials came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CredentialSource {
    /// `CURSOR_API_KEY`, exchanged at `/auth/exchange_user_api_key`.
    ApiKey,
    /// `CURSOR_ACCESS_TOKEN` (with `CURSOR_REFRESH_TOKEN` when set).
    Environment,
    /// The `cursor` entry of pi's `auth.json` at this path.
    PiAuthFile(PathBuf),
    /// Nothing found: every request answers 401.
    None,
}

impl std::fmt::Display for CredentialSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::ApiKey => f.write_str("CURSOR_API_KEY"),
            Self::Environment => f.write_str("CURSOR_ACCESS_TOKEN"),
            Self::PiAuthFile(path) => write!(f, "{}", path.display()),
            Self::None => f.write_str("none"),
        }
    }
}

enum Held {
    ApiKey(Arc<UserApiKey>),
    Oauth(Credentials),
    None,
}

/// The gateway's [`TokenSource`]: exchanges an API key, or refreshes OAuth tokens through
/// the API origin, and never writes credentials anywhere.
pub struct GatewayTokens {
    client: Client,
    auth: AuthConfig,
    held: Mutex<Held>,
    source: CredentialSource,
}

impl std::fmt::Debug for GatewayTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GatewayTokens")
            .field("source", &self.source)
            .finish_non_exhaustive()
    }
}

fn no_credentials() -> ErrorInfo {
    ErrorInfo::new(
        ErrorKind::Auth,
        "the gateway has no Cursor credentials",
        NextStep::fix_config(
            "set CURSOR_API_KEY, or CURSOR_ACCESS_TOKEN (and CURSOR_REFRESH_TOKEN), or sign in \
             with pi's /login cursor, then restart the gateway",
        ),
    )
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

impl GatewayTokens {
    /// Reads the credentials in the documented order; `env` reads an environment variable.
    pub fn from_environment(
        client: Client,
        api_origin: Origin,
        env: impl Fn(&str) -> Option<String>,
    ) -> Self {
        let var = |name: &str| {
            env(name)
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
        };
        let (held, source) = if let Some(key) = var("CURSOR_API_KEY") {
            (
                Held::ApiKey(Arc::new(UserApiKey::new(key))),
                CredentialSource::ApiKey,
            )
        } else if let Some(access) = var("CURSOR_ACCESS_TOKEN") {
            let refresh = var("CURSOR_REFRESH_TOKEN").unwrap_or_default();
            let credentials = Credentials::from_tokens(access, refresh, now_ms(), None);
            (Held::Oauth(credentials), CredentialSource::Environment)
        } else {
            match pi_entry(&env) {
                Some((credentials, path)) => {
                    (Held::Oauth(credentials), CredentialSource::PiAuthFile(path))
                }
                None => (Held::None, CredentialSource::None),
            }
        };
        let mut auth = AuthConfig::default();
        auth.api_base = api_origin.to_string().trim_end_matches('/').to_owned();
        Self {
            client,
            auth,
            held: Mutex::new(held),
            source,
        }
    }

    /// Where the credentials came from.
    pub fn source(&self) -> &CredentialSource {
        &self.source
    }

    fn held(&self) -> std::sync::MutexGuard<'_, Held> {
        self.held
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The token `key` is exchanged for (`POST /auth/exchange_user_api_key`), kept in memory
    /// until it expires; after a refusal of `rejected`, a fresh exchange.
    async fn exchange(
        &self,
        key: &UserApiKey,
        rejected: Option<&str>,
    ) -> Result<String, ErrorInfo> {
        let exchanged = match rejected {
            None => {
                key.access_token(&self.client, &TokioClock, &self.auth)
                    .await
            }
            Some(rejected) => {
                key.exchange_after_401(&self.client, &TokioClock, &self.auth, rejected)
                    .await
            }
        };
        exchanged.map_err(|error| {
            use cursor_agent::ir::Classify as _;
            let mut info = error.to_info();
            info.message = format!("CURSOR_API_KEY: {}", info.message);
            if info.kind == ErrorKind::Auth {
                info.next_step = NextStep::fix_config("mint a new API key in Cursor's dashboard");
            }
            info
        })
    }

    async fn refresh_oauth(&self, credentials: Credentials) -> Result<String, ErrorInfo> {
        if credentials.refresh.is_empty() {
            return Err(ErrorInfo::new(
                ErrorKind::Auth,
                "the Cursor access token was refused and no refresh token is set",
                NextStep::fix_config("set CURSOR_REFRESH_TOKEN, or a fresh CURSOR_ACCESS_TOKEN"),
            ));
        }
        let fresh = cursor_auth::refresh(&self.client, &TokioClock, &self.auth, &credentials)
            .await
            .map_err(|e| {
                use cursor_agent::ir::Classify as _;
                ErrorInfo::new(e.kind(), e.to_string(), e.next_step())
            })?;
        let access = fresh.access.clone();
        *self.held() = Held::Oauth(fresh);
        Ok(access)
    }
}

#[async_trait]
impl TokenSource for GatewayTokens {
    async fn access_token(&self) -> Result<String, ErrorInfo> {
        let action = match &*self.held() {
            Held::None => return Err(no_credentials()),
            Held::ApiKey(key) => Err(Arc::clone(key)),
            Held::Oauth(credentials) => {
                if credentials.is_expired(now_ms()) && !credentials.refresh.is_empty() {
                    Ok(credentials.clone())
                } else {
                    return Ok(credentials.access.clone());
                }
            }
        };
        match action {
            Err(key) => self.exchange(&key, None).await,
            Ok(credentials) => self.refresh_oauth(credentials).await,
        }
    }

    async fn refresh(&self, rejected: &str) -> Result<String, ErrorInfo> {
        let action = match &*self.held() {
            Held::None => return Err(no_credentials()),
            Held::ApiKey(key) => Err(Arc::clone(key)),
            Held::Oauth(credentials) => {
                if credentials.access != rejected {
                    return Ok(credentials.access.clone());
                }
                Ok(credentials.clone())
            }
        };
        match action {
            Err(key) => self.exchange(&key, Some(rejected)).await,
            Ok(credentials) => self.refresh_oauth(credentials).await,
        }
    }
}

/// The `cursor` entry of pi's `auth.json` (`$PI_CODING_AGENT_DIR/auth.json`, else
/// `~/.pi/agent/auth.json`).
fn pi_entry(env: &impl Fn(&str) -> Option<String>) -> Option<(Credentials, PathBuf)> {
    let dir = match env("PI_CODING_AGENT_DIR").filter(|d| !d.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env("HOME")?).join(".pi/agent"),
    };
    let path = dir.join("auth.json");
    let text = std::fs::read_to_string(&path).ok()?;
    let file: serde_json::Value = serde_json::from_str(&text).ok()?;
    let credentials = Credentials::from_json(&file.get("cursor")?.to_string()).ok()?;
    (!credentials.access.is_empty()).then_some((credentials, path))
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn tokens(env: &[(&str, &str)]) -> GatewayTokens {
        let env: Vec<(String, String)> = env
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        GatewayTokens::from_environment(
            Client::new().unwrap(),
            Origin::api2(),
            move |name: &str| env.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()),
        )
    }

    #[test]
    fn api_key_wins_over_tokens_and_tokens_over_the_pi_file() {
        let home = tempfile::tempdir().unwrap();
        let agent = home.path().join(".pi/agent");
        std::fs::create_dir_all(&agent).unwrap();
        std::fs::write(
            agent.join("auth.json"),
            r#"{"cursor": {"type": "oauth", "access": "pi-access", "refresh": "pi-refresh", "expires": 99999999999999}}"#,
        )
        .unwrap();
        let home = home.path().to_str().unwrap();
        let all = tokens(&[
            ("HOME", home),
            ("CURSOR_API_KEY", "crsr_key"),
            ("CURSOR_ACCESS_TOKEN", "env-access"),
        ]);
        assert_eq!(all.source(), &CredentialSource::ApiKey);
        let env = tokens(&[("HOME", home), ("CURSOR_ACCESS_TOKEN", "env-access")]);
        assert_eq!(env.source(), &CredentialSource::Environment);
        let pi = tokens(&[("HOME", home)]);
        assert!(
            matches!(pi.source(), CredentialSource::PiAuthFile(path) if path.ends_with(".pi/agent/auth.json"))
        );
        assert_eq!(tokens(&[]).source(), &CredentialSource::None);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_api_key_is_exchanged_once_then_again_after_a_refusal() {
        use std::sync::{Arc, Mutex};
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&seen);
        let server = cursor_transport::testing::TestServer::builder()
            .handler(move |request| {
                let mut log = log.lock().unwrap();
                let auth = request
                    .headers()
                    .get(http::header::AUTHORIZATION)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or_default()
                    .to_owned();
                log.push((request.uri().path().to_owned(), auth));
                let body = format!(r#"{{"accessToken": "exchanged-{}"}}"#, log.len());
                http::Response::new(Bytes::from(body))
            })
            .start()
            .await
            .unwrap();
        let tokens = GatewayTokens::from_environment(
            Client::new().unwrap(),
            server.origin(),
            |name: &str| (name == "CURSOR_API_KEY").then(|| "crsr_test".to_owned()),
        );
        assert_eq!(tokens.access_token().await.unwrap(), "exchanged-1");
        assert_eq!(tokens.access_token().await.unwrap(), "exchanged-1");
        assert_eq!(tokens.refresh("exchanged-1").await.unwrap(), "exchanged-2");
        let seen = seen.lock().unwrap().clone();
        assert_eq!(
            seen,
            vec![
                (
                    "/auth/exchange_user_api_key".to_owned(),
                    "Bearer crsr_test".to_owned()
                );
                2
            ]
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_refused_api_key_is_an_auth_error() {
        let server = cursor_transport::testing::TestServer::builder()
            .handler(|_| {
                let mut response = http::Response::new(Bytes::from_static(b"{}"));
                *response.status_mut() = http::StatusCode::UNAUTHORIZED;
                response
            })
            .start()
            .await
            .unwrap();
        let tokens = GatewayTokens::from_environment(
            Client::new().unwrap(),
            server.origin(),
            |name: &str| (name == "CURSOR_API_KEY").then(|| "crsr_bad".to_owned()),
        );
        let error = tokens.access_token().await.unwrap_err();
        assert_eq!(error.kind, ErrorKind::Auth);
        assert!(
            error.message.contains("CURSOR_API_KEY"),
            "{}",
            error.message
        );
    }

    #[tokio::test]
    async fn no_credentials_is_an_auth_error_that_says_what_to_set() {
        let error = tokens(&[]).access_token().await.unwrap_err();
        assert_eq!(error.kind, ErrorKind::Auth);
        assert!(error.next_step.to_string().contains("CURSOR_API_KEY"));
    }

    #[tokio::test]
    async fn the_pi_entry_access_token_is_used_as_is() {
        let home = tempfile::tempdir().unwrap();
        let agent = home.path().join(".pi/agent");
        std::fs::create_dir_all(&agent).unwrap();
        std::fs::write(
            agent.join("auth.json"),
            r#"{"cursor": {"type": "oauth", "access": "pi-access", "refresh": "r", "expires": 99999999999999}}"#,
        )
        .unwrap();
        let source = tokens(&[("HOME", home.path().to_str().unwrap())]);
        assert_eq!(source.access_token().await.unwrap(), "pi-access");
    }
}
