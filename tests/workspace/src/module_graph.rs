//! The module tree of a library crate and, at every level of it, which sibling modules name
//! each other, so a cycle between siblings can be found at any depth.
//!
//! A module's place in the tree comes from its `mod name;` declarations (`name.rs` or
//! `name/mod.rs` beside a `mod.rs` or `lib.rs`, under `foo/` for a `foo.rs`). What a module
//! names comes from the paths its non-test code writes: `crate::`, `$crate::`, `super::` and
//! `self::` paths anywhere, and every `use` tree, each resolved to an absolute module path.
//! A path through a name some module imports (`pub use b::Thing;`, or a plain `use`, which
//! its child modules see too) continues from what the import stands for, so naming a
//! re-exported item names the module it comes from.
//!
//! Modules written inline (`mod x { … }`) belong to their file's module: they are no nodes,
//! but `super::` inside them counts from them. Test code names nothing: `#[cfg(test)]` items
//! (the `mod tests { … }` blocks, and test-only functions and `mod` declarations), files
//! named `tests.rs`, and files that start with `#![cfg(test)]`, since tests may reach
//! anywhere. Not followed: `#[path]` attributes, code pulled in with `include!`, and names
//! written bare after a glob import (`use super::*;` names only the module it imports from).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::rust_tokens::{Token, tokens};

/// The modules that share a parent and, for each, the siblings its code names.
pub type ModuleGraph = BTreeMap<String, BTreeSet<String>>;

/// A module's path from the crate root, one segment per module (the root is empty).
type ModulePath = Vec<String>;

/// Bounds how many imports one path may pass through: imports that stand for each other
/// (possible through glob imports) would otherwise be followed forever.
const MAX_IMPORT_HOPS: usize = 32;

/// What one module's file holds, as far as the paths between modules go.
#[derive(Debug, Default)]
struct ModuleFile {
    /// The child modules it declares with `mod name;`, test-only ones left out.
    children: Vec<String>,
    /// Each name its module-level `use` declarations bring in, and the absolute path that
    /// name stands for.
    imports: BTreeMap<String, ModulePath>,
    /// The absolute paths its module-level `use x::*;` declarations import everything from.
    glob_imports: Vec<ModulePath>,
    /// The names of the items it defines at module level, which a glob import brings in.
    items: BTreeSet<String>,
    /// Every path its code writes, made absolute.
    named: Vec<ModulePath>,
}

/// For every module of the library whose source root is `src` that has child modules (the
/// root as `crate`, others as `crate::a::b`), the graph of its direct children: an edge
/// `a -> b` means code in `a` or below it names `b` or something inside `b`. An item of the
/// parent's own file is no sibling, so naming it makes no edge.
///
/// # Panics
///
/// If `src/lib.rs` or the file of a declared module cannot be read.
pub fn module_graphs(src: &Path) -> BTreeMap<String, ModuleGraph> {
    let mut tree = BTreeMap::new();
    add_module(&mut tree, Vec::new(), &src.join("lib.rs"), src);
    let mut graphs: BTreeMap<ModulePath, ModuleGraph> = tree
        .iter()
        .filter(|(_, file)| !file.children.is_empty())
        .map(|(path, file)| {
            let children = file
                .children
                .iter()
                .map(|child| (child.clone(), BTreeSet::new()))
                .collect();
            (path.clone(), children)
        })
        .collect();
    for (source, file) in &tree {
        for path in &file.named {
            for target in modules_passed(&tree, path) {
                // The edge sits where the two paths part: below it they are siblings.
                let common = source
                    .iter()
                    .zip(&target)
                    .take_while(|(a, b)| a == b)
                    .count();
                if common == source.len() || common == target.len() {
                    continue; // one contains the other: a parent and its descendant
                }
                if let Some(names) = graphs
                    .get_mut(&source[..common])
                    .and_then(|graph| graph.get_mut(&source[common]))
                {
                    names.insert(target[common].clone());
                }
            }
        }
    }
    graphs
        .into_iter()
        .map(|(path, graph)| (display_path(&path), graph))
        .collect()
}

