//! Endpoints, the client id and the timing constants of Cursor's login and refresh.

use std::time::Duration;

/// Cursor's API origin: the login poll and token refresh live here.
pub const DEFAULT_API_BASE: &str = "https://api2.cursor.sh";

/// Cursor's website origin: the login page the user opens.
pub const DEFAULT_WEBSITE_BASE: &str = "https://cursor.com";

/// The OAuth client id Cursor's clients present on refresh (login does not use it).
pub const CLIENT_ID: &str = "KbZUR41cY7W6zRSdpSUJ7I7mLYBKOCmB";

/// How long to wait between two polls of a pending login.
pub const POLL_INTERVAL: Duration = Duration::from_millis(500);

/// How long the user has to finish the login in the browser.
pub const LOGIN_TIMEOUT: Duration = Duration::from_secs(180);

/// Credentials count as expired this long before the token's own `exp`, so a request never
/// starts with a token about to lapse.
pub const EXPIRY_MARGIN: Duration = Duration::from_secs(5 * 60);

/// Where the login and refresh requests go, and the login timing.
///
/// The defaults are Cursor's production origins; tests point the bases at a loopback server.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuthConfig {
    /// Origin of the poll and refresh endpoints, without a trailing slash.
    pub api_base: String,
    /// Origin of the login page, without a trailing slash.
    pub website_base: String,
    /// Pause between polls of a pending login.
    pub poll_interval: Duration,
    /// Total time the login may stay pending.
    pub login_timeout: Duration,
}

impl Default for AuthConfig {
    fn default() -> Self {
        Self {
            api_base: DEFAULT_API_BASE.to_owned(),
            website_base: DEFAULT_WEBSITE_BASE.to_owned(),
            poll_interval: POLL_INTERVAL,
            login_timeout: LOGIN_TIMEOUT,
        }
    }
}

impl AuthConfig {
    /// The default timing with other origins (for example `http://127.0.0.1:PORT` in tests).
    pub fn with_bases(api_base: impl Into<String>, website_base: impl Into<String>) -> Self {
        Self {
            api_base: trim_slash(api_base.into()),
            website_base: trim_slash(website_base.into()),
            ..Self::default()
        }
    }

    pub(crate) fn api_url(&self, path_and_query: &str) -> String {
        format!("{}{path_and_query}", self.api_base.trim_end_matches('/'))
    }

    pub(crate) fn website_url(&self, path_and_query: &str) -> String {
        format!(
            "{}{path_and_query}",
            self.website_base.trim_end_matches('/')
        )
    }
}

/// Parses a URL built from a configured base, blaming the base when it is not absolute.
pub(crate) fn checked_uri(
    url: &str,
    which: &'static str,
    base: &str,
) -> Result<http::Uri, crate::AuthError> {
    url.parse::<http::Uri>()
        .ok()
        .filter(|uri| uri.scheme().is_some() && uri.authority().is_some())
        .ok_or_else(|| crate::AuthError::InvalidBaseUrl {
            which,
            base: base.to_owned(),
        })
}

fn trim_slash(mut base: String) -> String {
    while base.ends_with('/') {
        base.pop();
    }
    base
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_cursors_production_origins() {
        let config = AuthConfig::default();
        assert_eq!(
            config.api_url("/auth/poll"),
            "https://api2.cursor.sh/auth/poll"
        );
        assert_eq!(
            config.website_url("/loginDeepControl"),
            "https://cursor.com/loginDeepControl"
        );
    }

    #[test]
    fn overridden_bases_lose_trailing_slashes() {
        let config = AuthConfig::with_bases("http://127.0.0.1:8080/", "http://localhost:9//");
        assert_eq!(
            config.api_url("/oauth/token"),
            "http://127.0.0.1:8080/oauth/token"
        );
        assert_eq!(config.website_url("/x"), "http://localhost:9/x");
    }
}
