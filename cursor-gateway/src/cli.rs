//! The command line. Secrets never travel in argv: client keys come from files or the
//! environment (`--api-key` still works for one release, with a warning).

use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use crate::keys::key_lines;
use crate::{ClientKeys, GatewayError, Limits};

/// The usage text printed with `--help` and every command-line error.
pub const USAGE: &str = "\
usage: cursor-gateway [options]
  --listen ADDR               where to accept connections (default 127.0.0.1:8787)
  --state DIR                 resume handles, conversation index, catalog
  --api-key-file PATH         the key clients must send (first non-comment line)
  --api-keys-file PATH        several keys, one per line (# comments); each its own namespace
  --agent-origin URL          the agent origin (for example a loopback replica)
  --api-origin URL            the API origin (catalog, token refresh, key exchange)
  --log-format human|json     log lines for people (default) or one JSON object each
  --header-timeout SECS       request head, and keep-alive idle (default 15)
  --body-timeout SECS         the whole request body (default 60)
  --write-timeout SECS        a write to a client that stopped reading (default 30)
  --tool-round-timeout SECS   a Run waiting for tool results (default 300)
  --shutdown-grace SECS       turns finishing after SIGTERM (default 30)
  --ping-interval SECS        Anthropic stream keep-alive pings (default 5)
  --response-retention SECS   stored Responses kept for previous_response_id (default 2592000)
  --model-alias NAME=ID       another name for a catalog model (repeatable)
  --max-connections N         open connections (default 1024)
  --max-turns N               turns running at once (default 64)
  --max-conversations N       conversations in memory (default 10000)
  --max-body-bytes N          the largest request body (default 33554432)
  --version                   print the version and exit
environment: CURSOR_GATEWAY_API_KEY (a client key), CURSOR_API_KEY / CURSOR_ACCESS_TOKEN /
CURSOR_REFRESH_TOKEN or pi's auth.json (Cursor credentials), RUST_LOG (log filter)";

/// The default listen address.
pub const DEFAULT_LISTEN: SocketAddr =
    SocketAddr::new(std::net::IpAddr::V4(Ipv4Addr::LOCALHOST), 8787);

/// How log lines are written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LogFormat {
    /// One readable line per event.
    #[default]
    Human,
    /// One JSON object per line.
    Json,
}

/// What the command line and the environment asked for.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// Where to accept connections.
    pub listen: SocketAddr,
    /// Where resume handles, the conversation index and the catalog snapshot live.
    pub state: PathBuf,
    /// The keys clients must send (none: loopback only).
    pub keys: ClientKeys,
    /// The agent origin override.
    pub agent_origin: Option<String>,
    /// The API origin override.
    pub api_origin: Option<String>,
    /// How log lines are written.
    pub log_format: LogFormat,
    /// Bounds and timeouts.
    pub limits: Limits,
    /// `--model-alias NAME=ID` pairs.
    pub model_aliases: Vec<(String, String)>,
    /// Warnings to log once logging is up (deprecated flags).
    pub warnings: Vec<String>,
    /// `--version` was asked for.
    pub version: bool,
}

