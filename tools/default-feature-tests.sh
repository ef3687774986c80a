#!/usr/bin/env bash
# Runs every publishable crate's tests in the checkout the way `cargo test -p <crate>` runs them
# for someone who just cloned the repository: default features, one crate per cargo call. One
# call for all crates would unify their features (a sibling's dev-dependency switching on
# `testing`, say) and hide a test that does not compile without them; so would the workspace
# step's --all-features. Targets that need a feature declare it (`required-features`) and are
# skipped here; the workspace step runs them.
#
#   tools/default-feature-tests.sh                          # every crate
#   DEFAULT_FEATURE_CRATES="cursor-agent" tools/default-feature-tests.sh
set -euo pipefail
cd "$(dirname "$0")/.."
started=$(date +%s)
source tools/publishable.sh

crates=${DEFAULT_FEATURE_CRATES:-${publishable_crates[*]}}
log_dir=${CARGO_TARGET_DIR:-target}/default-feature-tests
mkdir -p "$log_dir"
for crate in $crates; do
  crate_started=$(date +%s)
  if ! cargo test --quiet -p "$crate" >"$log_dir/$crate.log" 2>&1; then
    cat "$log_dir/$crate.log" >&2
    echo "default-feature-tests.sh: \`cargo test -p $crate\` fails with default features" >&2
    exit 1
  fi
  passed=$(awk '/^test result: ok\./ { n += $4 } END { print n + 0 }' "$log_dir/$crate.log")
  echo "default-feature-tests.sh: $crate: $passed tests passed ($(($(date +%s) - crate_started)) s)"
done
echo "default-feature-tests.sh: took $(($(date +%s) - started)) s"
