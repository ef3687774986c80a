use super::*;

/// Files the tests name, and no environment (flags' variables are read by clap from the
/// process, which sets none of them here).
struct Fake(Vec<(&'static str, String)>);

impl Surroundings for Fake {
    fn var(&self, name: &str) -> Option<String> {
        match name {
            "HOME" => Some("/home/u".into()),
            _ => None,
        }
    }

    fn read(&self, path: &Path) -> std::io::Result<String> {
        self.0
            .iter()
            .find(|(name, _)| Path::new(name) == path)
            .map(|(_, text)| text.clone())
            .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::NotFound))
    }
}

fn files() -> Fake {
    Fake(vec![
        ("one.keys", "# mine\nalpha\nbeta\n".into()),
        ("empty.keys", "# nothing\n\n".into()),
        ("admin.keys", "root-key\n".into()),
        (
            "gw.toml",
            "listen = \"127.0.0.1:9100\"\nmax-turns = 7\nheader-timeout = 2.5\n\
             api-keys-file = \"one.keys\"\nmodel-alias = [\"fast=composer-2.5\"]\n"
                .into(),
        ),
        ("secret.toml", "api-key = \"sk-in-a-file\"\n".into()),
        ("typo.toml", "max-turn = 3\n".into()),
    ])
}

fn parse(args: &[&str]) -> Result<(Command, Options), GatewayError> {
    let all = std::iter::once("cursor-gateway").chain(args.iter().copied());
    Options::parse(all, &files())
}

#[test]
fn defaults_listen_on_loopback_8787_without_a_key() {
    let (command, options) = parse(&[]).unwrap();
    assert_eq!(command, Command::Serve);
    assert_eq!(options.listen, DEFAULT_LISTEN);
    assert!(options.keys.is_empty());
    assert_eq!(
        options.state,
        PathBuf::from("/home/u/.local/state/cursor-gateway")
    );
    assert_eq!(options.limits, Limits::DEFAULT);
    assert_eq!(options.sources["listen"], Source::Default);
}

#[test]
fn the_command_line_wins_over_the_file_which_wins_over_the_default() {
    let (_, options) = parse(&["--config", "gw.toml", "--max-turns", "9"]).unwrap();
    assert_eq!(options.limits.max_turns, 9);
    assert_eq!(options.sources["max-turns"], Source::CommandLine);
    assert_eq!(options.listen.port(), 9100);
    assert_eq!(options.sources["listen"], Source::File);
    assert_eq!(options.limits.header_read, Duration::from_millis(2500));
    assert_eq!(
        options.limits.max_conversations,
        Limits::DEFAULT.max_conversations
    );
    assert_eq!(options.sources["max-conversations"], Source::Default);
    assert_eq!(options.keys.len(), 2, "the file named a keys file");
    assert_eq!(
        options.model_aliases,
        vec![("fast".to_owned(), "composer-2.5".to_owned())]
    );
    let described = options.describe();
    assert!(
        described.contains("max-turns = 9  # command line"),
        "{described}"
    );
    assert!(
        described.contains("listen = \"127.0.0.1:9100\"  # config file"),
        "{described}"
    );
    assert!(
        !described.contains("alpha"),
        "keys are never printed: {described}"
    );
}

#[test]
fn non_loopback_listen_without_a_key_is_refused() {
    let error = parse(&["--listen", "0.0.0.0:8787"]).unwrap_err();
    assert!(matches!(error, GatewayError::Exposed(_)), "{error:?}");
}

