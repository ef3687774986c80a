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
source "$root/tools/installs.sh"
read -r -a all <<<"$prebuilt_platforms"
[ "$#" -gt 0 ] || set -- "${all[@]}"
log() { printf 'build-gateway.sh: %s\n' "$*" >&2; }

for triple in "$@"; do rust_target "$triple" >/dev/null; done

# The same pinned tools as tools/build-addons.sh, in the same place (shared when both run).
zig_tools "$tools" "$jobs"
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
