//! No module cycles inside a crate: each top-level module of a library names the others
//! (through `crate::` paths, root re-exports resolved) without coming back to itself, so a
//! module can be read, tested and split on its own.

use std::collections::{BTreeMap, BTreeSet};

use workspace_checks::{HOST_NEUTRAL_CRATES, module_cycles, module_graph, workspace_root};

#[test]
fn no_library_has_a_module_cycle() {
    let root = workspace_root();
    let mut found = Vec::new();
    let libraries = HOST_NEUTRAL_CRATES.iter().chain(&["cursor-pi-adapter"]);
    for krate in libraries {
        let graph = module_graph(&root.join(krate).join("src"));
        assert!(graph.len() > 1, "{krate}: no modules found");
        for cycle in module_cycles(&graph) {
            let edges: Vec<String> = cycle
                .iter()
                .flat_map(|from| {
                    graph[from]
                        .iter()
                        .filter(|to| cycle.contains(to))
                        .map(move |to| format!("{from} -> {to}"))
                })
                .collect();
            found.push(format!("{krate}: {}", edges.join(", ")));
        }
    }
    assert!(found.is_empty(), "module cycles:\n{}", found.join("\n"));
}

#[test]
fn the_cycle_finder_sees_a_cycle_through_a_root_reexport() {
    let dir = std::env::temp_dir().join(format!("module-cycles-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("b")).unwrap();
    std::fs::write(
        dir.join("lib.rs"),
        "mod a;\nmod b;\nmod c;\npub use b::Thing;\n#[cfg(test)]\nmod tests { use crate::c; }\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("a.rs"),
        "use crate::Thing;\n// crate::c in a comment\n",
    )
    .unwrap();
    std::fs::write(dir.join("b/mod.rs"), "use crate::{c::{X, Y}, self};\n").unwrap();
    std::fs::write(
        dir.join("c.rs"),
        "pub(crate) fn f() { crate::a::g() }\n#[cfg(test)]\nmod tests { use crate::b; }\n",
    )
    .unwrap();
    let graph = module_graph(&dir);
    std::fs::remove_dir_all(&dir).unwrap();
    let set = |names: &[&str]| names.iter().map(|n| n.to_string()).collect::<BTreeSet<_>>();
    let expected: BTreeMap<String, BTreeSet<String>> = [
        ("a".to_owned(), set(&["b"])),
        ("b".to_owned(), set(&["c"])),
        ("c".to_owned(), set(&["a"])),
    ]
    .into();
    assert_eq!(graph, expected);
    assert_eq!(module_cycles(&graph), vec![vec!["a", "b", "c"]]);
}
