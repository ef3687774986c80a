//! Keeps the checked-in prost output in `src/gen/` in step with the `.proto` sources.
//!
//! The crate has no build script: users never need `protoc` or a code generator. This test
//! regenerates the code into a temporary directory and fails when the checked-in copy differs.
//! Run with `UPDATE_GENERATED=1` to rewrite the checked-in files (never done when `CI` is set).

use std::fs;
use std::path::{Path, PathBuf};

/// Every `.proto` source, relative to `proto/`.
const PROTO_FILES: &[&str] = &[
    "agent/v1/agent.proto",
    "agent/v1/exec.proto",
    "agent/v1/interaction.proto",
    "agent/v1/kv.proto",
    "agent/v1/mcp.proto",
    "agent/v1/model.proto",
    "aiserver/v1/bidi.proto",
    "aiserver/v1/dashboard.proto",
    "aiserver/v1/inference.proto",
    "aiserver/v1/models.proto",
    "aiserver/v1/server_config.proto",
];

/// The files prost writes, one per protobuf package.
const GENERATED_FILES: &[&str] = &["agent.v1.rs", "aiserver.v1.rs"];

fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Compiles the sources under `proto_root` and writes prost's output into `out_dir`.
fn generate(proto_root: &Path, out_dir: &Path) {
    let descriptors = protox::compile(PROTO_FILES, [proto_root]).expect("proto sources compile");
    prost_build::Config::new()
        .out_dir(out_dir)
        // Deterministic map order, so encoding the same message always yields the same bytes.
        .btree_map(["."])
        .compile_fds(descriptors)
        .expect("prost-build generates code");
}

/// Names of the generated files whose content in `dir` differs from `src/gen/`.
fn stale_files(dir: &Path) -> Vec<&'static str> {
    let checked_in = manifest_dir().join("src/gen");
    GENERATED_FILES
        .iter()
        .copied()
        .filter(|name| {
            let fresh = fs::read_to_string(dir.join(name)).expect("generated file exists");
            fs::read_to_string(checked_in.join(name)).ok().as_deref() != Some(fresh.as_str())
        })
        .collect()
}

#[test]
fn checked_in_generated_code_matches_proto_sources() {
    let out = tempfile::tempdir().expect("temp dir");
    generate(&manifest_dir().join("proto"), out.path());
    let stale = stale_files(out.path());
    if stale.is_empty() {
        return;
    }
    let may_update = std::env::var_os("CI").is_none()
        && std::env::var("UPDATE_GENERATED").is_ok_and(|value| value == "1");
    if may_update {
        for name in &stale {
            fs::copy(
                out.path().join(name),
                manifest_dir().join("src/gen").join(name),
            )
            .expect("rewrite generated file");
        }
        return;
    }
    panic!(
        "src/gen is stale for {stale:?}: regenerate with \
         `UPDATE_GENERATED=1 cargo test -p cursor-proto --test codegen`"
    );
}

/// Proves the staleness check can fail: a copy of the sources with one field number changed must
/// produce code that differs from the checked-in copy.
#[test]
fn changed_field_number_makes_generated_code_stale() {
    let sources = tempfile::tempdir().expect("temp dir");
    for file in PROTO_FILES {
        let text = fs::read_to_string(manifest_dir().join("proto").join(file)).expect("read proto");
        let text = if *file == "agent/v1/kv.proto" {
            let changed = text.replace("bytes blob_id = 1;", "bytes blob_id = 9;");
            assert_ne!(changed, text, "the mutation must apply");
            changed
        } else {
            text
        };
        let target = sources.path().join(file);
        fs::create_dir_all(target.parent().expect("parent dir")).expect("create dir");
        fs::write(target, text).expect("write proto copy");
    }
    let out = tempfile::tempdir().expect("temp dir");
    generate(sources.path(), out.path());
    assert_eq!(stale_files(out.path()), vec!["agent.v1.rs"]);
}
