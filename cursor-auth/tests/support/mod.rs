//! Scripted fakes for the async drivers: an HTTP client that replays canned answers and a
//! clock whose sleeps only move simulated time.

#![allow(dead_code, unreachable_pub)]

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use base64::Engine as _;
use bytes::Bytes;
use cursor_auth::{Clock, HttpClient, HttpError};

/// One canned answer.
pub enum Answer {
    Status(u16, String),
    Fail(&'static str),
}

pub fn status(code: u16, body: &str) -> Answer {
    Answer::Status(code, body.to_owned())
}

/// Replays answers in order (the last one repeats) and records every request.
pub struct ScriptedHttp {
    answers: Mutex<VecDeque<Answer>>,
    repeat_last: Mutex<Option<(u16, String)>>,
    pub requests: Mutex<Vec<http::Request<Bytes>>>,
}

impl ScriptedHttp {
    pub fn new(answers: Vec<Answer>) -> Self {
        Self {
            answers: Mutex::new(answers.into()),
            repeat_last: Mutex::new(None),
            requests: Mutex::new(Vec::new()),
        }
    }

    pub fn request_count(&self) -> usize {
        self.requests.lock().unwrap().len()
    }

    /// `(method, path, authorization header)` of each request, in order.
    pub fn trace(&self) -> Vec<(String, String, Option<String>)> {
        self.requests
            .lock()
            .unwrap()
            .iter()
            .map(|r| {
                let auth = r
                    .headers()
                    .get("authorization")
                    .map(|v| v.to_str().unwrap().to_owned());
                (r.method().to_string(), r.uri().path().to_owned(), auth)
            })
            .collect()
    }
}

#[async_trait::async_trait]
impl HttpClient for ScriptedHttp {
    async fn send(
        &self,
        request: http::Request<Bytes>,
    ) -> Result<http::Response<Bytes>, HttpError> {
        self.requests.lock().unwrap().push(request);
        let next = self.answers.lock().unwrap().pop_front();
        let (code, body) = match next {
            Some(Answer::Fail(message)) => return Err(HttpError::network(message)),
            Some(Answer::Status(code, body)) => {
                *self.repeat_last.lock().unwrap() = Some((code, body.clone()));
                (code, body)
            }
            None => self
                .repeat_last
                .lock()
                .unwrap()
                .clone()
                .expect("script exhausted"),
        };
        Ok(http::Response::builder()
            .status(code)
            .body(Bytes::from(body))
            .unwrap())
    }
}

/// Simulated time starting at a real instant; `sleep_until` jumps forward.
pub struct FakeClock {
    start: Instant,
    elapsed: Mutex<Duration>,
    unix_start_ms: u64,
    pub sleeps: Mutex<u32>,
}

impl FakeClock {
    pub fn at_unix_ms(unix_start_ms: u64) -> Self {
        Self {
            start: Instant::now(),
            elapsed: Mutex::new(Duration::ZERO),
            unix_start_ms,
            sleeps: Mutex::new(0),
        }
    }

    pub fn elapsed(&self) -> Duration {
        *self.elapsed.lock().unwrap()
    }

    pub fn advance(&self, by: Duration) {
        *self.elapsed.lock().unwrap() += by;
    }
}

#[async_trait::async_trait]
impl Clock for FakeClock {
    fn now(&self) -> Instant {
        self.start + self.elapsed()
    }

    fn unix_time_ms(&self) -> u64 {
        self.unix_start_ms + u64::try_from(self.elapsed().as_millis()).unwrap()
    }

    async fn sleep_until(&self, deadline: Instant) {
        *self.sleeps.lock().unwrap() += 1;
        let target = deadline.saturating_duration_since(self.start);
        let mut elapsed = self.elapsed.lock().unwrap();
        if target > *elapsed {
            *elapsed = target;
        }
    }
}

/// An unsigned JWT whose payload is `claims`.
pub fn jwt(claims: &str) -> String {
    let engine = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    format!(
        "{}.{}.sig",
        engine.encode(r#"{"alg":"none"}"#),
        engine.encode(claims)
    )
}