/// The groups of modules that name each other in a cycle (strongly connected components with
/// more than one member), each sorted.
pub fn module_cycles(graph: &ModuleGraph) -> Vec<Vec<String>> {
    let reaches = |from: &String, to: &String| {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from.clone()];
        while let Some(next) = stack.pop() {
            if &next == to {
                return true;
            }
            if seen.insert(next.clone()) {
                stack.extend(graph.get(&next).into_iter().flatten().cloned());
            }
        }
        false
    };
    let mut cycles: Vec<Vec<String>> = Vec::new();
    for module in graph.keys() {
        if cycles.iter().any(|c| c.contains(module)) {
            continue;
        }
        let group: Vec<String> = graph
            .keys()
            .filter(|other| *other == module || (reaches(module, other) && reaches(other, module)))
            .cloned()
            .collect();
        if group.len() > 1 {
            cycles.push(group);
        }
    }
    cycles
}

/// Every cycle in `graphs` (as [`module_graphs`] returns them), one line each: the parent
/// module, then the edges among the cycle's members, as `crate::a: b -> c, c -> b`.
pub fn module_cycle_lines(graphs: &BTreeMap<String, ModuleGraph>) -> Vec<String> {
    let mut lines = Vec::new();
    for (parent, graph) in graphs {
        for cycle in module_cycles(graph) {
            let edges: Vec<String> = cycle
                .iter()
                .flat_map(|from| {
                    graph[from]
                        .iter()
                        .filter(|to| cycle.contains(to))
                        .map(move |to| format!("{from} -> {to}"))
                })
                .collect();
            lines.push(format!("{parent}: {}", edges.join(", ")));
        }
    }
    lines
}

