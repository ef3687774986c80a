//! The header stack: CLI identity for AgentService/Run and the catalog, IDE identity for
//! RunInference. This module is the only code that reads an [`AccessToken`].

mod checksum;
pub(crate) mod request_id;
mod token;

use http::{HeaderMap, HeaderName, HeaderValue, header};

pub use checksum::{checksum, checksum_prefix};
pub use request_id::{RequestId, random_client_key};
pub use token::AccessToken;

use crate::{envelope::Compression, error::CursorError};

/// The CLI version sent when the caller configures none: the newest public CLI version string
/// (docs/PROTOCOL.md §3.1). Cursor raises its floor over time and refuses older clients, so hosts
/// let users raise it without a release ([`CliIdentity::parse`]).
pub const DEFAULT_CLI_VERSION: &str = "cli-2026.10.01-e373342";

/// The IDE version the RunInference identity reproduces.
pub const DEFAULT_IDE_VERSION: &str = "3.18.9";

/// The IDE commit that goes with [`DEFAULT_IDE_VERSION`].
pub const DEFAULT_IDE_COMMIT: &str = "2ba48ff3f7514cc4643c52ca9f7b3173d9b66130";

/// The user agent of Cursor's own Connect client.
pub const CONNECT_USER_AGENT: &str = "connect-es/1.6.1";

/// Content type of streaming Connect calls.
pub const CONTENT_TYPE_STREAM: &str = "application/connect+proto";

/// Content type of unary Connect calls.
pub const CONTENT_TYPE_UNARY: &str = "application/proto";

/// Whether a call is a Connect stream (enveloped) or unary (a bare protobuf body).
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CallKind {
    /// `application/connect+proto`, enveloped, bidi or server streaming.
    Stream,
    /// `application/proto`, one bare message each way.
    Unary,
}

/// The identity Cursor's CLI presents (AgentService/Run, catalog, server config).
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CliIdentity {
    /// `x-cursor-client-version`, for example `cli-2026.09.02-fa0c06e`.
    pub client_version: String,
    /// `x-ghost-mode`: true in privacy mode.
    pub ghost_mode: bool,
}

impl CliIdentity {
    /// A CLI identity with `client_version` and ghost mode on (the privacy-preserving default).
    /// The version is not checked: for a version a user supplied, use [`CliIdentity::parse`].
    pub fn new(client_version: impl Into<String>) -> Self {
        Self {
            client_version: client_version.into(),
            ghost_mode: true,
        }
    }

    /// A CLI identity for a user-supplied version, checked for the shape Cursor's CLI versions
    /// have: `cli-YYYY.MM.DD-<commit>`, the commit 7 to 40 lower-case hex digits.
    ///
    /// # Errors
    ///
    /// [`CursorError::InvalidRequest`] naming the expected shape.
    pub fn parse(client_version: &str) -> Result<Self, CursorError> {
        let version = client_version.trim();
        if is_cli_version(version) {
            Ok(Self::new(version))
        } else {
            Err(CursorError::invalid(format!(
                "{version:?} is not a Cursor CLI version (expected cli-YYYY.MM.DD-<commit>, for example {DEFAULT_CLI_VERSION})"
            )))
        }
    }
}

/// `cli-YYYY.MM.DD-<7..=40 lower-case hex>`.
fn is_cli_version(version: &str) -> bool {
    let Some(rest) = version.strip_prefix("cli-") else {
        return false;
    };
    let Some((date, commit)) = rest.split_once('-') else {
        return false;
    };
    let parts: Vec<&str> = date.split('.').collect();
    let digits =
        |part: &str, len: usize| part.len() == len && part.bytes().all(|b| b.is_ascii_digit());
    let date_ok =
        matches!(parts.as_slice(), [y, m, d] if digits(y, 4) && digits(m, 2) && digits(d, 2));
    let commit_ok = (7..=40).contains(&commit.len())
        && commit
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    date_ok && commit_ok
}

impl Default for CliIdentity {
    fn default() -> Self {
        Self::new(DEFAULT_CLI_VERSION)
    }
}

