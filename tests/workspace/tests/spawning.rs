//! T-IDENT-CMDS (static half): no code outside `cursor-identity` can start a process.
//!
//! The harness crates under the top-level `tests/` directory are exempt: they are not shipped,
//! and they must run `cargo metadata`, `node` and `pi` to check the shipped code.

use workspace_checks::{rust_sources, spawn_lines, workspace_root};

#[test]
fn only_cursor_identity_spawns_processes() {
    let root = workspace_root();
    let mut offenders = Vec::new();
    for path in rust_sources(&root) {
        let relative = path.strip_prefix(&root).unwrap().to_string_lossy().replace('\\', "/");
        if relative.starts_with("cursor-identity/") || relative.starts_with("tests/") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for (line, code) in spawn_lines(&text) {
            offenders.push(format!("{relative}:{line}: {code}"));
        }
    }
    assert!(offenders.is_empty(), "process spawning outside cursor-identity:\n{}", offenders.join("\n"));
}

#[test]
fn the_scanner_sees_each_spawn_form_and_ignores_comments() {
    let source = "use std::process::Command;\n// Command::new in a comment\nlet c = tokio::process::Command::new(x);\n";
    let lines: Vec<usize> = spawn_lines(source).into_iter().map(|(line, _)| line).collect();
    assert_eq!(lines, vec![1, 3]);
}
