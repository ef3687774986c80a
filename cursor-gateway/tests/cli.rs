//! The program's command line as a person runs it: the binary, its environment and a
//! configuration file. Precedence is the command line, then the environment, then the file,
//! then the default; `cursor-gateway config` says where each value came from.

use std::process::{Command, Output};

fn run(args: &[&str], env: &[(&str, &str)]) -> Output {
    let home = tempfile::tempdir().unwrap();
    Command::new(env!("CARGO_BIN_EXE_cursor-gateway"))
        .args(args)
        .env_clear()
        .env("HOME", home.path())
        .envs(env.iter().copied())
        .output()
        .unwrap()
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[test]
fn flags_win_over_the_environment_which_wins_over_the_config_file() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("gateway.toml");
    std::fs::write(
        &config,
        "max-turns = 5\nmax-turns-per-key = 3\nbody-budget = 1000\nlisten = \"127.0.0.1:9001\"\n",
    )
    .unwrap();
    let config = config.to_str().unwrap();
    let output = run(
        &["config", "--config", config, "--max-turns", "7"],
        &[
            ("CURSOR_GATEWAY_MAX_TURNS", "6"),
            ("CURSOR_GATEWAY_MAX_TURNS_PER_KEY", "4"),
        ],
    );
    assert!(output.status.success(), "{}", text(&output));
    let printed = text(&output);
    for line in [
        "max-turns = 7  # command line",
        "max-turns-per-key = 4  # environment",
        "body-budget = 1000  # config file",
        "listen = \"127.0.0.1:9001\"  # config file",
        "max-conversations = 10000  # default",
    ] {
        assert!(printed.contains(line), "{line} not in\n{printed}");
    }
    // The configuration file is named by the environment as well.
    let output = run(&["config"], &[("CURSOR_GATEWAY_CONFIG", config)]);
    assert!(
        text(&output).contains("max-turns = 5  # config file"),
        "{}",
        text(&output)
    );
}

#[test]
fn keys_come_from_files_and_the_environment_and_are_never_printed() {
    let dir = tempfile::tempdir().unwrap();
    let keys = dir.path().join("keys");
    std::fs::write(&keys, "sk-file-one\nsk-file-two\n").unwrap();
    let output = run(
        &["config", "--api-keys-file", keys.to_str().unwrap()],
        &[
            ("CURSOR_GATEWAY_API_KEY", "sk-from-env"),
            ("CURSOR_GATEWAY_ADMIN_KEY", "sk-admin"),
        ],
    );
    let printed = text(&output);
    assert!(output.status.success(), "{printed}");
    assert!(
        printed.contains("client keys: 3; admin keys: 1"),
        "{printed}"
    );
    assert!(!printed.contains("sk-"), "a key was printed: {printed}");
    // A key in argv is refused, saying how to pass it.
    let output = run(&["config", "--api-key", "sk-argv"], &[]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        text(&output).contains("--api-key-file"),
        "{}",
        text(&output)
    );
    // A key in the configuration file is refused (it is not a setting).
    let config = dir.path().join("secret.toml");
    std::fs::write(&config, "api-key = \"sk-in-file\"\n").unwrap();
    let output = run(&["config", "--config", config.to_str().unwrap()], &[]);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
}

#[test]
fn every_subcommand_has_its_help_and_a_bad_value_is_a_usage_error() {
    for args in [
        &["--help"][..],
        &["serve", "--help"],
        &["config", "--help"],
        &["sweep", "--help"],
    ] {
        let output = run(args, &[]);
        assert!(output.status.success(), "{args:?}: {}", text(&output));
        let help = text(&output);
        assert!(help.contains("--max-parked-per-key"), "{args:?}: {help}");
        assert!(
            help.contains("CURSOR_GATEWAY_MAX_TURNS"),
            "{args:?}: the variable is listed: {help}"
        );
    }
    let output = run(&["--version"], &[]);
    assert!(text(&output).contains(env!("CARGO_PKG_VERSION")));
    let output = run(&["--max-turns", "zero"], &[]);
    assert_eq!(output.status.code(), Some(2));
    assert!(text(&output).contains("--max-turns"), "{}", text(&output));
    let output = run(&["config"], &[("CURSOR_GATEWAY_MAX_TURNS", "-3")]);
    assert_eq!(
        output.status.code(),
        Some(2),
        "a bad variable is a usage error too: {}",
        text(&output)
    );
}

#[test]
fn sweep_deletes_expired_state_and_exits() {
    let state = tempfile::tempdir().unwrap();
    let dir = state.path().join("state");
    let stale = dir.join("conversations");
    std::fs::create_dir_all(&stale).unwrap();
    std::fs::write(stale.join("c-old.a.json"), b"{\"v\": 1, \"turns\": []}").unwrap();
    let month_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(31 * 24 * 3600);
    std::fs::File::options()
        .write(true)
        .open(stale.join("c-old.a.json"))
        .unwrap()
        .set_modified(month_ago)
        .unwrap();
    let output = run(&["sweep", "--state", dir.to_str().unwrap()], &[]);
    assert!(output.status.success(), "{}", text(&output));
    assert!(
        text(&output).contains("swept: 1 conversations forgotten"),
        "{}",
        text(&output)
    );
    assert!(!stale.join("c-old.a.json").exists());
}
