//! The origin allowlist. Every origin this crate may contact is named here and nowhere else.
//!
//! An [`Origin`] can only be built through [`Origin::parse`] (or the constants' constructors),
//! which refuses anything off the list, so a refused origin never reaches a socket.

use crate::error::CursorError;

/// Cursor's main API host: OAuth, catalog, server config, RunInference.
pub const API2_HOST: &str = "api2.cursor.sh";

/// The parent domain of the agent hosts (`agent[n].[region.]api5.cursor.sh`).
pub const AGENT_PARENT_DOMAIN: &str = "api5.cursor.sh";

/// The default agent host (PROTOCOL-AGENT §1); real hosts come from GetServerConfig.
pub const DEFAULT_AGENT_HOST: &str = "agentn.us.api5.cursor.sh";

/// Host names accepted over plain HTTP, for loopback tests only.
pub const LOOPBACK_HOSTS: [&str; 3] = ["127.0.0.1", "localhost", "[::1]"];

/// The agent host label prefixes (`agent` for privacy mode, `agentn` otherwise).
const AGENT_PREFIXES: [&str; 2] = ["agent", "agentn"];

/// Whether an origin is reached over TLS or, for loopback only, over h2c.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scheme {
    /// HTTPS: TLS with ALPN `h2`.
    Https,
    /// Plain HTTP/2 with prior knowledge (loopback only).
    Http,
}

impl Scheme {
    /// `https` or `http`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Https => "https",
            Self::Http => "http",
        }
    }
}

/// An allowlisted origin: scheme, host and port, and nothing else.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Origin {
    scheme: Scheme,
    host: String,
    port: u16,
}

impl Origin {
    /// `https://api2.cursor.sh`.
    pub fn api2() -> Self {
        Self {
            scheme: Scheme::Https,
            host: API2_HOST.to_owned(),
            port: 443,
        }
    }

    /// `https://agentn.us.api5.cursor.sh`, the documented default agent origin.
    pub fn default_agent() -> Self {
        Self {
            scheme: Scheme::Https,
            host: DEFAULT_AGENT_HOST.to_owned(),
            port: 443,
        }
    }

    /// `http://127.0.0.1:<port>`, for loopback tests.
    pub fn loopback(port: u16) -> Self {
        Self {
            scheme: Scheme::Http,
            host: "127.0.0.1".to_owned(),
            port,
        }
    }

    /// Parses `scheme://host[:port][/]` and checks it against the allowlist.
    ///
    /// HTTPS is allowed to `api2.cursor.sh` and to `agent`/`agentn` hosts directly under
    /// `api5.cursor.sh` or one region label below it (`agentn.us.api5.cursor.sh`), on port
    /// 443. Plain HTTP to `127.0.0.1`, `localhost` and `[::1]` is refused here unless the
    /// `testing` feature is on: text from anywhere else (a server's answer, a snapshot) must
    /// never move a call off TLS. An explicit override uses [`parse_override`](Self::parse_override).
    pub fn parse(origin: &str) -> Result<Self, CursorError> {
        Self::parse_with(origin, cfg!(feature = "testing"))
    }

    /// Parses an explicit override (an environment variable or a caller's setting): the
    /// allowlist of [`parse`](Self::parse), plus plain HTTP to loopback on any port.
    pub fn parse_override(origin: &str) -> Result<Self, CursorError> {
        Self::parse_with(origin, true)
    }

    fn parse_with(origin: &str, loopback: bool) -> Result<Self, CursorError> {
        let refuse = |reason| CursorError::OriginRefused {
            origin: origin.to_owned(),
            reason,
        };
        let (scheme, rest) = if let Some(rest) = strip_prefix_ci(origin, "https://") {
            (Scheme::Https, rest)
        } else if let Some(rest) = strip_prefix_ci(origin, "http://") {
            (Scheme::Http, rest)
        } else {
            return Err(refuse("scheme must be https (or http for loopback)"));
        };
        let authority = rest.strip_suffix('/').unwrap_or(rest);
        if authority.is_empty() || authority.contains(['/', '?', '#', '@', '\\']) {
            return Err(refuse(
                "an origin has no path, query, fragment or user info",
            ));
        }
        let (host, port) =
            split_host_port(authority).ok_or_else(|| refuse("malformed host or port"))?;
        let host = host.to_ascii_lowercase();
        match scheme {
            Scheme::Https => {
                if !is_cursor_host(&host) {
                    return Err(refuse("host is not on the allowlist"));
                }
                let port = port.unwrap_or(443);
                if port != 443 {
                    return Err(refuse("Cursor hosts are reached on port 443 only"));
                }
                Ok(Self { scheme, host, port })
            }
            Scheme::Http => {
                if !LOOPBACK_HOSTS.contains(&host.as_str()) {
                    return Err(refuse("plain http is allowed to loopback only"));
                }
                if !loopback {
                    return Err(refuse(
                        "plain http to loopback needs an explicit override (or the testing feature)",
                    ));
                }
                let port = port.ok_or_else(|| refuse("a loopback origin needs a port"))?;
                Ok(Self { scheme, host, port })
            }
        }
    }

