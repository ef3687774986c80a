#!/usr/bin/env bash
# Builds every published crate's docs as docs.rs does ([package.metadata.docs.rs]: all
# features, `--cfg docsrs`), warnings denied. `--cfg docsrs` switches on `feature(doc_cfg)`,
# which only nightly accepts, so this runs on nightly (installed by rustup when missing); on
# stable, .ci/run's docs step builds them without the cfg, and tests/workspace/tests/
# crate_pages.rs checks that the metadata is there.
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/publishable.sh
# The nightly tools/external-types.sh pins, so CI installs one nightly for both.
nightly=${DOCSRS_NIGHTLY:-nightly-2026-03-20}
started=$(date +%s)
rustup run "$nightly" rustc --version >/dev/null 2>&1 || rustup toolchain install "$nightly" --profile minimal
target_dir=${CARGO_TARGET_DIR:-$PWD/target}
packages=()
for crate in "${publishable_crates[@]}"; do packages+=(-p "$crate"); done
RUSTDOCFLAGS="--cfg docsrs -Dwarnings" CARGO_TARGET_DIR=$target_dir/docsrs \
  cargo "+$nightly" doc --quiet --no-deps --all-features "${packages[@]}"
echo "docsrs-check.sh: docs build as on docs.rs (took $(($(date +%s) - started)) s)"
