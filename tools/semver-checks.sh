#!/usr/bin/env bash
# Checks the public API of every published crate against its previous release with
# cargo-semver-checks, so a breaking change cannot ship under a non-breaking version.
#
#   tools/semver-checks.sh                    # each crate against its last release tag
#   SEMVER_BASELINE_REV=main tools/semver-checks.sh   # every crate against one revision
#   SEMVER_INSTALL=1 tools/semver-checks.sh   # installs cargo-semver-checks first when missing
#
# A crate's baseline is its newest tag `<crate>-v*` (release-plz.toml), else the workspace's
# `v<version>` tag (the releases before independent versions), else a git revision: the
# merge-base with origin/main when this is another branch, else HEAD~1. Against a git revision
# the crate was never published, so a break is reported but does not fail the run (nobody
# depends on it yet); against a release tag it fails.
set -euo pipefail
cd "$(dirname "$0")/.."

# CI installs the pinned version into target/tools when no cargo-semver-checks is on PATH (about
# 6 minutes of compiling on 2 cores, once per target dir).
semver_version=0.51.0
tools=${CARGO_TARGET_DIR:-$PWD/target}/tools/cargo
export PATH="$tools/bin:$PATH"
if ! command -v cargo-semver-checks >/dev/null 2>&1; then
  if [ -n "${SEMVER_INSTALL:-}" ]; then
    started=$(date +%s)
    cargo install --quiet --locked --root "$tools" "cargo-semver-checks@$semver_version"
    echo "semver-checks.sh: installed cargo-semver-checks $semver_version in $(($(date +%s) - started)) s"
  else
    echo "semver-checks.sh: cargo-semver-checks is not installed (SEMVER_INSTALL=1 installs $semver_version into $tools)" >&2
    exit 1
  fi
fi

source tools/publishable.sh

fallback_rev() {
  if [ -n "${SEMVER_BASELINE_REV:-}" ]; then
    echo "$SEMVER_BASELINE_REV"
  elif git rev-parse --verify --quiet origin/main >/dev/null &&
    [ "$(git rev-parse HEAD)" != "$(git rev-parse origin/main)" ]; then
    git merge-base HEAD origin/main
  elif git rev-parse --verify --quiet HEAD~1 >/dev/null; then
    git rev-parse HEAD~1
  else
    git rev-parse HEAD
  fi
}

# Crates grouped by baseline, so each baseline is built once.
declare -A by_baseline=()
for crate in "${publishable_crates[@]}"; do
  baseline=${SEMVER_BASELINE_REV:+$(fallback_rev)}
  if [ -z "$baseline" ]; then
    baseline=$(git tag --list "$crate-v*" --sort=-v:refname | head -n 1)
    [ -n "$baseline" ] || { git rev-parse --verify --quiet "v$workspace_version^{commit}" >/dev/null && baseline=v$workspace_version; } || true
  fi
  [ -n "$baseline" ] || baseline="rev:$(fallback_rev)"
  by_baseline[$baseline]+=" --package $crate"
done

status=0
for baseline in "${!by_baseline[@]}"; do
  rev=${baseline#rev:}
  echo "semver-checks.sh: baseline $rev:${by_baseline[$baseline]//--package /}"
  # shellcheck disable=SC2086 # the package list splits on purpose
  if ! cargo semver-checks ${by_baseline[$baseline]} --baseline-rev "$rev"; then
    if [ "$baseline" = "rev:$rev" ]; then
      echo "semver-checks.sh: breaking changes since $rev (not failing: no release of these crates yet)" >&2
    else
      status=1
    fi
  fi
done
exit $status
