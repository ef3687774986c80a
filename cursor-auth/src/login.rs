//! The sans-IO login state machine: deep link, then polling until the browser login lands.

use std::fmt;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{HeaderValue, Method, Request, Response, StatusCode, Uri};
use serde::Deserialize;

use crate::client::HttpError;
use crate::config::checked_uri;
use crate::pkce::{Pkce, random_uuid};
use crate::{AuthConfig, AuthError, Credentials};

const OPERATION: &str = "login poll";

/// Transport failures tolerated in a row before the login gives up: a brief blip should not
/// cost the user their browser login.
pub const MAX_CONSECUTIVE_SEND_FAILURES: u32 = 3;

/// What the driver should do next.
///
/// The poll carries the PKCE verifier (in the JSON body of the `POST`, in the query of the
/// `GET` fallback), which together with the uuid is enough to collect the tokens; `Debug`
/// therefore shows only the method and path, and transports should not log the body or the
/// query either.
#[non_exhaustive]
pub enum LoginStep {
    /// Send this poll and pass the answer to [`LoginFlow::handle_response`]. Boxed: a
    /// request is large and this value is returned every 500 ms.
    Send(Box<Request<Bytes>>),
    /// Nothing is due; call [`LoginFlow::step`] again at or after `until`.
    Wait {
        /// When the next poll is due.
        until: Instant,
    },
}

impl fmt::Debug for LoginStep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Send(request) => f
                .debug_struct("Send")
                .field("method", request.method())
                .field("path", &request.uri().path())
                .finish_non_exhaustive(),
            Self::Wait { until } => f.debug_struct("Wait").field("until", until).finish(),
        }
    }
}

/// The result of one poll answer.
#[non_exhaustive]
#[derive(Debug)]
pub enum LoginProgress {
    /// The user has not finished in the browser yet; keep stepping.
    Pending,
    /// The login succeeded.
    Complete(Credentials),
}

/// How the poll is asked (docs/PROTOCOL.md §4.1: `POST` with a JSON body now, `GET` with a query
/// before).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PollMethod {
    /// `POST /auth/poll` with `{"uuid", "verifier"}`.
    Post,
    /// `GET /auth/poll?uuid=…&verifier=…`, after the `POST` got a 404.
    Get,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// The next poll may be sent from this instant on.
    PollDue(Instant),
    /// A poll is in flight.
    AwaitingResponse,
    /// Credentials were delivered or the flow failed for good.
    Finished,
}

/// One login attempt: holds the PKCE secrets, the attempt's uuid and the poll schedule.
///
/// Time is always passed in, so the machine never reads a clock or sleeps:
/// call [`step`](Self::step), send what it returns, feed the answer to
/// [`handle_response`](Self::handle_response) (or a failure to
/// [`handle_send_error`](Self::handle_send_error)), and repeat.
pub struct LoginFlow {
    pkce: Pkce,
    uuid: String,
    login_url: String,
    poll_uri: Uri,
    post_uri: Uri,
    method: PollMethod,
    poll_interval: Duration,
    started: Instant,
    started_unix_ms: u64,
    deadline: Instant,
    state: State,
    consecutive_send_failures: u32,
}

impl fmt::Debug for LoginFlow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The poll URI embeds the verifier, so it is left out.
        f.debug_struct("LoginFlow")
            .field("uuid", &self.uuid)
            .field("login_url", &self.login_url)
            .field("state", &self.state)
            .field("deadline", &self.deadline)
            .finish_non_exhaustive()
    }
}

impl LoginFlow {
    /// Starts an attempt with fresh random secrets. `now` and `now_unix_ms` are the same
    /// moment on the monotonic and the wall clock.
    pub fn new(config: &AuthConfig, now: Instant, now_unix_ms: u64) -> Result<Self, AuthError> {
        Self::with_secrets(config, Pkce::generate()?, random_uuid()?, now, now_unix_ms)
    }

