#!/bin/sh
# The musl addons in a musl userland. No musl Node is on the registries this project reaches
# (Node publishes musl builds only as unofficial tarballs, and Alpine's packages are not served
# here), so a small musl program stands in for Node's loader: it dlopen()s the addon with RTLD_NOW
# (musl's dynamic linker then binds every undefined symbol, as it would in a musl Node), finds
# napi_register_module_v1, and prints `loaded`. A glibc build fails here (its GLIBC_ versions and
# libc.so.6 are unknown to musl), which the script also shows.
#
# x64 runs on Debian's musl (package `musl`); arm64 runs under qemu-user with Debian's arm64 musl,
# unpacked (not installed) into target/tools/. Compiles the stand-in with Zig from
# tools/build-addons.sh's venv. Builds the addons unless CURSOR_PI_SKIP_BUILD=1. The last line is
# `N passed, M failed`.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
root=$(cd "$here/../.." && pwd)
target_dir=${CARGO_TARGET_DIR:-$root/target}
tools="$target_dir/tools"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo=sudo

if [ -z "${CURSOR_PI_SKIP_BUILD:-}" ]; then
  bash "$root/tools/build-addons.sh" linux-x64-musl linux-arm64-musl
fi
zig=$(ls "$tools"/zig-*/bin/zig 2>/dev/null | tail -n1)
[ -n "$zig" ] || { echo "musl-load.sh: no Zig in $tools (run tools/build-addons.sh once)" >&2; exit 1; }
. "$root/tools/installs.sh"
if [ ! -e /lib/ld-musl-x86_64.so.1 ] || ! command -v qemu-aarch64 >/dev/null 2>&1; then
  apt_install musl qemu-user
fi
# Debian's arm64 musl, unpacked beside the tools: the arm64 architecture is added to apt only for
# the download and removed again.
arm_root="$tools/musl-arm64-root"
if [ ! -e "$arm_root/lib/ld-musl-aarch64.so.1" ]; then
  added=""
  if ! dpkg --print-foreign-architectures | grep -qx arm64; then
    $sudo dpkg --add-architecture arm64
    added=1
  fi
  (mkdir -p "$tools/debs" && cd "$tools/debs" && $sudo apt-get update -q >/dev/null && apt-get download musl:arm64 >/dev/null) || true
  if [ -n "$added" ]; then
    $sudo dpkg --remove-architecture arm64
    $sudo apt-get update -q >/dev/null || true
  fi
  deb=$(ls "$tools"/debs/musl_*_arm64.deb 2>/dev/null | tail -n1)
  [ -n "$deb" ] && dpkg-deb -x "$deb" "$arm_root"
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat >"$work/load.c" <<'EOF'
#include <dlfcn.h>
#include <stdio.h>
int main(int argc, char **argv) {
  void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!lib) { printf("dlopen failed: %s\n", dlerror()); return 1; }
  if (!dlsym(lib, "napi_register_module_v1")) { printf("no napi_register_module_v1: %s\n", dlerror()); return 1; }
  printf("loaded\n");
  return 0;
}
EOF
"$zig" cc -target x86_64-linux-musl -dynamic -O1 -o "$work/load-x64" "$work/load.c"
"$zig" cc -target aarch64-linux-musl -dynamic -O1 -o "$work/load-arm64" "$work/load.c"

passed=0
failed=0
# expect <name> <printed> <command...>
expect() {
  name=$1 want=$2
  shift 2
  out=$("$@" 2>&1) || true
  case "$out" in
    *"$want"*) passed=$((passed + 1)) && echo "ok   $name" ;;
    *) failed=$((failed + 1)) && echo "FAIL $name: printed $out" >&2 ;;
  esac
}
x64="$here/npm/linux-x64-musl/cursor-pi-adapter.linux-x64-musl.node"
arm64="$here/npm/linux-arm64-musl/cursor-pi-adapter.linux-arm64-musl.node"
expect "musl's dynamic linker runs (x64)" "musl libc (x86_64)" /lib/ld-musl-x86_64.so.1 --version
expect "linux-x64-musl loads in a musl process" loaded "$work/load-x64" "$x64"
if [ -f "$here/npm/linux-x64-gnu/cursor-pi-adapter.linux-x64-gnu.node" ]; then
  expect "linux-x64-gnu does not load in a musl process" "dlopen failed" "$work/load-x64" \
    "$here/npm/linux-x64-gnu/cursor-pi-adapter.linux-x64-gnu.node"
fi
if [ -e "$arm_root/lib/ld-musl-aarch64.so.1" ]; then
  expect "musl's dynamic linker runs (arm64, qemu)" "musl libc (aarch64)" qemu-aarch64 -L "$arm_root" "$arm_root/lib/ld-musl-aarch64.so.1" --version
  expect "linux-arm64-musl loads in a musl process (qemu)" loaded qemu-aarch64 -L "$arm_root" "$work/load-arm64" "$arm64"
  expect "linux-arm64-gnu does not load in a musl process (qemu)" "dlopen failed" qemu-aarch64 -L "$arm_root" "$work/load-arm64" \
    "$here/npm/linux-arm64-gnu/cursor-pi-adapter.linux-arm64-gnu.node"
else
  echo "skip linux-arm64-musl: Debian's arm64 musl could not be downloaded"
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
