//! T-IDENT-CMDS (static half): no code outside `cursor-identity` can start a process.
//!
//! The harness crates under the top-level `tests/` directory are exempt: they are not shipped,
//! and they must run `cargo metadata`, `node` and `pi` to check the shipped code. So are a
//! crate's own integration tests (`<crate>/tests/`): they run real peers (`sh` for translated
//! commands, a second copy of the test binary for cross-process locks) and are never built
//! into the library.

use workspace_checks::{spawn_lines, workspace_root, workspace_sources};

/// The one file allowed to spawn: `cursor-identity`'s table-driven runner.
const SPAWN_MODULE: &str = "cursor-identity/src/command.rs";

#[test]
fn only_cursor_identity_spawns_processes() {
    let mut offenders = Vec::new();
    for (relative, path) in workspace_sources() {
        let integration_test = relative.split('/').nth(1) == Some("tests");
        if relative == SPAWN_MODULE || relative.starts_with("tests/") || integration_test {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for (line, code) in spawn_lines(&text) {
            offenders.push(format!("{relative}:{line}: {code}"));
        }
    }
    assert!(
        offenders.is_empty(),
        "process spawning outside cursor-identity:\n{}",
        offenders.join("\n")
    );
}

/// One spawn site, whose program is not a literal. What it runs is proven by behaviour in
/// `cursor-identity`'s own tests (`a_lookalike_command_outside_the_table_is_refused`,
/// `child_environment_is_empty_although_the_parent_has_variables`), not by matching its text.
#[test]
fn the_spawn_module_has_one_spawn_site_and_no_literal_program() {
    let text = std::fs::read_to_string(workspace_root().join(SPAWN_MODULE)).unwrap();
    let sites: Vec<(usize, String)> = spawn_lines(&text)
        .into_iter()
        .filter(|(_, code)| code.contains("Command::new("))
        .collect();
    assert_eq!(sites.len(), 1, "exactly one spawn site, found {sites:?}");
    let argument = sites[0].1.split("Command::new(").nth(1).unwrap_or_default();
    assert!(
        !argument.trim_start().starts_with('"'),
        "the program must come from the table, not a literal: {sites:?}"
    );
}

#[test]
fn the_scanner_sees_each_spawn_form_and_ignores_comments() {
    let source = "use std::process::Command;\n// Command::new in a comment\nlet c = tokio::process::Command::new(x);\nlet pid = std::process::id();\nuse std::process::{Stdio, id};\n";
    let lines: Vec<usize> = spawn_lines(source)
        .into_iter()
        .map(|(line, _)| line)
        .collect();
    assert_eq!(lines, vec![1, 3, 5]);
}