    /// Starts an attempt with given secrets (for reproducible tests).
    pub fn with_secrets(
        config: &AuthConfig,
        pkce: Pkce,
        uuid: String,
        now: Instant,
        now_unix_ms: u64,
    ) -> Result<Self, AuthError> {
        // Verifier, challenge and uuid are base64url or hex-and-hyphens: no escaping needed.
        let login_url = config.website_url(&format!(
            "/loginDeepControl?challenge={}&uuid={uuid}&mode=login&redirectTarget=cli",
            pkce.challenge()
        ));
        let poll_url = config.api_url(&format!(
            "/auth/poll?uuid={uuid}&verifier={}",
            pkce.verifier()
        ));
        checked_uri(&login_url, "website", &config.website_base)?;
        let poll_uri = checked_uri(&poll_url, "api", &config.api_base)?;
        let post_uri = checked_uri(&config.api_url("/auth/poll"), "api", &config.api_base)?;
        Ok(Self {
            pkce,
            uuid,
            login_url,
            poll_uri,
            post_uri,
            method: PollMethod::Post,
            poll_interval: config.poll_interval,
            started: now,
            started_unix_ms: now_unix_ms,
            deadline: now + config.login_timeout,
            state: State::PollDue(now),
            consecutive_send_failures: 0,
        })
    }

    /// The link the user opens to sign in.
    pub fn login_url(&self) -> &str {
        &self.login_url
    }

    /// The uuid naming this attempt.
    pub fn uuid(&self) -> &str {
        &self.uuid
    }

    /// The PKCE pair of this attempt.
    pub fn pkce(&self) -> &Pkce {
        &self.pkce
    }

    /// When the attempt gives up.
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// Decides what to do at `now`: send a poll, or wait.
    ///
    /// Fails with [`AuthError::LoginTimedOut`] once the deadline has passed.
    pub fn step(&mut self, now: Instant) -> Result<LoginStep, AuthError> {
        let due = match self.state {
            State::PollDue(due) => due,
            State::AwaitingResponse => {
                return Err(AuthError::FlowMisuse(
                    "step called while a poll is in flight",
                ));
            }
            State::Finished => {
                return Err(AuthError::FlowMisuse("step called after the login ended"));
            }
        };
        if now >= self.deadline {
            self.state = State::Finished;
            return Err(AuthError::LoginTimedOut {
                waited: now.duration_since(self.started),
            });
        }
        if now < due {
            return Ok(LoginStep::Wait {
                until: due.min(self.deadline),
            });
        }
        self.state = State::AwaitingResponse;
        Ok(LoginStep::Send(Box::new(self.poll_request())))
    }

    /// Interprets the answer to the poll that [`step`](Self::step) returned.
    ///
    /// Each round polls with `POST` first; a 404 to it is followed at once by the `GET` of the
    /// older endpoint, whose 404 means pending (a 404 to the `POST` cannot say whether the
    /// server lacks the route or the user is not done). 200 carries the tokens, 403 is a
    /// policy refusal; any other status ends the attempt with a classified error.
    pub fn handle_response(
        &mut self,
        response: Response<Bytes>,
        now: Instant,
    ) -> Result<LoginProgress, AuthError> {
        if self.state != State::AwaitingResponse {
            return Err(AuthError::FlowMisuse(
                "a response arrived with no poll in flight",
            ));
        }
        self.consecutive_send_failures = 0;
        let status = response.status();
        if status == StatusCode::NOT_FOUND {
            self.state = match self.method {
                PollMethod::Post => {
                    self.method = PollMethod::Get;
                    State::PollDue(now)
                }
                PollMethod::Get => {
                    self.method = PollMethod::Post;
                    State::PollDue(now + self.poll_interval)
                }
            };
            return Ok(LoginProgress::Pending);
        }
        self.state = State::Finished;
        match status {
            StatusCode::OK => self
                .credentials_from(response.body(), now)
                .map(LoginProgress::Complete),
            StatusCode::FORBIDDEN => Err(AuthError::LoginRefused {
                reason: refusal_reason(response.body()),
            }),
            _ => Err(AuthError::unexpected_status(OPERATION, status)),
        }
    }