    /// Checks the scheme and authority of an absolute URI against the allowlist. The URI is one
    /// this process built from its own configuration (whose origins were checked when they
    /// were configured, loopback only by an explicit override), so loopback passes here.
    pub fn from_uri(uri: &http::Uri) -> Result<Self, CursorError> {
        let (Some(scheme), Some(authority)) = (uri.scheme_str(), uri.authority()) else {
            return Err(CursorError::OriginRefused {
                origin: uri.to_string(),
                reason: "the request URI must be absolute",
            });
        };
        Self::parse_override(&format!("{scheme}://{authority}"))
    }

    /// The scheme.
    pub fn scheme(&self) -> Scheme {
        self.scheme
    }

    /// The lower-cased host (IPv6 in brackets).
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Whether this is a loopback (plain HTTP, test-only) origin.
    pub fn is_loopback(&self) -> bool {
        self.scheme == Scheme::Http
    }

    /// `host` or `host:port` as the `:authority` pseudo-header carries it.
    pub fn authority(&self) -> String {
        match (self.scheme, self.port) {
            (Scheme::Https, 443) => self.host.clone(),
            _ => format!("{}:{}", self.host, self.port),
        }
    }

    /// The absolute URI of `path` (which must start with `/`) on this origin.
    pub fn uri(&self, path: &str) -> Result<http::Uri, CursorError> {
        if !path.starts_with('/') {
            return Err(CursorError::invalid(format!(
                "path {path:?} must start with '/'"
            )));
        }
        format!("{self}{path}").parse().map_err(|err| {
            CursorError::invalid(format!("path {path:?} is not a valid URI path: {err}"))
        })
    }

    /// An HTTPS origin off the allowlist, so unit tests can exercise TLS on loopback.
    #[cfg(test)]
    pub(crate) fn https_for_tests(host: &str, port: u16) -> Self {
        Self {
            scheme: Scheme::Https,
            host: host.to_owned(),
            port,
        }
    }

    /// The host name without IPv6 brackets, for DNS and TLS server names.
    #[cfg(feature = "client")]
    pub(crate) fn dial_host(&self) -> &str {
        self.host.trim_start_matches('[').trim_end_matches(']')
    }
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}://{}", self.scheme.as_str(), self.authority())
    }
}

impl std::str::FromStr for Origin {
    type Err = CursorError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

fn strip_prefix_ci<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    let head = s.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &s[prefix.len()..])
}

fn split_host_port(authority: &str) -> Option<(&str, Option<u16>)> {
    let (host, port) = if authority.starts_with('[') {
        let end = authority.find(']')?;
        let (host, rest) = authority.split_at(end + 1);
        match rest {
            "" => (host, None),
            _ => (host, Some(rest.strip_prefix(':')?)),
        }
    } else {
        match authority.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        }
    };
    let port = match port {
        Some(p) if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) => Some(p.parse().ok()?),
        Some(_) => return None,
        None => None,
    };
    (!host.is_empty()).then_some((host, port))
}

/// `api2.cursor.sh`, or `agent`/`agentn` directly under `api5.cursor.sh` or one region label below.
fn is_cursor_host(host: &str) -> bool {
    if host == API2_HOST {
        return true;
    }
    let Some(under) = host
        .strip_suffix(AGENT_PARENT_DOMAIN)
        .and_then(|h| h.strip_suffix('.'))
    else {
        return false;
    };
    let mut labels = under.split('.');
    let (Some(first), second, None) = (labels.next(), labels.next(), labels.next()) else {
        return false;
    };
    AGENT_PREFIXES.contains(&first) && second.is_none_or(is_region_label)
}

fn is_region_label(label: &str) -> bool {
    (1..=32).contains(&label.len())
        && label
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !label.starts_with('-')
        && !label.ends_with('-')
}

