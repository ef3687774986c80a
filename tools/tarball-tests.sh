#!/usr/bin/env bash
# Builds and runs the tests of every publishable crate from its `cargo package` tarball, as a
# stranger who downloads the crate would: path-only dev-dependencies are gone, and each sibling
# is the sibling's own tarball (a generated workspace patches crates.io to the unpacked copies,
# since the siblings are not on crates.io yet or not at this version).
#
#   tools/tarball-tests.sh                                 # every crate: build, then run its tests
#   TARBALL_RUN="cursor-proto" tools/tarball-tests.sh      # run only these crates' tests
#
# Each crate is built and tested alone, with its default features and then with --all-features,
# so its tests find their fixtures in the tarball and no feature arrives from another crate's
# dev-dependencies.
set -euo pipefail
cd "$(dirname "$0")/.."
started=$(date +%s)
root=$PWD
source tools/publishable.sh

# The workspace's target dir, so registry dependencies built by earlier steps are reused.
target_dir=${CARGO_TARGET_DIR:-$root/target}
case "$target_dir" in /*) ;; *) target_dir=$root/$target_dir ;; esac
export CARGO_TARGET_DIR=$target_dir

# --no-verify: .ci/run verifies the packages in its own step; here only the tarballs matter.
# --allow-dirty: by hand this tests the working tree's sources.
cargo package --workspace --no-verify --allow-dirty --quiet

# A fixed path (wiped each run) keeps the target dir from collecting one copy per temp dir; tar -m
# stamps the files now, so cargo rebuilds the crates from these sources and never from a cache.
work=$target_dir/tarball-tests
rm -rf "$work"
mkdir -p "$work"
members=()
patches=()
for crate in "${publishable_crates[@]}"; do
  tarball=$target_dir/package/$crate-${crate_version[$crate]}.crate
  [ -f "$tarball" ] || { echo "tarball-tests.sh: missing $tarball" >&2; exit 1; }
  printf '%-20s %6s KiB\n' "$crate" "$(($(stat -c %s "$tarball") / 1024))"
  tar -xzmf "$tarball" -C "$work"
  members+=("\"$crate-${crate_version[$crate]}\"")
  patches+=("$crate = { path = \"$crate-${crate_version[$crate]}\" }")
done

# The unpacked manifests are the published ones: siblings by version from crates.io, which the
# patch replaces with the unpacked tarballs.
{
  echo '[workspace]'
  echo 'resolver = "3"'
  echo "members = [$(IFS=,; echo "${members[*]}")]"
  echo '[patch.crates-io]'
  printf '%s\n' "${patches[@]}"
} >"$work/Cargo.toml"
# The workspace lockfile: the same dependency versions the workspace tests, nothing to download.
cp Cargo.lock "$work/Cargo.lock"

cd "$work"
# Each crate alone (its own feature set, not unified with the others' dependencies): one cargo
# call per crate and feature set, first the default features (what `cargo test -p <crate>` runs
# for whoever downloads it), then --all-features (every test the crate ships); the dependencies
# are shared through the target dir.
run=${TARBALL_RUN:-${publishable_crates[*]}}
for crate in "${publishable_crates[@]}"; do
  mode=--no-run
  case " $run " in *" $crate "*) mode= ;; esac
  for features in default --all-features; do
    flag=$features
    [ "$features" = default ] && flag=
    crate_started=$(date +%s)
    log=$work/$crate.$features.log
    if ! cargo test --quiet -p "$crate" $flag $mode >"$log" 2>&1; then
      cat "$log" >&2
      if [ -n "$mode" ]; then
        echo "tarball-tests.sh: $crate's tests do not build from its tarball ($features features)" >&2
      else
        echo "tarball-tests.sh: $crate's tests fail from its tarball ($features features)" >&2
      fi
      exit 1
    fi
    took=$(($(date +%s) - crate_started))
    if [ -n "$mode" ]; then
      echo "tarball-tests.sh: $crate ($features): tests built ($took s)"
    else
      passed=$(awk '/^test result: ok\./ { n += $4 } END { print n + 0 }' "$log")
      echo "tarball-tests.sh: $crate ($features): $passed tests passed ($took s)"
    fi
  done
done
echo "tarball-tests.sh: took $(($(date +%s) - started)) s"
