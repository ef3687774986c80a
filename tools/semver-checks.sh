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
#
# The rustdoc JSON both sides are compared on is made here, the way cargo-semver-checks makes
# it (rustdoc's JSON output with private and hidden items, RUSTC_BOOTSTRAP), but for all crates
# in one `cargo doc` per side in the workspace's target dir: the dependencies are checked once
# and shared with the other steps, where the tool's own generation builds them again for each
# crate and side (about 10 of CI's minutes).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

semver_version=0.51.0
if [ "$(cargo semver-checks --version 2>/dev/null | awk '{print $2}')" != "$semver_version" ]; then
  if [ -n "${SEMVER_INSTALL:-}" ]; then
    # About 8.5 minutes of compiling on 2 cores, once per CARGO_HOME.
    started=$(date +%s)
    # Its release profile asks for fat LTO and one codegen unit; without them the build takes
    # 510 s instead of 601 s here and checks the same.
    CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 \
      cargo install --quiet --locked "cargo-semver-checks@$semver_version"
    echo "semver-checks.sh: installed cargo-semver-checks $semver_version in $(($(date +%s) - started)) s"
  else
    echo "semver-checks.sh: cargo-semver-checks $semver_version is not installed (SEMVER_INSTALL=1 installs it)" >&2
    exit 1
  fi
fi

source tools/publishable.sh
target_dir=${CARGO_TARGET_DIR:-$root/target}
case "$target_dir" in /*) ;; *) target_dir=$root/$target_dir ;; esac
work=$target_dir/semver

fallback_rev() {
  if [ -n "${SEMVER_BASELINE_REV:-}" ]; then
    git rev-parse "$SEMVER_BASELINE_REV^{commit}"
  elif git rev-parse --verify --quiet origin/main >/dev/null &&
    [ "$(git rev-parse HEAD)" != "$(git rev-parse origin/main)" ]; then
    git merge-base HEAD origin/main
  elif git rev-parse --verify --quiet HEAD~1 >/dev/null; then
    git rev-parse HEAD~1
  else
    git rev-parse HEAD
  fi
}

# rustdoc JSON of the library of each named package in the workspace at $1, into directory $2
# (one <crate>.json per package; packages the workspace lacks are skipped).
rustdoc_json() {
  local tree=$1 out=$2
  shift 2
  local present=() crate
  local names
  names=$(cargo metadata --no-deps --format-version 1 --manifest-path "$tree/Cargo.toml" |
    python3 -c 'import json,sys; print(" ".join(p["name"] for p in json.load(sys.stdin)["packages"]))')
  for crate in "$@"; do
    case " $names " in *" $crate "*) present+=(-p "$crate") ;; esac
  done
  mkdir -p "$out"
  [ ${#present[@]} -gt 0 ] || return 0
  (cd "$tree" && RUSTC_BOOTSTRAP=1 CARGO_TARGET_DIR=$target_dir \
    RUSTDOCFLAGS="-Z unstable-options --document-private-items --document-hidden-items --output-format=json --cap-lints=allow" \
    cargo doc --quiet --no-deps --lib --all-features "${present[@]}")
  for crate in "$@"; do
    local file=$target_dir/doc/${crate//-/_}.json
    if [ -f "$file" ]; then mv "$file" "$out/$crate.json"; fi
  done
}

# Crates grouped by baseline, so each baseline is documented once.
declare -A by_baseline=()
for crate in "${publishable_crates[@]}"; do
  baseline=${SEMVER_BASELINE_REV:+rev:$(fallback_rev)}
  if [ -z "$baseline" ]; then
    baseline=$(git tag --list "$crate-v*" --sort=-v:refname | head -n 1)
    [ -n "$baseline" ] || { git rev-parse --verify --quiet "v$workspace_version^{commit}" >/dev/null && baseline=v$workspace_version; } || true
  fi
  [ -n "$baseline" ] || baseline="rev:$(fallback_rev)"
  by_baseline[$baseline]+=" $crate"
done

started=$(date +%s)
rm -rf "$work"
rustdoc_json "$root" "$work/current" "${publishable_crates[@]}"
echo "semver-checks.sh: rustdoc JSON of the working tree ($(($(date +%s) - started)) s)"

status=0
for baseline in "${!by_baseline[@]}"; do
  rev=${baseline#rev:}
  # shellcheck disable=SC2206 # the crate list splits on purpose
  crates=(${by_baseline[$baseline]})
  echo "semver-checks.sh: baseline $rev: ${crates[*]}"
  tree=$work/tree-$(git rev-parse --short "$rev^{commit}")
  mkdir -p "$tree"
  git archive "$rev" | tar -xf - -C "$tree"
  side_started=$(date +%s)
  rustdoc_json "$tree" "$tree.json" "${crates[@]}"
  echo "semver-checks.sh: rustdoc JSON of $rev ($(($(date +%s) - side_started)) s)"
  for crate in "${crates[@]}"; do
    if [ ! -f "$tree.json/$crate.json" ]; then
      echo "semver-checks.sh: $crate is new since $rev: nothing to compare"
      continue
    fi
    echo "semver-checks.sh: $crate"
    if ! cargo semver-checks check-release \
      --current-rustdoc "$work/current/$crate.json" --baseline-rustdoc "$tree.json/$crate.json"; then
      if [ "$baseline" = "rev:$rev" ]; then
        echo "semver-checks.sh: $crate breaks its API since $rev (not failing: no release of it yet)" >&2
      else
        status=1
      fi
    fi
  done
done
echo "semver-checks.sh: took $(($(date +%s) - started)) s"
exit $status
