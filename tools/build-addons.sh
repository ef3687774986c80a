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
glibc=2.17

source "$root/tools/installs.sh"
read -r -a all <<<"$prebuilt_platforms"
[ "$#" -gt 0 ] || set -- "${all[@]}"

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
zig_tools "$tools" "$jobs"
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
