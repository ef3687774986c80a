#!/usr/bin/env bash
# Replays every EventMapper snapshot (cursor-pi-adapter/fixtures/events/*.json, field `pi`) into
# each real pi version through tools/pi/replay-events/ and checks what pi makes of it: the
# printed answer and the exit code. This is the proof that the Rust mapper's events are events
# pi accepts, beyond matching our own snapshots.
#
# Environment: PI_CACHE_DIR and PI_VERSIONS as for install.sh.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo_root="$(cd "$here/../.." && pwd)"
events="$repo_root/cursor-pi-adapter/fixtures/events"
versions="${PI_VERSIONS:-0.99.1 1.0.3 1.6.0}"

paths="$(PI_VERSIONS="$versions" "$here/install.sh")"
node_bin="$(printf '%s\n' "$paths" | sed -n 's/^PI_NODE_BIN=//p')"
export PATH="$node_bin:$PATH"

# fixture | expected exit code | expected stdout | text expected on stderr (empty: none checked)
cases=(
  "text-stop|0|Hello|"
  "thinking-tool-calls|0|replayed 2 tool results|"
  "reset-rebuild|0|fresh|"
  # pi 1.6.0 reports a `length` stop as a failure in print mode; 0.99.1 and 1.0.3 print it and exit 0.
  "length|length|cut sho|"
  "error-before-output|1||run /login cursor"
  "aborted-mid-stream|1||Request was aborted"
  # A network-kind error reads "network error: ...", which pi's retry classifier treats as
  # transient: pi retries the turn, and the second call answers.
  "ended-without-final-event|0|replayed 0 tool results|"
)

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
failures=0
passed=0
for version in $versions; do
  entry="$(printf '%s\n' "$paths" | sed -n "s/^PI_${version//./_}=//p")"
  for case in "${cases[@]}"; do
    IFS='|' read -r name want_rc want_out want_err <<<"$case"
    if [ "$want_rc" = length ]; then
      case "$version" in
        0.* | 1.0.* | 1.1.* | 1.2.*) want_rc=0 ;;
        *) want_rc=1 want_err="output token limit" ;;
      esac
    fi
    mkdir -p "$scratch/home"
    set +e
    (
      cd "$scratch"
      HOME="$scratch/home" PI_SKIP_VERSION_CHECK=1 PI_REPLAY_EVENTS="$events/$name.json" \
        node "$entry" --offline --no-session --tools bash \
        -e "$here/replay-events/index.mjs" --model replay/replay-1 -p "go" \
        </dev/null >"$scratch/out" 2>"$scratch/err"
    )
    rc=$?
    set -e
    out="$(cat "$scratch/out")"
    if [ "$rc" != "$want_rc" ] || [ "$out" != "$want_out" ] \
      || { [ -n "$want_err" ] && ! grep -qF "$want_err" "$scratch/err"; }; then
      echo "FAIL pi $version $name: rc=$rc stdout='$out' stderr='$(cat "$scratch/err")'" >&2
      failures=$((failures + 1))
    else
      passed=$((passed + 1))
    fi
  done
done
echo "replay: $passed passed, $failures failed"
[ "$failures" = 0 ]
