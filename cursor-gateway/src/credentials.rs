//! Cursor credentials, in the issue's order: `CURSOR_API_KEY` (exchanged for tokens),
//! `CURSOR_ACCESS_TOKEN` / `CURSOR_REFRESH_TOKEN`, then the `cursor` entry of pi's `auth.json`.
//!
//! Refreshes are single-flight: every conversation shares one [`GatewayTokens`], and N Runs
//! refused at once must not spend N refresh tokens (Cursor may rotate them, so all but one
//! would be dead). Rotated OAuth tokens are written back where they came from.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use cursor_agent::ir::{ErrorInfo, ErrorKind, NextStep};
use cursor_agent::prelude::async_trait;
use cursor_agent::session::{Client, Origin, TokenSource};
use cursor_auth::{AuthConfig, Credentials, UserApiKey};
use cursor_transport::TokioClock;

/// The file under the state directory holding tokens rotated from `CURSOR_ACCESS_TOKEN` /
/// `CURSOR_REFRESH_TOKEN` (environment variables cannot be written back).
pub(crate) const STATE_CREDENTIALS: &str = "credentials.json";

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

/// Where refreshed OAuth credentials are written.
#[derive(Clone)]
enum WriteBack {
    Nowhere,
    /// Replace the `cursor` entry of pi's `auth.json`.
    PiAuthFile(PathBuf),
    /// `state/credentials.json`, tagged with the environment tokens it descends from.
    State {
        path: PathBuf,
        descends_from: String,
    },
}

/// The state shared with a refresh task, which outlives a cancelled caller.
struct Shared {
    client: Client,
    auth: AuthConfig,
    held: Mutex<Held>,
    /// Held across the refresh: one network refresh or exchange at a time.
    flight: Arc<tokio::sync::Mutex<Flight>>,
    /// Refresh attempts completed; a caller that waited through one shares its outcome.
    attempts: AtomicU64,
    write_back: WriteBack,
}

#[derive(Default)]
struct Flight {
    /// The error of the last completed attempt (`None` when it succeeded).
    last_error: Option<ErrorInfo>,
}

/// The gateway's [`TokenSource`]: exchanges an API key, or refreshes OAuth tokens through
/// the API origin. Refreshes are single-flight; rotated OAuth tokens are written back to
/// pi's `auth.json`, or for environment tokens to `credentials.json` in the state directory.
pub struct GatewayTokens {
    shared: Arc<Shared>,
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

/// What a refresh does once it holds the flight lock.
enum Work {
    /// `None` for a plain `access_token`, `Some(rejected)` after a 401.
    Exchange(Arc<UserApiKey>, Option<String>),
    Refresh(Credentials),
    /// Nothing to do: the held token already answers the caller.
    Done(String),
}

impl GatewayTokens {
    /// Reads the credentials in the documented order; `env` reads an environment variable.
    ///
    /// With `state` (the gateway's state directory), tokens rotated from
    /// `CURSOR_ACCESS_TOKEN` / `CURSOR_REFRESH_TOKEN` are kept in `state/credentials.json`,
    /// and used instead of the variables while these still hold the values the file
    /// descends from (changed variables mean new tokens, which win).
    pub fn from_environment(
        client: Client,
        api_origin: Origin,
        env: impl Fn(&str) -> Option<String>,
        state: Option<PathBuf>,
    ) -> Self {
        let var = |name: &str| {
            env(name)
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
        };
        let (held, source, write_back) = if let Some(key) = var("CURSOR_API_KEY") {
            (
                Held::ApiKey(Arc::new(UserApiKey::new(key))),
                CredentialSource::ApiKey,
                WriteBack::Nowhere,
            )
        } else if let Some(access) = var("CURSOR_ACCESS_TOKEN") {
            let refresh = var("CURSOR_REFRESH_TOKEN").unwrap_or_default();
            let descends_from = env_fingerprint(&access, &refresh);
            let (credentials, write_back) = match state {
                Some(dir) => {
                    let path = dir.join(STATE_CREDENTIALS);
                    let rotated = read_state(&path, &descends_from);
                    let write_back = WriteBack::State {
                        path,
                        descends_from,
                    };
                    (rotated, write_back)
                }
                None => (None, WriteBack::Nowhere),
            };
            let credentials = credentials
                .unwrap_or_else(|| Credentials::from_tokens(access, refresh, now_ms(), None));
            (
                Held::Oauth(credentials),
                CredentialSource::Environment,
                write_back,
            )
        } else {
            match pi_entry(&env) {
                Some((credentials, path)) => (
                    Held::Oauth(credentials),
                    CredentialSource::PiAuthFile(path.clone()),
                    WriteBack::PiAuthFile(path),
                ),
                None => (Held::None, CredentialSource::None, WriteBack::Nowhere),
            }
        };
        let mut auth = AuthConfig::default();
        auth.api_base = api_origin.to_string().trim_end_matches('/').to_owned();
        Self {
            shared: Arc::new(Shared {
                client,
                auth,
                held: Mutex::new(held),
                flight: Arc::default(),
                attempts: AtomicU64::new(0),
                write_back,
            }),
            source,
        }
    }

