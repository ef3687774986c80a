//! Headless tokens: `CURSOR_ACCESS_TOKEN` (and `CURSOR_REFRESH_TOKEN`), else a user API key
//! in `CURSOR_API_KEY`, stand in for a `/login cursor` credential in CI and `pi -p`, when pi
//! has none stored.
//!
//! The JS entry registers the access token with pi as the provider's `apiKey`
//! (`"$CURSOR_ACCESS_TOKEN"`), so pi resolves it only when `auth.json` has no credential for
//! `cursor` (pi 0.99.1, 1.0.3 and 1.6.0 check the stored credential first). Neither token is
//! ever written: pi stores nothing for an env-var key, a 401 refresh is used for that turn only,
//! and the doctor shows only whether each is set.

use std::fmt;

/// The environment variable holding a Cursor access token for headless runs.
pub const ACCESS_TOKEN_ENV: &str = "CURSOR_ACCESS_TOKEN";

/// The environment variable holding a Cursor user API key (`crsr_…`) for headless runs: the
/// JS entry registers it as the provider's `apiKey` when [`ACCESS_TOKEN_ENV`] is unset, so pi
/// resolves it only when `auth.json` has no `/login cursor` credential. The channel exchanges
/// it for an access token (kept in memory until its `exp`, exchanged again after a 401) and
/// never writes either.
pub const API_KEY_ENV: &str = "CURSOR_API_KEY";

/// The environment variable holding the matching refresh token (optional): a Run refused with
/// 401 is refreshed once with it and replayed.
pub const REFRESH_TOKEN_ENV: &str = "CURSOR_REFRESH_TOKEN";

/// The headless tokens found in the environment. `Debug` never shows them.
#[derive(Clone, PartialEq, Eq)]
pub struct HeadlessTokens {
    /// The access token (non-empty), or the user API key when [`from_api_key`](Self::from_api_key).
    pub access: String,
    /// The refresh token, when one is set and non-empty (never with an API key).
    pub refresh: Option<String>,
    /// Whether `access` is the user API key of [`API_KEY_ENV`] (set only when
    /// [`ACCESS_TOKEN_ENV`] is not): it is exchanged for an access token before use.
    pub from_api_key: bool,
}

impl fmt::Debug for HeadlessTokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HeadlessTokens")
            .field("access", &"<redacted>")
            .field("refresh", &self.refresh.as_ref().map(|_| "<redacted>"))
            .field("from_api_key", &self.from_api_key)
            .finish()
    }
}

impl HeadlessTokens {
    /// The tokens in the process environment, or `None` when no access token is set.
    pub fn from_env() -> Option<Self> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// The tokens `lookup` returns for [`ACCESS_TOKEN_ENV`] and [`REFRESH_TOKEN_ENV`], else the
    /// key of [`API_KEY_ENV`]; empty or blank values count as unset.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Option<Self> {
        let set = |name: &str| {
            lookup(name)
                .map(|value| value.trim().to_owned())
                .filter(|value| !value.is_empty())
        };
        if let Some(access) = set(ACCESS_TOKEN_ENV) {
            return Some(Self {
                access,
                refresh: set(REFRESH_TOKEN_ENV),
                from_api_key: false,
            });
        }
        Some(Self {
            access: set(API_KEY_ENV)?,
            refresh: None,
            from_api_key: true,
        })
    }

    /// The variable the credential came from.
    pub fn env_name(&self) -> &'static str {
        if self.from_api_key {
            API_KEY_ENV
        } else {
            ACCESS_TOKEN_ENV
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::test_env::lookup;

    #[test]
    fn an_access_token_alone_is_headless_without_refresh() {
        let tokens = HeadlessTokens::from_lookup(lookup(&[(ACCESS_TOKEN_ENV, " tok ")])).unwrap();
        assert_eq!(tokens.access, "tok");
        assert_eq!(tokens.refresh, None);
    }

    #[test]
    fn no_or_blank_access_token_is_not_headless_even_with_a_refresh_token() {
        assert_eq!(HeadlessTokens::from_lookup(lookup(&[])), None);
        let blank = [(ACCESS_TOKEN_ENV, "  "), (REFRESH_TOKEN_ENV, "r")];
        assert_eq!(HeadlessTokens::from_lookup(lookup(&blank)), None);
    }

    #[test]
    fn an_api_key_is_headless_only_without_an_access_token_and_is_never_shown() {
        let key = [(API_KEY_ENV, " crsr_secret-key ")];
        let tokens = HeadlessTokens::from_lookup(lookup(&key)).unwrap();
        assert_eq!(tokens.access, "crsr_secret-key");
        assert!(tokens.from_api_key);
        assert_eq!(tokens.env_name(), API_KEY_ENV);
        let both = [(API_KEY_ENV, "crsr_k"), (ACCESS_TOKEN_ENV, "tok")];
        let tokens_both = HeadlessTokens::from_lookup(lookup(&both)).unwrap();
        assert_eq!(tokens_both.access, "tok");
        assert!(!tokens_both.from_api_key);
        let shown = format!(
            "{tokens:?} {} {}",
            HeadlessTokens::doctor_view(Some(&tokens), false),
            HeadlessTokens::doctor_view(Some(&tokens), true)
        );
        assert!(!shown.contains("secret-key"), "{shown}");
        assert!(
            shown.contains("CURSOR_API_KEY present (redacted)"),
            "{shown}"
        );
        assert_eq!(
            HeadlessTokens::doctor_view(Some(&tokens), false)["check"],
            "ok"
        );
    }

    #[test]
    fn debug_and_the_doctor_view_never_show_the_tokens() {
        let both = [
            (ACCESS_TOKEN_ENV, "secret-a"),
            (REFRESH_TOKEN_ENV, "secret-r"),
        ];
        let tokens = HeadlessTokens::from_lookup(lookup(&both)).unwrap();
        assert_eq!(tokens.refresh.as_deref(), Some("secret-r"));
        let shown = format!(
            "{tokens:?} {} {}",
            HeadlessTokens::doctor_view(Some(&tokens), false),
            HeadlessTokens::doctor_view(Some(&tokens), true)
        );
        assert!(!shown.contains("secret-"), "{shown}");
        assert!(
            shown.contains("in use") && shown.contains("credential wins"),
            "{shown}"
        );
        assert_eq!(HeadlessTokens::doctor_view(None, false)["state"], "unset");
    }
}
