//! The SDK below the pi adapter (L0–L5) is host-neutral: no source names pi, a `/login`
//! command or a `CURSOR_PROVIDER_` switch; those live in cursor-pi-adapter's host profile.

use workspace_checks::{HOST_NEUTRAL_CRATES, host_words, rust_sources, workspace_root};

#[test]
fn no_sdk_source_below_the_pi_adapter_names_pi_or_its_commands() {
    let root = workspace_root();
    let mut offenders = Vec::new();
    for krate in HOST_NEUTRAL_CRATES {
        for path in rust_sources(&root.join(krate).join("src")) {
            let relative = path
                .strip_prefix(&root)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            // Generated from Cursor's schema: its `pi_*` arms are wire names, not host words.
            if relative.contains("/src/gen/") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            for (line, what) in host_words(&text) {
                offenders.push(format!("{relative}:{line}: {what}"));
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "pi-specific words in L0–L5 (move them into the pi adapter's profile):\n{}",
        offenders.join("\n")
    );
}

#[test]
fn the_scan_catches_host_words_and_spares_wire_names() {
    let planted = format!(
        "// {p} runs this\nlet next = \"run {login} cursor\";\nlet env = \"{env}HANDLE_DIR\";\nlet s = \"{p2}'s tools\";",
        p = "pi",
        p2 = "Pi",
        login = "/login",
        env = "CURSOR_PROVIDER_",
    );
    let lines: Vec<usize> = host_words(&planted)
        .into_iter()
        .map(|(line, _)| line)
        .collect();
    assert_eq!(lines, [1, 2, 3, 4]);
    let wire =
        "Exec::PiRead(args) | pi_bash_args | mcp_pi_bash | api5 | pipe | /loginDeepControl | spin";
    assert!(host_words(wire).is_empty(), "{:?}", host_words(wire));
}