    /// Where the credentials came from.
    pub fn source(&self) -> &CredentialSource {
        &self.source
    }

    /// One token-producing step at a time. `decide` looks at the held credentials (under the
    /// lock, so it sees what an earlier flight stored) and says what is left to do.
    async fn single_flight(
        &self,
        decide: impl Fn(&Held) -> Result<Work, ErrorInfo>,
    ) -> Result<String, ErrorInfo> {
        let attempts_before = self.shared.attempts.load(Ordering::Acquire);
        let flight = Arc::clone(&self.shared.flight).lock_owned().await;
        let work = decide(&self.shared.held())?;
        if let Work::Done(token) = work {
            return Ok(token);
        }
        // An attempt failed while this caller waited: its error is this caller's answer too,
        // rather than one more refresh per waiter.
        if self.shared.attempts.load(Ordering::Acquire) != attempts_before
            && let Some(error) = &flight.last_error
        {
            return Err(error.clone());
        }
        // A task, holding the lock, so a cancelled caller neither loses a rotated refresh
        // token nor lets a waiter start a second refresh alongside this one.
        let shared = Arc::clone(&self.shared);
        let task = tokio::spawn(async move {
            let mut flight = flight;
            let outcome = shared.perform(work).await;
            flight.last_error = outcome.as_ref().err().cloned();
            shared.attempts.fetch_add(1, Ordering::AcqRel);
            outcome
        });
        task.await.unwrap_or_else(|error| {
            Err(ErrorInfo::new(
                ErrorKind::Local,
                format!("the token refresh task failed: {error}"),
                NextStep::host_bug("report the gateway's log"),
            ))
        })
    }
}

impl Shared {
    fn held(&self) -> std::sync::MutexGuard<'_, Held> {
        self.held
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    async fn perform(&self, work: Work) -> Result<String, ErrorInfo> {
        match work {
            Work::Done(token) => Ok(token),
            Work::Exchange(key, rejected) => self.exchange(&key, rejected.as_deref()).await,
            Work::Refresh(credentials) => self.refresh_oauth(credentials).await,
        }
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
        // Written off the async workers (a synced file write can take long), before the new
        // tokens are used: a crash right after the refresh must not lose a rotated token.
        let (target, rotated) = (self.write_back.clone(), fresh.clone());
        let written = tokio::task::spawn_blocking(move || write_back(&target, &rotated))
            .await
            .unwrap_or_else(|error| Err(std::io::Error::other(error.to_string())));
        if let Err(error) = written {
            // The new tokens still serve this process; only a restart would miss them.
            tracing::warn!(%error, "could not write back the refreshed Cursor credentials");
        }
        *self.held() = Held::Oauth(fresh);
        Ok(access)
    }
}

/// Writes rotated OAuth credentials back where they came from.
fn write_back(target: &WriteBack, fresh: &Credentials) -> std::io::Result<()> {
    match target {
        WriteBack::Nowhere => Ok(()),
        WriteBack::PiAuthFile(path) => write_pi_entry(path, fresh),
        WriteBack::State {
            path,
            descends_from,
        } => {
            let file = serde_json::json!({
                "descends_from": descends_from,
                "cursor": fresh,
            });
            write_atomically(path, &pretty(&file)?)
        }
    }
}

#[async_trait]
impl TokenSource for GatewayTokens {
    async fn access_token(&self) -> Result<String, ErrorInfo> {
        let decide = |held: &Held| match held {
            Held::None => Err(no_credentials()),
            // `UserApiKey` answers from memory while its token is fresh; under the lock an
            // expired one is exchanged once, not once per caller.
            Held::ApiKey(key) => Ok(Work::Exchange(Arc::clone(key), None)),
            Held::Oauth(credentials) => {
                if credentials.is_expired(now_ms()) && !credentials.refresh.is_empty() {
                    Ok(Work::Refresh(credentials.clone()))
                } else {
                    Ok(Work::Done(credentials.access.clone()))
                }
            }
        };
        // The common case, a fresh OAuth token, needs no lock.
        if let Work::Done(token) = decide(&self.shared.held())? {
            return Ok(token);
        }
        self.single_flight(decide).await
    }

