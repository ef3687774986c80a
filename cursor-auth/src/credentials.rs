//! Cursor OAuth credentials in the shape of a host's `auth.json` OAuth entry.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize};

use crate::{AuthError, EXPIRY_MARGIN, jwt};

/// Lifetime assumed when a token is not a JWT and the server states none. Cursor's access
/// tokens are JWTs lasting about a day, so this only matters if that changes; an hour keeps
/// refreshes rare without trusting an unknown token for long.
pub const FALLBACK_LIFETIME: Duration = Duration::from_secs(60 * 60);

/// An access token, a refresh token and when to refresh.
///
/// Serializes as a host's `auth.json` OAuth entry `{"type":"oauth","access":…,"refresh":…,"expires":…}`
/// (`expires` in Unix milliseconds). Fields this crate does not know are **preserved** in
/// [`extra`](Self::extra) and written back, as the host itself does. `Debug` and `Display` never
/// show either token.
#[non_exhaustive]
#[derive(Clone, PartialEq, Serialize, Deserialize)]
pub struct Credentials {
    #[serde(rename = "type", default)]
    credential_type: OAuthType,
    /// The access token (a JWT), sent as the bearer token.
    pub access: String,
    /// The refresh token.
    pub refresh: String,
    /// When to refresh, in Unix milliseconds: the token's `exp` minus [`EXPIRY_MARGIN`].
    #[serde(deserialize_with = "unix_ms")]
    pub expires: u64,
    /// Other fields of the stored entry, kept as they were.
    #[serde(flatten)]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

/// The only credential type this crate reads; `api_key` entries are rejected.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
enum OAuthType {
    #[default]
    #[serde(rename = "oauth")]
    OAuth,
}

impl Credentials {
    /// Credentials with an explicit expiry (Unix milliseconds).
    pub fn new(access: impl Into<String>, refresh: impl Into<String>, expires: u64) -> Self {
        Self {
            credential_type: OAuthType::OAuth,
            access: access.into(),
            refresh: refresh.into(),
            expires,
            extra: serde_json::Map::new(),
        }
    }

    /// Credentials for freshly issued tokens: `expires` is the JWT's `exp` minus
    /// [`EXPIRY_MARGIN`]; for a token without `exp` it is `now_unix_ms` plus `lifetime`
    /// (or [`FALLBACK_LIFETIME`]) minus the margin.
    pub fn from_tokens(
        access: impl Into<String>,
        refresh: impl Into<String>,
        now_unix_ms: u64,
        lifetime: Option<Duration>,
    ) -> Self {
        let access = access.into();
        let margin_ms = millis(EXPIRY_MARGIN);
        let expires = match jwt::expiry_unix_ms(&access) {
            Some(exp_ms) => exp_ms.saturating_sub(margin_ms),
            None => {
                let lifetime_ms = millis(lifetime.unwrap_or(FALLBACK_LIFETIME));
                // A lifetime shorter than the margin would mean refreshing on every use.
                let usable_ms = lifetime_ms.saturating_sub(margin_ms).max(lifetime_ms / 2);
                now_unix_ms.saturating_add(usable_ms)
            }
        };
        Self::new(access, refresh, expires)
    }

    /// Parses a stored entry, reporting errors without quoting the input.
    pub fn from_json(json: &str) -> Result<Self, AuthError> {
        serde_json::from_str(json).map_err(|error| AuthError::malformed_json("credentials", &error))
    }

    /// Whether the access token should be refreshed before use.
    pub fn is_expired(&self, now_unix_ms: u64) -> bool {
        now_unix_ms >= self.expires
    }

    /// The value a host hands its provider as the API key: the access token.
    pub fn api_key(&self) -> &str {
        &self.access
    }
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// Hosts written in JavaScript write `expires` from a number, which may carry a fraction.
fn unix_ms<'de, D: Deserializer<'de>>(deserializer: D) -> Result<u64, D::Error> {
    let number = serde_json::Number::deserialize(deserializer)?;
    number
        .as_u64()
        .or_else(|| {
            number
                .as_f64()
                .filter(|ms| ms.is_finite() && *ms >= 0.0)
                .map(|ms| ms as u64)
        })
        .ok_or_else(|| serde::de::Error::custom("expires must be a non-negative number"))
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let extra_keys: Vec<&String> = self.extra.keys().collect();
        f.debug_struct("Credentials")
            .field("access", &Redacted(self.access.len()))
            .field("refresh", &Redacted(self.refresh.len()))
            .field("expires", &self.expires)
            .field("extra_keys", &extra_keys)
            .finish()
    }
}

impl fmt::Display for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Cursor OAuth credentials (refresh due at Unix ms {})",
            self.expires
        )
    }
}

/// Shows that a secret is present, and its length, but never its content.
struct Redacted(usize);

impl fmt::Debug for Redacted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "<redacted {} bytes>", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jwt::fake_jwt;

    #[test]
    fn expiry_is_the_jwt_exp_minus_five_minutes() {
        let access = fake_jwt(r#"{"exp":1767225600}"#);
        let credentials = Credentials::from_tokens(access, "r", 5, None);
        assert_eq!(credentials.expires, 1_767_225_600_000 - 300_000);
    }

    #[test]
    fn without_a_jwt_exp_the_stated_lifetime_is_used() {
        let credentials =
            Credentials::from_tokens("opaque", "r", 1_000_000, Some(Duration::from_secs(3600)));
        assert_eq!(credentials.expires, 1_000_000 + 3_600_000 - 300_000);
    }

    #[test]
    fn without_any_lifetime_the_fallback_applies() {
        let credentials = Credentials::from_tokens("opaque", "r", 0, None);
        assert_eq!(credentials.expires, millis(FALLBACK_LIFETIME) - 300_000);
    }

    #[test]
    fn a_lifetime_shorter_than_the_margin_still_leaves_half_of_it() {
        let credentials = Credentials::from_tokens("opaque", "r", 0, Some(Duration::from_secs(60)));
        assert_eq!(credentials.expires, 30_000);
    }

    #[test]
    fn expiry_is_reached_at_the_stored_instant() {
        let credentials = Credentials::new("a", "r", 1000);
        assert!(!credentials.is_expired(999));
        assert!(credentials.is_expired(1000));
    }

    #[test]
    fn an_api_key_entry_is_not_oauth_credentials() {
        let error = Credentials::from_json(r#"{"type":"api_key","key":"sk-secret"}"#).unwrap_err();
        assert!(!error.to_string().contains("sk-secret"));
    }

    #[test]
    fn a_fractional_expiry_is_accepted_and_a_negative_one_rejected() {
        let json = r#"{"type":"oauth","access":"a","refresh":"r","expires":1700000000000.5}"#;
        assert_eq!(
            Credentials::from_json(json).unwrap().expires,
            1_700_000_000_000
        );
        let negative = r#"{"type":"oauth","access":"a","refresh":"r","expires":-1}"#;
        assert!(Credentials::from_json(negative).is_err());
    }
}
