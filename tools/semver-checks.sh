#!/usr/bin/env bash
# Checks the public API of every published crate against the last release with
# cargo-semver-checks, so a breaking change cannot ship under a patch version.
#
#   tools/semver-checks.sh                 # baseline: the git tag v<workspace version>
#   SEMVER_BASELINE=v0.1.0 tools/semver-checks.sh
#   SEMVER_INSTALL=1 tools/semver-checks.sh   # installs cargo-semver-checks first (a few minutes)
#
# Releases are tagged v<version> (see each crate's CHANGELOG.md). Before the first tag exists the
# baseline is a git revision (SEMVER_BASELINE_REV, default HEAD, which proves the wiring and
# reports nothing). `SEMVER_CHECKS=1 bash .ci/run` runs this script in CI.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v cargo-semver-checks >/dev/null 2>&1; then
  if [ -n "${SEMVER_INSTALL:-}" ]; then
    cargo install --locked cargo-semver-checks
  else
    echo "semver-checks.sh: cargo-semver-checks is not installed (cargo install --locked cargo-semver-checks, or SEMVER_INSTALL=1)" >&2
    exit 1
  fi
fi

# The crates published to the registry; examples and test crates are publish = false.
source tools/publishable.sh
baseline=${SEMVER_BASELINE:-v$workspace_version}
args=()
for crate in "${publishable_crates[@]}"; do args+=(--package "$crate"); done

if git rev-parse --verify --quiet "$baseline^{commit}" >/dev/null; then
  echo "semver-checks.sh: baseline $baseline"
  exec cargo semver-checks "${args[@]}" --baseline-rev "$baseline"
fi
# No release tag yet: the crates were never published, so there is no registry baseline (and
# packed crates cannot resolve their unpublished siblings). Baseline on a git revision instead,
# HEAD by default, which proves the wiring and reports nothing; SEMVER_BASELINE_REV=<rev> checks
# the tree against any earlier commit.
rev=${SEMVER_BASELINE_REV:-HEAD}
echo "semver-checks.sh: no tag $baseline; baseline is revision $rev"
exec cargo semver-checks "${args[@]}" --baseline-rev "$rev"
