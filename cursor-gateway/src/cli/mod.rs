//! The command line, the environment and the configuration file.
//!
//! Every setting is a flag (`--help` lists them, per subcommand), an environment variable
//! (`CURSOR_GATEWAY_` and the flag's name in capitals, `-` as `_`) and a key of the TOML file
//! `--config` names (the flag's long name). Precedence: the command line, then the environment,
//! then the file, then the default; `cursor-gateway config` prints each effective value and
//! where it came from. Secrets never travel in argv or in the file: client keys come from the
//! files `--api-key-file` / `--api-keys-file` name or from `CURSOR_GATEWAY_API_KEY`, the admin
//! key from `--admin-key-file` or `CURSOR_GATEWAY_ADMIN_KEY`.

mod file;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::parser::ValueSource;
use clap::{
    ArgMatches, Args, CommandFactory as _, FromArgMatches as _, Parser, Subcommand, ValueEnum,
};

use self::file::FileConfig;
use crate::keys::key_lines;
use crate::{ClientKeys, GatewayError, Limits};

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

/// [`LogFormat`] as the command line and the file spell it (kept apart, so the public type
/// implements no trait of `clap` or `serde`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
enum LogFormatName {
    /// One readable line per event.
    Human,
    /// One JSON object per line.
    Json,
}

impl From<LogFormatName> for LogFormat {
    fn from(name: LogFormatName) -> Self {
        match name {
            LogFormatName::Human => Self::Human,
            LogFormatName::Json => Self::Json,
        }
    }
}

/// What to do.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Command {
    /// Serve the APIs until SIGTERM or Ctrl-C.
    Serve,
    /// Print the effective configuration and where each value came from, then exit.
    Config,
    /// Delete expired state under `--state` now, then exit.
    Sweep,
}

#[derive(Debug, Parser)]
#[command(
    name = "cursor-gateway",
    version = crate::VERSION,
    about = "The OpenAI and Anthropic APIs on Cursor's agent, as a service several clients can share.",
    long_about = "The OpenAI (chat completions, Responses) and Anthropic (Messages) APIs on Cursor's agent, \
                  as a service several clients can share. Nothing Cursor asks for ever runs here.\n\n\
                  Every flag is also read from the environment (CURSOR_GATEWAY_<FLAG>) and from the \
                  TOML file --config names; the command line wins, then the environment, then the file.",
    args_conflicts_with_subcommands = true
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Sub>,
    #[command(flatten)]
    settings: Settings,
}

#[derive(Debug, Subcommand)]
enum Sub {
    /// Serve the APIs (what running without a subcommand does).
    Serve(Settings),
    /// Print the effective configuration, each value with where it came from, and exit.
    Config(Settings),
    /// Delete expired conversations, handles and stored responses under --state now, and exit.
    Sweep(Settings),
}

