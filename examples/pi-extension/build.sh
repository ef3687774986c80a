#!/bin/sh
# Builds the native addon (cursor-pi-adapter, feature `node`) and copies it to
# native/cursor-pi-adapter.<platform>-<arch>.node, where index.mjs loads it.
#
# PROFILE=release (the default) is what users install; PROFILE=debug reuses the debug build
# that `cargo test` already made (CI), which is the same code without optimisation.
set -eu
profile=${PROFILE:-release}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)

case "$(uname -s)" in
  Linux) platform=linux; library=libcursor_pi_adapter.so ;;
  Darwin) platform=darwin; library=libcursor_pi_adapter.dylib ;;
  *) echo "build.sh: unsupported OS $(uname -s)" >&2; exit 1 ;;
esac
case "$(uname -m)" in
  x86_64 | amd64) arch=x64 ;;
  aarch64 | arm64) arch=arm64 ;;
  *) echo "build.sh: unsupported CPU $(uname -m)" >&2; exit 1 ;;
esac

cd "$root"
case "$profile" in
  release) cargo build -p cursor-pi-adapter --features node --release ${CARGO_BUILD_JOBS:+-j "$CARGO_BUILD_JOBS"} ;;
  debug) cargo build -p cursor-pi-adapter --features node ${CARGO_BUILD_JOBS:+-j "$CARGO_BUILD_JOBS"} ;;
  *) echo "build.sh: PROFILE must be release or debug, not $profile" >&2; exit 1 ;;
esac
target_dir=${CARGO_TARGET_DIR:-$root/target}
mkdir -p "$here/native"
# Copy to a temporary name first: replacing a loaded library in place can crash its users.
cp "$target_dir/$profile/$library" "$here/native/.addon.tmp"
# The profiles keep symbols; the loaded copy does not need them.
if command -v strip >/dev/null 2>&1; then
  strip -x "$here/native/.addon.tmp"
fi
mv "$here/native/.addon.tmp" "$here/native/cursor-pi-adapter.$platform-$arch.node"
echo "built ($profile) $here/native/cursor-pi-adapter.$platform-$arch.node"
