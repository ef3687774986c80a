#!/usr/bin/env bash
# Builds the tests of every publishable crate from its `cargo package` tarball, as a stranger who
# downloads the crate would: path-only dev-dependencies are gone, and each sibling is the sibling's
# own tarball (a generated workspace patches crates.io to the unpacked copies, since the siblings
# are not on crates.io yet or not at this version).
#
#   tools/tarball-tests.sh            # compile every crate's tests; run the two smallest crates'
#   TARBALL_RUN="cursor-proto" tools/tarball-tests.sh   # run these crates' tests instead
#
# Compile-only for most crates: running every test suite a second time would double CI's test
# time; the run of the smallest crates proves the unpacked tests find their fixtures.
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
# Each crate alone (its own feature set, not unified with the others' dev-dependencies): one
# cargo call per crate; the dependencies are shared through the target dir.
for crate in "${publishable_crates[@]}"; do
  echo "tarball-tests.sh: cargo test -p $crate --all-features --no-run"
  if ! cargo test --quiet -p "$crate" --all-features --no-run >"$work/$crate.log" 2>&1; then
    cat "$work/$crate.log" >&2
    echo "tarball-tests.sh: $crate's tests do not build from its tarball" >&2
    exit 1
  fi
done

# The two smallest tarballs by default.
if [ -z "${TARBALL_RUN:-}" ]; then
  TARBALL_RUN=$(for crate in "${publishable_crates[@]}"; do
    echo "$(stat -c %s "$target_dir/package/$crate-${crate_version[$crate]}.crate") $crate"
  done | sort -n | head -n 2 | cut -d' ' -f2)
fi
run=$TARBALL_RUN
for crate in $run; do
  echo "tarball-tests.sh: cargo test -p $crate --all-features (run)"
  cargo test --quiet -p "$crate" --all-features
done
echo "tarball-tests.sh: took $(($(date +%s) - started)) s"