fn display_path(path: &[String]) -> String {
    std::iter::once("crate")
        .chain(path.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join("::")
}

/// Reads the module at `path` from `file`, then its child modules from `child_dir`, into
/// `tree`. Returns false, adding nothing, for a test-only file.
fn add_module(
    tree: &mut BTreeMap<ModulePath, ModuleFile>,
    path: ModulePath,
    file: &Path,
    child_dir: &Path,
) -> bool {
    let text =
        std::fs::read_to_string(file).unwrap_or_else(|error| panic!("{}: {error}", file.display()));
    let Some(mut module) = scan_file(&tokens(&text), &path) else {
        return false;
    };
    module.children.retain(|child| {
        let flat = child_dir.join(format!("{child}.rs"));
        let child_file = if flat.is_file() {
            flat
        } else {
            child_dir.join(child).join("mod.rs")
        };
        if child_file
            .file_name()
            .is_some_and(|name| name == "tests.rs")
        {
            return false;
        }
        let mut child_path = path.clone();
        child_path.push(child.clone());
        add_module(tree, child_path, &child_file, &child_dir.join(child))
    });
    tree.insert(path, module);
    true
}

/// What the file of the module at `module` holds; `None` for a file that starts with
/// `#![cfg(test)]`.
fn scan_file(tokens: &[Token], module: &[String]) -> Option<ModuleFile> {
    let tokens = without_test_items(tokens)?;
    let mut file = ModuleFile::default();
    // The module the code at hand is in: `module`, then the inline modules open around it.
    let mut context: ModulePath = module.to_vec();
    // The brace depth at which each open inline module's body started.
    let mut inline_depths = Vec::new();
    let mut depth = 0usize;
    let mut at = 0;
    while at < tokens.len() {
        let at_module_level = depth == 0;
        match &tokens[at] {
            Token::Word(word) if word == "mod" => {
                let name = tokens.get(at + 1).and_then(Token::word);
                match (name, tokens.get(at + 2)) {
                    (Some(name), Some(Token::Punct(';'))) if at_module_level => {
                        file.children.push(name.to_owned());
                        at += 3;
                        continue;
                    }
                    (Some(name), Some(Token::Punct('{'))) => {
                        depth += 1;
                        inline_depths.push(depth);
                        context.push(name.to_owned());
                        at += 3;
                        continue;
                    }
                    _ => {}
                }
            }
            Token::Word(word) if word == "use" => {
                let mut leaves = Vec::new();
                // `use ::name` names another crate.
                let end = if tokens.get(at + 1) == Some(&Token::PathSep) {
                    at + 1
                } else {
                    path_tree(&tokens, at + 1, Vec::new(), &mut leaves)
                };
                for leaf in leaves {
                    let Some(path) = absolute(&context, &leaf.segments) else {
                        continue;
                    };
                    if at_module_level {
                        file.record_import(&leaf, &path);
                    }
                    file.named.push(path);
                }
                at = end.max(at + 1);
                continue;
            }
            Token::Word(word)
                if matches!(word.as_str(), "crate" | "super" | "self")
                    && tokens.get(at + 1) == Some(&Token::PathSep)
                    && (at == 0 || tokens[at - 1] != Token::PathSep) =>
            {
                let mut leaves = Vec::new();
                let end = path_tree(&tokens, at, Vec::new(), &mut leaves);
                file.named.extend(
                    leaves
                        .iter()
                        .filter_map(|leaf| absolute(&context, &leaf.segments)),
                );
                at = end.max(at + 1);
                continue;
            }
            Token::Word(word) if at_module_level && ITEM_KEYWORDS.contains(&word.as_str()) => {
                let name = tokens[at + 1..]
                    .iter()
                    .find(|token| !matches!(token, Token::Punct('!')))
                    .and_then(Token::word)
                    .filter(|name| !matches!(*name, "fn" | "unsafe" | "async" | "extern"));
                if let Some(name) = name {
                    file.items.insert(name.to_owned());
                }
            }
            Token::Punct('{') => depth += 1,
            Token::Punct('}') => {
                if inline_depths.last() == Some(&depth) {
                    inline_depths.pop();
                    context.pop();
                }
                depth = depth.saturating_sub(1);
            }
            _ => {}
        }
        at += 1;
    }
    Some(file)
}

/// The keywords that start an item a glob import can bring in; the item's name follows
/// (after `!` for `macro_rules!`).
const ITEM_KEYWORDS: &[&str] = &[
    "fn",
    "struct",
    "enum",
    "union",
    "trait",
    "type",
    "const",
    "static",
    "macro_rules",
];

impl ModuleFile {
    /// Records what the `use` leaf `leaf`, made absolute as `path`, brings into this module.
    fn record_import(&mut self, leaf: &PathLeaf, path: &[String]) {
        if leaf.glob {
            self.glob_imports.push(path.to_vec());
            return;
        }
        // `use a::b::{self}` binds `b`; `use x as _` binds nothing.
        let written = leaf
            .segments
            .iter()
            .rev()
            .find(|segment| *segment != "self");
        let name = leaf.rename.as_ref().or(written);
        let binds = |name: &&String| !matches!(name.as_str(), "_" | "self" | "super" | "crate");
        if let Some(name) = name.filter(binds).filter(|_| !path.is_empty()) {
            self.imports.insert(name.clone(), path.to_vec());
        }
    }
}

/// One path of a path tree, as written: `use a::{b, c::D as E}` has two.
#[derive(Debug)]
struct PathLeaf {
    segments: Vec<String>,
    /// The name after `as`.
    rename: Option<String>,
    /// Whether it ends in `::*`.
    glob: bool,
}

/// Reads the path tree starting at `at` (`a::b`, `a::{b, c::{d, e}}`, `a::*`, `a as b`),
/// with `prefix` already read before it, into `leaves`; returns the index after it. A path
/// stops before a turbofish (`f::<T>`).
fn path_tree(
    tokens: &[Token],
    at: usize,
    prefix: Vec<String>,
    leaves: &mut Vec<PathLeaf>,
) -> usize {
    let mut segments = prefix;
    let mut at = at;
    loop {
        match tokens.get(at) {
            Some(Token::Punct('{')) => {
                at += 1;
                loop {
                    match tokens.get(at) {
                        None => return at,
                        Some(Token::Punct('}')) => return at + 1,
                        Some(Token::Punct(',')) => at += 1,
                        Some(_) => {
                            let next = path_tree(tokens, at, segments.clone(), leaves);
                            // Something no path can hold: step over it rather than stall.
                            at = next.max(at + 1);
                        }
                    }
                }
            }
            Some(Token::Punct('*')) => {
                leaves.push(PathLeaf {
                    segments,
                    rename: None,
                    glob: true,
                });
                return at + 1;
            }
            Some(Token::Word(word)) => {
                segments.push(word.clone());
                at += 1;
                let turbofish = tokens.get(at + 1) == Some(&Token::Punct('<'));
                if tokens.get(at) == Some(&Token::PathSep) && !turbofish {
                    at += 1;
                    continue;
                }
                let rename = if tokens.get(at).is_some_and(|token| token.is_word("as")) {
                    at += 1;
                    tokens.get(at).and_then(Token::word).map(|name| {
                        at += 1;
                        name.to_owned()
                    })
                } else {
                    None
                };
                leaves.push(PathLeaf {
                    segments,
                    rename,
                    glob: false,
                });
                return at;
            }
            _ => return at,
        }
    }
}

/// `segments`, written in the module `context`, as a path from the crate root: `crate`
/// (or `$crate`) starts at the root, `super` steps up, `self` stays, and anything else is
/// relative to `context`, as `use` paths are. `None` for a path that climbs above the root.
fn absolute(context: &[String], segments: &[String]) -> Option<ModulePath> {
    let (mut path, rest) = match segments.split_first() {
        Some((first, rest)) if first == "crate" => (Vec::new(), rest),
        _ => (context.to_vec(), segments),
    };
    for segment in rest {
        match segment.as_str() {
            "self" => {}
            "super" => {
                path.pop()?;
            }
            _ => path.push(segment.clone()),
        }
    }
    Some(path)
}

/// The modules `path` passes through on its way to what it names: each module in which an
/// import sends it elsewhere, and the module it ends in (the one that defines its last
/// segment, or the last module it could follow).
fn modules_passed(tree: &BTreeMap<ModulePath, ModuleFile>, path: &[String]) -> Vec<ModulePath> {
    let mut passed = Vec::new();
    let mut hops = 0;
    let end = follow(tree, path, &mut hops, &mut passed);
    passed.push(end);
    passed
}

/// Walks `path` down the module tree, following imports (counted in `hops`, each module
/// that holds one pushed to `passed`); returns the module it ends in.
fn follow(
    tree: &BTreeMap<ModulePath, ModuleFile>,
    path: &[String],
    hops: &mut usize,
    passed: &mut Vec<ModulePath>,
) -> ModulePath {
    let mut module = Vec::new();
    for (index, segment) in path.iter().enumerate() {
        let Some(file) = tree.get(&module) else {
            break;
        };
        if file.children.contains(segment) {
            module.push(segment.clone());
            continue;
        }
        if *hops >= MAX_IMPORT_HOPS {
            break;
        }
        *hops += 1;
        let imported = file.imports.get(segment).cloned().or_else(|| {
            // A glob import brings the name in if the module it imports from has it.
            file.glob_imports.iter().find_map(|glob| {
                let source = follow(tree, glob, hops, &mut Vec::new());
                let has_it = tree.get(&source).is_some_and(|source| {
                    source.items.contains(segment)
                        || source.imports.contains_key(segment)
                        || source.children.contains(segment)
                });
                has_it.then(|| {
                    let mut imported = glob.clone();
                    imported.push(segment.clone());
                    imported
                })
            })
        });
        let Some(mut imported) = imported else {
            break;
        };
        passed.push(module);
        imported.extend_from_slice(&path[index + 1..]);
        return follow(tree, &imported, hops, passed);
    }
    module
}

/// `tokens` without the items marked `#[cfg(test)]`; `None` if the file is test-only (it
/// starts with `#![cfg(test)]`; inner attributes come before everything else).
fn without_test_items(tokens: &[Token]) -> Option<Vec<Token>> {
    let mut at = 0;
    while tokens.get(at) == Some(&Token::Punct('#'))
        && tokens.get(at + 1) == Some(&Token::Punct('!'))
    {
        if cfg_test_end(tokens, at + 2).is_some() {
            return None;
        }
        at = group_end(tokens, at + 2);
    }
    let mut kept = Vec::with_capacity(tokens.len());
    let mut at = 0;
    while at < tokens.len() {
        if tokens[at] == Token::Punct('#')
            && let Some(attribute_end) = cfg_test_end(tokens, at + 1)
        {
            at = item_end(tokens, attribute_end);
            continue;
        }
        kept.push(tokens[at].clone());
        at += 1;
    }
    Some(kept)
}

/// The index after `[cfg(test)]` if it starts at `at`.
fn cfg_test_end(tokens: &[Token], at: usize) -> Option<usize> {
    let attribute = tokens.get(at..at + 6)?;
    let is_cfg_test = matches!(
        attribute,
        [
            Token::Punct('['),
            Token::Word(cfg),
            Token::Punct('('),
            Token::Word(test),
            Token::Punct(')'),
            Token::Punct(']'),
        ] if cfg == "cfg" && test == "test"
    );
    is_cfg_test.then_some(at + 6)
}

/// The index after the item that starts at `at` (after its first attribute): its further
/// attributes, then up to its `;`, or the end of its body in braces. An item that is a field,
/// variant or match arm ends at its `,`; one that is the last in its braces ends before them.
fn item_end(tokens: &[Token], at: usize) -> usize {
    let mut at = at;
    while tokens.get(at) == Some(&Token::Punct('#')) {
        at = group_end(tokens, at + 1);
    }
    let mut first = at;
    if tokens.get(first).is_some_and(|token| token.is_word("pub")) {
        first += 1;
        if tokens.get(first) == Some(&Token::Punct('(')) {
            first = group_end(tokens, first);
        }
    }
    let keyword = tokens.get(first).and_then(Token::word).unwrap_or("");
    let then = tokens.get(first + 1).and_then(Token::word).unwrap_or("");
    let const_item = keyword == "const" && !matches!(then, "fn" | "unsafe" | "async" | "extern");
    // These end at their `;` even when braces come first: `use a::{b, c};`.
    let ends_at_semicolon = const_item || matches!(keyword, "use" | "static" | "type" | "let");
    let has_body = BODY_ITEM_KEYWORDS.contains(&keyword);
    let mut depth = 0usize;
    for (index, token) in tokens.iter().enumerate().skip(at) {
        match token {
            Token::Punct('(' | '[' | '{') => depth += 1,
            Token::Punct(closer @ (')' | ']' | '}')) => {
                if depth == 0 {
                    return index;
                }
                depth -= 1;
                if depth == 0 && *closer == '}' && !ends_at_semicolon {
                    return index + 1;
                }
            }
            Token::Punct(';') if depth == 0 => return index + 1,
            Token::Punct(',') if depth == 0 && !has_body && !ends_at_semicolon => {
                return index + 1;
            }
            _ => {}
        }
    }
    tokens.len()
}

/// The keywords that start an item ending with a body in braces (or with `;` without one),
/// whatever commas come before: `fn f() where T: A, U: B {}`.
const BODY_ITEM_KEYWORDS: &[&str] = &[
    "fn",
    "mod",
    "impl",
    "struct",
    "enum",
    "union",
    "trait",
    "macro_rules",
    "unsafe",
    "async",
    "extern",
    "const",
];

/// The index after the bracketed group that opens at `at`.
fn group_end(tokens: &[Token], at: usize) -> usize {
    let mut depth = 0usize;
    for (index, token) in tokens.iter().enumerate().skip(at) {
        match token {
            Token::Punct('(' | '[' | '{') => depth += 1,
            Token::Punct(')' | ']' | '}') => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return index + 1;
                }
            }
            _ => {}
        }
    }
    tokens.len()
}
