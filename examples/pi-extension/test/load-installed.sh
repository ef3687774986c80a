#!/bin/sh
# The packed packages installed with plain npm (no pi, no Rust), then the addon loaded the way the
# extension loads it: npm picks the platform package by its os/cpu/libc fields, and the installed
# addon-loader.mjs must find it and get the native functions. For machines where the pi install
# test (test/install-pi.sh, Linux only) does not run: macOS, Windows (Git Bash), Alpine.
#
#   sh examples/pi-extension/test/load-installed.sh <triple> [pack dir, default target/npm]
#
# `node` and `npm` on PATH are the ones tested; pi itself (the peer dependencies) is not installed.
# The last line is `N passed, M failed`.
set -eu
triple=$1
here=$(cd "$(dirname "$0")/.." && pwd)
root=$(cd "$here/../.." && pwd)
pack_dir=$(cd "${2:-$root/target/npm}" && pwd)
main_tgz=$(ls "$pack_dir"/pi-cursor-reins-[0-9]*.tgz)
platform_tgz=$(ls "$pack_dir"/pi-cursor-reins-"$triple"-[0-9]*.tgz)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf '{"private":true}\n' >"$work/package.json"

passed=0
failed=0
begin() { check=$1 problems=""; }
problem() { problems="$problems $*"; }
end() {
  if [ -z "$problems" ]; then passed=$((passed + 1)) && echo "ok   $check"; else failed=$((failed + 1)) && echo "FAIL $check:$problems" >&2; fi
}

begin "npm installs $triple beside pi-cursor-reins (offline, from the tarballs)"
# The platform package first: npm then finds the main package's optional dependency installed.
(cd "$work" && npm install --offline --no-audit --no-fund --ignore-scripts --loglevel=error "$platform_tgz" >"$work/npm.log" 2>&1 &&
  npm install --offline --no-audit --no-fund --ignore-scripts --loglevel=error --legacy-peer-deps "$main_tgz" >>"$work/npm.log" 2>&1) ||
  problem "npm install failed: $(cat "$work/npm.log")"
[ -d "$work/node_modules/pi-cursor-reins-$triple" ] || problem "pi-cursor-reins-$triple is not installed"
end

begin "the installed loader picks $triple and the addon answers"
(cd "$work" && node --input-type=module -e '
  const { loadAddon, triple } = await import("pi-cursor-reins/addon-loader.mjs");
  const { dirname } = await import("node:path");
  const { createRequire } = await import("node:module");
  const main = dirname(createRequire(process.cwd() + "/").resolve("pi-cursor-reins/package.json"));
  const addon = loadAddon(main, { env: {} });
  const info = JSON.parse(addon.providerInfo());
  console.log(triple(), typeof addon.streamSimple, info.id);
' >"$work/load.txt" 2>&1) || problem "node exited $?: $(cat "$work/load.txt")"
grep -q "^$triple function cursor$" "$work/load.txt" || problem "printed: $(cat "$work/load.txt")"
end

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