/// Every setting, as the command line and the environment give it.
#[derive(Clone, Debug, Default, Args)]
struct Settings {
    /// A TOML file of settings: keys are the long flag names (`listen = "127.0.0.1:8787"`).
    #[arg(long, env = "CURSOR_GATEWAY_CONFIG", value_name = "FILE")]
    config: Option<PathBuf>,
    /// Where to accept API connections [default: 127.0.0.1:8787].
    #[arg(long, env = "CURSOR_GATEWAY_LISTEN", value_name = "ADDR", value_parser = parse_listen)]
    listen: Option<SocketAddr>,
    /// Where to serve /metrics and /healthz without a key, for the operator's network only.
    #[arg(long, env = "CURSOR_GATEWAY_ADMIN_LISTEN", value_name = "ADDR", value_parser = parse_listen)]
    admin_listen: Option<SocketAddr>,
    /// Resume handles, conversation index, stored responses, catalog [default:
    /// $XDG_STATE_HOME/cursor-gateway or ~/.local/state/cursor-gateway].
    #[arg(long, env = "CURSOR_GATEWAY_STATE", value_name = "DIR")]
    state: Option<PathBuf>,
    /// The key clients must send: the file's first non-comment line.
    #[arg(long, env = "CURSOR_GATEWAY_API_KEY_FILE", value_name = "FILE")]
    api_key_file: Option<PathBuf>,
    /// Several client keys, one per line (# comments); each is its own namespace.
    #[arg(long, env = "CURSOR_GATEWAY_API_KEYS_FILE", value_name = "FILE")]
    api_keys_file: Option<PathBuf>,
    /// Admin keys, one per line: they open /metrics on the API listener.
    #[arg(long, env = "CURSOR_GATEWAY_ADMIN_KEY_FILE", value_name = "FILE")]
    admin_key_file: Option<PathBuf>,
    /// The agent origin (for example a loopback replica).
    #[arg(long, env = "CURSOR_GATEWAY_AGENT_ORIGIN", value_name = "URL")]
    agent_origin: Option<String>,
    /// The API origin (catalog, token refresh, key exchange).
    #[arg(long, env = "CURSOR_GATEWAY_API_ORIGIN", value_name = "URL")]
    api_origin: Option<String>,
    /// Log lines for people, or one JSON object each [default: human].
    #[arg(long, env = "CURSOR_GATEWAY_LOG_FORMAT", value_enum)]
    log_format: Option<LogFormatName>,
    /// Request head, and keep-alive idle, in seconds [default: 15].
    #[arg(long, env = "CURSOR_GATEWAY_HEADER_TIMEOUT", value_name = "SECS", value_parser = seconds)]
    header_timeout: Option<Duration>,
    /// The whole request body, in seconds [default: 60].
    #[arg(long, env = "CURSOR_GATEWAY_BODY_TIMEOUT", value_name = "SECS", value_parser = seconds)]
    body_timeout: Option<Duration>,
    /// A write to a client that stopped reading, in seconds [default: 30].
    #[arg(long, env = "CURSOR_GATEWAY_WRITE_TIMEOUT", value_name = "SECS", value_parser = seconds)]
    write_timeout: Option<Duration>,
    /// A Run waiting for the client's tool results, in seconds [default: 300].
    #[arg(long, env = "CURSOR_GATEWAY_TOOL_ROUND_TIMEOUT", value_name = "SECS", value_parser = seconds)]
    tool_round_timeout: Option<Duration>,
    /// Turns finishing after SIGTERM, in seconds [default: 30].
    #[arg(long, env = "CURSOR_GATEWAY_SHUTDOWN_GRACE", value_name = "SECS", value_parser = seconds)]
    shutdown_grace: Option<Duration>,
    /// Stream keep-alives after this much silence, in seconds [default: 5].
    #[arg(long, env = "CURSOR_GATEWAY_PING_INTERVAL", value_name = "SECS", value_parser = seconds)]
    ping_interval: Option<Duration>,
    /// Stored Responses kept after their last use, in seconds [default: 2592000].
    #[arg(long, env = "CURSOR_GATEWAY_RESPONSE_RETENTION", value_name = "SECS", value_parser = seconds)]
    response_retention: Option<Duration>,
    /// Conversations forgotten after this long idle, in seconds [default: 2592000].
    #[arg(long, env = "CURSOR_GATEWAY_CONVERSATION_RETENTION", value_name = "SECS", value_parser = seconds)]
    conversation_retention: Option<Duration>,
    /// How often expired state is deleted, in seconds [default: 3600].
    #[arg(long, env = "CURSOR_GATEWAY_SWEEP_INTERVAL", value_name = "SECS", value_parser = seconds)]
    sweep_interval: Option<Duration>,
    /// How long a request waits for room in the body budget, in seconds [default: 2].
    #[arg(long, env = "CURSOR_GATEWAY_BODY_WAIT", value_name = "SECS", value_parser = seconds)]
    body_wait: Option<Duration>,
    /// Another name for a catalog model (repeatable; comma-separated in the environment).
    #[arg(long, env = "CURSOR_GATEWAY_MODEL_ALIAS", value_name = "NAME=ID", value_parser = parse_alias, value_delimiter = ',')]
    model_alias: Vec<(String, String)>,
    /// Open connections [default: 1024].
    #[arg(long, env = "CURSOR_GATEWAY_MAX_CONNECTIONS", value_name = "N", value_parser = count)]
    max_connections: Option<usize>,
    /// Open connections from one address [default: 256].
    #[arg(long, env = "CURSOR_GATEWAY_MAX_CONNECTIONS_PER_PEER", value_name = "N", value_parser = count)]
    max_connections_per_peer: Option<usize>,
    /// Turns running at once [default: 64].
    #[arg(long, env = "CURSOR_GATEWAY_MAX_TURNS", value_name = "N", value_parser = count)]
    max_turns: Option<usize>,
    /// Turns one client key runs at once [default: 32].
    #[arg(long, env = "CURSOR_GATEWAY_MAX_TURNS_PER_KEY", value_name = "N", value_parser = count)]
    max_turns_per_key: Option<usize>,
    /// Conversations in memory [default: 10000].
    #[arg(long, env = "CURSOR_GATEWAY_MAX_CONVERSATIONS", value_name = "N", value_parser = count)]
    max_conversations: Option<usize>,
    /// Runs parked waiting for tool results, gateway-wide [default: 512].
    #[arg(long, env = "CURSOR_GATEWAY_MAX_PARKED_ROUNDS", value_name = "N", value_parser = count)]
    max_parked_rounds: Option<usize>,
    /// Runs one client key keeps parked [default: 128].
    #[arg(long, env = "CURSOR_GATEWAY_MAX_PARKED_PER_KEY", value_name = "N", value_parser = count)]
    max_parked_per_key: Option<usize>,
    /// The largest request body, in bytes [default: 33554432].
    #[arg(long, env = "CURSOR_GATEWAY_MAX_BODY_BYTES", value_name = "N", value_parser = count)]
    max_body_bytes: Option<usize>,
    /// Request bytes being read, parsed or run at once, gateway-wide; a key holds at most
    /// half [default: 268435456].
    #[arg(long, env = "CURSOR_GATEWAY_BODY_BUDGET", value_name = "N", value_parser = count)]
    body_budget: Option<usize>,
    /// Stored Responses on disk, in bytes [default: 1073741824].
    #[arg(long, env = "CURSOR_GATEWAY_MAX_STORED_RESPONSE_BYTES", value_name = "N", value_parser = count)]
    max_stored_response_bytes: Option<usize>,
    /// Removed: a key on the command line shows in the process list.
    #[arg(long, hide = true, value_name = "KEY")]
    api_key: Option<String>,
}

