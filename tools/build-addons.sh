#!/usr/bin/env bash
# Cross-builds the release Node addon (cursor-pi-adapter, feature `node`) for every platform
# package in examples/pi-extension/npm/, from one Linux x64 machine, and copies each into its
# package folder as cursor-pi-adapter.<triple>.node (then tools/check-addons.sh checks them and
# tools/pack-pi.sh packs them).
#
#   tools/build-addons.sh                          # all seven platforms
#   tools/build-addons.sh linux-arm64-gnu win32-x64-gnu
#
# The linker is Zig through cargo-zigbuild: one toolchain that links for glibc (at a chosen
# version), musl, macOS (no SDK needed: Zig ships the libSystem stubs) and MinGW Windows, which
# the napi-rs CLI also calls for its cross builds. Everything comes from the registries and lands
# under target/tools/: the Rust targets (rustup), cargo-zigbuild (crates.io, --locked) and Zig
# (PyPI `ziglang`, in a venv). Windows is the GNU ABI (x86_64-pc-windows-gnu, package
# win32-x64-gnu): an MSVC build needs Microsoft's CRT and SDK, which no registry here serves.
#
# glibc builds link against glibc 2.17 symbol versions (what napi-rs ships and Rust's own minimum
# for these targets), so the addon loads on any distribution Node 22 itself runs on.
#
# Environment: CARGO_TARGET_DIR (default target/), ADDON_JOBS (cargo -j, default 2),
# ZIG_VERSION / ZIGBUILD_VERSION (the pinned tool versions below).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ext="$root/examples/pi-extension"
target_dir=${CARGO_TARGET_DIR:-$root/target}
tools="$target_dir/tools"
jobs=${ADDON_JOBS:-2}
zig_version=${ZIG_VERSION:-0.17.1}
zigbuild_version=${ZIGBUILD_VERSION:-0.24.1}
glibc=2.17

all=(linux-x64-gnu linux-arm64-gnu linux-x64-musl linux-arm64-musl darwin-x64 darwin-arm64 win32-x64-gnu)
[ "$#" -gt 0 ] || set -- "${all[@]}"

# rust_target <triple>: the Rust target of a package triple.
rust_target() {
  case "$1" in
    linux-x64-gnu) echo x86_64-unknown-linux-gnu ;;
    linux-arm64-gnu) echo aarch64-unknown-linux-gnu ;;
    linux-x64-musl) echo x86_64-unknown-linux-musl ;;
    linux-arm64-musl) echo aarch64-unknown-linux-musl ;;
    darwin-x64) echo x86_64-apple-darwin ;;
    darwin-arm64) echo aarch64-apple-darwin ;;
    win32-x64-gnu) echo x86_64-pc-windows-gnu ;;
    *) echo "build-addons.sh: unknown platform $1 (known: ${all[*]})" >&2; return 1 ;;
  esac
}
# library <rust target>: the file name cargo gives the cdylib.
library() {
  case "$1" in
    *-apple-darwin) echo libcursor_pi_adapter.dylib ;;
    *-windows-*) echo cursor_pi_adapter.dll ;;
    *) echo libcursor_pi_adapter.so ;;
  esac
}

log() { printf 'build-addons.sh: %s\n' "$*" >&2; }
for triple in "$@"; do rust_target "$triple" >/dev/null; done

# --- the tools ---------------------------------------------------------------
mkdir -p "$tools"
venv="$tools/zig-$zig_version"
if [ ! -x "$venv/bin/zig" ]; then
  log "installing ziglang==$zig_version from PyPI into $venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "ziglang==$zig_version"
  # cargo-zigbuild finds the venv's `python3 -m ziglang` on PATH; the other scripts call `zig`.
  printf '#!/bin/sh\nexec "%s" -m ziglang "$@"\n' "$venv/bin/python" >"$venv/bin/zig"
  chmod +x "$venv/bin/zig"
