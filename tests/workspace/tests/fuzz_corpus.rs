//! Every checked-in fuzz input replays through the same entry point its fuzz target calls, so a
//! crash once found stays fixed without needing cargo-fuzz or nightly.

use std::path::Path;

use workspace_checks::workspace_root;

fn replay(target: &str, run: FuzzEntry) {
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

/// The entry point a fuzz target and its corpus replay share.
type FuzzEntry = fn(&[u8]);

/// Every fuzz target with the function its corpus replays through.
const TARGETS: &[(&str, FuzzEntry)] = &[
    (
        "selected_context_blob",
        cursor_proto::fuzzing::selected_context_blob,
    ),
    (
        "envelope_decoder",
        cursor_transport::fuzzing::envelope_decoder,
    ),
    (
        "end_stream_json",
        cursor_transport::fuzzing::end_stream_json,
    ),
    ("agent_run", cursor_agent::fuzzing::fuzz_one),
    ("handle_file", cursor_agent::fuzzing::handle_file),
    ("inference_run", cursor_inference::fuzzing::inference_run),
    (
        "catalog_snapshot",
        cursor_catalog::fuzzing::catalog_snapshot,
    ),
    ("hot_decoder", cursor_agent::fuzzing::hot_decoder),
    ("body_data", cursor_agent::fuzzing::body_data),
    ("read_footer", cursor_agent::fuzzing::read_footer),
    (
        "gateway_chat_request",
        cursor_gateway::fuzzing::chat_request,
    ),
    (
        "gateway_responses_request",
        cursor_gateway::fuzzing::responses_request,
    ),
    (
        "gateway_messages_request",
        cursor_gateway::fuzzing::messages_request,
    ),
    (
        "gateway_index_record",
        cursor_gateway::fuzzing::index_record,
    ),
    (
        "gateway_stored_response",
        cursor_gateway::fuzzing::stored_response,
    ),
];

#[test]
fn every_fuzz_corpus_replays_cleanly() {
    for (target, run) in TARGETS {
        replay(target, *run);
    }
}

#[test]
fn every_fuzz_target_has_a_replayed_corpus() {
    let manifest = std::fs::read_to_string(workspace_root().join("fuzz/Cargo.toml")).unwrap();
    let bins: Vec<&str> = manifest
        .lines()
        .filter_map(|line| line.trim().strip_prefix("name = \""))
        .filter_map(|rest| rest.strip_suffix('"'))
        .filter(|name| *name != "cursor-fuzz")
        .collect();
    assert!(!bins.is_empty());
    for bin in bins {
        assert!(
            TARGETS.iter().any(|(t, _)| *t == bin),
            "fuzz target {bin} has no corpus replay"
        );
    }
}
