//! Crate pages: each published crate's README is its crates.io page, where a relative link is
//! dead (crates.io resolves nothing against the repository) and a feature it does not name is
//! one a user cannot find.

use std::process::Command;

use workspace_checks::workspace_root;

/// The published crates' `cargo metadata` entries.
fn published_packages() -> Vec<serde_json::Value> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let output = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--no-deps"])
        .current_dir(workspace_root())
        .output()
        .expect("run cargo metadata");
    assert!(output.status.success(), "cargo metadata failed");
    let metadata: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    let packages: Vec<serde_json::Value> = metadata["packages"]
        .as_array()
        .expect("packages")
        .iter()
        // `publish = false` is an empty registry list; absent means crates.io.
        .filter(|p| !p["publish"].as_array().is_some_and(Vec::is_empty))
        .cloned()
        .collect();
    assert!(packages.len() >= 9, "expected the nine published crates");
    packages
}

/// Every published crate as `(name, README text, features other than "default")`.
fn published_readmes() -> Vec<(String, String, Vec<String>)> {
    let mut crates = Vec::new();
    for package in published_packages() {
        let name = package["name"].as_str().expect("name").to_owned();
        let manifest = std::path::Path::new(package["manifest_path"].as_str().expect("path"));
        let readme = package["readme"].as_str().unwrap_or("README.md");
        let text = std::fs::read_to_string(manifest.parent().expect("dir").join(readme))
            .unwrap_or_else(|e| panic!("{name} has no README: {e}"));
        let features = package["features"]
            .as_object()
            .expect("features")
            .keys()
            .filter(|f| *f != "default")
            .cloned()
            .collect();
        crates.push((name, text, features));
    }
    crates
}

/// Link targets that crates.io cannot resolve: neither absolute URLs nor in-page anchors.
fn relative_links(markdown: &str) -> Vec<String> {
    let mut targets = Vec::new();
    // Inline links `[text](target)`.
    let mut rest = markdown;
    while let Some(at) = rest.find("](") {
        let after = &rest[at + 2..];
        let end = after.find(')').unwrap_or(after.len());
        targets.push(after[..end].trim().to_owned());
        rest = &after[end..];
    }
    // Reference definitions `[label]: target`.
    for line in markdown.lines() {
        let line = line.trim_start();
        if line.starts_with('[')
            && let Some(at) = line.find("]: ")
        {
            targets.push(line[at + 3..].trim().to_owned());
        }
    }
    let absolute = ["https://", "http://", "mailto:", "#"];
    targets.retain(|t| !absolute.iter().any(|prefix| t.starts_with(prefix)));
    targets
}

#[test]
fn crate_readmes_have_only_absolute_links() {
    let mut bad = Vec::new();
    for (name, text, _) in published_readmes() {
        for link in relative_links(&text) {
            bad.push(format!("{name}/README.md: ({link})"));
        }
    }
    assert!(
        bad.is_empty(),
        "relative links, dead on crates.io:\n{}",
        bad.join("\n")
    );
}

#[test]
fn crate_readmes_name_every_feature() {
    let mut missing = Vec::new();
    for (name, text, features) in published_readmes() {
        for feature in features {
            if !text.contains(&format!("`{feature}`")) {
                missing.push(format!("{name}: `{feature}`"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "features missing from the README:\n{}",
        missing.join("\n")
    );
}

#[test]
fn every_published_crate_is_documented_as_docs_rs_builds_it() {
    let mut wrong = Vec::new();
    for package in published_packages() {
        let docs_rs = &package["metadata"]["docs"]["rs"];
        let args = docs_rs["rustdoc-args"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if docs_rs["all-features"] != true || args != ["--cfg", "docsrs"] {
            wrong.push(package["name"].as_str().unwrap_or("?").to_owned());
        }
    }
    assert!(
        wrong.is_empty(),
        "[package.metadata.docs.rs] needs all-features = true and rustdoc-args = [\"--cfg\", \"docsrs\"]: {wrong:?}"
    );
}

#[test]
fn relative_link_check_catches_relative_and_reference_links() {
    let md = "See [a](../README.md), [b](https://example.org/), [c](#top).\n[d]: docs/X.md\n";
    assert_eq!(relative_links(md), ["../README.md", "docs/X.md"]);
}
