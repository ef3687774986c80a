#!/usr/bin/env bash
# The MSRV check: every crate builds with the `rust-version` of the workspace manifest,
# installing that toolchain from static.rust-lang.org when missing (rustup, minimal profile:
# about 1 min). clippy's `incompatible_msrv` catches std APIs newer than it on stable; this
# catches the rest (language features, dependencies' own MSRVs).
#
#   tools/msrv-check.sh                 # cargo check of every crate and target (CI, ~1 min warm)
#   MSRV_TESTS=1 tools/msrv-check.sh    # cargo test --workspace with that toolchain (the release
#                                       # workflow's MSRV job; a full second build, ~15 min cold)
set -euo pipefail
cd "$(dirname "$0")/.."
started=$(date +%s)
msrv=$(sed -n 's/^rust-version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)
rustup run "$msrv" rustc --version >/dev/null 2>&1 || rustup toolchain install "$msrv" --profile minimal
target_dir=${CARGO_TARGET_DIR:-$PWD/target}
# Its own target dir: another compiler's artifacts would only crowd the stable ones.
export CARGO_TARGET_DIR=$target_dir/msrv
if [ "${MSRV_TESTS:-0}" = 1 ]; then
  log=$CARGO_TARGET_DIR/msrv-tests.log
  mkdir -p "$CARGO_TARGET_DIR"
  if ! cargo "+$msrv" test --locked --workspace --all-features >"$log" 2>&1; then
    tail -n 80 "$log" >&2
    echo "msrv-check.sh: the tests fail with rust $msrv (whole log: $log)" >&2
    exit 1
  fi
  passed=$(awk '/^test result: ok\./ { n += $4 } END { print n + 0 }' "$log")
  echo "msrv-check.sh: rust $msrv builds and passes the workspace's $passed tests (took $(($(date +%s) - started)) s)"
else
  cargo "+$msrv" check --quiet --locked --workspace --all-features --all-targets
  echo "msrv-check.sh: rust $msrv checks every crate and target (took $(($(date +%s) - started)) s)"
fi