    async fn refresh(&self, rejected: &str) -> Result<String, ErrorInfo> {
        self.single_flight(|held| match held {
            Held::None => Err(no_credentials()),
            Held::ApiKey(key) => Ok(Work::Exchange(Arc::clone(key), Some(rejected.to_owned()))),
            // Another caller already replaced the refused token.
            Held::Oauth(credentials) if credentials.access != rejected => {
                Ok(Work::Done(credentials.access.clone()))
            }
            Held::Oauth(credentials) => Ok(Work::Refresh(credentials.clone())),
        })
        .await
    }
}

/// Identifies the environment tokens without storing them: SHA-256 of access, newline,
/// refresh, in hex.
fn env_fingerprint(access: &str, refresh: &str) -> String {
    use sha2::Digest as _;
    let digest = sha2::Sha256::digest(format!("{access}\n{refresh}"));
    cursor_proto::hex::encode(&digest)
}

/// The rotated credentials in `state/credentials.json`, if they descend from the
/// environment tokens `descends_from` names.
fn read_state(path: &Path, descends_from: &str) -> Option<Credentials> {
    let text = std::fs::read_to_string(path).ok()?;
    let file: serde_json::Value = serde_json::from_str(&text).ok()?;
    if file.get("descends_from")?.as_str()? != descends_from {
        return None;
    }
    let credentials = Credentials::from_json(&file.get("cursor")?.to_string()).ok()?;
    (!credentials.access.is_empty()).then_some(credentials)
}

/// Replaces the `cursor` entry of pi's `auth.json`, re-read now so that entries pi wrote
/// since (other providers) survive; fields of the entry this crate does not know are kept.
fn write_pi_entry(path: &Path, fresh: &Credentials) -> std::io::Result<()> {
    let invalid = |e: serde_json::Error| std::io::Error::new(std::io::ErrorKind::InvalidData, e);
    let text = std::fs::read_to_string(path)?;
    let mut file: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(&text).map_err(invalid)?;
    let serde_json::Value::Object(fresh) = serde_json::to_value(fresh).map_err(invalid)? else {
        return Err(std::io::Error::other("credentials are not a JSON object"));
    };
    let entry = match file.remove("cursor") {
        Some(serde_json::Value::Object(mut old)) => {
            old.extend(fresh);
            old
        }
        _ => fresh,
    };
    file.insert("cursor".to_owned(), serde_json::Value::Object(entry));
    write_atomically(path, &pretty(&file)?)
}

/// Two-space indented JSON with a final newline, as pi writes `auth.json`.
fn pretty(value: &impl serde::Serialize) -> std::io::Result<Vec<u8>> {
    let mut bytes = serde_json::to_vec_pretty(value)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
    bytes.push(b'\n');
    Ok(bytes)
}

/// Writes `contents` over `path` atomically and durably, mode 0600 (see
/// [`crate::state::files`]).
fn write_atomically(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    crate::state::files::replace_private(path, contents, crate::state::files::Durability::Synced)
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
            None,
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
            None,
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
            None,
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

    /// A refresh and exchange endpoint that answers after 100 ms, so that concurrent callers
    /// overlap; `answer` gets the path and the request body. Returns the origin, the number
    /// of requests and the `refresh_token`s sent.
    async fn slow_endpoint(
        answer: impl Fn(&str) -> (u16, &'static str) + Send + Sync + 'static,
    ) -> (
        Origin,
        Arc<std::sync::atomic::AtomicUsize>,
        Arc<Mutex<Vec<String>>>,
    ) {
        use std::sync::atomic::AtomicUsize;
        let mut server = cursor_transport::testing::TestServer::start()
            .await
            .unwrap();
        let origin = server.origin();
        let requests = Arc::new(AtomicUsize::new(0));
        let refresh_tokens = Arc::new(Mutex::new(Vec::new()));
        let (counted, sent) = (Arc::clone(&requests), Arc::clone(&refresh_tokens));
        let answer = Arc::new(answer);
        tokio::spawn(async move {
            while let Some(mut call) = server.accept().await {
                counted.fetch_add(1, Ordering::AcqRel);
                let (answer, sent) = (Arc::clone(&answer), Arc::clone(&sent));
                tokio::spawn(async move {
                    let body = call.read_body().await.unwrap_or_default();
                    if let Ok(body) = serde_json::from_slice::<serde_json::Value>(&body)
                        && let Some(token) = body["refresh_token"].as_str()
                    {
                        sent.lock().unwrap().push(token.to_owned());
                    }
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                    let (status, body) = answer(call.path());
                    let _ = call.respond(status, "application/json", body).await;
                });
            }
        });
        (origin, requests, refresh_tokens)
    }

    fn env_of(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + Send + Sync + use<> {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |name: &str| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
    }

    /// Starts `n` calls at once (behind a barrier) and collects their answers.
    async fn at_once<F>(
        n: usize,
        tokens: &Arc<GatewayTokens>,
        call: impl Fn(Arc<GatewayTokens>) -> F,
    ) -> Vec<Result<String, ErrorInfo>>
    where
        F: Future<Output = Result<String, ErrorInfo>> + Send + 'static,
    {
        let barrier = Arc::new(tokio::sync::Barrier::new(n));
        let tasks: Vec<_> = (0..n)
            .map(|_| {
                let barrier = Arc::clone(&barrier);
                let call = call(Arc::clone(tokens));
                tokio::spawn(async move {
                    barrier.wait().await;
                    call.await
                })
            })
            .collect();
        let mut answers = Vec::new();
        for task in tasks {
            answers.push(task.await.unwrap());
        }
        answers
    }

    const ROTATED: &str = r#"{"access_token": "new-access", "refresh_token": "r2"}"#;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn twenty_concurrent_401s_refresh_once_and_all_get_the_new_token() {
        let (origin, requests, sent) = slow_endpoint(|path| {
            assert_eq!(path, "/oauth/token");
            (200, ROTATED)
        })
        .await;
        let env = env_of(&[
            ("CURSOR_ACCESS_TOKEN", "old"),
            ("CURSOR_REFRESH_TOKEN", "r1"),
        ]);
        let tokens = Arc::new(GatewayTokens::from_environment(
            Client::new().unwrap(),
            origin,
            env,
            None,
        ));
        let answers = at_once(20, &tokens, |t| async move { t.refresh("old").await }).await;
        for answer in answers {
            assert_eq!(answer.unwrap(), "new-access");
        }
        assert_eq!(requests.load(Ordering::Acquire), 1);
        assert_eq!(*sent.lock().unwrap(), ["r1"]);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn twenty_concurrent_401s_exchange_the_api_key_once_and_all_get_the_new_token() {
        let (origin, requests, _) = slow_endpoint({
            let n = std::sync::atomic::AtomicUsize::new(0);
            move |path| {
                assert_eq!(path, "/auth/exchange_user_api_key");
                match n.fetch_add(1, Ordering::AcqRel) {
                    0 => (200, r#"{"accessToken": "exchanged-1"}"#),
                    _ => (200, r#"{"accessToken": "exchanged-2"}"#),
                }
            }
        })
        .await;
        let tokens = Arc::new(GatewayTokens::from_environment(
            Client::new().unwrap(),
            origin,
            env_of(&[("CURSOR_API_KEY", "crsr_test")]),
            None,
        ));
        // The first exchange, by twenty callers at once, also happens once.
        let first = at_once(20, &tokens, |t| async move { t.access_token().await }).await;
        assert!(
            first.iter().all(|a| a.as_deref() == Ok("exchanged-1")),
            "{first:?}"
        );
        assert_eq!(requests.load(Ordering::Acquire), 1);
        let answers = at_once(
            20,
            &tokens,
            |t| async move { t.refresh("exchanged-1").await },
        )
        .await;
        for answer in answers {
            assert_eq!(answer.unwrap(), "exchanged-2");
        }
        assert_eq!(requests.load(Ordering::Acquire), 2);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn twenty_concurrent_401s_share_one_refused_refresh_as_the_same_auth_error() {
        let (origin, requests, _) = slow_endpoint(|_| (401, "{}")).await;
        let env = env_of(&[
            ("CURSOR_ACCESS_TOKEN", "old"),
            ("CURSOR_REFRESH_TOKEN", "r1"),
        ]);
        let tokens = Arc::new(GatewayTokens::from_environment(
            Client::new().unwrap(),
            origin,
            env,
            None,
        ));
        let answers = at_once(20, &tokens, |t| async move { t.refresh("old").await }).await;
        let first = answers[0].clone().unwrap_err();
        assert_eq!(first.kind, ErrorKind::Auth);
        assert!(
            answers.iter().all(|a| a.as_ref() == Err(&first)),
            "{answers:?}"
        );
        assert_eq!(requests.load(Ordering::Acquire), 1);
        // Not sticky: a later 401 tries again.
        assert!(tokens.refresh("old").await.is_err());
        assert_eq!(requests.load(Ordering::Acquire), 2);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn twenty_callers_of_an_expired_token_refresh_it_once() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("auth.json"),
            r#"{"cursor": {"type": "oauth", "access": "old", "refresh": "r1", "expires": 1}}"#,
        )
        .unwrap();
        let (origin, requests, _) = slow_endpoint(|_| (200, ROTATED)).await;
        let env = env_of(&[("PI_CODING_AGENT_DIR", dir.path().to_str().unwrap())]);
        let tokens = Arc::new(GatewayTokens::from_environment(
            Client::new().unwrap(),
            origin,
            env,
            None,
        ));
        let answers = at_once(20, &tokens, |t| async move { t.access_token().await }).await;
        assert!(
            answers.iter().all(|a| a.as_deref() == Ok("new-access")),
            "{answers:?}"
        );
        assert_eq!(requests.load(Ordering::Acquire), 1);
    }

    #[cfg(unix)]
    fn mode(path: &Path) -> u32 {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_rotated_refresh_token_is_written_back_to_pis_auth_json_and_used_after_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("auth.json");
        let before = serde_json::json!({
            "anthropic": {"type": "oauth", "access": "a", "refresh": "b", "expires": 5, "x": [1, {"y": null}]},
            "cursor": {"type": "oauth", "access": "old", "refresh": "r1", "expires": 99_999_999_999_999_u64, "email": "u@example.com"},
            "openai": {"type": "api_key", "key": "sk-1"},
        });
        std::fs::write(&path, serde_json::to_string_pretty(&before).unwrap()).unwrap();
        #[cfg(unix)]
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o644))
            .unwrap();
        let (origin, _, sent) = slow_endpoint(|_| (200, ROTATED)).await;
        let env = || env_of(&[("PI_CODING_AGENT_DIR", dir.path().to_str().unwrap())]);
        let start =
            || GatewayTokens::from_environment(Client::new().unwrap(), origin.clone(), env(), None);
        assert_eq!(start().refresh("old").await.unwrap(), "new-access");

        let after: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(after["anthropic"], before["anthropic"]);
        assert_eq!(after["openai"], before["openai"]);
        assert_eq!(after["cursor"]["access"], "new-access");
        assert_eq!(after["cursor"]["refresh"], "r2");
        assert_eq!(after["cursor"]["type"], "oauth");
        assert_eq!(after["cursor"]["email"], "u@example.com");
        #[cfg(unix)]
        assert_eq!(mode(&path), 0o600);

        let restarted = start();
        assert_eq!(restarted.access_token().await.unwrap(), "new-access");
        restarted.refresh("new-access").await.unwrap();
        assert_eq!(*sent.lock().unwrap(), ["r1", "r2"]);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn environment_tokens_rotate_into_the_state_dir_and_a_restart_uses_them() {
        let state = tempfile::tempdir().unwrap();
        let (origin, _, sent) = slow_endpoint(|_| (200, ROTATED)).await;
        let start = |access: &str| {
            GatewayTokens::from_environment(
                Client::new().unwrap(),
                origin.clone(),
                env_of(&[
                    ("CURSOR_ACCESS_TOKEN", access),
                    ("CURSOR_REFRESH_TOKEN", "r1"),
                ]),
                Some(state.path().to_owned()),
            )
        };
        assert_eq!(start("old").refresh("old").await.unwrap(), "new-access");
        let path = state.path().join(STATE_CREDENTIALS);
        #[cfg(unix)]
        assert_eq!(mode(&path), 0o600);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            !text.contains("\"old\"") && !text.contains("\"r1\""),
            "{text}"
        );

        // Same environment: the rotated tokens, whose refresh token is the live one.
        let restarted = start("old");
        assert_eq!(restarted.source(), &CredentialSource::Environment);
        assert_eq!(restarted.access_token().await.unwrap(), "new-access");
        restarted.refresh("new-access").await.unwrap();
        assert_eq!(*sent.lock().unwrap(), ["r1", "r2"]);

        // New tokens in the environment win over the file.
        assert_eq!(start("fresh").access_token().await.unwrap(), "fresh");
    }
}
