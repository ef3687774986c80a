#!/bin/sh
# The install a user without Rust makes: `pi install` of the two packed tarballs (tools/pack-pi.sh)
# into a fresh HOME whose PATH has no cargo or rustc, then pi uses the provider from there, with
# no -e. For every pi version tools/pi/install.sh installs:
#   - the main package alone: loading it fails with an error naming the missing platform package;
#   - the platform package, then the main one: `pi list` shows both, `--list-models cursor` lists
#     the catalog and `-p ping` answers `pong` through the loopback replica, on a headless token.
# Then it prints the tarball sizes, the installed size, and the cold start the installed package
# adds to `pi --list-models` (median of COLD_START_RUNS, default 5; 0 skips it).
#
# The registry does not have our packages, so npm runs offline (npm_config_offline): the
# platform package is installed first and satisfies the main package's optional dependency.
# PROFILE=debug packs the debug addon (what CI does: the test build already made it);
# CURSOR_PI_SKIP_BUILD=1 uses the tarballs already in $PACK_DIR (default target/npm) and the
# replica already built. The last line is `N passed, M failed`.
#
# Another platform's addon, run through an emulator (test/install-pi-arm64.sh does this):
# INSTALL_PLATFORM names the platform package to install (default linux-x64-gnu),
# INSTALL_NODE_BIN a folder whose `node` runs that platform's Node, and INSTALL_PI_VERSIONS the
# pi versions to test (default: all three).
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
root=$(cd "$here/../.." && pwd)
cd "$root"
target_dir=${CARGO_TARGET_DIR:-$root/target}
pack_dir=${PACK_DIR:-$target_dir/npm}

if [ -z "${CURSOR_PI_SKIP_BUILD:-}" ]; then
  PACK_DIR=$pack_dir bash tools/pack-pi.sh
  cargo build --quiet -p cursor-examples --example replica ${CARGO_BUILD_JOBS:+-j "$CARGO_BUILD_JOBS"}
fi
replica_bin="$target_dir/debug/examples/replica"
[ -x "$replica_bin" ] || { echo "install-pi.sh: no replica at $replica_bin" >&2; exit 1; }
platform=${INSTALL_PLATFORM:-linux-x64-gnu}
main_tgz=$(ls "$pack_dir"/pi-cursor-reins-[0-9]*.tgz)
platform_tgz=$(ls "$pack_dir"/pi-cursor-reins-"$platform"-[0-9]*.tgz)
eval "$(bash tools/pi/install.sh 2>/dev/null)"
node_bin=${INSTALL_NODE_BIN:-$PI_NODE_BIN}

# A PATH with Node 22, npm and the system tools, and no Rust toolchain.
npm_dir=$(dirname "$(command -v npm)")
clean_path="$node_bin:$npm_dir:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin"
for tool in cargo rustc; do
  if PATH=$clean_path command -v "$tool" >/dev/null 2>&1; then
    echo "install-pi.sh: $tool is on the clean PATH ($(PATH=$clean_path command -v "$tool")); the test needs a PATH without Rust" >&2
    exit 1
  fi
done

work=$(mktemp -d)
cleanup() {
  stop_replicas
  rm -rf "$work"
}
trap cleanup EXIT
. "$here/test/lib.sh"
start_replica runs

# in_home <home> <command...>: runs with only that HOME, the clean PATH, and the replica as
# Cursor; a headless token stands in for /login cursor.
in_home() {
  home=$1
  shift
  mkdir -p "$home"
  (cd "$work" && env -i HOME="$home" PATH="$clean_path" LANG=C.UTF-8 PI_SKIP_VERSION_CHECK=1 npm_config_offline=true \
    npm_config_update_notifier=false CURSOR_ACCESS_TOKEN=install-test-token \
    CURSOR_PROVIDER_AGENT_ORIGIN="$origin" CURSOR_PROVIDER_API_ORIGIN="$origin" "$@" </dev/null)
}

for version in ${INSTALL_PI_VERSIONS:-0.99.1 1.0.3 1.6.0}; do
  entry=$(eval echo "\$PI_$(echo "$version" | tr . _)")

  begin "$version the main package without its platform package names the missing one"
  home="$work/alone-$version"
  in_home "$home" node "$entry" install "npm:pi-cursor-reins@file:$main_tgz" >"$work/install.log" 2>&1 ||
    problem "pi install exited $?: $(cat "$work/install.log")"
  # `-p` reports extension load failures in every version (0.99.1 and 1.0.3 --list-models do not).
  status=0
  out=$(in_home "$home" node "$entry" --offline --no-session --model cursor/composer-2.5 -p ping 2>&1) || status=$?
  [ "$status" -ne 0 ] || problem "-p ping exited 0"
  case "$out" in
    *"pi-cursor-reins-$platform is missing"*) ;;
    *) problem "printed: $out" ;;
  esac
  end

  begin "$version pi install of both tarballs, then --list-models and -p ping"
  home="$work/home-$version"
  for spec in "pi-cursor-reins-$platform@file:$platform_tgz" "pi-cursor-reins@file:$main_tgz"; do
    in_home "$home" node "$entry" install "npm:$spec" >"$work/install.log" 2>&1 ||
      problem "pi install npm:$spec exited $?: $(cat "$work/install.log")"
  done
  listed=$(in_home "$home" node "$entry" list 2>&1) || problem "pi list exited $?"
  case "$listed" in
    *"npm:pi-cursor-reins-$platform@file:"*"npm:pi-cursor-reins@file:"*) ;;
    *) problem "pi list printed: $listed" ;;
  esac
  models=$(in_home "$home" node "$entry" --offline --no-session --list-models cursor 2>&1) || problem "--list-models exited $?"
  rows=$(printf '%s\n' "$models" | grep -c '^cursor ' || true)
  [ "$rows" -ge 5 ] || problem "listed $rows cursor models: $models"
  out=$(in_home "$home" node "$entry" --offline --no-session --model cursor/composer-2.5 -p ping 2>&1) || problem "-p ping exited $?"
  [ "$out" = "pong" ] || problem "-p ping printed: $out"
  end
done

installed="$work/home-1.6.0/.pi/agent/npm/node_modules"
for tarball in "$main_tgz" "$platform_tgz"; do
  echo "tarball $(basename "$tarball"): $(wc -c <"$tarball" | tr -d ' ') bytes"
done
[ -d "$installed" ] && echo "installed: $(du -sk "$installed/pi-cursor-reins" | cut -f1) KiB + $(du -sk "$installed/pi-cursor-reins-$platform" | cut -f1) KiB"

runs=${COLD_START_RUNS:-5}
median_ms() {
  sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}
elapsed_ms() {
  start=$(date +%s%N)
  in_home "$@" >/dev/null 2>&1 || true
  stop=$(date +%s%N)
  echo $(((stop - start) / 1000000))
}
if [ "$runs" -gt 0 ]; then
  entry=$PI_1_6_0
  : >"$work/bare" && : >"$work/installed"
  i=0
  while [ "$i" -lt "$runs" ]; do
    elapsed_ms "$work/bare-home" node "$entry" --offline --no-session --list-models >>"$work/bare"
    elapsed_ms "$work/home-1.6.0" node "$entry" --offline --no-session --list-models >>"$work/installed"
    i=$((i + 1))
  done
  bare=$(median_ms <"$work/bare")
  with=$(median_ms <"$work/installed")
  echo "pi 1.6.0 --list-models, median of $runs: ${bare} ms with nothing installed, ${with} ms with the installed package (+$((with - bare)) ms)"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