fi
zigbuild="$tools/cargo/bin/cargo-zigbuild"
if [ ! -x "$zigbuild" ] || [ "$("$zigbuild" --version | awk '{print $2}')" != "$zigbuild_version" ]; then
  log "installing cargo-zigbuild $zigbuild_version from crates.io"
  cargo install --quiet --locked --root "$tools/cargo" -j "$jobs" "cargo-zigbuild@$zigbuild_version"
fi
export PATH="$venv/bin:$tools/cargo/bin:$PATH"
log "zig $(zig version), $(cargo-zigbuild --version)"

targets=()
for triple in "$@"; do targets+=("$(rust_target "$triple")"); done
installed=$(rustup target list --installed)
for target in "${targets[@]}"; do
  grep -qx "$target" <<<"$installed" || rustup target add "$target" >&2
done
# llvm-strip strips ELF, Mach-O and PE alike.
rustup component list --installed | grep -q '^llvm-tools' || rustup component add llvm-tools >&2
llvm_bin="$(rustc --print sysroot)/lib/rustlib/$(rustc -vV | sed -n 's/^host: //p')/bin"

# napi's build script links windows-gnu addons against libnode (`-lnode`, found through
# LIBNODE_PATH), though with napi's `dyn-symbols` the addon looks every Node-API function up in
# the running node.exe and references none of them. An import library naming node.exe, with no
# symbols, satisfies the link without adding an import (tools/check-addons.sh checks that).
libnode="$tools/libnode"
if [ ! -f "$libnode/libnode.a" ]; then
  mkdir -p "$libnode"
  printf 'LIBRARY node.exe\nEXPORTS\n' >"$libnode/node.def"
  zig dlltool -m i386:x86-64 -d "$libnode/node.def" -l "$libnode/libnode.a"
  # napi-build only checks that this file exists; the linker takes the import library.
  : >"$libnode/libnode.dll"
fi
export LIBNODE_PATH="$libnode"
# cargo-zigbuild drops the export list rustc writes for windows-gnu (list.def), and the linker
# then exports every global symbol but napi_register_module_v1, the one Node looks for. Our own
# .def names it, which also keeps the export table to that one symbol, as an MSVC build has.
printf 'EXPORTS\n    napi_register_module_v1\n' >"$tools/napi-exports.def"

# --- the builds --------------------------------------------------------------
started=$(date +%s)
for triple in "$@"; do
  target=$(rust_target "$triple")
  zig_target=$target
  rustflags=()
  case "$target" in
    *-linux-gnu) zig_target="$target.$glibc" ;;
    # Rust links musl statically by default, and a static binary cannot be a cdylib.
    *-linux-musl) rustflags=(-C target-feature=-crt-static) ;;
    *-windows-gnu) rustflags=(-C "link-arg=-Wl,$tools/napi-exports.def") ;;
    # The linker would record this machine's build path as the dylib's own name.
    *-apple-darwin) rustflags=(-C "link-arg=-Wl,-install_name,@rpath/cursor-pi-adapter.node") ;;
  esac
  log "building $triple ($zig_target)"
  one_started=$(date +%s)
  # RUSTFLAGS for this target only, so the host build scripts keep their own flags.
  flags_var="CARGO_TARGET_$(echo "$target" | tr 'a-z-' 'A-Z_')_RUSTFLAGS"
  (cd "$root" && env "$flags_var=${rustflags[*]}" nice -n 10 cargo zigbuild --release -j "$jobs" \
    -p cursor-pi-adapter --features node --target "$zig_target")
  built="$target_dir/$target/release/$(library "$target")"
  package="$ext/npm/$triple"
  [ -f "$package/package.json" ] || { log "no package at $package"; exit 1; }
  addon="$package/cursor-pi-adapter.$triple.node"
  cp "$built" "$addon.tmp"
  case "$target" in
    *-apple-darwin) "$llvm_bin/llvm-strip" -x "$addon.tmp" ;;
    *) "$llvm_bin/llvm-strip" --strip-unneeded "$addon.tmp" ;;
  esac
  mv "$addon.tmp" "$addon"
  log "built $addon: $(wc -c <"$addon" | tr -d ' ') bytes in $(($(date +%s) - one_started)) s"
done
log "built $# addons in $(($(date +%s) - started)) s"