/// The identity the Cursor IDE presents (RunInference).
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdeIdentity {
    /// `x-cursor-client-version`, for example `3.18.9`.
    pub client_version: String,
    /// `x-cursor-client-commit`.
    pub client_commit: String,
    /// 64-hex machine id (from `cursor-identity`).
    pub machine_id: String,
    /// 64-hex MAC machine id, when known.
    pub mac_machine_id: Option<String>,
    /// `x-client-key`: 64 lower-case hex, stable for the process, never derived from a token.
    pub client_key: String,
    /// `x-cursor-client-os` (Node's platform name: `linux`, `darwin`, `win32`).
    pub os: String,
    /// `x-cursor-client-arch` (Node's arch name: `x64`, `arm64`).
    pub arch: String,
    /// `x-cursor-timezone` (IANA name), when known.
    pub timezone: Option<String>,
    /// `x-ghost-mode`.
    pub ghost_mode: bool,
}

impl IdeIdentity {
    /// An IDE identity for this machine, with the default IDE version and commit.
    pub fn new(machine_id: impl Into<String>, client_key: impl Into<String>) -> Self {
        Self {
            client_version: DEFAULT_IDE_VERSION.to_owned(),
            client_commit: DEFAULT_IDE_COMMIT.to_owned(),
            machine_id: machine_id.into(),
            mac_machine_id: None,
            client_key: client_key.into(),
            os: node_platform().to_owned(),
            arch: node_arch().to_owned(),
            timezone: None,
            ghost_mode: true,
        }
    }
}

/// Request headers ready for a call. `Debug` hides the credentials.
#[derive(Clone, Default)]
pub struct RequestHeaders {
    map: HeaderMap,
}

impl RequestHeaders {
    /// No headers (the client adds the Connect protocol headers it needs).
    pub fn new() -> Self {
        Self::default()
    }

    /// Headers for a CLI-identity call (AgentService/Run, catalog, server config).
    pub fn cli(
        token: &AccessToken,
        identity: &CliIdentity,
        call: CallKind,
        request_id: &RequestId,
    ) -> Result<Self, CursorError> {
        let mut headers = Self::new();
        headers.set_protocol(call)?;
        headers.set_bearer(token)?;
        headers.insert("x-cursor-client-type", "cli")?;
        headers.insert("x-cursor-client-version", &identity.client_version)?;
        headers.insert("x-ghost-mode", bool_str(identity.ghost_mode))?;
        headers.insert("x-request-id", request_id.as_str())?;
        Ok(headers)
    }

    /// Headers for an IDE-identity streaming call (RunInference), gzip negotiated both ways.
    /// `now_ms` (milliseconds since the Unix epoch) feeds the checksum.
    pub fn ide(
        token: &AccessToken,
        identity: &IdeIdentity,
        request_id: &RequestId,
        now_ms: u64,
    ) -> Result<Self, CursorError> {
        let mut headers = Self::new();
        headers.set_protocol(CallKind::Stream)?;
        headers.set_bearer(token)?;
        let cookie_prefix: String = token.expose().chars().take(15).collect();
        headers.insert_sensitive(
            header::COOKIE,
            &format!("CursorCookie=Cookie-{cookie_prefix}"),
        )?;
        headers.insert("connect-accept-encoding", "gzip")?;
        headers.insert("connect-content-encoding", "gzip")?;
        headers.insert("user-agent", CONNECT_USER_AGENT)?;
        headers.insert("x-amzn-trace-id", &format!("Root={request_id}"))?;
        headers.insert("x-request-id", request_id.as_str())?;
        headers.insert("x-client-key", &identity.client_key)?;
        let sum = checksum(
            now_ms,
            &identity.machine_id,
            identity.mac_machine_id.as_deref(),
        );
        headers.insert("x-cursor-checksum", &sum)?;
        headers.insert("x-cursor-client-version", &identity.client_version)?;
        headers.insert("x-cursor-client-commit", &identity.client_commit)?;
        headers.insert("x-cursor-client-type", "ide")?;
        headers.insert("x-cursor-client-os", &identity.os)?;
        headers.insert("x-cursor-client-arch", &identity.arch)?;
        headers.insert("x-cursor-client-device-type", "desktop")?;
        headers.insert("x-cursor-streaming", "true")?;
        if let Some(tz) = &identity.timezone {
            headers.insert("x-cursor-timezone", tz)?;
        }
        headers.insert("x-ghost-mode", bool_str(identity.ghost_mode))?;
        headers.insert("x-new-onboarding-completed", "false")?;
        Ok(headers)
    }