    /// Records that the poll could not be delivered. Up to
    /// [`MAX_CONSECUTIVE_SEND_FAILURES`] in a row are retried after the poll interval.
    pub fn handle_send_error(&mut self, error: HttpError, now: Instant) -> Result<(), AuthError> {
        if self.state != State::AwaitingResponse {
            return Err(AuthError::FlowMisuse(
                "a send failure arrived with no poll in flight",
            ));
        }
        self.consecutive_send_failures += 1;
        // The next round starts over with the POST.
        self.method = PollMethod::Post;
        if self.consecutive_send_failures >= MAX_CONSECUTIVE_SEND_FAILURES {
            self.state = State::Finished;
            return Err(AuthError::Http(error));
        }
        self.state = State::PollDue(now + self.poll_interval);
        Ok(())
    }

    fn poll_request(&self) -> Request<Bytes> {
        let mut request = match self.method {
            PollMethod::Post => {
                let body = serde_json::json!({
                    "uuid": self.uuid,
                    "verifier": self.pkce.verifier(),
                });
                let mut request = Request::new(Bytes::from(body.to_string()));
                *request.method_mut() = Method::POST;
                *request.uri_mut() = self.post_uri.clone();
                request.headers_mut().insert(
                    http::header::CONTENT_TYPE,
                    HeaderValue::from_static("application/json"),
                );
                request
            }
            PollMethod::Get => {
                let mut request = Request::new(Bytes::new());
                *request.method_mut() = Method::GET;
                *request.uri_mut() = self.poll_uri.clone();
                request
            }
        };
        let headers = request.headers_mut();
        headers.insert("x-ghost-mode", HeaderValue::from_static("true"));
        headers.insert(
            "x-new-onboarding-completed",
            HeaderValue::from_static("false"),
        );
        headers.insert("x-cursor-client-type", HeaderValue::from_static("ide"));
        request
    }

    fn credentials_from(&self, body: &[u8], now: Instant) -> Result<Credentials, AuthError> {
        let tokens: PollTokens = serde_json::from_slice(body)
            .map_err(|error| AuthError::malformed_json(OPERATION, &error))?;
        let access = non_empty(tokens.access_token, "accessToken")?;
        let refresh = non_empty(tokens.refresh_token, "refreshToken")?;
        let elapsed_ms = u64::try_from(now.saturating_duration_since(self.started).as_millis())
            .unwrap_or(u64::MAX);
        let now_unix_ms = self.started_unix_ms.saturating_add(elapsed_ms);
        Ok(Credentials::from_tokens(access, refresh, now_unix_ms, None))
    }
}

/// The 200 body of `/auth/poll` (camelCase); other fields (`challenge`, `authId`, `uuid`) are
/// not needed.
#[derive(Deserialize)]
struct PollTokens {
    #[serde(rename = "accessToken")]
    access_token: Option<String>,
    #[serde(rename = "refreshToken")]
    refresh_token: Option<String>,
}

fn non_empty(token: Option<String>, field: &'static str) -> Result<String, AuthError> {
    token
        .filter(|token| !token.is_empty())
        .ok_or_else(|| AuthError::Malformed {
            operation: OPERATION,
            detail: format!("`{field}` is missing or empty"),
        })
}

