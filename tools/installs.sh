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