#[test]
fn secrets_come_only_from_files_or_the_environment() {
    let error = parse(&["--api-key", "k"]).unwrap_err().to_string();
    assert!(error.contains("--api-key-file"), "{error}");
    let error = parse(&["--config", "secret.toml"]).unwrap_err().to_string();
    assert!(
        error.contains("api-key"),
        "a key in the config file is refused: {error}"
    );
    let (_, options) = parse(&["--listen", "0.0.0.0:9", "--api-key-file", "one.keys"]).unwrap();
    assert_eq!(options.keys.len(), 1, "--api-key-file takes the first key");
    let (_, options) = parse(&["--admin-key-file", "admin.keys"]).unwrap();
    assert!(options.admin_keys.namespace_of(Some("root-key")).is_some());
    for bad in [
        &["--api-key-file", "missing.keys"][..],
        &["--api-keys-file", "empty.keys"],
    ] {
        assert!(matches!(parse(bad), Err(GatewayError::Usage(_))), "{bad:?}");
    }
}

#[test]
fn every_limit_has_a_flag_and_bad_values_are_usage_errors() {
    let (_, options) = parse(&[
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
        "--conversation-retention",
        "70",
        "--sweep-interval",
        "8",
        "--body-wait",
        "0.5",
        "--max-connections",
        "7",
        "--max-connections-per-peer",
        "6",
        "--max-turns",
        "8",
        "--max-turns-per-key",
        "4",
        "--max-conversations",
        "9",
        "--max-parked-rounds",
        "11",
        "--max-parked-per-key",
        "3",
        "--max-body-bytes",
        "10",
        "--body-budget",
        "100",
        "--max-stored-response-bytes",
        "1000",
        "--log-format",
        "json",
        "--state",
        "/s",
        "--listen",
        "localhost:0",
        "--admin-listen",
        "127.0.0.1:0",
    ])
    .unwrap();
    let limits = options.limits;
    assert_eq!(limits.header_read, Duration::from_millis(2500));
    assert_eq!(limits.body_read, Duration::from_secs(3));
    assert_eq!(limits.write, Duration::from_secs(4));
    assert_eq!(limits.tool_round, Duration::from_secs(5));
    assert_eq!(limits.shutdown_grace, Duration::from_secs(6));
    assert_eq!(limits.response_retention, Duration::from_secs(60));
    assert_eq!(limits.conversation_retention, Duration::from_secs(70));
    assert_eq!(limits.sweep_interval, Duration::from_secs(8));
    assert_eq!(limits.body_wait, Duration::from_millis(500));
    assert_eq!(
        (
            limits.max_connections,
            limits.max_connections_per_peer,
            limits.max_turns,
            limits.max_turns_per_key,
            limits.max_conversations,
            limits.max_parked_rounds,
            limits.max_parked_per_key,
            limits.max_body_bytes,
            limits.body_budget,
            limits.max_stored_response_bytes,
        ),
        (7, 6, 8, 4, 9, 11, 3, 10, 100, 1000)
    );
    assert_eq!(options.log_format, LogFormat::Json);
    assert_eq!(options.state, PathBuf::from("/s"));
    assert!(options.admin_listen.is_some());
    for bad in [
        &["--max-turns", "0"][..],
        &["--header-timeout", "-1"],
        &["--log-format", "xml"],
        &["--port", "1"],
        &["--state"],
        &["--listen", "nowhere"],
        &["--config", "typo.toml"],
        &["--config", "missing.toml"],
        &["--model-alias", "nameonly"],
    ] {
        assert!(matches!(parse(bad), Err(GatewayError::Usage(_))), "{bad:?}");
    }
}

#[test]
fn help_and_version_are_printed_per_subcommand() {
    for args in [
        &["--help"][..],
        &["serve", "--help"],
        &["config", "--help"],
        &["sweep", "--help"],
    ] {
        let Err(GatewayError::Help(text)) = parse(args) else {
            panic!("{args:?}")
        };
        assert!(text.contains("--max-turns-per-key"), "{args:?}: {text}");
    }
    let Err(GatewayError::Help(text)) = parse(&["--version"]) else {
        panic!()
    };
    assert!(text.contains(env!("CARGO_PKG_VERSION")), "{text}");
    assert_eq!(parse(&["config"]).unwrap().0, Command::Config);
    assert_eq!(
        parse(&["sweep", "--state", "/s"]).unwrap().0,
        Command::Sweep
    );
}
