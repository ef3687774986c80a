#!/usr/bin/env bash
# The MSRV check: every crate builds (cargo check, not the tests) with the `rust-version` of
# the workspace manifest, installing that toolchain from static.rust-lang.org when missing
# (rustup, minimal profile: about 1 min). clippy's `incompatible_msrv` catches std APIs newer
# than it on stable; this catches the rest (language features, dependencies' own MSRVs).
set -euo pipefail
cd "$(dirname "$0")/.."
started=$(date +%s)
msrv=$(sed -n 's/^rust-version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)
rustup run "$msrv" rustc --version >/dev/null 2>&1 || rustup toolchain install "$msrv" --profile minimal
target_dir=${CARGO_TARGET_DIR:-$PWD/target}
# Its own target dir: another compiler's artifacts would only crowd the stable ones.
CARGO_TARGET_DIR=$target_dir/msrv cargo "+$msrv" check --quiet --locked --workspace --all-features
echo "msrv-check.sh: rust $msrv checks the workspace (took $(($(date +%s) - started)) s)"
