//! Using credentials for requests: refresh when expired, and once more on a 401.

use std::fmt;
use std::future::Future;
use std::sync::{Mutex, MutexGuard, PoisonError};

use bytes::Bytes;
use http::StatusCode;

use crate::driver::refresh;
use crate::{AuthConfig, AuthError, Clock, Credentials, HttpClient};

/// An access token handed to a request builder. `Debug` hides it.
#[derive(Clone, PartialEq, Eq)]
pub struct AccessToken(String);

impl AccessToken {
    /// The raw token, for the `authorization` header and nothing else.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The `authorization` header value: `Bearer <token>`.
    pub fn bearer(&self) -> String {
        format!("Bearer {}", self.0)
    }
}

impl fmt::Debug for AccessToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "AccessToken(<redacted {} bytes>)", self.0.len())
    }
}

/// What one authenticated attempt came to.
#[non_exhaustive]
#[derive(Debug)]
pub enum Attempt<T> {
    /// The server accepted the token (whatever else happened is in `T`).
    Done(T),
    /// The server answered 401: the token was refused.
    Unauthorized,
}

/// Credentials in use: refreshed before a request once they are due, and refreshed once more
/// (then the request replayed once) when the server still answers 401.
///
/// A second 401 is [`AuthError::Unauthorized`], whose next step is a new login. After any
/// refresh, [`credentials`](Self::credentials) returns the new set so the host can store it.
pub struct AuthedClient<C, K> {
    client: C,
    clock: K,
    config: AuthConfig,
    credentials: Mutex<Credentials>,
}

impl<C: HttpClient, K: Clock> AuthedClient<C, K> {
    /// Wraps `client` with `credentials`; refreshes use `config`'s endpoints.
    pub fn new(client: C, clock: K, config: AuthConfig, credentials: Credentials) -> Self {
        Self {
            client,
            clock,
            config,
            credentials: Mutex::new(credentials),
        }
    }

    /// The current credentials (after any refresh).
    pub fn credentials(&self) -> Credentials {
        self.lock().clone()
    }

    /// The underlying HTTP client.
    pub fn client(&self) -> &C {
        &self.client
    }

    /// An access token that is not due for refresh, refreshing first if it is.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe for the stored credentials: they are replaced only once a refresh completed.
    /// A refresh dropped after Cursor answered is lost like [`refresh`](crate::refresh())'s.
    pub async fn access_token(&self) -> Result<AccessToken, AuthError> {
        let current = self.credentials();
        if !current.is_expired(self.clock.unix_time_ms()) {
            return Ok(AccessToken(current.access));
        }
        self.refresh_replacing(&current.access).await
    }

    /// Runs `attempt` with a valid token; on [`Attempt::Unauthorized`] refreshes once and
    /// runs it once more. Errors of `attempt` pass through untouched.
    ///
    /// # Cancel safety
    ///
    /// As cancel-safe as `attempt` and [`access_token`](Self::access_token): a dropped call may
    /// have run `attempt` once or twice.
    pub async fn with_refresh<T, E, F, Fut>(&self, mut attempt: F) -> Result<T, E>
    where
        E: From<AuthError>,
        F: FnMut(AccessToken) -> Fut,
        Fut: Future<Output = Result<Attempt<T>, E>>,
    {
        let token = self.access_token().await?;
        if let Attempt::Done(value) = attempt(token.clone()).await? {
            return Ok(value);
        }
        let token = self.refresh_replacing(token.as_str()).await?;
        match attempt(token).await? {
            Attempt::Done(value) => Ok(value),
            Attempt::Unauthorized => Err(AuthError::Unauthorized.into()),
        }
    }

    /// Sends the request `build` makes for a token; a 401 answer is refreshed and replayed
    /// once. Every other answer is returned as it came.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future drops the request in flight: the server may or may not have acted on
    /// it. The stored credentials stay consistent (see [`access_token`](Self::access_token)).
    pub async fn send<B>(&self, build: B) -> Result<http::Response<Bytes>, AuthError>
    where
        B: Fn(&AccessToken) -> http::Request<Bytes>,
    {
        self.with_refresh(|token| {
            let request = build(&token);
            async move {
                let response = self.client.send(request).await.map_err(AuthError::Http)?;
                Ok(if response.status() == StatusCode::UNAUTHORIZED {
                    Attempt::Unauthorized
                } else {
                    Attempt::Done(response)
                })
            }
        })
        .await
    }

    /// Refreshes unless another caller already replaced `stale` meanwhile.
    async fn refresh_replacing(&self, stale: &str) -> Result<AccessToken, AuthError> {
        let current = self.credentials();
        if current.access != stale && !current.is_expired(self.clock.unix_time_ms()) {
            return Ok(AccessToken(current.access));
        }
        let fresh = refresh(&self.client, &self.clock, &self.config, &current).await?;
        let token = AccessToken(fresh.access.clone());
        *self.lock() = fresh;
        Ok(token)
    }

    fn lock(&self) -> MutexGuard<'_, Credentials> {
        // The guarded value is replaced whole, so a panic elsewhere cannot leave it torn.
        self.credentials
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

impl<C, K> fmt::Debug for AuthedClient<C, K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuthedClient")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}
