#!/usr/bin/env bash
# Builds this machine's native addon and packs the npm packages pi installs: pi-cursor-reins (the
# pi package: manifest, index.mjs, addon-loader.mjs) and one pi-cursor-reins-<triple> for every
# platform whose addon is in examples/pi-extension/npm/<triple>/ (this machine's, plus whatever
# tools/build-addons.sh cross-built). The tarballs land in target/npm/ (or $PACK_DIR); the last
# lines name them with their sizes.
#
#   tools/pack-pi.sh                    # release addon (what users install; ~4 min from cold)
#   PROFILE=debug tools/pack-pi.sh      # the debug build `cargo test` already made (CI)
#   CARGO_BUILD_TARGET=aarch64-unknown-linux-gnu tools/pack-pi.sh   # another target, see
#                                       # examples/pi-extension/npm/<triple>/README.md
#   tools/build-addons.sh && CURSOR_PI_SKIP_BUILD=1 tools/pack-pi.sh   # every platform, no build here
#
# Then, without Rust: pi install npm:<platform tarball> && pi install npm:<main tarball>
# (the platform package first, so npm finds the optional dependency already installed).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ext="$root/examples/pi-extension"
profile=${PROFILE:-release}
target_dir=${CARGO_TARGET_DIR:-$root/target}
out=${PACK_DIR:-$target_dir/npm}

if [ -z "${CURSOR_PI_SKIP_BUILD:-}" ]; then
  rust_target=${CARGO_BUILD_TARGET:-$(rustc -vV | sed -n 's/^host: //p')}
  case "$rust_target" in
    x86_64-unknown-linux-gnu) triple=linux-x64-gnu library=libcursor_pi_adapter.so ;;
    aarch64-unknown-linux-gnu) triple=linux-arm64-gnu library=libcursor_pi_adapter.so ;;
    x86_64-unknown-linux-musl) triple=linux-x64-musl library=libcursor_pi_adapter.so ;;
    aarch64-unknown-linux-musl) triple=linux-arm64-musl library=libcursor_pi_adapter.so ;;
    x86_64-apple-darwin) triple=darwin-x64 library=libcursor_pi_adapter.dylib ;;
    aarch64-apple-darwin) triple=darwin-arm64 library=libcursor_pi_adapter.dylib ;;
    x86_64-pc-windows-gnu) triple=win32-x64-gnu library=cursor_pi_adapter.dll ;;
    *) echo "pack-pi.sh: no npm platform package is declared for $rust_target" >&2; exit 1 ;;
  esac
  package="$ext/npm/$triple"

  # cargo reads CARGO_BUILD_TARGET itself (and then writes to target/<target>/<profile>).
  flags=(-p cursor-pi-adapter --features node)
  case "$profile" in
    release) flags+=(--release) ;;
    debug) ;;
    *) echo "pack-pi.sh: PROFILE must be release or debug, not $profile" >&2; exit 1 ;;
  esac
  (cd "$root" && cargo build "${flags[@]}")
  built="$target_dir/$profile/$library"
  [ -z "${CARGO_BUILD_TARGET:-}" ] || built="$target_dir/$CARGO_BUILD_TARGET/$profile/$library"

  addon="$package/cursor-pi-adapter.$triple.node"
  cp "$built" "$addon.tmp"
  # The profiles keep symbols; the shipped copy does not need them.
  case "$triple" in
    win32-*) ;;
    darwin-*) strip -x "$addon.tmp" 2>/dev/null || true ;;
    *) command -v strip >/dev/null 2>&1 && strip --strip-unneeded "$addon.tmp" ;;
  esac
  mv "$addon.tmp" "$addon"
fi

mkdir -p "$out"
rm -f "$out"/pi-cursor-reins-*.tgz
packed=0
for package in "$ext"/npm/*/; do
  triple=$(basename "$package")
  [ -f "$package/cursor-pi-adapter.$triple.node" ] || continue
  (cd "$package" && npm pack --silent --pack-destination "$out" >/dev/null)
  packed=$((packed + 1))
done
[ "$packed" -gt 0 ] || { echo "pack-pi.sh: no addon in $ext/npm/*/ to pack (build one first)" >&2; exit 1; }
(cd "$ext" && npm pack --silent --pack-destination "$out" >/dev/null)
built_as=$profile
[ -z "${CURSOR_PI_SKIP_BUILD:-}" ] || built_as="addons as built"
for tarball in "$out"/pi-cursor-reins-*.tgz; do
  printf '%s %s bytes (%s)\n' "$tarball" "$(wc -c <"$tarball" | tr -d ' ')" "$built_as"
done
