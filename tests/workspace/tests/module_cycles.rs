//! No module cycles inside a crate: at every level of a library's module tree, the sibling
//! modules name each other (through `crate::`, `super::` and `self::` paths, re-exports
//! resolved) without coming back to themselves, so a module can be read, tested and split on
//! its own.

use std::collections::{BTreeMap, BTreeSet};

use workspace_checks::{
    ACYCLIC_MODULE_CRATES, ModuleGraph, module_cycle_lines, module_cycles, module_graphs,
    workspace_root,
};

#[test]
fn no_library_has_a_module_cycle_at_any_level() {
    let root = workspace_root();
    let mut found = Vec::new();
    for krate in ACYCLIC_MODULE_CRATES {
        let graphs = module_graphs(&root.join(krate).join("src"));
        assert!(
            graphs.get("crate").is_some_and(|graph| graph.len() > 1),
            "{krate}: no modules found"
        );
        found.extend(
            module_cycle_lines(&graphs)
                .into_iter()
                .map(|line| format!("{krate}: {line}")),
        );
    }
    assert!(found.is_empty(), "module cycles:\n{}", found.join("\n"));
}

#[test]
fn the_cycle_finder_sees_a_cycle_through_a_root_reexport() {
    let graphs = planted_graphs(
        "root-reexport",
        &[
            (
                "lib.rs",
                "mod a;\nmod b;\nmod c;\npub use b::Thing;\n#[cfg(test)]\nmod tests { use crate::c; }\n",
            ),
            ("a.rs", "use crate::Thing;\n// crate::c in a comment\n"),
            ("b/mod.rs", "use crate::{c::{X, Y}, self};\n"),
            (
                "c.rs",
                "pub(crate) fn f() { crate::a::g() }\n#[cfg(test)]\nmod tests { use crate::b; }\n",
            ),
        ],
    );
    let expected = graph(&[("a", &["b"]), ("b", &["c"]), ("c", &["a"])]);
    assert_eq!(graphs, levels(&[("crate", expected.clone())]));
    assert_eq!(module_cycles(&expected), vec![vec!["a", "b", "c"]]);
}

#[test]
fn the_cycle_finder_sees_a_nested_cycle_through_super_paths() {
    let graphs = planted_graphs(
        "super",
        &[
            ("lib.rs", "mod outer;\n"),
            ("outer/mod.rs", "mod a;\nmod b;\n"),
            ("outer/a.rs", "use super::b::X;\npub(crate) fn g() {}\n"),
            ("outer/b/mod.rs", "mod deep;\npub(crate) struct X;\n"),
            // `super::` inside an inline module counts from that module.
            (
                "outer/b/deep.rs",
                "mod retry {\n    fn again() { super::super::super::a::g() }\n}\n",
            ),
        ],
    );
    assert_eq!(
        graphs,
        levels(&[
            ("crate", graph(&[("outer", &[])])),
            ("crate::outer", graph(&[("a", &["b"]), ("b", &["a"])])),
            ("crate::outer::b", graph(&[("deep", &[])])),
        ])
    );
    assert_eq!(
        module_cycle_lines(&graphs),
        ["crate::outer: a -> b, b -> a"]
    );
}

#[test]
fn the_cycle_finder_sees_a_nested_cycle_through_crate_paths_to_siblings() {
    // `client.rs` with a `client/` directory, and a `use` group with nested braces.
    let graphs = planted_graphs(
        "crate-paths",
        &[
            ("lib.rs", "pub mod client;\nmod other;\n"),
            ("other.rs", "use crate::client::body::Body;\n"),
            ("client.rs", "mod body;\nmod conn;\nmod dial;\n"),
            (
                "client/body.rs",
                "pub(crate) struct Body;\nfn read(dead: crate::client::conn::Dead) {}\n",
            ),
            (
                "client/conn.rs",
                "use crate::client::{dial::{Dialer, Redial}, self};\n",
            ),
            (
                "client/dial.rs",
                "pub(crate) struct Dialer(crate::client::body::Body);\n",
            ),
        ],
    );
    assert_eq!(
        graphs,
        levels(&[
            ("crate", graph(&[("client", &[]), ("other", &["client"])])),
            (
                "crate::client",
                graph(&[
                    ("body", &["conn"]),
                    ("conn", &["dial"]),
                    ("dial", &["body"])
                ])
            ),
        ])
    );
    assert_eq!(
        module_cycle_lines(&graphs),
        ["crate::client: body -> conn, conn -> dial, dial -> body"]
    );
}