impl Options {
    /// Parses `args` (without the program name); `env` reads an environment variable and
    /// `read` a key file.
    ///
    /// # Errors
    ///
    /// [`GatewayError::Usage`] for an unknown flag, a missing or malformed value or an
    /// unreadable key file, and [`GatewayError::Exposed`] for a non-loopback address without
    /// a client key.
    pub fn parse<I, E, R>(args: I, env: E, read: R) -> Result<Self, GatewayError>
    where
        I: IntoIterator<Item = String>,
        E: Fn(&str) -> Option<String>,
        R: Fn(&str) -> std::io::Result<String>,
    {
        let mut options = Self {
            listen: DEFAULT_LISTEN,
            state: PathBuf::new(),
            keys: ClientKeys::default(),
            agent_origin: None,
            api_origin: None,
            log_format: LogFormat::Human,
            limits: Limits::DEFAULT,
            model_aliases: Vec::new(),
            warnings: Vec::new(),
            version: false,
        };
        let mut state = None;
        let mut args = args.into_iter();
        while let Some(flag) = args.next() {
            match flag.as_str() {
                "-h" | "--help" => return Err(GatewayError::Usage(String::new())),
                "-V" | "--version" => {
                    options.version = true;
                    continue;
                }
                _ => {}
            }
            let value = args
                .next()
                .filter(|value| !value.starts_with("--"))
                .ok_or_else(|| GatewayError::Usage(format!("{flag} needs a value")))?;
            let limits = &mut options.limits;
            match flag.as_str() {
                "--listen" => options.listen = parse_listen(&value)?,
                "--state" => state = Some(PathBuf::from(value)),
                "--api-key" => {
                    options.warnings.push(
                        "--api-key shows the key to every local user in the process list and \
                         goes away in the next release: use --api-key-file or \
                         CURSOR_GATEWAY_API_KEY"
                            .into(),
                    );
                    options.keys.add(value);
                }
                "--api-key-file" | "--api-keys-file" => {
                    let text = read(&value)
                        .map_err(|e| GatewayError::Usage(format!("{flag} {value}: {e}")))?;
                    let mut keys = key_lines(&text).peekable();
                    if keys.peek().is_none() {
                        return Err(GatewayError::Usage(format!("{flag} {value}: no key in it")));
                    }
                    let take = if flag == "--api-key-file" {
                        1
                    } else {
                        usize::MAX
                    };
                    for key in keys.take(take) {
                        options.keys.add(key.to_owned());
                    }
                }
                "--agent-origin" => options.agent_origin = Some(value),
                "--api-origin" => options.api_origin = Some(value),
                "--log-format" => {
                    options.log_format = match value.as_str() {
                        "human" => LogFormat::Human,
                        "json" => LogFormat::Json,
                        other => {
                            return Err(GatewayError::Usage(format!(
                                "--log-format {other}: human or json"
                            )));
                        }
                    }
                }
                "--header-timeout" => limits.header_read = seconds(&flag, &value)?,
                "--body-timeout" => limits.body_read = seconds(&flag, &value)?,
                "--write-timeout" => limits.write = seconds(&flag, &value)?,
                "--tool-round-timeout" => limits.tool_round = seconds(&flag, &value)?,
                "--shutdown-grace" => limits.shutdown_grace = seconds(&flag, &value)?,
                "--ping-interval" => limits.ping_interval = seconds(&flag, &value)?,
                "--response-retention" => limits.response_retention = seconds(&flag, &value)?,
                "--model-alias" => {
                    let (name, id) = value
                        .split_once('=')
                        .filter(|(name, id)| !name.is_empty() && !id.is_empty())
                        .ok_or_else(|| {
                            GatewayError::Usage(format!("--model-alias {value}: NAME=CATALOG_ID"))
                        })?;
                    options.model_aliases.push((name.to_owned(), id.to_owned()));
                }
                "--max-connections" => limits.max_connections = count(&flag, &value)?,
                "--max-turns" => limits.max_turns = count(&flag, &value)?,
                "--max-conversations" => limits.max_conversations = count(&flag, &value)?,
                "--max-body-bytes" => limits.max_body_bytes = count(&flag, &value)?,
                other => return Err(GatewayError::Usage(format!("unknown argument {other}"))),
            }
        }
        if let Some(key) = env("CURSOR_GATEWAY_API_KEY") {
            options.keys.add(key);
        }
        if !options.listen.ip().is_loopback() && options.keys.is_empty() {
            return Err(GatewayError::Exposed(options.listen));
        }
        options.state = state.unwrap_or_else(|| default_state(&env));
        Ok(options)
    }
}

fn seconds(flag: &str, value: &str) -> Result<Duration, GatewayError> {
    value
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s > 0.0)
        .map(Duration::from_secs_f64)
        .ok_or_else(|| GatewayError::Usage(format!("{flag} {value}: a positive number of seconds")))
}