/// Where a setting's value came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// The command line.
    CommandLine,
    /// An environment variable.
    Environment,
    /// The configuration file.
    File,
    /// The default.
    Default,
}

impl Source {
    fn describe(self) -> &'static str {
        match self {
            Self::CommandLine => "command line",
            Self::Environment => "environment",
            Self::File => "config file",
            Self::Default => "default",
        }
    }
}

/// What the command line, the environment and the configuration file asked for.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// Where to accept API connections.
    pub listen: SocketAddr,
    /// Where to serve `/metrics` and `/healthz` without a key, if anywhere.
    pub admin_listen: Option<SocketAddr>,
    /// Where resume handles, the conversation index and the catalog snapshot live.
    pub state: PathBuf,
    /// The keys clients must send (none: loopback only).
    pub keys: ClientKeys,
    /// The keys that open the admin routes on the API listener.
    pub admin_keys: ClientKeys,
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
    /// Warnings to log once logging is up.
    pub warnings: Vec<String>,
    /// Where each setting came from, by flag name.
    pub sources: BTreeMap<&'static str, Source>,
}

/// How the program reads its surroundings: an environment variable (for the secrets and the
/// default state directory; flags read theirs through clap) and a file.
pub trait Surroundings {
    /// The value of environment variable `name`.
    fn var(&self, name: &str) -> Option<String>;
    /// The contents of the file at `path`.
    fn read(&self, path: &Path) -> std::io::Result<String>;
}

/// The process's own environment and file system.
#[derive(Clone, Copy, Debug, Default)]
pub struct Process;

impl Surroundings for Process {
    fn var(&self, name: &str) -> Option<String> {
        std::env::var(name).ok()
    }

    fn read(&self, path: &Path) -> std::io::Result<String> {
        std::fs::read_to_string(path)
    }
}