#[test]
fn the_cycle_finder_sees_a_nested_cycle_through_a_parent_reexport() {
    let graphs = planted_graphs(
        "parent-reexport",
        &[
            ("lib.rs", "mod run;\npub use run::Phase;\n"),
            (
                "run/mod.rs",
                "mod input;\nmod phase;\nmod tally;\npub(crate) use phase::Phase;\nuse input::Input as RunInput;\n",
            ),
            // Through the parent's re-export, and through its private import, renamed.
            (
                "run/input.rs",
                "use super::Phase;\npub(crate) struct Input;\n",
            ),
            (
                "run/phase.rs",
                "pub enum Phase { Waiting }\nfn first() -> super::RunInput { todo!() }\n",
            ),
            // The root re-exports what `run` re-exports: the path ends in `phase`.
            ("run/tally.rs", "fn count(phase: crate::Phase) {}\n"),
        ],
    );
    assert_eq!(
        graphs["crate::run"],
        graph(&[
            ("input", &["phase"]),
            ("phase", &["input"]),
            ("tally", &["phase"])
        ])
    );
    assert_eq!(
        module_cycle_lines(&graphs),
        ["crate::run: input -> phase, phase -> input"]
    );
}

#[test]
fn a_child_naming_an_item_of_its_parents_file_is_no_cycle() {
    let graphs = planted_graphs(
        "parent-item",
        &[
            ("lib.rs", "mod client;\n"),
            (
                "client/mod.rs",
                "mod body;\nmod conn;\npub struct ClientConfig;\npub(crate) fn helper() {}\n",
            ),
            (
                "client/body.rs",
                "use super::ClientConfig;\nuse super::conn::Dead;\n",
            ),
            (
                "client/conn.rs",
                "use crate::client::ClientConfig as Config;\n\
                 fn dial(config: &super::ClientConfig) { super::helper(); self::inner(); }\n\
                 fn inner() {}\n",
            ),
        ],
    );
    assert_eq!(
        graphs["crate::client"],
        graph(&[("body", &["conn"]), ("conn", &[])])
    );
    assert!(module_cycle_lines(&graphs).is_empty());
}

#[test]
fn test_code_comments_and_strings_name_no_sibling() {
    let graphs = planted_graphs(
        "test-code",
        &[
            ("lib.rs", "mod store;\n"),
            (
                "store/mod.rs",
                "mod a;\nmod b;\n#[cfg(test)]\nmod fixtures;\n",
            ),
            ("store/fixtures.rs", "use super::{a, b};\n"),
            ("store/a.rs", "use super::b::Row;\n"),
            (
                "store/b.rs",
                "//! [`super::a`]\n\
                 pub(crate) struct Row; // crate::store::a\n\
                 const NOTE: &str = \"super::a::x\";\n\
                 /* super::a */\n\
                 #[cfg(test)]\n\
                 pub(crate) fn helper() { super::a::x(); }\n\
                 #[cfg(test)]\n\
                 mod tests;\n",
            ),
            ("store/b/tests.rs", "use super::super::a;\n"),
        ],
    );
    assert_eq!(graphs["crate::store"], graph(&[("a", &["b"]), ("b", &[])]));
    assert!(module_cycle_lines(&graphs).is_empty());
}

/// Writes `files` (path below the source root, text) to a fresh directory, reads their module
/// graphs, and removes the directory.
fn planted_graphs(name: &str, files: &[(&str, &str)]) -> BTreeMap<String, ModuleGraph> {
    let dir = std::env::temp_dir().join(format!("module-cycles-{name}-{}", std::process::id()));
    for (path, text) in files {
        let file = dir.join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, text).unwrap();
    }
    let graphs = module_graphs(&dir);
    std::fs::remove_dir_all(&dir).unwrap();
    graphs
}

fn graph(edges: &[(&str, &[&str])]) -> ModuleGraph {
    edges
        .iter()
        .map(|(from, to)| {
            let to: BTreeSet<String> = to.iter().map(|name| name.to_string()).collect();
            (from.to_string(), to)
        })
        .collect()
}

fn levels(graphs: &[(&str, ModuleGraph)]) -> BTreeMap<String, ModuleGraph> {
    graphs
        .iter()
        .map(|(parent, graph)| (parent.to_string(), graph.clone()))
        .collect()
}
