//! T-LAYERS: the dependency graph follows the L0–L7 rules (docs/DESIGN.md §2).

use std::process::Command;

use serde_json::json;
use workspace_checks::{layering_violations, workspace_root};

fn cargo_metadata() -> serde_json::Value {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let output = Command::new(cargo)
        .args(["metadata", "--format-version", "1"])
        .current_dir(workspace_root())
        .output()
        .expect("run cargo metadata");
    assert!(
        output.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("metadata is JSON")
}

#[test]
fn workspace_dependencies_point_down_and_stay_host_neutral() {
    let violations = layering_violations(&cargo_metadata());
    assert!(
        violations.is_empty(),
        "layering violations:\n{}",
        violations.join("\n")
    );
}

#[test]
fn every_layered_crate_is_a_workspace_member() {
    let metadata = cargo_metadata();
    let members: Vec<&str> = metadata["packages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    for (name, _) in workspace_checks::LAYERS {
        assert!(
            members.contains(name),
            "{name} is missing from the workspace"
        );
    }
}

fn package(name: &str, deps: &[(&str, Option<&str>)]) -> serde_json::Value {
    json!({
        "id": format!("{name} 0.1.0"),
        "name": name,
        "dependencies": deps.iter().map(|(dep, kind)| json!({"name": dep, "kind": kind})).collect::<Vec<_>>(),
    })
}

#[test]
fn an_upward_edge_is_reported() {
    let metadata = json!({
        "packages": [package("cursor-proto", &[("cursor-transport", None)]), package("cursor-transport", &[])],
        "resolve": {"nodes": []},
    });
    let violations = layering_violations(&metadata);
    assert_eq!(violations.len(), 1, "{violations:?}");
    assert!(violations[0].contains("cursor-proto (L0) depends on cursor-transport (L3)"));
}

#[test]
fn an_upward_dev_dependency_is_reported_too() {
    let metadata = json!({
        "packages": [package("cursor-auth", &[("cursor-transport", Some("dev"))])],
        "resolve": {"nodes": []},
    });
    assert_eq!(layering_violations(&metadata).len(), 1);
}

#[test]
fn a_same_layer_sibling_edge_is_reported() {
    let metadata = json!({
        "packages": [package("cursor-agent", &[("cursor-inference", None)])],
        "resolve": {"nodes": []},
    });
    let violations = layering_violations(&metadata);
    assert_eq!(violations.len(), 1, "{violations:?}");
}

#[test]
fn a_transitive_node_crate_below_l6_is_reported() {
    let metadata = json!({
        "packages": [
            package("cursor-catalog", &[("helper", None)]),
            package("helper", &[("napi", None)]),
            package("napi", &[]),
            package("cursor-pi-adapter", &[("napi", None)]),
        ],
        "resolve": {"nodes": [
            {"id": "cursor-catalog 0.1.0", "deps": [{"pkg": "helper 0.1.0", "dep_kinds": [{"kind": null}]}]},
            {"id": "helper 0.1.0", "deps": [{"pkg": "napi 0.1.0", "dep_kinds": [{"kind": null}]}]},
            {"id": "napi 0.1.0", "deps": []},
            {"id": "cursor-pi-adapter 0.1.0", "deps": [{"pkg": "napi 0.1.0", "dep_kinds": [{"kind": null}]}]},
        ]},
    });
    let violations = layering_violations(&metadata);
    assert_eq!(
        violations.len(),
        1,
        "only the L5 crate breaks the rule: {violations:?}"
    );
    assert!(violations[0].contains("cursor-catalog (L5) reaches host crate napi"));
}