impl Options {
    /// Parses `args` (the program name first, as `std::env::args` gives them).
    ///
    /// # Errors
    ///
    /// [`GatewayError::Help`] for `--help` and `--version` (the text to print);
    /// [`GatewayError::Usage`] for an unknown flag, a malformed value, an unreadable or invalid
    /// file; [`GatewayError::Exposed`] for a non-loopback address without a client key.
    pub fn parse<I, S>(
        args: I,
        surroundings: &impl Surroundings,
    ) -> Result<(Command, Self), GatewayError>
    where
        I: IntoIterator<Item = S>,
        S: Into<std::ffi::OsString> + Clone,
    {
        let matches = Cli::command().try_get_matches_from(args).map_err(|error| {
            use clap::error::ErrorKind;
            match error.kind() {
                ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
                    GatewayError::Help(error.render().to_string())
                }
                _ => GatewayError::Usage(error.render().to_string()),
            }
        })?;
        let cli =
            Cli::from_arg_matches(&matches).map_err(|e| GatewayError::Usage(e.to_string()))?;
        let (command, settings, sub_matches) = match (cli.command, matches.subcommand()) {
            (Some(Sub::Serve(settings)), Some((_, sub))) => (Command::Serve, settings, sub),
            (Some(Sub::Config(settings)), Some((_, sub))) => (Command::Config, settings, sub),
            (Some(Sub::Sweep(settings)), Some((_, sub))) => (Command::Sweep, settings, sub),
            _ => (Command::Serve, cli.settings, &matches),
        };
        let options = Self::merge(settings, sub_matches, surroundings)?;
        Ok((command, options))
    }

    fn merge(
        settings: Settings,
        matches: &ArgMatches,
        surroundings: &impl Surroundings,
    ) -> Result<Self, GatewayError> {
        let usage = GatewayError::Usage;
        if settings.api_key.is_some() {
            return Err(usage(
                "--api-key is gone: a key on the command line shows in the process list. Put it \
                 in a file and pass --api-key-file FILE, or set CURSOR_GATEWAY_API_KEY"
                    .into(),
            ));
        }
        let file = match &settings.config {
            Some(path) => {
                let text = surroundings
                    .read(path)
                    .map_err(|e| usage(format!("--config {}: {e}", path.display())))?;
                FileConfig::parse(&text, path).map_err(usage)?
            }
            None => FileConfig::default(),
        };
        let mut sources = BTreeMap::new();
        let mut source = |name: &'static str, flag: bool, in_file: bool| {
            let id = name.replace('-', "_");
            let from = match matches.value_source(&id) {
                Some(ValueSource::CommandLine) if flag => Source::CommandLine,
                Some(ValueSource::EnvVariable) if flag => Source::Environment,
                _ if in_file => Source::File,
                _ => Source::Default,
            };
            sources.insert(name, from);
        };
        macro_rules! pick {
            ($name:literal, $flag:expr, $file:expr, $default:expr) => {{
                let flag = $flag;
                let file = $file;
                source($name, flag.is_some(), file.is_some());
                flag.or(file).unwrap_or($default)
            }};
        }
        let file_seconds =
            |value: Option<f64>, key: &str| -> Result<Option<Duration>, GatewayError> {
                value
                    .map(|secs| {
                        seconds(&secs.to_string())
                            .map_err(|e| usage(format!("{key} in the config file: {e}")))
                    })
                    .transpose()
            };
        let file_count = |value: Option<u64>, key: &str| -> Result<Option<usize>, GatewayError> {
            value
                .map(|n| {
                    count(&n.to_string())
                        .map_err(|e| usage(format!("{key} in the config file: {e}")))
                })
                .transpose()
        };
        let defaults = Limits::DEFAULT;
        let mut limits = Limits::DEFAULT;
        limits.header_read = pick!(
            "header-timeout",
            settings.header_timeout,
            file_seconds(file.header_timeout, "header-timeout")?,
            defaults.header_read
        );
        limits.body_read = pick!(
            "body-timeout",
            settings.body_timeout,
            file_seconds(file.body_timeout, "body-timeout")?,
            defaults.body_read
        );
        limits.write = pick!(
            "write-timeout",
            settings.write_timeout,
            file_seconds(file.write_timeout, "write-timeout")?,
            defaults.write
        );
        limits.tool_round = pick!(
            "tool-round-timeout",
            settings.tool_round_timeout,
            file_seconds(file.tool_round_timeout, "tool-round-timeout")?,
            defaults.tool_round
        );
        limits.shutdown_grace = pick!(
            "shutdown-grace",
            settings.shutdown_grace,
            file_seconds(file.shutdown_grace, "shutdown-grace")?,
            defaults.shutdown_grace
        );
        limits.ping_interval = pick!(
            "ping-interval",
            settings.ping_interval,
            file_seconds(file.ping_interval, "ping-interval")?,
            defaults.ping_interval
        );
        limits.response_retention = pick!(
            "response-retention",
            settings.response_retention,
            file_seconds(file.response_retention, "response-retention")?,
            defaults.response_retention
        );
        limits.conversation_retention = pick!(
            "conversation-retention",
            settings.conversation_retention,
            file_seconds(file.conversation_retention, "conversation-retention")?,
            defaults.conversation_retention
        );
        limits.sweep_interval = pick!(
            "sweep-interval",
            settings.sweep_interval,
            file_seconds(file.sweep_interval, "sweep-interval")?,
            defaults.sweep_interval
        );
        limits.body_wait = pick!(
            "body-wait",
            settings.body_wait,
            file_seconds(file.body_wait, "body-wait")?,
            defaults.body_wait
        );
        limits.max_connections = pick!(
            "max-connections",
            settings.max_connections,
            file_count(file.max_connections, "max-connections")?,
            defaults.max_connections
        );
        limits.max_connections_per_peer = pick!(
            "max-connections-per-peer",
            settings.max_connections_per_peer,
            file_count(file.max_connections_per_peer, "max-connections-per-peer")?,
            defaults.max_connections_per_peer
        );
        limits.max_turns = pick!(
            "max-turns",
            settings.max_turns,
            file_count(file.max_turns, "max-turns")?,
            defaults.max_turns
        );
        limits.max_turns_per_key = pick!(
            "max-turns-per-key",
            settings.max_turns_per_key,
            file_count(file.max_turns_per_key, "max-turns-per-key")?,
            defaults.max_turns_per_key
        );
        limits.max_conversations = pick!(
            "max-conversations",
            settings.max_conversations,
            file_count(file.max_conversations, "max-conversations")?,
            defaults.max_conversations
        );
        limits.max_parked_rounds = pick!(
            "max-parked-rounds",
            settings.max_parked_rounds,
            file_count(file.max_parked_rounds, "max-parked-rounds")?,
            defaults.max_parked_rounds
        );
        limits.max_parked_per_key = pick!(
            "max-parked-per-key",
            settings.max_parked_per_key,
            file_count(file.max_parked_per_key, "max-parked-per-key")?,
            defaults.max_parked_per_key
        );
        limits.max_body_bytes = pick!(
            "max-body-bytes",
            settings.max_body_bytes,
            file_count(file.max_body_bytes, "max-body-bytes")?,
            defaults.max_body_bytes
        );
        limits.body_budget = pick!(
            "body-budget",
            settings.body_budget,
            file_count(file.body_budget, "body-budget")?,
            defaults.body_budget
        );
        limits.max_stored_response_bytes = pick!(
            "max-stored-response-bytes",
            settings.max_stored_response_bytes,
            file_count(file.max_stored_response_bytes, "max-stored-response-bytes")?,
            defaults.max_stored_response_bytes as usize
        ) as u64;
        let listen = pick!(
            "listen",
            settings.listen,
            FileConfig::address(file.listen.as_deref(), "listen").map_err(usage)?,
            DEFAULT_LISTEN
        );
        let admin_listen = pick!(
            "admin-listen",
            settings.admin_listen.map(Some),
            FileConfig::address(file.admin_listen.as_deref(), "admin-listen")
                .map_err(usage)?
                .map(Some),
            None
        );
        let log_format = pick!(
            "log-format",
            settings.log_format.map(LogFormat::from),
            file.log_format.map(LogFormat::from),
            LogFormat::Human
        );
        let agent_origin = pick!(
            "agent-origin",
            settings.agent_origin.map(Some),
            file.agent_origin.map(Some),
            None
        );
        let api_origin = pick!(
            "api-origin",
            settings.api_origin.map(Some),
            file.api_origin.map(Some),
            None
        );
        let state = pick!(
            "state",
            settings.state,
            file.state,
            default_state(surroundings)
        );
        let aliases_flag = (!settings.model_alias.is_empty()).then_some(settings.model_alias);
        let aliases_file = match file.model_alias {
            Some(aliases) => Some(
                aliases
                    .iter()
                    .map(|alias| {
                        parse_alias(alias)
                            .map_err(|e| usage(format!("model-alias in the config file: {e}")))
                    })
                    .collect::<Result<Vec<_>, _>>()?,
            ),
            None => None,
        };
        let model_aliases = pick!("model-alias", aliases_flag, aliases_file, Vec::new());
        let read_keys =
            |path: &Path, flag: &str, first_only: bool| -> Result<Vec<String>, GatewayError> {
                let text = surroundings
                    .read(path)
                    .map_err(|e| usage(format!("{flag} {}: {e}", path.display())))?;
                let keys: Vec<String> = key_lines(&text)
                    .take(if first_only { 1 } else { usize::MAX })
                    .map(str::to_owned)
                    .collect();
                if keys.is_empty() {
                    return Err(usage(format!("{flag} {}: no key in it", path.display())));
                }
                Ok(keys)
            };
        let mut keys = ClientKeys::default();
        let key_file = pick!(
            "api-key-file",
            settings.api_key_file.map(Some),
            file.api_key_file.map(Some),
            None
        );
        if let Some(path) = key_file {
            read_keys(&path, "--api-key-file", true)?
                .into_iter()
                .for_each(|k| keys.add(k));
        }
        let keys_file = pick!(
            "api-keys-file",
            settings.api_keys_file.map(Some),
            file.api_keys_file.map(Some),
            None
        );
        if let Some(path) = keys_file {
            read_keys(&path, "--api-keys-file", false)?
                .into_iter()
                .for_each(|k| keys.add(k));
        }
        if let Some(key) = surroundings.var("CURSOR_GATEWAY_API_KEY") {
            keys.add(key);
        }
        let mut admin_keys = ClientKeys::default();
        let admin_file = pick!(
            "admin-key-file",
            settings.admin_key_file.map(Some),
            file.admin_key_file.map(Some),
            None
        );
        if let Some(path) = admin_file {
            read_keys(&path, "--admin-key-file", false)?
                .into_iter()
                .for_each(|k| admin_keys.add(k));
        }
        if let Some(key) = surroundings.var("CURSOR_GATEWAY_ADMIN_KEY") {
            admin_keys.add(key);
        }
        if !listen.ip().is_loopback() && keys.is_empty() {
            return Err(GatewayError::Exposed(listen));
        }
        Ok(Self {
            listen,
            admin_listen,
            state,
            keys,
            admin_keys,
            agent_origin,
            api_origin,
            log_format,
            limits,
            model_aliases,
            warnings: Vec::new(),
            sources,
        })
    }

    /// The effective configuration as a TOML file a `--config` could read back, each value
    /// with where it came from; keys are counted, never shown.
    pub fn describe(&self) -> String {
        let mut out = String::new();
        let source = |name: &str| {
            self.sources
                .get(name)
                .copied()
                .unwrap_or(Source::Default)
                .describe()
        };
        let line = |out: &mut String, name: &str, value: String| {
            let _ = writeln!(out, "{name} = {value}  # {}", source(name));
        };
        let quoted = |text: &str| format!("{text:?}");
        let secs = |d: Duration| format!("{}", d.as_secs_f64());
        let limits = &self.limits;
        line(&mut out, "listen", quoted(&self.listen.to_string()));
        if let Some(admin) = self.admin_listen {
            line(&mut out, "admin-listen", quoted(&admin.to_string()));
        }
        line(&mut out, "state", quoted(&self.state.display().to_string()));
        if let Some(origin) = &self.agent_origin {
            line(&mut out, "agent-origin", quoted(origin));
        }
        if let Some(origin) = &self.api_origin {
            line(&mut out, "api-origin", quoted(origin));
        }
        line(
            &mut out,
            "log-format",
            quoted(match self.log_format {
                LogFormat::Human => "human",
                LogFormat::Json => "json",
            }),
        );
        for (name, value) in [
            ("header-timeout", limits.header_read),
            ("body-timeout", limits.body_read),
            ("write-timeout", limits.write),
            ("tool-round-timeout", limits.tool_round),
            ("shutdown-grace", limits.shutdown_grace),
            ("ping-interval", limits.ping_interval),
            ("response-retention", limits.response_retention),
            ("conversation-retention", limits.conversation_retention),
            ("sweep-interval", limits.sweep_interval),
            ("body-wait", limits.body_wait),
        ] {
            line(&mut out, name, secs(value));
        }
        for (name, value) in [
            ("max-connections", limits.max_connections as u64),
            (
                "max-connections-per-peer",
                limits.max_connections_per_peer as u64,
            ),
            ("max-turns", limits.max_turns as u64),
            ("max-turns-per-key", limits.max_turns_per_key as u64),
            ("max-conversations", limits.max_conversations as u64),
            ("max-parked-rounds", limits.max_parked_rounds as u64),
            ("max-parked-per-key", limits.max_parked_per_key as u64),
            ("max-body-bytes", limits.max_body_bytes as u64),
            ("body-budget", limits.body_budget as u64),
            (
                "max-stored-response-bytes",
                limits.max_stored_response_bytes,
            ),
        ] {
            line(&mut out, name, value.to_string());
        }
        let aliases: Vec<String> = self
            .model_aliases
            .iter()
            .map(|(name, id)| quoted(&format!("{name}={id}")))
            .collect();
        line(&mut out, "model-alias", format!("[{}]", aliases.join(", ")));
        let _ = writeln!(
            out,
            "# client keys: {}; admin keys: {} (keys are never printed)",
            self.keys.len(),
            self.admin_keys.len()
        );
        out
    }
}