fn count(flag: &str, value: &str) -> Result<usize, GatewayError> {
    value
        .parse::<usize>()
        .ok()
        .filter(|n| *n > 0)
        .ok_or_else(|| GatewayError::Usage(format!("{flag} {value}: a positive whole number")))
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

/// `$XDG_STATE_HOME/cursor-gateway`, else `~/.local/state/cursor-gateway`, else
/// `.cursor-gateway` in the working directory.
fn default_state(env: &impl Fn(&str) -> Option<String>) -> PathBuf {
    if let Some(dir) = env("XDG_STATE_HOME").filter(|dir| !dir.is_empty()) {
        return PathBuf::from(dir).join("cursor-gateway");
    }
    match env("HOME").filter(|home| !home.is_empty()) {
        Some(home) => PathBuf::from(home).join(".local/state/cursor-gateway"),
        None => PathBuf::from(".cursor-gateway"),
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
        Options::parse(
            args.iter().map(|a| (*a).to_owned()),
            |name| env.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()),
            |path| match path {
                "one.keys" => Ok("# mine\nalpha\nbeta\n".into()),
                "empty.keys" => Ok("# nothing\n\n".into()),
                _ => Err(std::io::Error::from(std::io::ErrorKind::NotFound)),
            },
        )
    }

    #[test]
    fn defaults_listen_on_loopback_8787_without_a_key() {
        let options = parse(&[], &[("HOME", "/home/u")]).unwrap();
        assert_eq!(options.listen, DEFAULT_LISTEN);
        assert!(options.keys.is_empty());
        assert_eq!(
            options.state,
            PathBuf::from("/home/u/.local/state/cursor-gateway")
        );
        assert_eq!(options.limits, Limits::DEFAULT);
        assert!(options.warnings.is_empty());
    }

    #[test]
    fn non_loopback_listen_without_a_key_is_refused() {
        let error = parse(&["--listen", "0.0.0.0:8787"], &[]).unwrap_err();
        assert!(matches!(error, GatewayError::Exposed(_)), "{error:?}");
    }

    #[test]
    fn keys_come_from_files_and_the_environment_and_argv_keys_warn() {
        let options = parse(
            &["--listen", "0.0.0.0:9", "--api-key-file", "one.keys"],
            &[],
        )
        .unwrap();
        assert_eq!(options.keys.len(), 1, "--api-key-file takes the first key");
        assert!(options.keys.namespace_of(Some("alpha")).is_some());
        let options = parse(
            &["--api-keys-file", "one.keys"],
            &[("CURSOR_GATEWAY_API_KEY", "env")],
        )
        .unwrap();
        assert_eq!(options.keys.len(), 3);
        let options = parse(&["--api-key", "k"], &[]).unwrap();
        assert!(options.warnings[0].contains("--api-key-file"));
        for bad in [
            ["--api-key-file", "missing.keys"],
            ["--api-keys-file", "empty.keys"],
        ] {
            assert!(
                matches!(parse(&bad, &[]), Err(GatewayError::Usage(_))),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn every_limit_has_a_flag_and_bad_values_are_usage_errors() {
        let options = parse(
            &[
                "--header-timeout",
                "2.5",
                "--body-timeout",
                "3",
                "--write-timeout",
                "4",
                "--tool-round-timeout",
                "5",
                "--shutdown-grace",
                "6",
                "--response-retention",
                "60",
                "--max-connections",
                "7",
                "--max-turns",
                "8",
                "--max-conversations",
                "9",
                "--max-body-bytes",
                "10",
                "--log-format",
                "json",
                "--state",
                "/s",
                "--listen",
                "localhost:0",
            ],
            &[],
        )
        .unwrap();
        let limits = options.limits;
        assert_eq!(limits.header_read, Duration::from_millis(2500));
        assert_eq!(limits.body_read, Duration::from_secs(3));
        assert_eq!(limits.write, Duration::from_secs(4));
        assert_eq!(limits.tool_round, Duration::from_secs(5));
        assert_eq!(limits.shutdown_grace, Duration::from_secs(6));
        assert_eq!(limits.response_retention, Duration::from_secs(60));
        assert_eq!(
            (
                limits.max_connections,
                limits.max_turns,
                limits.max_conversations,
                limits.max_body_bytes
            ),
            (7, 8, 9, 10)
        );
        assert_eq!(options.log_format, LogFormat::Json);
        assert_eq!(options.state, PathBuf::from("/s"));
        for bad in [
            &["--max-turns", "0"][..],
            &["--header-timeout", "-1"],
            &["--log-format", "xml"],
            &["--port", "1"],
            &["--state"],
            &["--listen", "nowhere"],
        ] {
            assert!(
                matches!(parse(bad, &[]), Err(GatewayError::Usage(_))),
                "{bad:?}"
            );
        }
        assert!(parse(&["--version"], &[]).unwrap().version);
    }
}