    /// Sets a header, replacing any previous value.
    pub fn insert(&mut self, name: &str, value: &str) -> Result<(), CursorError> {
        let name = HeaderName::try_from(name)
            .map_err(|_| CursorError::invalid(format!("{name:?} is not a valid header name")))?;
        let value = HeaderValue::try_from(value).map_err(|_| {
            CursorError::invalid(format!("value of {name} is not a valid header value"))
        })?;
        self.map.insert(name, value);
        Ok(())
    }

    /// Removes a header.
    pub fn remove(&mut self, name: &str) {
        self.map.remove(name);
    }

    /// The value of a header, if set and visible ASCII. Credentials read as `None`.
    pub fn get(&self, name: &str) -> Option<&str> {
        let value = self.map.get(name)?;
        if value.is_sensitive() {
            return None;
        }
        value.to_str().ok()
    }

    /// Whether a header is set (credentials included).
    pub fn contains(&self, name: &str) -> bool {
        self.map.contains_key(name)
    }

    /// The body compression these headers negotiate (`connect-content-encoding`).
    pub fn request_compression(&self) -> Result<Compression, CursorError> {
        match self.map.get("connect-content-encoding") {
            None => Ok(Compression::Identity),
            Some(value) => value
                .to_str()
                .ok()
                .and_then(Compression::from_header_value)
                .ok_or_else(|| CursorError::invalid("unsupported connect-content-encoding")),
        }
    }

    #[cfg(feature = "client")]
    pub(crate) fn into_map(self) -> HeaderMap {
        self.map
    }

    fn set_protocol(&mut self, call: CallKind) -> Result<(), CursorError> {
        let content_type = match call {
            CallKind::Stream => CONTENT_TYPE_STREAM,
            CallKind::Unary => CONTENT_TYPE_UNARY,
        };
        self.insert("content-type", content_type)?;
        self.insert("connect-protocol-version", "1")?;
        self.insert("te", "trailers")
    }

    fn set_bearer(&mut self, token: &AccessToken) -> Result<(), CursorError> {
        self.insert_sensitive(header::AUTHORIZATION, &format!("Bearer {}", token.expose()))
    }

    fn insert_sensitive(&mut self, name: HeaderName, value: &str) -> Result<(), CursorError> {
        // The error names the header only: the value is a credential.
        let mut value = HeaderValue::try_from(value).map_err(|_| {
            CursorError::invalid(format!("{name} would not be a valid header value"))
        })?;
        value.set_sensitive(true);
        self.map.insert(name, value);
        Ok(())
    }
}

impl std::fmt::Debug for RequestHeaders {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut map = f.debug_map();
        for (name, value) in &self.map {
            if value.is_sensitive() {
                map.entry(&name.as_str(), &"<redacted>");
            } else {
                map.entry(&name.as_str(), &value.to_str().unwrap_or("<binary>"));
            }
        }
        map.finish()
    }
}

fn bool_str(value: bool) -> &'static str {
    if value { "true" } else { "false" }
}

/// The name Node's `process.platform` uses for this OS.
fn node_platform() -> &'static str {
    match std::env::consts::OS {
        "macos" => "darwin",
        "windows" => "win32",
        other => other,
    }
}