fn seconds(value: &str) -> Result<Duration, String> {
    value
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s > 0.0 && *s < 1e12)
        .map(Duration::from_secs_f64)
        .ok_or_else(|| format!("{value}: a positive number of seconds"))
}

fn count(value: &str) -> Result<usize, String> {
    value
        .parse::<usize>()
        .ok()
        .filter(|n| *n > 0)
        .ok_or_else(|| format!("{value}: a positive whole number"))
}

fn parse_alias(value: &str) -> Result<(String, String), String> {
    value
        .split_once('=')
        .filter(|(name, id)| !name.is_empty() && !id.is_empty())
        .map(|(name, id)| (name.to_owned(), id.to_owned()))
        .ok_or_else(|| format!("{value}: NAME=CATALOG_ID"))
}

/// `HOST:PORT` with an IP address or `localhost`.
fn parse_listen(text: &str) -> Result<SocketAddr, String> {
    if let Ok(addr) = text.parse::<SocketAddr>() {
        return Ok(addr);
    }
    if let Some(port) = text.strip_prefix("localhost:")
        && let Ok(port) = port.parse::<u16>()
    {
        return Ok(SocketAddr::new(Ipv4Addr::LOCALHOST.into(), port));
    }
    Err(format!(
        "{text}: not an IP:PORT address (for example 127.0.0.1:8787)"
    ))
}

/// `$XDG_STATE_HOME/cursor-gateway`, else `~/.local/state/cursor-gateway`, else
/// `.cursor-gateway` in the working directory.
fn default_state(surroundings: &impl Surroundings) -> PathBuf {
    if let Some(dir) = surroundings
        .var("XDG_STATE_HOME")
        .filter(|dir| !dir.is_empty())
    {
        return PathBuf::from(dir).join("cursor-gateway");
    }
    match surroundings.var("HOME").filter(|home| !home.is_empty()) {
        Some(home) => PathBuf::from(home).join(".local/state/cursor-gateway"),
        None => PathBuf::from(".cursor-gateway"),
    }
}

#[cfg(test)]
mod tests;