/// The `error` text of a 403 body, bounded; the body never holds a token at this point.
fn refusal_reason(body: &[u8]) -> String {
    #[derive(Deserialize)]
    struct Refusal {
        error: Option<serde_json::Value>,
    }
    let reason = serde_json::from_slice::<Refusal>(body)
        .ok()
        .and_then(|refusal| match refusal.error? {
            serde_json::Value::String(text) => Some(text),
            other => Some(other.to_string()),
        });
    match reason {
        Some(text) if !text.trim().is_empty() => text.chars().take(300).collect(),
        _ => "no reason given".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jwt::fake_jwt;
    use crate::test_support::response;
    use cursor_proto::ir::Classify as _;

    fn flow(now: Instant) -> LoginFlow {
        let pkce = Pkce::from_verifier("verifier-123".to_owned());
        LoginFlow::with_secrets(
            &AuthConfig::default(),
            pkce,
            "uuid-1".to_owned(),
            now,
            1_000,
        )
        .unwrap()
    }

    fn expect_send(step: LoginStep) -> Request<Bytes> {
        match step {
            LoginStep::Send(request) => *request,
            other => panic!("expected a poll, got {other:?}"),
        }
    }

    #[test]
    fn the_login_url_carries_challenge_uuid_mode_and_cli_target() {
        let flow = flow(Instant::now());
        let challenge = Pkce::from_verifier("verifier-123".to_owned())
            .challenge()
            .to_owned();
        assert_eq!(
            flow.login_url(),
            format!(
                "https://cursor.com/loginDeepControl?challenge={challenge}&uuid=uuid-1&mode=login&redirectTarget=cli"
            )
        );
        assert!(
            !flow.login_url().contains("verifier-123"),
            "the verifier must stay private"
        );
    }

    #[test]
    fn debug_output_never_shows_the_verifier() {
        let now = Instant::now();
        let mut flow = flow(now);
        assert!(!format!("{flow:?}").contains("verifier-123"));
        let step = flow.step(now).unwrap();
        assert!(!format!("{step:?}").contains("verifier-123"), "{step:?}");
    }

    #[test]
    fn the_first_poll_is_an_immediate_post_with_the_verifier_in_a_json_body() {
        let now = Instant::now();
        let request = expect_send(flow(now).step(now).unwrap());
        assert_eq!(request.method(), Method::POST);
        assert_eq!(
            request.uri().to_string(),
            "https://api2.cursor.sh/auth/poll"
        );
        assert_eq!(request.headers()["content-type"], "application/json");
        let body: serde_json::Value = serde_json::from_slice(request.body()).unwrap();
        assert_eq!(
            body,
            serde_json::json!({"uuid": "uuid-1", "verifier": "verifier-123"})
        );
    }

    #[test]
    fn a_404_to_the_post_falls_back_to_the_get_at_once() {
        let now = Instant::now();
        let mut flow = flow(now);
        expect_send(flow.step(now).unwrap());
        assert!(matches!(
            flow.handle_response(response(404, ""), now).unwrap(),
            LoginProgress::Pending
        ));
        let request = expect_send(flow.step(now).unwrap());
        assert_eq!(request.method(), Method::GET);
        assert_eq!(
            request.uri().to_string(),
            "https://api2.cursor.sh/auth/poll?uuid=uuid-1&verifier=verifier-123"
        );
        assert!(request.body().is_empty());
        // The GET answers the round; the next round starts with the POST again.
        flow.handle_response(response(404, ""), now).unwrap();
        let next = expect_send(flow.step(now + Duration::from_millis(500)).unwrap());
        assert_eq!(next.method(), Method::POST);
    }

    #[test]
    fn a_pending_answer_schedules_the_next_poll_after_the_interval() {
        let now = Instant::now();
        let mut flow = flow(now);
        expect_send(flow.step(now).unwrap());
        flow.handle_response(response(404, ""), now).unwrap();
        expect_send(flow.step(now).unwrap());
        assert!(matches!(
            flow.handle_response(response(404, ""), now).unwrap(),
            LoginProgress::Pending
        ));
        let waiting = flow.step(now + Duration::from_millis(499)).unwrap();
        assert!(
            matches!(waiting, LoginStep::Wait { until } if until == now + Duration::from_millis(500))
        );
        expect_send(flow.step(now + Duration::from_millis(500)).unwrap());
    }

    #[test]
    fn success_yields_credentials_expiring_five_minutes_before_exp() {
        let now = Instant::now();
        let mut flow = flow(now);
        expect_send(flow.step(now).unwrap());
        let access = fake_jwt(r#"{"exp":2000000000}"#);
        let body = format!(r#"{{"accessToken":"{access}","refreshToken":"ref","authId":"x"}}"#);
        let LoginProgress::Complete(credentials) =
            flow.handle_response(response(200, &body), now).unwrap()
        else {
            panic!("expected credentials");
        };
        assert_eq!(
            (credentials.access.as_str(), credentials.refresh.as_str()),
            (access.as_str(), "ref")
        );
        assert_eq!(credentials.expires, 2_000_000_000_000 - 300_000);
    }

    #[test]
    fn an_opaque_token_expires_relative_to_the_wall_clock_at_completion() {
        let now = Instant::now();
        let mut flow = flow(now);
        expect_send(flow.step(now).unwrap());
        let later = now + Duration::from_secs(10);
        let body = r#"{"accessToken":"opaque","refreshToken":"ref"}"#;
        let LoginProgress::Complete(credentials) =
            flow.handle_response(response(200, body), later).unwrap()
        else {
            panic!("expected credentials");
        };
        assert_eq!(credentials.expires, 1_000 + 10_000 + 3_600_000 - 300_000);
    }

    #[test]
    fn a_policy_refusal_reports_the_servers_reason() {
        let now = Instant::now();
        let mut flow = flow(now);
        expect_send(flow.step(now).unwrap());
        let error = flow
            .handle_response(
                response(403, r#"{"error":"SSO required for this team"}"#),
                now,
            )
            .unwrap_err();
        assert!(
            matches!(&error, AuthError::LoginRefused { reason } if reason == "SSO required for this team")
        );
        assert_eq!(error.kind(), cursor_proto::ir::ErrorKind::RemoteRefusal);
    }

    #[test]
    fn the_deadline_ends_the_attempt() {
        let now = Instant::now();
        let mut flow = flow(now);
        let error = flow.step(now + Duration::from_secs(180)).unwrap_err();
        assert!(
            matches!(error, AuthError::LoginTimedOut { waited } if waited == Duration::from_secs(180))
        );
    }

    #[test]
    fn a_wait_never_extends_past_the_deadline() {
        let now = Instant::now();
        let mut flow = flow(now);
        expect_send(flow.step(now).unwrap());
        let late = now + Duration::from_millis(179_800);
        flow.handle_response(response(404, ""), late).unwrap();
        expect_send(flow.step(late).unwrap());
        flow.handle_response(response(404, ""), late).unwrap();
        let step = flow.step(late).unwrap();
        assert!(
            matches!(step, LoginStep::Wait { until } if until == now + Duration::from_secs(180))
        );
    }

    #[test]
    fn send_failures_are_retried_until_three_in_a_row() {
        let now = Instant::now();
        let mut flow = flow(now);
        for attempt in 1..=3 {
            expect_send(flow.step(now + Duration::from_secs(attempt)).unwrap());
            let outcome = flow.handle_send_error(
                HttpError::network("reset"),
                now + Duration::from_secs(attempt),
            );
            if attempt < 3 {
                outcome.unwrap();
            } else {
                assert!(matches!(outcome.unwrap_err(), AuthError::Http(_)));
            }
        }
    }

    #[test]
    fn out_of_order_calls_are_typed_misuse_not_panics() {
        let now = Instant::now();
        let mut flow = flow(now);
        assert!(matches!(
            flow.handle_response(response(404, ""), now),
            Err(AuthError::FlowMisuse(_))
        ));
        expect_send(flow.step(now).unwrap());
        assert!(matches!(flow.step(now), Err(AuthError::FlowMisuse(_))));
    }

    #[test]
    fn an_invalid_base_url_is_rejected_up_front() {
        let config = AuthConfig::with_bases("not a url", "https://cursor.com");
        let error = LoginFlow::with_secrets(
            &config,
            Pkce::from_verifier("v".to_owned()),
            "u".to_owned(),
            Instant::now(),
            0,
        )
        .unwrap_err();
        assert!(matches!(
            error,
            AuthError::InvalidBaseUrl { which: "api", .. }
        ));
    }
}
