#!/bin/sh
# The second host, end to end: examples/mini_host.rs (cursor-agent's public API only) against
# the standalone loopback replica behaving like Cursor (responses held open after turn_ended,
# heartbeats while idle), across three processes sharing one state directory:
#   1. "remember WOMBAT-5"                      -> a first turn (a rebuild: nothing stored yet);
#   2. 'tool: list_dir {"path": "."}'           -> a tool round with the host's own tool, resumed;
#   3. "what did I ask you to remember?"        -> recalled by a resume without history replay;
# then a user API key (CURSOR_API_KEY) exchanged at the replica, and a refused one.
# Needs the replica and mini_host examples built (cargo build -p cursor-examples --examples).
# The last line is `N passed, M failed`; the exit status is non-zero when a check failed.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
bin="${CARGO_TARGET_DIR:-$root/target}/debug/examples"
[ -x "$bin/replica" ] && [ -x "$bin/mini_host" ] || { echo "mini-host.sh: build the examples first" >&2; exit 1; }

work=$(mktemp -d)
cleanup() { [ -n "${replica_pid:-}" ] && kill "$replica_pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

"$bin/replica" --port 0 --hold-open --heartbeat-ms 50 --log "$work/runs.jsonl" >"$work/origin" 2>"$work/replica.err" &
replica_pid=$!
i=0
while ! grep -qs '^REPLICA_ORIGIN=' "$work/origin" && [ "$i" -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
origin=$(sed -n 's/^REPLICA_ORIGIN=//p' "$work/origin")
[ -n "$origin" ] || { echo "mini-host.sh: the replica did not start: $(cat "$work/replica.err")" >&2; exit 1; }

mkdir -p "$work/project/src"
echo "fn main() {}" >"$work/project/src/main.rs"
echo "# demo" >"$work/project/README.md"
host() { (cd "$work/project" && env -u CURSOR_ACCESS_TOKEN -u CURSOR_API_KEY timeout 30 "$bin/mini_host" --origin "$origin" --state "$work/state" "$1"); }
# keyed KEY PROMPT: mini_host with only a user API key, in a state directory of its own.
keyed() { (cd "$work/project" && env -u CURSOR_ACCESS_TOKEN CURSOR_API_KEY="$1" timeout 30 "$bin/mini_host" --origin "$origin" --state "$work/keyed" "$2"); }

passed=0
failed=0
check() {
  if [ "$2" = ok ]; then passed=$((passed + 1)); echo "ok   $1"; else failed=$((failed + 1)); echo "FAIL $1: $2" >&2; fi
}
# record N: the Nth Run the replica logged.
record() { sed -n "${1}p" "$work/runs.jsonl"; }

out=$(host "remember WOMBAT-5" 2>&1) && status=ok || status="exited $?: $out"
check "process 1 answers a first turn" "$status"

out=$(host 'tool: list_dir {"path": "."}' 2>&1) && status=ok || status="exited $?: $out"
case "$out" in *"[tool list_dir"*README.md*) ;; *) [ "$status" = ok ] && status="no tool round in: $out" ;; esac
check "process 2 runs a tool round with its own list_dir tool" "$status"
case "$(record 2)" in
  *'"label":"agent-resume"'*'"historyReplayed":false'*'"status":"success"'*) status=ok ;;
  *) status="run 2 was not a resumed tool round: $(record 2)" ;;
esac
check "process 2 resumed the remote conversation" "$status"

out=$(host "what did I ask you to remember?" 2>&1) && status=ok || status="exited $?: $out"
case "$out" in *WOMBAT-5*) ;; *) [ "$status" = ok ] && status="not recalled: $out" ;; esac
check "process 3 recalls the fact" "$status"
case "$(record 3)" in
  *'"label":"agent-resume"'*'"historyReplayed":false'*) status=ok ;;
  *) status="run 3 was not a resume without history: $(record 3)" ;;
esac
check "process 3 resumed without replaying history" "$status"
[ "$(wc -l <"$work/runs.jsonl" | tr -d ' ')" = 3 ] && status=ok || status="expected 3 Runs: $(cat "$work/runs.jsonl")"
check "one Run per process, tool round included" "$status"

out=$(keyed crsr_mini-host-key ping 2>&1) && status=ok || status="exited $?: $out"
case "$out" in *pong*) ;; *) [ "$status" = ok ] && status="no pong: $out" ;; esac
check "CURSOR_API_KEY is exchanged at the replica and the turn answers" "$status"
runs=$(wc -l <"$work/runs.jsonl" | tr -d ' ')
out=$(keyed crsr_refused-mini-host-key ping 2>&1) && status="a refused key exited 0: $out" || status=ok
case "$out" in *refused-mini-host-key*) status="printed the key: $out" ;; *"refused the user API key"*) ;; *) [ "$status" = ok ] && status="printed: $out" ;; esac
[ "$(wc -l <"$work/runs.jsonl" | tr -d ' ')" = "$runs" ] || status="a refused key opened a Run"
check "a refused CURSOR_API_KEY fails before any Run, without printing the key" "$status"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
