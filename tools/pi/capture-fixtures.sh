#!/usr/bin/env bash
# Regenerates cursor-pi-adapter/fixtures/pi-<version>/ by running the dump-context extension
# headless inside each real pi version (installed by tools/pi/install.sh), fully offline.
#
# Per version: one `pi -p` run with an image attached (@pixel.png) whose fake model calls `read`
# on that PNG, then `read` on a missing file (after narrowing the active tools), then answers.
# Each of the three streamSimple calls is dumped and scrubbed (paths -> <WORK>/<HOME>/<PI_PREFIX>,
# times -> 0). Afterwards run
#   UPDATE_SNAPSHOTS=1 cargo test -p cursor-pi-adapter --test compat
# to refresh the expected IR snapshots, and review the diff.
#
# Environment: PI_CACHE_DIR and PI_VERSIONS as for install.sh.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo_root="$(cd "$here/../.." && pwd)"
fixtures="$repo_root/cursor-pi-adapter/fixtures"
versions="${PI_VERSIONS:-0.99.1 1.0.3 1.6.0}"

paths="$(PI_VERSIONS="$versions" "$here/install.sh")"
node_bin="$(printf '%s\n' "$paths" | sed -n 's/^PI_NODE_BIN=//p')"
export PATH="$node_bin:$PATH"
cache_dir="$(cd "$node_bin/../../../.." && pwd)"

# A 1x1 red PNG: what `@pixel.png` attaches to the prompt and what `read` returns as an image.
pixel_png='iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC'

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT

for version in $versions; do
  entry="$(printf '%s\n' "$paths" | sed -n "s/^PI_${version//./_}=//p")"
  [ -f "$entry" ] || { echo "capture-fixtures.sh: no pi $version entry" >&2; exit 1; }
  run="$scratch/$version"
  mkdir -p "$run/home" "$run/work" "$run/dumps"
  printf '%s' "$pixel_png" | base64 -d >"$run/work/pixel.png"

  # --offline: no catalog refresh or version check; --no-session: nothing persisted;
  # a private HOME: pi writes ~/.pi/agent/{auth.json,models-store.json} there, not in ours.
  (
    cd "$run/work"
    HOME="$run/home" PI_SKIP_VERSION_CHECK=1 PI_DUMP_CONTEXT_DIR="$run/dumps" \
      node "$entry" --offline --no-session \
      -e "$here/dump-context/index.mjs" --model dump/dump-1 \
      -p @pixel.png "What is in this picture?" </dev/null >"$run/stdout"
  )
  answer="$(cat "$run/stdout")"
  [ "$answer" = "done after 7 messages" ] || {
    echo "capture-fixtures.sh: pi $version answered '$answer', expected 'done after 7 messages'" >&2
    exit 1
  }

  out="$fixtures/pi-$version"
  rm -rf "$out"
  node "$here/dump-context/scrub.mjs" "$run/dumps" "$out" \
    "$run/work=<WORK>" "$run/home=<HOME>" "$cache_dir/pi-$version=<PI_PREFIX>"
done
