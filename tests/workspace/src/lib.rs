//! Workspace-wide rules, checked by this crate's tests (`tests/`):
//!
//! - **layering**: dependencies point down the L0–L7 stack, never to a sibling of the same
//!   layer, and nothing in L0–L5 reaches a pi- or Node-related crate;
//! - **spawning**: only `cursor-identity` may start a process, and only from its table;
//! - **origins**: every network origin written in source is on the allowlist;
//! - **fuzz corpora**: every checked-in fuzz input replays through its decoder without a panic;
//! - **module cycles**: at no level of a library's module tree do sibling modules name each
//!   other in a cycle.
//!
//! The rules are plain functions over data so their own tests can prove they catch violations.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

mod module_graph;
mod rust_tokens;

pub use module_graph::{ModuleGraph, module_cycle_lines, module_cycles, module_graphs};

/// The layer of each published crate; L4a and L4b share layer 4, so they may not import each
/// other.
pub const LAYERS: &[(&str, u8)] = &[
    ("cursor-proto", 0),
    ("cursor-auth", 1),
    ("cursor-identity", 2),
    ("cursor-transport", 3),
    ("cursor-inference", 4),
    ("cursor-agent", 4),
    ("cursor-catalog", 5),
    ("cursor-pi-adapter", 6),
];

/// Crate names (or prefixes) that mean "knows pi or Node"; only L6+ may reach them.
pub const HOST_CRATE_PREFIXES: &[&str] = &["napi", "neon", "node-bindgen", "nodejs", "pi-"];

/// The highest layer that must stay host-neutral.
pub const HOST_NEUTRAL_MAX_LAYER: u8 = 5;

fn layer_of(name: &str) -> Option<u8> {
    LAYERS
        .iter()
        .find(|(crate_name, _)| *crate_name == name)
        .map(|(_, layer)| *layer)
}

/// Checks `cargo metadata --format-version 1` output and returns every rule it breaks.
pub fn layering_violations(metadata: &serde_json::Value) -> Vec<String> {
    let mut violations = Vec::new();
    let packages = metadata["packages"].as_array().cloned().unwrap_or_default();
    let names: BTreeMap<String, String> = packages
        .iter()
        .filter_map(|p| Some((p["id"].as_str()?.to_owned(), p["name"].as_str()?.to_owned())))
        .collect();

    // Direct edges of every kind (normal, build, dev) must point strictly down.
    for package in &packages {
        let Some(name) = package["name"].as_str() else {
            continue;
        };
        let Some(layer) = layer_of(name) else {
            continue;
        };
        for dep in package["dependencies"].as_array().into_iter().flatten() {
            let Some(dep_name) = dep["name"].as_str() else {
                continue;
            };
            let kind = dep["kind"].as_str().unwrap_or("normal");
            if dep_name == name {
                continue; // a self dev-dependency only turns on test features
            }
            if let Some(dep_layer) = layer_of(dep_name) {
                if dep_layer >= layer {
                    violations.push(format!(
                        "{name} (L{layer}) depends on {dep_name} (L{dep_layer}) [{kind}]: \
                         dependencies must point to a lower layer"
                    ));
                }
            } else if dep_name.starts_with("cursor-") {
                violations.push(format!(
                    "{name} depends on unlayered workspace crate {dep_name}"
                ));
            }
        }
    }

    // The non-dev closure of L0–L5 must not reach a host crate.
    let mut edges: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for node in metadata["resolve"]["nodes"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let Some(id) = node["id"].as_str() else {
            continue;
        };
        let targets = node["deps"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|d| {
                d["dep_kinds"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|k| k["kind"].as_str() != Some("dev"))
            })
            .filter_map(|d| d["pkg"].as_str().map(str::to_owned))
            .collect();
        edges.insert(id.to_owned(), targets);
    }
    for (id, name) in &names {
        let Some(layer) = layer_of(name) else {
            continue;
        };
        if layer > HOST_NEUTRAL_MAX_LAYER {
            continue;
        }
        let mut seen = BTreeSet::new();
        let mut stack = vec![id.clone()];
        while let Some(next) = stack.pop() {
            if !seen.insert(next.clone()) {
                continue;
            }
            if let Some(dep_name) = names.get(&next)
                && HOST_CRATE_PREFIXES
                    .iter()
                    .any(|prefix| dep_name.starts_with(prefix))
            {
                violations.push(format!(
                    "{name} (L{layer}) reaches host crate {dep_name}: L0–L5 must know nothing of pi or Node"
                ));
            }
            stack.extend(edges.get(&next).into_iter().flatten().cloned());
        }
    }
    violations
}

/// Every Rust source file of the workspace, as `(path relative to the root with `/`
/// separators, absolute path)`.
pub fn workspace_sources() -> Vec<(String, PathBuf)> {
    let root = workspace_root();
    rust_sources(&root)
        .into_iter()
        .map(|path| {
            let relative = path
                .strip_prefix(&root)
                .unwrap_or(&path)
                .to_string_lossy()
                .replace('\\', "/");
            (relative, path)
        })
        .collect()
}