#[cfg(test)]
mod tests {
    use super::*;
    use cursor_proto::ir::Classify as _;

    #[test]
    fn cursor_hosts_are_allowed() {
        for ok in [
            "https://api2.cursor.sh",
            "https://API2.cursor.sh/",
            "https://api2.cursor.sh:443",
            "https://agent.api5.cursor.sh",
            "https://agentn.api5.cursor.sh",
            "https://agentn.us.api5.cursor.sh",
            "https://agentn.global.api5.cursor.sh",
            "https://agent.eu-west-1.api5.cursor.sh",
        ] {
            let origin = Origin::parse(ok).unwrap_or_else(|e| panic!("{ok}: {e}"));
            assert_eq!(origin.scheme(), Scheme::Https);
            assert_eq!(origin.port(), 443);
        }
        assert_eq!(
            Origin::parse("https://agentn.us.api5.cursor.sh").unwrap(),
            Origin::default_agent()
        );
        assert_eq!(
            Origin::parse("https://api2.cursor.sh").unwrap(),
            Origin::api2()
        );
    }

    #[test]
    fn everything_else_is_refused() {
        // Only Cursor-owned names appear here, so the workspace origin check stays meaningful.
        for bad in [
            "https://cursor.com",
            "https://www.cursor.com",
            "https://api2.cursor.sh.cursor.com",
            "https://api3.cursor.sh",
            "https://api2geo.cursor.sh",
            "https://cursor.sh",
            "https://agentx.api5.cursor.sh",
            "https://agentn.a.b.api5.cursor.sh",
            "https://agentn.-us.api5.cursor.sh",
            "https://foo.agentn.api5.cursor.sh",
            "https://xagentn.api5.cursor.sh",
            "https://api5.cursor.sh",
            "http://api2.cursor.sh",
            "http://cursor.com:80",
            "https://api2.cursor.sh:8443",
            "https://api2.cursor.sh/path",
            "https://cursor.sh@api2.cursor.sh",
            "https://127.0.0.1:443",
            "http://127.0.0.1",
            "http://127.0.0.1:99999",
            "ftp://api2.cursor.sh",
            "api2.cursor.sh",
            "",
        ] {
            let err = Origin::parse(bad).expect_err(bad);
            assert_eq!(err.kind(), cursor_proto::ir::ErrorKind::Local, "{bad}");
        }
    }

    #[test]
    fn loopback_is_plain_http_with_a_port_when_an_override_asks() {
        for ok in [
            "http://127.0.0.1:8080",
            "http://localhost:1",
            "http://[::1]:9000/",
        ] {
            let origin = Origin::parse_override(ok).unwrap_or_else(|e| panic!("{ok}: {e}"));
            assert!(origin.is_loopback());
        }
        assert_eq!(
            Origin::parse_override("http://[::1]:9000")
                .unwrap()
                .dial_host(),
            "::1"
        );
        assert!(Origin::parse_override("http://api2.cursor.sh:80").is_err());
        assert!(Origin::parse_override("http://127.0.0.1").is_err());
        assert_eq!(Origin::loopback(5).to_string(), "http://127.0.0.1:5");
    }

    #[test]
    fn without_an_override_or_the_testing_feature_loopback_is_refused() {
        for plain in [
            "http://127.0.0.1:8080",
            "http://localhost:1",
            "http://[::1]:9",
        ] {
            let error = Origin::parse_with(plain, false).expect_err(plain);
            assert!(error.to_string().contains("explicit override"), "{error}");
        }
        assert!(Origin::parse_with("https://api2.cursor.sh", false).is_ok());
        // `parse` is that gate, opened only by the `testing` feature.
        assert_eq!(
            Origin::parse("http://127.0.0.1:8080").is_ok(),
            cfg!(feature = "testing")
        );
    }

    #[test]
    fn uris_are_built_and_checked() {
        let uri = Origin::api2()
            .uri("/aiserver.v1.AiService/AvailableModels")
            .unwrap();
        assert_eq!(
            uri.to_string(),
            "https://api2.cursor.sh/aiserver.v1.AiService/AvailableModels"
        );
        assert!(Origin::api2().uri("relative").is_err());
        assert_eq!(Origin::from_uri(&uri).unwrap(), Origin::api2());
        let evil: http::Uri = "https://cursor.com/x".parse().unwrap();
        assert!(Origin::from_uri(&evil).is_err());
        let relative: http::Uri = "/x".parse().unwrap();
        assert!(Origin::from_uri(&relative).is_err());
    }
}
