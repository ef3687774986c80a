//! Async drivers that run the sans-IO machines over a caller's [`HttpClient`] and [`Clock`].

use crate::login::{LoginFlow, LoginProgress, LoginStep};
use crate::refresh::{handle_refresh_response, refresh_request};
use crate::{AuthConfig, AuthError, Clock, Credentials, HttpClient};

/// Runs a whole login: shows the link through `on_url`, then polls until the user finishes
/// in the browser, Cursor refuses, or [`AuthConfig::login_timeout`] passes.
///
/// Dropping the future abandons the attempt (that is how a host's cancel reaches it).
///
/// # Cancel safety
///
/// Cancel-safe: dropping the future abandons the sign-in attempt and leaves nothing behind;
/// start a new login to try again.
pub async fn login<C, K>(
    client: &C,
    clock: &K,
    config: &AuthConfig,
    on_url: impl FnOnce(&str),
) -> Result<Credentials, AuthError>
where
    C: HttpClient + ?Sized,
    K: Clock + ?Sized,
{
    let mut flow = LoginFlow::new(config, clock.now(), clock.unix_time_ms())?;
    on_url(flow.login_url());
    loop {
        match flow.step(clock.now())? {
            LoginStep::Wait { until } => clock.sleep_until(until).await,
            LoginStep::Send(request) => match client.send(*request).await {
                Ok(response) => {
                    if let LoginProgress::Complete(credentials) =
                        flow.handle_response(response, clock.now())?
                    {
                        return Ok(credentials);
                    }
                }
                Err(error) => flow.handle_send_error(error, clock.now())?,
            },
        }
    }
}

/// Exchanges `credentials`' refresh token for a new access token.
///
/// # Cancel safety
///
/// Not resumable: a dropped refresh may have been answered by Cursor already. When Cursor
/// rotates the refresh token, the new one is lost with the dropped future and the old one may
/// no longer work; keep the future to completion if the credentials matter.
pub async fn refresh<C, K>(
    client: &C,
    clock: &K,
    config: &AuthConfig,
    credentials: &Credentials,
) -> Result<Credentials, AuthError>
where
    C: HttpClient + ?Sized,
    K: Clock + ?Sized,
{
    let request = refresh_request(config, credentials)?;
    let response = client.send(request).await.map_err(AuthError::Http)?;
    handle_refresh_response(response, credentials, clock.unix_time_ms())
}
