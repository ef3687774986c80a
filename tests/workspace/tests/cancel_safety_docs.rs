//! Every public async method of the shipped crates says in its docs what dropping its
//! future does (a `# Cancel safety` section, as tokio's docs do): hosts put these calls in
//! `select!` and need to know what a dropped branch loses.

use workspace_checks::workspace_sources;

/// The doc lines (and attributes) right above line `index`.
fn docs_above<'a>(lines: &[&'a str], index: usize) -> Vec<&'a str> {
    lines[..index]
        .iter()
        .rev()
        .take_while(|line| {
            let line = line.trim_start();
            line.starts_with("///") || line.starts_with("#[")
        })
        .copied()
        .collect()
}

#[test]
fn every_public_async_fn_documents_its_cancel_safety() {
    let mut missing = Vec::new();
    for (relative, path) in workspace_sources() {
        let shipped = relative.starts_with("cursor-")
            && relative.contains("/src/")
            && !relative.contains("/testing/")
            && !relative.contains("/interop/")
            && !relative.contains("fuzzing");
        if !shipped {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        for (index, line) in lines.iter().enumerate() {
            if line.trim_start().starts_with("pub async fn")
                && !docs_above(&lines, index)
                    .iter()
                    .any(|doc| doc.contains("# Cancel safety"))
            {
                missing.push(format!("{relative}:{}: {}", index + 1, line.trim()));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "public async fns without a `# Cancel safety` section:\n{}",
        missing.join("\n")
    );
}
