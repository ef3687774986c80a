#!/usr/bin/env bash
# Shows tools/check-addons.sh tells a good addon from planted bad ones. The plants are small
# shared objects the host C compiler makes in a few seconds (no Rust build needed), so CI runs it:
#   - a control that meets every rule (exports napi_register_module_v1, needs only libc, uses
#     only old glibc symbols, 1 MiB of data) must pass as linux-x64-gnu;
#   - the same file checked as another platform's addon (arm64, musl, macOS, Windows), without
#     the export, needing libstdc++, calling a GLIBC_2.34 symbol, with an undefined
#     non-Node-API symbol, or truncated must each fail, with the reason it printed;
#   - cross-built addons, where present, must fail as another platform's;
#   - with Zig present (tools/build-addons.sh installs it), a Mach-O dylib passes with an
#     @rpath install name and fails with the build path a plain link records.
# The last line is `N passed, M failed`.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
check="$root/tools/check-addons.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cc=${CC:-cc}
cxx=${CXX:-c++}

# One MiB of initialised data keeps every plant over the size floor.
cat >"$work/base.c" <<'EOF'
#include <unistd.h>
const char padding[1 << 20] = {1};
void *napi_register_module_v1(void *env, void *exports) { write(1, padding, 0); return exports; }
EOF
"$cc" -shared -fPIC -O1 -o "$work/good.node" "$work/base.c"

sed 's/napi_register_module_v1/other_entry/' "$work/base.c" >"$work/noexport.c"
"$cc" -shared -fPIC -O1 -o "$work/noexport.node" "$work/noexport.c"

# pthread_* moved into libc.so.6 as GLIBC_2.34: a build against a new glibc picks those versions.
cat >"$work/newglibc.c" <<'EOF'
#include <pthread.h>
const char padding[1 << 20] = {1};
static void *run(void *p) { return p; }
void *napi_register_module_v1(void *env, void *exports) {
  pthread_t t; pthread_create(&t, 0, run, 0); pthread_join(t, 0); return exports + padding[0];
}
EOF
"$cc" -shared -fPIC -O1 -o "$work/newglibc.node" "$work/newglibc.c"

cat >"$work/cxx.cc" <<'EOF'
#include <string>
extern const char padding[1 << 20] = {1};
extern "C" void *napi_register_module_v1(void *env, void *exports) {
  static std::string s(padding, 10); return (char *)exports + s.size();
}
EOF
"$cxx" -shared -fPIC -O1 -o "$work/cxx.node" "$work/cxx.cc"

# A symbol left for the loading process to supply that is not Node-API.
cat >"$work/undef.c" <<'EOF'
const char padding[1 << 20] = {1};
extern void *some_node_internal(void *);
void *napi_register_module_v1(void *env, void *exports) { return some_node_internal(exports) + padding[0]; }
EOF
"$cc" -shared -fPIC -O1 -o "$work/undef.node" "$work/undef.c"

head -c 200000 "$work/good.node" >"$work/truncated.node"

passed=0
failed=0
# expect <pass|fail> <what the output must say> <TRIPLE=FILE> <name>
expect() {
  local want=$1 says=$2 pair=$3 name=$4 status=0 out
  out=$("$check" "$pair" 2>&1) || status=$?
  if { [ "$want" = pass ] && [ "$status" -eq 0 ]; } || { [ "$want" = fail ] && [ "$status" -ne 0 ] && grep -qF -- "$says" <<<"$out"; }; then
    passed=$((passed + 1))
    echo "ok   $name"
  else
    failed=$((failed + 1))
    echo "FAIL $name: expected $want${says:+ saying '$says'}, exit $status: $out" >&2
  fi
}

expect pass "" "linux-x64-gnu=$work/good.node" "a good addon passes as linux-x64-gnu"
expect fail "not EM_AARCH64" "linux-arm64-gnu=$work/good.node" "an x64 file fails as linux-arm64-gnu"
expect fail "which a musl Linux does not guarantee" "linux-x64-musl=$work/good.node" "a glibc file fails as linux-x64-musl"
expect fail "not a 64-bit Mach-O file" "darwin-arm64=$work/good.node" "an ELF file fails as darwin-arm64"
expect fail "not a PE/COFF file" "win32-x64-gnu=$work/good.node" "an ELF file fails as win32-x64-gnu"
expect fail "does not export napi_register_module_v1" "linux-x64-gnu=$work/noexport.node" "an addon without the registration symbol fails"
expect fail "newer than the minimum GLIBC_2.17" "linux-x64-gnu=$work/newglibc.node" "an addon needing GLIBC_2.34 fails"
expect fail "needs libstdc++.so.6" "linux-x64-gnu=$work/cxx.node" "an addon needing libstdc++ fails"
expect fail "some_node_internal is undefined" "linux-x64-gnu=$work/undef.node" "an undefined non-Node-API symbol fails"
expect fail "under 1048576" "linux-x64-gnu=$work/truncated.node" "a truncated addon fails"
expect fail "missing" "linux-x64-gnu=$work/absent.node" "a missing addon fails"

# With cross-built addons present (tools/build-addons.sh), each must fail as the wrong platform.
npm_dir="$root/examples/pi-extension/npm"
if [ -f "$npm_dir/darwin-arm64/cursor-pi-adapter.darwin-arm64.node" ]; then
  expect fail "CPU is Arm64 (0x100000C), not X86-64" "darwin-x64=$npm_dir/darwin-arm64/cursor-pi-adapter.darwin-arm64.node" "a darwin-arm64 addon fails as darwin-x64"
fi
if [ -f "$npm_dir/win32-x64-gnu/cursor-pi-adapter.win32-x64-gnu.node" ]; then
  expect fail "not a 64-bit ELF file" "linux-x64-gnu=$npm_dir/win32-x64-gnu/cursor-pi-adapter.win32-x64-gnu.node" "a Windows addon fails as linux-x64-gnu"
fi
if [ -f "$npm_dir/linux-arm64-gnu/cursor-pi-adapter.linux-arm64-gnu.node" ]; then
  expect fail "versioned symbol: musl has none" "linux-arm64-musl=$npm_dir/linux-arm64-gnu/cursor-pi-adapter.linux-arm64-gnu.node" "a glibc arm64 addon fails as linux-arm64-musl"
fi

# Mach-O plants need a Mach-O linker: Zig, once tools/build-addons.sh has installed it. The same
# dylib passes with an @rpath install name and fails with the absolute path a plain link records.
zig="$root/target/tools/zig-${ZIG_VERSION:-0.17.1}/bin/zig"
if [ -x "$zig" ]; then
  "$zig" cc -target aarch64-macos -shared -O1 -Wl,-install_name,@rpath/cursor-pi-adapter.node \
    -o "$work/rpath.dylib" "$work/base.c"
  "$zig" cc -target aarch64-macos -shared -O1 -o "$work/absolute.dylib" "$work/base.c"
  expect pass "" "darwin-arm64=$work/rpath.dylib" "a Mach-O dylib named @rpath/… passes as darwin-arm64"
  expect fail "its install name is $work/absolute.dylib" "darwin-arm64=$work/absolute.dylib" "a Mach-O dylib named by its build path fails"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
