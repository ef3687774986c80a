#!/bin/sh
# cursor-gateway's Anthropic Messages API with clients nobody here wrote, against the standalone
# replica (responses held open, heartbeats, native execs sent whatever the allowed-tools header
# says):
#
#   1. Claude Code (`@anthropic-ai/claude-code` from npm, pinned) in print mode with
#      ANTHROPIC_BASE_URL at the gateway, under strace:
#      - a prompt whose answer needs one Bash call: the replica asks for a native shell exec,
#        the gateway hands it to Claude Code as a call of its own Bash tool, Claude Code runs it
#        (--allowedTools Bash) and the result reaches the replica;
#      - `remember X`, then a second process with --continue asks for it: the replica records
#        that Run as a resume, not a rebuild;
#      - its model listing (GET /v1/models with anthropic-version) names the aliases;
#   2. the gateway spawned nothing (strace: its own execve only, no fork);
#   3. the `anthropic` Python package (PyPI): examples/test/anthropic_client.py.
#
# Needs the gateway binary and the replica example built, python3, npm and strace. About a
# minute on a first run (the npm and pip installs into target/), 20 s after.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
. "$root/tools/installs.sh"
target="${CARGO_TARGET_DIR:-$root/target}"
gateway="$target/debug/cursor-gateway"
replica="$target/debug/examples/replica"
[ -x "$gateway" ] && [ -x "$replica" ] || { echo "claude-code.sh: build the gateway and the replica first" >&2; exit 1; }
command -v strace >/dev/null 2>&1 || { echo "claude-code.sh: strace is required" >&2; exit 1; }
command -v npm >/dev/null 2>&1 || { echo "claude-code.sh: npm is required" >&2; exit 1; }

claude_version=2.1.332
anthropic_version=2.17.0
claude_dir="$target/claude-code-$claude_version"
claude="$claude_dir/node_modules/@anthropic-ai/claude-code/bin/claude.exe"
if [ ! -x "$claude" ] || ! "$claude" --version >/dev/null 2>&1; then
  npm_install_alone "$claude_dir" "@anthropic-ai/claude-code@$claude_version"
fi
venv="$target/anthropic-client-venv"
if ! "$venv/bin/python" -c 'import anthropic' 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "anthropic==$anthropic_version"
fi
echo "claude $("$claude" --version), anthropic $("$venv/bin/python" -c 'import anthropic; print(anthropic.__version__)')"