/// Returns every Rust source file below `root`, skipping build output and installed packages.
pub fn rust_sources(root: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if path.is_dir() {
                if !matches!(name.as_ref(), "target" | "node_modules" | ".git" | ".cache") {
                    stack.push(path);
                }
            } else if name.ends_with(".rs") {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

/// The library crates whose module trees must be free of cycles between sibling modules.
/// (cursor-gateway joins once its modules are reshaped.)
pub const ACYCLIC_MODULE_CRATES: &[&str] = &[
    "cursor-proto",
    "cursor-auth",
    "cursor-identity",
    "cursor-transport",
    "cursor-agent",
    "cursor-inference",
    "cursor-catalog",
    "cursor-pi-adapter",
    "cursor-gateway",
];

/// The crates below the pi adapter (L0–L5): their sources must not know any host.
pub const HOST_NEUTRAL_CRATES: &[&str] = &[
    "cursor-proto",
    "cursor-auth",
    "cursor-identity",
    "cursor-transport",
    "cursor-agent",
    "cursor-inference",
    "cursor-catalog",
];

/// Places in `text` that name the pi host: the word `pi` in any case (not `pi_read`,
/// `mcp_pi_bash` or `PiOutput`, which are Cursor's wire names), a `/login` command, or a
/// `CURSOR_PROVIDER_` switch; as `(line, what)`.
pub fn host_words(text: &str) -> Vec<(usize, String)> {
    let word_char = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let mut found = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let bytes = line.as_bytes();
        let lower = line.to_ascii_lowercase();
        let lower = lower.as_bytes();
        for at in 0..bytes.len() {
            let before = at.checked_sub(1).map(|i| bytes[i]);
            let rest = &lower[at..];
            let ends_word = |len: usize| bytes.get(at + len).is_none_or(|&c| !word_char(c));
            let word = if rest.starts_with(b"pi")
                && before.is_none_or(|c| !word_char(c))
                && ends_word(2)
            {
                Some("pi")
            } else if rest.starts_with(b"/login") && ends_word(6) {
                Some("/login")
            } else if bytes[at..].starts_with(b"CURSOR_PROVIDER_") {
                Some("CURSOR_PROVIDER_")
            } else {
                None
            };
            if let Some(word) = word {
                found.push((index + 1, format!("{word}: {}", line.trim())));
            }
        }
    }
    found
}

/// Source patterns that start, replace or fork a process.
pub const SPAWN_PATTERNS: &[&str] = &[
    // `std::process::id()` and `exit` are harmless; anything that can name `Command` is not.
    "process::Command",
    "process::{",
    "process::*",
    "process::Stdio",
    "tokio::process",
    "Command::new",
    "async_process",
    "duct::",
    "libc::fork",
    "libc::exec",
    "posix_spawn",
    "nix::unistd::fork",
    "execvp",
];

/// Code lines (comments excluded) in `text` that match a spawn pattern, as `(line, text)`.
pub fn spawn_lines(text: &str) -> Vec<(usize, String)> {
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim_start().starts_with("//"))
        .filter(|(_, line)| SPAWN_PATTERNS.iter().any(|p| line.contains(p)))
        .map(|(index, line)| (index + 1, line.trim().to_owned()))
        .collect()
}

/// Hosts that source may name: the Cursor backends, the login page, loopback, and the names
/// reserved for documentation and tests (RFC 2606), which can never reach a real server.
pub fn host_is_allowed(host: &str) -> bool {
    let host = host.to_ascii_lowercase();
    let reserved = ["example.com", "example.org", "example.net"]
        .iter()
        .any(|name| host == *name || host.ends_with(&format!(".{name}")))
        || [".example", ".test", ".invalid"]
            .iter()
            .any(|tld| host.ends_with(tld));
    reserved
        || host == "cursor.sh"
        || host.ends_with(".cursor.sh")
        || host == "cursor.com"
        || host.ends_with(".cursor.com")
        || matches!(host.as_str(), "127.0.0.1" | "localhost" | "[::1]")
        || host == "docs.rs"
}

/// Every `http://` or `https://` host named in `text`, with its line number.
pub fn hosts_named(text: &str) -> Vec<(usize, String)> {
    let mut hosts = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let mut rest = line;
        while let Some(at) = rest.find("://") {
            let scheme_start = rest[..at]
                .rfind(|c: char| !c.is_ascii_alphabetic())
                .map_or(0, |i| i + 1);
            let scheme = &rest[scheme_start..at];
            let after = &rest[at + 3..];
            if scheme == "http" || scheme == "https" {
                let end = after
                    .find(|c: char| {
                        !(c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '[' | ']' | ':'))
                    })
                    .unwrap_or(after.len());
                let authority = &after[..end];
                // Drop a port, but keep bracketed IPv6 intact.
                let host = if authority.starts_with('[') {
                    authority.split_inclusive(']').next().unwrap_or(authority)
                } else {
                    authority.split(':').next().unwrap_or(authority)
                };
                if !host.is_empty() {
                    hosts.push((index + 1, host.to_owned()));
                }
            }
            rest = after;
        }
    }
    hosts
}

/// The workspace root (two levels above this crate).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("workspace root")
}
