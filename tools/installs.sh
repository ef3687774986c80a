# Installs shared by the test scripts: sourced, never run. POSIX sh.

# apt_install PACKAGE...: installs Debian packages, through sudo unless running as root.
apt_install() {
  apt_sudo=""
  [ "$(id -u)" -eq 0 ] || apt_sudo=sudo
  $apt_sudo apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive $apt_sudo apt-get install -y -q "$@" >/dev/null
}

# npm_install_alone PREFIX SPEC [NPM_FLAG...]: installs the npm package SPEC into
# PREFIX/node_modules, a private package of its own (no lock file, no audit).
npm_install_alone() {
  npm_prefix=$1
  npm_spec=$2
  shift 2
  mkdir -p "$npm_prefix"
  printf '{"private":true}\n' >"$npm_prefix/package.json"
  npm install --prefix "$npm_prefix" --no-audit --no-fund --no-package-lock --loglevel=error \
    "$@" "$npm_spec" >&2
}

# zig_tools TOOLS_DIR JOBS: the cross linker of tools/build-addons.sh and tools/build-gateway.sh,
# pinned and installed under TOOLS_DIR when missing: Zig from PyPI (`ziglang`, ZIG_VERSION, in a
# venv, with a `zig` wrapper for the scripts that call it) and cargo-zigbuild from crates.io
# (ZIGBUILD_VERSION, --locked). Puts both on PATH.
zig_tools() {
  zig_tools_dir=$1
  zig_tools_jobs=$2
  zig_version=${ZIG_VERSION:-0.17.1}
  zigbuild_version=${ZIGBUILD_VERSION:-0.24.1}
  zig_venv="$zig_tools_dir/zig-$zig_version"
  mkdir -p "$zig_tools_dir"
  if [ ! -x "$zig_venv/bin/zig" ]; then
    echo "installs.sh: installing ziglang==$zig_version from PyPI into $zig_venv" >&2
    python3 -m venv "$zig_venv"
    "$zig_venv/bin/pip" install --quiet --disable-pip-version-check "ziglang==$zig_version"
    # cargo-zigbuild finds the venv's `python3 -m ziglang` on PATH; the scripts call `zig`.
    printf '#!/bin/sh\nexec "%s" -m ziglang "$@"\n' "$zig_venv/bin/python" >"$zig_venv/bin/zig"
    chmod +x "$zig_venv/bin/zig"
  fi
  zigbuild="$zig_tools_dir/cargo/bin/cargo-zigbuild"
  if [ ! -x "$zigbuild" ] || [ "$("$zigbuild" --version | awk '{print $2}')" != "$zigbuild_version" ]; then
    echo "installs.sh: installing cargo-zigbuild $zigbuild_version from crates.io" >&2
    cargo install --quiet --locked --root "$zig_tools_dir/cargo" -j "$zig_tools_jobs" "cargo-zigbuild@$zigbuild_version"
  fi
  PATH="$zig_venv/bin:$zig_tools_dir/cargo/bin:$PATH"
  export PATH
}

# Every platform the addon and the gateway are prebuilt for, as npm names it.
prebuilt_platforms="linux-x64-gnu linux-arm64-gnu linux-x64-musl linux-arm64-musl darwin-x64 darwin-arm64 win32-x64-gnu"

# rust_target PLATFORM: the Rust target of a platform of $prebuilt_platforms.
rust_target() {
  case "$1" in
    linux-x64-gnu) echo x86_64-unknown-linux-gnu ;;
    linux-arm64-gnu) echo aarch64-unknown-linux-gnu ;;
    linux-x64-musl) echo x86_64-unknown-linux-musl ;;
    linux-arm64-musl) echo aarch64-unknown-linux-musl ;;
    darwin-x64) echo x86_64-apple-darwin ;;
    darwin-arm64) echo aarch64-apple-darwin ;;
    win32-x64-gnu) echo x86_64-pc-windows-gnu ;;
    *) echo "installs.sh: unknown platform $1 (known: $prebuilt_platforms)" >&2; return 1 ;;
  esac
}
