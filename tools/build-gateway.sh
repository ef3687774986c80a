#!/usr/bin/env bash
# Builds the prebuilt cursor-gateway archives for the seven platforms of the pi addon
# (tools/build-addons.sh), from one Linux x64 machine with cargo-zigbuild, into target/gateway/:
# cursor-gateway-<version>-<rust target>.tar.gz (.zip for Windows), each with a .sha256 file.
#
#   tools/build-gateway.sh                        # all seven
#   tools/build-gateway.sh linux-x64-musl         # one
#
# Linux musl builds are static (musl links statically by default); glibc builds link against
# glibc 2.17 symbol versions like the addon. The tools (Zig from PyPI, cargo-zigbuild from
# crates.io, the rustup targets) are the ones tools/build-addons.sh installs under target/tools/.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
target_dir=${CARGO_TARGET_DIR:-$root/target}
tools="$target_dir/tools"
jobs=${GATEWAY_JOBS:-2}
zig_version=${ZIG_VERSION:-0.17.1}
zigbuild_version=${ZIGBUILD_VERSION:-0.24.1}
all=(linux-x64-gnu linux-arm64-gnu linux-x64-musl linux-arm64-musl darwin-x64 darwin-arm64 win32-x64-gnu)
[ "$#" -gt 0 ] || set -- "${all[@]}"
log() { printf 'build-gateway.sh: %s\n' "$*" >&2; }

rust_target() {
  case "$1" in
    linux-x64-gnu) echo x86_64-unknown-linux-gnu ;;
    linux-arm64-gnu) echo aarch64-unknown-linux-gnu ;;
    linux-x64-musl) echo x86_64-unknown-linux-musl ;;
    linux-arm64-musl) echo aarch64-unknown-linux-musl ;;
    darwin-x64) echo x86_64-apple-darwin ;;
    darwin-arm64) echo aarch64-apple-darwin ;;
    win32-x64-gnu) echo x86_64-pc-windows-gnu ;;
    *) log "unknown platform $1 (known: ${all[*]})"; return 1 ;;
  esac
}
for triple in "$@"; do rust_target "$triple" >/dev/null; done

# The same pinned tools as tools/build-addons.sh, in the same place (shared when both run).
mkdir -p "$tools"
venv="$tools/zig-$zig_version"
if [ ! -x "$venv/bin/zig" ]; then
  log "installing ziglang==$zig_version from PyPI into $venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "ziglang==$zig_version"
  printf '#!/bin/sh\nexec "%s" -m ziglang "$@"\n' "$venv/bin/python" >"$venv/bin/zig"
  chmod +x "$venv/bin/zig"
fi
zigbuild="$tools/cargo/bin/cargo-zigbuild"
if [ ! -x "$zigbuild" ] || [ "$("$zigbuild" --version | awk '{print $2}')" != "$zigbuild_version" ]; then
  log "installing cargo-zigbuild $zigbuild_version from crates.io"
  cargo install --quiet --locked --root "$tools/cargo" -j "$jobs" "cargo-zigbuild@$zigbuild_version"
fi
export PATH="$venv/bin:$tools/cargo/bin:$PATH"
rustup component list --installed | grep -q '^llvm-tools' || rustup component add llvm-tools >&2
llvm_bin="$(rustc --print sysroot)/lib/rustlib/$(rustc -vV | sed -n 's/^host: //p')/bin"

version=$(sed -n 's/^version = "\(.*\)"$/\1/p' cursor-gateway/Cargo.toml | head -n 1)
out="$target_dir/gateway"
mkdir -p "$out"
for triple in "$@"; do
  target=$(rust_target "$triple")
  rustup target list --installed | grep -qx "$target" || rustup target add "$target" >&2
  zig_target=$target
  case "$target" in *-linux-gnu) zig_target=$target.2.17 ;; esac
  log "building cursor-gateway for $zig_target"
  started=$(date +%s)
  cargo zigbuild --quiet --release --locked -j "$jobs" -p cursor-gateway --bin cursor-gateway \
    --target "$zig_target"
  exe=cursor-gateway
  case "$target" in *-windows-*) exe=cursor-gateway.exe ;; esac
  name="cursor-gateway-$version-$target"
  stage="$out/$name"
  rm -rf "$stage"
  mkdir -p "$stage"
  "$llvm_bin/llvm-strip" -o "$stage/$exe" "$target_dir/$target/release/$exe"
  cp cursor-gateway/README.md LICENSE-MIT LICENSE-APACHE "$stage/"
  case "$target" in
    *-windows-*) archive="$name.zip"; (cd "$out" && rm -f "$archive" && python3 -m zipfile -c "$archive" "$name") ;;
    *) archive="$name.tar.gz"; tar -C "$out" -czf "$out/$archive" --owner=0 --group=0 "$name" ;;
  esac
  rm -rf "$stage"
  (cd "$out" && sha256sum "$archive" >"$archive.sha256")
  log "$archive: $(($(stat -c %s "$out/$archive") / 1024)) KiB in $(($(date +%s) - started)) s"
done