work=$(mktemp -d)
pids=""
cleanup() {
  for pid in $pids; do kill "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/project" "$work/home"

"$replica" --port 0 --hold-open --heartbeat-ms 50 --ignore-allowed-tools --log "$work/runs.jsonl" >"$work/origin" 2>"$work/replica.err" &
pids="$pids $!"
i=0
while ! grep -q '^REPLICA_ORIGIN=' "$work/origin" 2>/dev/null && [ "$i" -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
origin=$(sed -n 's/^REPLICA_ORIGIN=//p' "$work/origin")
[ -n "$origin" ] || { echo "claude-code.sh: the replica did not start: $(cat "$work/replica.err")" >&2; exit 1; }

key=claude-code-test-key
printf '%s\n' "$key" >"$work/client.key"
(cd "$work/project" && CURSOR_ACCESS_TOKEN=loopback-token exec strace -f -qq -e trace=execve,fork,vfork,clone,clone3 \
  -e signal=none -o "$work/strace.txt" "$gateway" --listen 127.0.0.1:0 --state "$work/state" \
  --api-key-file "$work/client.key" --agent-origin "$origin" --api-origin "$origin") \
  >"$work/gateway.out" 2>"$work/gateway.err" &
gateway_pid=$!
pids="$pids $gateway_pid"
i=0
while ! grep -q '^LISTENING ' "$work/gateway.out" 2>/dev/null && [ "$i" -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
base=$(sed -n 's/^LISTENING //p' "$work/gateway.out")
[ -n "$base" ] || { echo "claude-code.sh: the gateway did not start: $(cat "$work/gateway.err")" >&2; exit 1; }

passed=0
failed=0
check() {
  if [ "$2" = ok ]; then passed=$((passed + 1)); echo "ok   $1"; else failed=$((failed + 1)); echo "FAIL $1: $2" >&2; fi
}

# claude_p PROMPT [FLAG...]: Claude Code in print mode in the project, offline but for the gateway.
claude_p() {
  prompt=$1
  shift
  (cd "$work/project" && HOME="$work/home" ANTHROPIC_BASE_URL="$base" ANTHROPIC_API_KEY="$key" \
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_AUTOUPDATER=1 \
    timeout 90 "$claude" -p "$prompt" --model claude-cursor-composer-2.5 "$@" 2>&1)
}

runs_before=$(wc -l <"$work/runs.jsonl")
status=0
out=$(claude_p 'run: echo claude-native' --allowedTools Bash) || status=$?
# The replica answers a shell result with what the command printed: Claude Code ran it.
case "$status:$out" in
  0:*"The command printed: claude-native"*) status=ok ;;
  *) status="exited $status: $out" ;;
esac
check "Claude Code ran Cursor's native shell request with its own Bash tool" "$status"
runs=$(sed -n "$((runs_before + 1)),\$p" "$work/runs.jsonl")
case "$runs" in
  *'"execs":[{'*'shell'*'claude-native'*) status=ok ;;
  *) status="the replica saw no shell result: $runs" ;;
esac
check "the Bash result reached the replica as the native exec's result" "$status"

status=0
claude_p 'remember the crane CRANE-4' >/dev/null || status=$?
runs_before=$(wc -l <"$work/runs.jsonl")
out=$(claude_p 'what did I ask you to remember?' --continue) || status=$?
last=$(sed -n "$((runs_before + 1))p" "$work/runs.jsonl")
case "$status:$out:$last" in
  0:*CRANE-4*'"label":"agent-resume"'*'"historyReplayed":false'*) status=ok ;;
  *) status="exited $status: $out; Run: $last" ;;
esac
check "claude --continue in a new process resumes, not replays" "$status"

models=$(curl -s -H "x-api-key: $key" -H 'anthropic-version: 2023-06-01' "$base/v1/models?limit=1000")
case "$models" in
  *'"id":"claude-cursor-composer-2.5"'*'"has_more":false'*) status=ok ;;
  *) status="$models" ;;
esac
check "the model listing names every model as claude-cursor-*" "$status"

timeout 120 "$venv/bin/python" "$root/examples/test/anthropic_client.py" "$base" "$key" "$origin" >"$work/sdk.txt" 2>&1 || true
cat "$work/sdk.txt"
passed=$((passed + $(grep -c '^ok ' "$work/sdk.txt" || true)))
failed=$((failed + $(grep -c '^FAIL ' "$work/sdk.txt" || true)))
grep -q '^ok ' "$work/sdk.txt" || { failed=$((failed + 1)); echo "FAIL the anthropic client ran: $(tail -5 "$work/sdk.txt")" >&2; }

# strace does not pass SIGTERM on: stop the gateway it traces, and strace ends with it.
traced=$(ps -o pid= --ppid "$gateway_pid" | tr -d ' ')
kill ${traced:-$gateway_pid} 2>/dev/null || true
wait "$gateway_pid" 2>/dev/null || true
execs=$(grep -c 'execve(' "$work/strace.txt" || true)
forks=$(grep -E 'fork\(|clone3?\(' "$work/strace.txt" | grep -vc CLONE_THREAD || true)
if [ "$execs" -eq 1 ] && [ "$forks" -eq 0 ]; then status=ok; else
  status="$execs execve, $forks process clones"
fi
check "the gateway spawned nothing (strace: one execve, its own; no fork)" "$status"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
