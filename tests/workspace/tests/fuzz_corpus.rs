//! Every checked-in fuzz input replays through the same entry point its fuzz target calls, so a
//! crash once found stays fixed without needing cargo-fuzz or nightly.

use std::path::Path;

use workspace_checks::workspace_root;

fn replay(target: &str, run: fn(&[u8])) {
    let dir = workspace_root().join("fuzz/corpus").join(target);
    let mut inputs = 0;
    for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        let data = std::fs::read(&path).unwrap();
        let outcome = std::panic::catch_unwind(|| run(&data));
        assert!(outcome.is_ok(), "{target}: input {} panicked", name(&path));
        inputs += 1;
    }
    assert!(inputs > 0, "{target}: the corpus is empty");
}

fn name(path: &Path) -> String {
    path.file_name().unwrap().to_string_lossy().into_owned()
}

#[test]
fn selected_context_blob_corpus_replays_cleanly() {
    replay("selected_context_blob", cursor_proto::fuzzing::selected_context_blob);
}
