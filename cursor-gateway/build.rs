//! Records the git revision for `--version`: `CURSOR_GATEWAY_GIT_REV` when set (a release
//! build), else the `.cargo_vcs_info.json` that `cargo package` writes into the tarball (a
//! `cargo install` of the published crate; checked first, since the directory above an unpacked
//! crate may be some other checkout), else the checkout's `.git` files (no process is spawned),
//! else `unknown`.

use std::path::{Path, PathBuf};

fn main() {
    let from_env = std::env::var("CURSOR_GATEWAY_GIT_REV")
        .ok()
        .filter(|r| !r.is_empty());
    let git = git_dir(Path::new(".."));
    let rev = from_env
        .or_else(|| packaged_commit(Path::new(".cargo_vcs_info.json")))
        .or_else(|| git.as_deref().and_then(head_commit))
        .map_or_else(
            || "unknown".into(),
            |rev| rev.chars().take(12).collect::<String>(),
        );
    println!("cargo:rustc-env=CURSOR_GATEWAY_GIT_REV={rev}");
    println!("cargo:rerun-if-env-changed=CURSOR_GATEWAY_GIT_REV");
    // Only paths that exist: cargo reruns a build script on every build for a missing one.
    if Path::new(".cargo_vcs_info.json").exists() {
        println!("cargo:rerun-if-changed=.cargo_vcs_info.json");
    }
    if let Some(git) = git {
        for path in [
            git.join("HEAD"),
            git.join("refs/heads"),
            git.join("packed-refs"),
        ] {
            if path.exists() {
                println!("cargo:rerun-if-changed={}", path.display());
            }
        }
    }
}

/// The git directory of the checkout at `root`: `.git` itself, or the one a worktree's `.git`
/// file points at.
fn git_dir(root: &Path) -> Option<PathBuf> {
    let dot_git = root.join(".git");
    if dot_git.is_dir() {
        return Some(dot_git);
    }
    let text = std::fs::read_to_string(&dot_git).ok()?;
    let dir = PathBuf::from(text.strip_prefix("gitdir:")?.trim());
    Some(if dir.is_absolute() {
        dir
    } else {
        root.join(dir)
    })
}

/// The commit `HEAD` names: directly, through a loose ref, or through `packed-refs` (looked up
/// in the common directory of a worktree too).
fn head_commit(git: &Path) -> Option<String> {
    let head = std::fs::read_to_string(git.join("HEAD")).ok()?;
    let head = head.trim();
    let Some(reference) = head.strip_prefix("ref:").map(str::trim) else {
        return Some(head.to_owned());
    };
    let common = std::fs::read_to_string(git.join("commondir"))
        .ok()
        .map(|dir| git.join(dir.trim()))
        .unwrap_or_else(|| git.to_owned());
    for dir in [git, common.as_path()] {
        if let Ok(commit) = std::fs::read_to_string(dir.join(reference)) {
            return Some(commit.trim().to_owned());
        }
        if let Ok(packed) = std::fs::read_to_string(dir.join("packed-refs")) {
            let found = packed.lines().find_map(|line| {
                let (commit, name) = line.split_once(' ')?;
                (name == reference).then(|| commit.to_owned())
            });
            if found.is_some() {
                return found;
            }
        }
    }
    None
}

/// The commit `cargo package` recorded: `{"git": {"sha1": "<40 hex>", ...}, ...}`. Read by
/// hand, since a build script's dependencies would be every installer's to build.
fn packaged_commit(path: &Path) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    let after_key = &text[text.find("\"sha1\"")? + "\"sha1\"".len()..];
    let value = after_key.trim_start().strip_prefix(':')?.trim_start();
    let value = value.strip_prefix('"')?;
    let sha = &value[..value.find('"')?];
    (sha.len() == 40 && sha.bytes().all(|b| b.is_ascii_hexdigit())).then(|| sha.to_owned())
}
