#!/bin/sh
# The ≤60-line host (examples/tiny_host.rs, written from the README and rustdoc alone) end to
# end against the standalone replica (responses held open, heartbeats), three processes, one
# state directory: a first turn, a tool round with the host's own `shout` tool on a resumed
# conversation, and a recall by a resume without history replay.
# Needs the replica and tiny_host examples built (cargo build -p cursor-examples --examples).
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
bin="${CARGO_TARGET_DIR:-$root/target}/debug/examples"
[ -x "$bin/replica" ] && [ -x "$bin/tiny_host" ] || { echo "tiny-host.sh: build the examples first" >&2; exit 1; }

work=$(mktemp -d)
cleanup() { [ -n "${replica_pid:-}" ] && kill "$replica_pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
"$bin/replica" --port 0 --hold-open --heartbeat-ms 50 --log "$work/runs.jsonl" >"$work/origin" 2>"$work/replica.err" &
replica_pid=$!
i=0
while ! grep -qs '^REPLICA_ORIGIN=' "$work/origin" && [ "$i" -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
origin=$(sed -n 's/^REPLICA_ORIGIN=//p' "$work/origin")
[ -n "$origin" ] || { echo "tiny-host.sh: the replica did not start: $(cat "$work/replica.err")" >&2; exit 1; }
mkdir -p "$work/state"
host() { timeout 30 "$bin/tiny_host" "$origin" "$work/state" "$1"; }

passed=0
failed=0
check() {
  if [ "$2" = ok ]; then passed=$((passed + 1)); echo "ok   $1"; else failed=$((failed + 1)); echo "FAIL $1: $2" >&2; fi
}
record() { sed -n "${1}p" "$work/runs.jsonl"; }

out=$(host "remember OKAPI-9" 2>&1) && status=ok || status="exited $?: $out"
check "process 1 answers a first turn" "$status"

out=$(host 'tool: shout {"text": "quiet words"}' 2>&1) && status=ok || status="exited $?: $out"
case "$out" in *"[tool shout -> QUIET WORDS]"*) ;; *) [ "$status" = ok ] && status="no tool round in: $out" ;; esac
check "process 2 runs a tool round with its own shout tool" "$status"
case "$(record 2)" in
  *'"label":"agent-resume"'*'"historyReplayed":false'*'"status":"success"'*) status=ok ;;
  *) status="run 2 was not a resumed tool round: $(record 2)" ;;
esac
check "process 2 resumed the remote conversation" "$status"

out=$(host "what did I ask you to remember?" 2>&1) && status=ok || status="exited $?: $out"
case "$out" in *OKAPI-9*) ;; *) [ "$status" = ok ] && status="not recalled: $out" ;; esac
check "process 3 recalls the fact" "$status"
case "$(record 3)" in
  *'"label":"agent-resume"'*'"historyReplayed":false'*) status=ok ;;
  *) status="run 3 was not a resume without history: $(record 3)" ;;
esac
check "process 3 resumed without replaying history" "$status"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
