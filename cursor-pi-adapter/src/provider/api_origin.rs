//! Where the provider's own calls to Cursor's API host go: the catalog refresh and the token
//! refresh. Production is `https://api2.cursor.sh`; `CURSOR_PROVIDER_API_ORIGIN` points them
//! elsewhere (a loopback replica in tests), checked against the transport's origin allowlist.

use cursor_auth::{AuthConfig, DEFAULT_WEBSITE_BASE};
use cursor_proto::ir::{ErrorInfo, ErrorKind, NextStep};
use cursor_transport::Origin;

/// The environment variable that overrides the API origin.
pub const API_ORIGIN_ENV: &str = "CURSOR_PROVIDER_API_ORIGIN";

/// The API origin for this process: [`API_ORIGIN_ENV`] when set, else `api2.cursor.sh`.
///
/// # Errors
///
/// A [`ErrorKind::Local`] error when the variable names an origin off the allowlist (loopback
/// or a Cursor host): a bad override is refused, never replaced by the default.
pub fn api_origin_from_env() -> Result<Origin, ErrorInfo> {
    api_origin(std::env::var(API_ORIGIN_ENV).ok().as_deref())
}

/// The API origin for an override value (`None` or blank: `api2.cursor.sh`).
///
/// # Errors
///
/// As [`api_origin_from_env`].
pub fn api_origin(value: Option<&str>) -> Result<Origin, ErrorInfo> {
    let Some(value) = value.map(str::trim).filter(|v| !v.is_empty()) else {
        return Ok(Origin::api2());
    };
    Origin::parse_override(value).map_err(|error| {
        ErrorInfo::new(
            ErrorKind::Local,
            format!("{API_ORIGIN_ENV} is refused: {error}"),
            NextStep::fix_config(format!(
                "unset {API_ORIGIN_ENV}, or set it to a loopback origin (http://127.0.0.1:PORT) \
                 or a *.cursor.sh https origin"
            )),
        )
    })
}

/// cursor-auth's endpoints with the refresh (and login poll) on `api`; the sign-in page stays
/// Cursor's website.
pub fn auth_config(api: &Origin) -> AuthConfig {
    AuthConfig::with_bases(api.to_string(), DEFAULT_WEBSITE_BASE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_override_is_api2() {
        assert_eq!(api_origin(None).unwrap(), Origin::api2());
        assert_eq!(api_origin(Some("  ")).unwrap(), Origin::api2());
    }

    #[test]
    fn a_loopback_override_is_used_for_the_refresh() {
        let origin = api_origin(Some("http://127.0.0.1:4555")).unwrap();
        assert_eq!(origin, Origin::loopback(4555));
        assert_eq!(auth_config(&origin).api_base, "http://127.0.0.1:4555");
        assert_eq!(auth_config(&origin).website_base, DEFAULT_WEBSITE_BASE);
    }

    #[test]
    fn an_override_off_the_allowlist_is_a_local_error_not_the_default() {
        for bad in [
            "https://example.com",
            "https://api2.cursor.sh.invalid",
            "ftp://127.0.0.1:1",
        ] {
            let error = api_origin(Some(bad)).unwrap_err();
            assert_eq!(error.kind, ErrorKind::Local, "{bad}: {error}");
            assert!(error.message.contains(API_ORIGIN_ENV), "{error}");
        }
    }
}