/// The name Node's `process.arch` uses for this CPU.
fn node_arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "x64",
        "aarch64" => "arm64",
        "x86" => "ia32",
        other => other,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn cli_versions_are_checked_for_shape() {
        assert!(CliIdentity::parse(DEFAULT_CLI_VERSION).is_ok());
        assert_eq!(
            CliIdentity::parse(" cli-2027.01.15-0123456789abcdef ")
                .unwrap()
                .client_version,
            "cli-2027.01.15-0123456789abcdef"
        );
        for bad in [
            "",
            "2026.10.01-e373342",
            "cli-2026.10.01",
            "cli-2026.10-e373342",
            "cli-2026.10.01-E373342",
            "cli-2026.10.01-e37",
            "cli-26.10.01-e373342",
            "cli-2026.10.01-e373342\r\nx-evil: 1",
        ] {
            let error = CliIdentity::parse(bad).unwrap_err();
            assert!(
                error.to_string().contains("cli-YYYY.MM.DD"),
                "{bad:?}: {error}"
            );
        }
    }

    use super::*;
    use cursor_proto::ir::Classify as _;

    const TOKEN: &str = "eyJhbGciOiJIUzI1NiJ9.payload.signature";

    fn request_id() -> RequestId {
        RequestId::from_random_bytes([7; 16])
    }

    #[test]
    fn cli_stream_headers_follow_the_cli_identity() {
        let identity = CliIdentity::new("cli-2026.07.08-0c04a8a");
        let headers = RequestHeaders::cli(
            &AccessToken::new(TOKEN),
            &identity,
            CallKind::Stream,
            &request_id(),
        )
        .unwrap();
        assert_eq!(headers.get("content-type"), Some(CONTENT_TYPE_STREAM));
        assert_eq!(headers.get("connect-protocol-version"), Some("1"));
        assert_eq!(headers.get("te"), Some("trailers"));
        assert_eq!(headers.get("x-cursor-client-type"), Some("cli"));
        assert_eq!(
            headers.get("x-cursor-client-version"),
            Some("cli-2026.07.08-0c04a8a")
        );
        assert_eq!(headers.get("x-ghost-mode"), Some("true"));
        assert_eq!(headers.get("x-request-id"), Some(request_id().as_str()));
        assert!(headers.contains("authorization"));
        assert!(
            !headers.contains("connect-content-encoding"),
            "Run must stay uncompressed"
        );
        assert_eq!(
            headers.request_compression().unwrap(),
            Compression::Identity
        );
        let map = headers.into_map();
        assert_eq!(map["authorization"], format!("Bearer {TOKEN}").as_str());
    }

    #[test]
    fn cli_unary_headers_use_application_proto() {
        let headers = RequestHeaders::cli(
            &AccessToken::new(TOKEN),
            &CliIdentity::default(),
            CallKind::Unary,
            &request_id(),
        )
        .unwrap();
        assert_eq!(headers.get("content-type"), Some(CONTENT_TYPE_UNARY));
        assert_eq!(
            headers.get("x-cursor-client-version"),
            Some(DEFAULT_CLI_VERSION)
        );
    }

    #[test]
    fn ide_headers_carry_checksum_cookie_and_gzip() {
        let machine = "a".repeat(64);
        let mut identity = IdeIdentity::new(machine, "c".repeat(64));
        identity.mac_machine_id = Some("b".repeat(64));
        identity.timezone = Some("Europe/Paris".into());
        let headers = RequestHeaders::ide(
            &AccessToken::new(TOKEN),
            &identity,
            &request_id(),
            1_700_000_000_000,
        )
        .unwrap();
        let sum = headers.get("x-cursor-checksum").unwrap();
        assert!(sum.starts_with("Vfb45Bi9"));
        assert_eq!(sum.len(), 137);
        assert_eq!(headers.get("x-client-key"), Some("c".repeat(64).as_str()));
        assert_eq!(headers.get("x-cursor-client-type"), Some("ide"));
        assert_eq!(
            headers.get("x-cursor-client-version"),
            Some(DEFAULT_IDE_VERSION)
        );
        assert_eq!(headers.get("x-cursor-timezone"), Some("Europe/Paris"));
        assert_eq!(
            headers.get("x-amzn-trace-id"),
            Some(format!("Root={}", request_id()).as_str())
        );
        assert_eq!(headers.request_compression().unwrap(), Compression::Gzip);
        // Credentials are hidden from `get`, present on the wire.
        assert_eq!(headers.get("cookie"), None);
        let map = headers.into_map();
        assert_eq!(map["cookie"], "CursorCookie=Cookie-eyJhbGciOiJIUzI");
    }

    #[test]
    fn debug_redacts_credentials() {
        let headers = RequestHeaders::ide(
            &AccessToken::new(TOKEN),
            &IdeIdentity::new("a".repeat(64), "c".repeat(64)),
            &request_id(),
            0,
        )
        .unwrap();
        let shown = format!("{headers:?}");
        assert!(!shown.contains("payload"), "{shown}");
        assert!(!shown.contains("eyJ"), "{shown}");
        assert!(shown.contains("<redacted>"));
    }

    #[test]
    fn a_token_with_a_newline_is_refused_without_echoing_it() {
        let err = RequestHeaders::cli(
            &AccessToken::new("abc\nsecret"),
            &CliIdentity::default(),
            CallKind::Stream,
            &request_id(),
        )
        .unwrap_err();
        assert!(!err.to_string().contains("secret"));
        assert_eq!(err.kind(), cursor_proto::ir::ErrorKind::Local);
    }
}
