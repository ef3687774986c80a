//! The command line:
//! `cursor-openai-gateway [--listen ADDR] [--state DIR] [--api-key KEY] [--agent-origin URL] [--api-origin URL]`.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;

use crate::GatewayError;

/// The usage line printed with every command-line error.
pub const USAGE: &str = "usage: cursor-openai-gateway [--listen ADDR] [--state DIR] [--api-key KEY] \
[--agent-origin URL] [--api-origin URL]";

/// The default listen address.
pub const DEFAULT_LISTEN: SocketAddr =
    SocketAddr::new(std::net::IpAddr::V4(Ipv4Addr::LOCALHOST), 8787);

/// What the command line (and `CURSOR_GATEWAY_API_KEY`) asked for.
#[derive(Clone, PartialEq, Eq)]
pub struct Options {
    /// Where to accept connections.
    pub listen: SocketAddr,
    /// Where resume handles and the catalog snapshot live.
    pub state: PathBuf,
    /// The key clients must send as `Authorization: Bearer KEY`, if any.
    pub api_key: Option<String>,
    /// The agent origin override (for example a loopback replica).
    pub agent_origin: Option<String>,
    /// The API origin override (catalog, token refresh, API key exchange).
    pub api_origin: Option<String>,
}

impl std::fmt::Debug for Options {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Options")
            .field("listen", &self.listen)
            .field("state", &self.state)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("agent_origin", &self.agent_origin)
            .field("api_origin", &self.api_origin)
            .finish()
    }
}

impl Options {
    /// Parses `args` (without the program name); `env` reads an environment variable.
    ///
    /// # Errors
    ///
    /// A [`GatewayError::Usage`] for an unknown flag, a missing value or an address that does
    /// not parse, and [`GatewayError::Exposed`] for a non-loopback address without an API key.
    pub fn parse<I, E>(args: I, env: E) -> Result<Self, GatewayError>
    where
        I: IntoIterator<Item = String>,
        E: Fn(&str) -> Option<String>,
    {
        let mut listen = None;
        let mut state = None;
        let mut api_key = None;
        let mut agent_origin = None;
        let mut api_origin = None;
        let mut args = args.into_iter();
        while let Some(flag) = args.next() {
            let slot = match flag.as_str() {
                "--listen" => &mut listen,
                "--state" => &mut state,
                "--api-key" => &mut api_key,
                "--agent-origin" => &mut agent_origin,
                "--api-origin" => &mut api_origin,
                "-h" | "--help" => return Err(GatewayError::Usage(String::new())),
                other => return Err(GatewayError::Usage(format!("unknown argument {other}"))),
            };
            let value = args
                .next()
                .filter(|value| !value.starts_with("--"))
                .ok_or_else(|| GatewayError::Usage(format!("{flag} needs a value")))?;
            *slot = Some(value);
        }
        let listen = match listen {
            Some(text) => parse_listen(&text)?,
            None => DEFAULT_LISTEN,
        };
        let api_key = api_key
            .or_else(|| env("CURSOR_GATEWAY_API_KEY"))
            .map(|key| key.trim().to_owned())
            .filter(|key| !key.is_empty());
        if !listen.ip().is_loopback() && api_key.is_none() {
            return Err(GatewayError::Exposed(listen));
        }
        let state = state.map_or_else(|| default_state(&env), PathBuf::from);
        Ok(Self {
            listen,
            state,
            api_key,
            agent_origin,
            api_origin,
        })
    }
}

/// `HOST:PORT` with an IP address or `localhost`.
fn parse_listen(text: &str) -> Result<SocketAddr, GatewayError> {
    if let Ok(addr) = text.parse::<SocketAddr>() {
        return Ok(addr);
    }
    if let Some(port) = text.strip_prefix("localhost:")
        && let Ok(port) = port.parse::<u16>()
    {
        return Ok(SocketAddr::new(Ipv4Addr::LOCALHOST.into(), port));
    }
    Err(GatewayError::Usage(format!(
        "--listen {text}: not an IP:PORT address (for example 127.0.0.1:8787)"
    )))
}

/// `$XDG_STATE_HOME/cursor-openai-gateway`, else `~/.local/state/cursor-openai-gateway`,
/// else `.cursor-openai-gateway` in the working directory.
fn default_state(env: &impl Fn(&str) -> Option<String>) -> PathBuf {
    if let Some(dir) = env("XDG_STATE_HOME").filter(|dir| !dir.is_empty()) {
        return PathBuf::from(dir).join("cursor-openai-gateway");
    }
    match env("HOME").filter(|home| !home.is_empty()) {
        Some(home) => PathBuf::from(home).join(".local/state/cursor-openai-gateway"),
        None => PathBuf::from(".cursor-openai-gateway"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str], env: &[(&str, &str)]) -> Result<Options, GatewayError> {
        let env: Vec<(String, String)> = env
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        Options::parse(args.iter().map(|a| (*a).to_owned()), |name| {
            env.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
        })
    }

    #[test]
    fn defaults_listen_on_loopback_8787_without_a_key() {
        let options = parse(&[], &[("HOME", "/home/u")]).unwrap();
        assert_eq!(options.listen, DEFAULT_LISTEN);
        assert_eq!(options.api_key, None);
        assert_eq!(
            options.state,
            PathBuf::from("/home/u/.local/state/cursor-openai-gateway")
        );
    }

    #[test]
    fn non_loopback_listen_without_api_key_is_refused() {
        let error = parse(&["--listen", "0.0.0.0:8787"], &[]).unwrap_err();
        assert!(matches!(error, GatewayError::Exposed(_)), "{error:?}");
    }

    #[test]
    fn non_loopback_listen_with_key_flag_or_env_is_accepted() {
        let options = parse(&["--listen", "0.0.0.0:9", "--api-key", "k"], &[]).unwrap();
        assert_eq!(options.api_key.as_deref(), Some("k"));
        let options = parse(
            &["--listen", "[::]:9"],
            &[("CURSOR_GATEWAY_API_KEY", "from-env")],
        )
        .unwrap();
        assert_eq!(options.api_key.as_deref(), Some("from-env"));
    }

    #[test]
    fn every_flag_is_read_and_unknown_ones_are_usage_errors() {
        let options = parse(
            &[
                "--listen",
                "localhost:0",
                "--state",
                "/s",
                "--agent-origin",
                "http://127.0.0.1:1",
                "--api-origin",
                "http://127.0.0.1:2",
            ],
            &[],
        )
        .unwrap();
        assert_eq!(options.listen.port(), 0);
        assert_eq!(options.state, PathBuf::from("/s"));
        assert_eq!(options.agent_origin.as_deref(), Some("http://127.0.0.1:1"));
        assert_eq!(options.api_origin.as_deref(), Some("http://127.0.0.1:2"));
        assert!(matches!(
            parse(&["--port", "1"], &[]),
            Err(GatewayError::Usage(_))
        ));
        assert!(matches!(
            parse(&["--state"], &[]),
            Err(GatewayError::Usage(_))
        ));
        assert!(matches!(
            parse(&["--listen", "nowhere"], &[]),
            Err(GatewayError::Usage(_))
        ));
    }
}
