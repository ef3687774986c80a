#!/usr/bin/env bash
# Checks that each published crate's public API exposes only the foreign types its manifest
# allows ([package.metadata.cargo_check_external_types]), with cargo-check-external-types. It
# reads rustdoc's JSON, so it needs the nightly that the tool's version supports (the tool's
# README names it); rustup installs it from static.rust-lang.org. Not in .ci/run: the install
# and a nightly rustdoc of every crate take several minutes. Run it before a release.
#
#   tools/external-types.sh
#   EXTERNAL_TYPES_NIGHTLY=nightly-2025-10-18 EXTERNAL_TYPES_VERSION=0.5.0 tools/external-types.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/publishable.sh
nightly=${EXTERNAL_TYPES_NIGHTLY:-nightly}
version=${EXTERNAL_TYPES_VERSION:-0.5.0}
target_dir=${CARGO_TARGET_DIR:-$PWD/target}
tools=$target_dir/tools/cargo
rustup run "$nightly" rustc --version >/dev/null 2>&1 || rustup toolchain install "$nightly" --profile minimal
if [ "$("$tools/bin/cargo-check-external-types" --version 2>/dev/null | awk '{print $2}')" != "$version" ]; then
  cargo install --quiet --locked --root "$tools" "cargo-check-external-types@$version"
fi
export PATH="$tools/bin:$PATH"
status=0
for crate in "${publishable_crates[@]}"; do
  dir=$(dirname "$(cargo metadata --no-deps --format-version 1 | python3 -c "import json,sys; print([p['manifest_path'] for p in json.load(sys.stdin)['packages'] if p['name']=='$crate'][0])")")
  echo "external-types.sh: $crate"
  (cd "$dir" && CARGO_TARGET_DIR=$target_dir/external-types cargo "+$nightly" check-external-types --all-features) || status=1
done
exit $status
