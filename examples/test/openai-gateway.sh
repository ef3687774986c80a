#!/bin/sh
# cursor-gateway end to end with clients nobody here wrote, against the standalone
# replica (responses held open, heartbeats, native execs sent whatever the allowed-tools header
# says): the `openai` Python package and `llm` 0.36 from PyPI (one venv under target/), and
# Codex CLI (`@openai/codex` from npm) and opencode (`opencode-ai` from npm), both under target/.
#
#   1. gateway process 1, under strace:
#      - openai: a streaming tool loop with two tool rounds, a non-streaming call, an image,
#        errors (400, 401), /v1/models, and Cursor's native shell request reaching the client's
#        own `bash` tool as a call (examples/test/openai_client.py);
#      - llm, configured by extra-openai-models.yaml with supports_tools, runs a --functions
#        tool chain, and its tool round stays on one Run;
#      - `codex exec` through /v1/responses runs one tool round (Codex runs `echo` itself), on
#        one Run;
#      - opencode (`opencode-ai` from npm, its OpenAI-compatible provider as docs/OPENAI-GATEWAY.md
#        configures it): a tool round of its bash tool on one Run, Cursor's native shell request
#        run by opencode's own bash tool, and `opencode run -c` continuing a conversation as a
#        resume;
#   2. the gateway spawned nothing: the only execve strace saw is its own, and no fork;
#   3. gateway process 2 over the same --state, a second client process: it continues the
#      saved conversation, and the replica saw that Run as a resume without history replay.
#
# Needs the gateway binary and the replica example built (cargo build -p cursor-gateway
# -p cursor-examples --example replica), python3, npm and strace. About 50 s on a first run
# (pip and npm installs), about 20 s once target/ holds the clients.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
. "$root/tools/installs.sh"
target="${CARGO_TARGET_DIR:-$root/target}"
gateway="$target/debug/cursor-gateway"
replica="$target/debug/examples/replica"
[ -x "$gateway" ] && [ -x "$replica" ] || { echo "openai-gateway.sh: build the gateway and the replica first" >&2; exit 1; }
command -v strace >/dev/null 2>&1 || { echo "openai-gateway.sh: strace is required (apt-get install -y strace)" >&2; exit 1; }

command -v npm >/dev/null 2>&1 || { echo "openai-gateway.sh: npm is required (for @openai/codex)" >&2; exit 1; }

llm_version=0.36
codex_version=0.171.0
venv="$target/gateway-clients-venv"
if ! "$venv/bin/python" -c 'import openai' 2>/dev/null || [ "$("$venv/bin/llm" --version 2>/dev/null)" != "llm, version $llm_version" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check 'openai>=1,<4' "llm==$llm_version"
fi
opencode_version=1.18.33
opencode_dir="$target/opencode-$opencode_version"
opencode="$opencode_dir/node_modules/.bin/opencode"
if [ ! -x "$opencode" ]; then
  npm_install_alone "$opencode_dir" "opencode-ai@$opencode_version"
fi
codex_dir="$target/codex-$codex_version"
codex="$codex_dir/node_modules/.bin/codex"
if [ ! -x "$codex" ]; then
  npm_install_alone "$codex_dir" "@openai/codex@$codex_version"
fi
echo "openai $("$venv/bin/python" -c 'import openai; print(openai.__version__)'), $("$venv/bin/llm" --version), $("$codex" --version), opencode $(HOME=$(mktemp -d) "$opencode" --version)"

work=$(mktemp -d)
pids=""
cleanup() {
  for pid in $pids; do kill "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/project"

"$replica" --port 0 --hold-open --heartbeat-ms 50 --ignore-allowed-tools --log "$work/runs.jsonl" >"$work/origin" 2>"$work/replica.err" &
pids="$pids $!"
i=0
while ! grep -q '^REPLICA_ORIGIN=' "$work/origin" 2>/dev/null && [ "$i" -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
origin=$(sed -n 's/^REPLICA_ORIGIN=//p' "$work/origin")
[ -n "$origin" ] || { echo "openai-gateway.sh: the replica did not start: $(cat "$work/replica.err")" >&2; exit 1; }

key=gateway-test-key
printf '# the e2e key\n%s\n' "$key" >"$work/client.key"
# start_gateway NAME [wrapper...]: starts the gateway on a free port, sets $base.
start_gateway() {
  name=$1
  shift
  # Native paths resolve in the gateway's working directory: the clients' project.
  (cd "$work/project" && CURSOR_ACCESS_TOKEN=loopback-token exec "$@" "$gateway" --listen 127.0.0.1:0 \
    --state "$work/state" --api-key-file "$work/client.key" --agent-origin "$origin" --api-origin "$origin") \
    >"$work/$name.out" 2>"$work/$name.err" &
  gateway_pid=$!
  pids="$pids $gateway_pid"
  i=0
  while ! grep -q '^LISTENING ' "$work/$name.out" 2>/dev/null && [ "$i" -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
  base="$(sed -n 's/^LISTENING //p' "$work/$name.out")/v1"
  [ "$base" != /v1 ] || { echo "openai-gateway.sh: $name did not start: $(cat "$work/$name.err")" >&2; exit 1; }
}

passed=0
failed=0
count() {
  passed=$((passed + $(grep -c '^ok ' "$1" || true)))
  failed=$((failed + $(grep -c '^FAIL ' "$1" || true)))
  cat "$1"
}
check() {
  if [ "$2" = ok ]; then passed=$((passed + 1)); echo "ok   $1"; else failed=$((failed + 1)); echo "FAIL $1: $2" >&2; fi
}

start_gateway first strace -f -qq -e trace=execve,fork,vfork,clone,clone3 -e signal=none -o "$work/strace.txt"
timeout 60 "$venv/bin/python" "$root/examples/test/openai_client.py" first "$base" "$key" "$work/transcript.json" >"$work/first.txt" 2>&1 || true
count "$work/first.txt"

# llm 0.36: the model is declared in extra-openai-models.yaml, its key in keys.json.
mkdir -p "$work/llm"
cat >"$work/llm/extra-openai-models.yaml" <<YAML
- model_id: cursor-composer
  model_name: composer-2.5
  api_base: "$base"
  api_key_name: cursor-gateway
  supports_tools: true
YAML
printf '{"cursor-gateway": "%s"}\n' "$key" >"$work/llm/keys.json"
runs_before=$(wc -l <"$work/runs.jsonl")
status=0
out=$(cd "$work" && LLM_USER_PATH="$work/llm" timeout 60 "$venv/bin/llm" -m cursor-composer --td \
  --functions 'def shout(text: str) -> str:
    "Upper-cases text"
    return text.upper()' 'tool: shout {"text": "llm chain"}' 2>&1) || status=$?
case "$status:$out" in
  0:*"Tool call: shout"*"LLM CHAIN"*) status=ok ;;
  *) status="exited $status: $out" ;;
esac
check "llm $llm_version runs a --functions tool chain through the gateway" "$status"
runs=$(($(wc -l <"$work/runs.jsonl") - runs_before))
[ "$runs" -eq 1 ] && status=ok || status="$runs Runs for one tool chain"
check "llm's tool round continued the same Run" "$status"

# Codex CLI: a provider with wire_api = "responses" pointing at the gateway; no update check
# and no analytics (the test reaches nothing but loopback).
mkdir -p "$work/codex-home" "$work/codex-ws"
cat >"$work/codex-home/config.toml" <<TOML
model = "composer-2.5"
model_provider = "cursor"
check_for_update_on_startup = false

[analytics]
enabled = false

[model_providers.cursor]
name = "Cursor through cursor-gateway"
base_url = "$base"
env_key = "CURSOR_GATEWAY_API_KEY"
wire_api = "responses"
TOML
runs_before=$(wc -l <"$work/runs.jsonl")
status=0
out=$(cd "$work/codex-ws" && CODEX_HOME="$work/codex-home" CURSOR_GATEWAY_API_KEY="$key" timeout 90 "$codex" exec \
  --strict-config --skip-git-repo-check 'tool: exec_command {"cmd": "echo codex-round"}' </dev/null 2>&1) || status=$?
case "$status:$out" in
  0:*"The tool exec_command answered"*codex-round*) status=ok ;;
  *) status="exited $status: $out" ;;
esac
check "codex exec runs one tool round through /v1/responses" "$status"
runs=$(($(wc -l <"$work/runs.jsonl") - runs_before))
[ "$runs" -eq 1 ] && status=ok || status="$runs Runs for one Codex turn"
check "Codex's tool round continued the same Run" "$status"
# Codex decodes /v1/models' models[] as its own catalog (given as model_catalog_json here: 0.171
# does not fetch it for a custom provider); with fallback metadata it warns and guesses.
curl -s -H "Authorization: Bearer $key" "$base/models" >"$work/codex-catalog.json"
cp "$work/codex-home/config.toml" "$work/codex-home/config.toml.bak"
{ printf 'model_catalog_json = "%s"\n' "$work/codex-catalog.json"; cat "$work/codex-home/config.toml.bak"; } >"$work/codex-home/config.toml"
status=0
out=$(cd "$work/codex-ws" && CODEX_HOME="$work/codex-home" CURSOR_GATEWAY_API_KEY="$key" timeout 90 "$codex" exec \
  --strict-config --skip-git-repo-check 'ping' </dev/null 2>&1) || status=$?
mv "$work/codex-home/config.toml.bak" "$work/codex-home/config.toml"
case "$status:$out" in
  *"missing field"* | *"Model metadata for"*"not found"* | *"failed to parse"*) status="Codex did not take the catalog: $(printf '%s\n' "$out" | grep -E 'missing field|metadata|parse' | head -3)" ;;
  0:*pong*) status=ok ;;
  *) status="exited $status: $out" ;;
esac
check "Codex reads the gateway's model catalog without a warning" "$status"
# opencode: the provider from docs/OPENAI-GATEWAY.md, in the project the gateway works in, with
# a private HOME and nothing fetched (no update, models list, LSP download or share).
cat >"$work/project/opencode.json" <<JSON
{
  "\$schema": "https://opencode.ai/config.json",
  "autoupdate": false,
  "share": "disabled",
  "provider": {
    "cursor": {
      "npm": "@ai-sdk/openai-compatible",
      "name": "Cursor (gateway)",
      "options": { "baseURL": "$base", "apiKey": "{env:CURSOR_GATEWAY_API_KEY}" },
      "models": { "composer-2.5": { "name": "Composer 2.5" } }
    }
  }
}
JSON
# opencode_run PROMPT [flags...]: one `opencode run` (the prompt on stdin, so it arrives as is).
opencode_run() {
  prompt=$1
  shift
  printf '%s' "$prompt" | (cd "$work/project" && HOME="$work/opencode-home" CURSOR_GATEWAY_API_KEY="$key" \
    OPENCODE_DISABLE_AUTOUPDATE=1 OPENCODE_DISABLE_MODELS_FETCH=1 OPENCODE_DISABLE_LSP_DOWNLOAD=1 \
    OPENCODE_DISABLE_SHARE=1 timeout 90 "$opencode" run --pure --title test --model cursor/composer-2.5 "$@" 2>&1)
}
runs_before=$(wc -l <"$work/runs.jsonl")
status=0
out=$(opencode_run 'tool: bash {"command": "echo opencode-round", "description": "Echo a word"}') || status=$?
case "$status:$out" in
  0:*"The tool bash answered: opencode-round"*) status=ok ;;
  *) status="exited $status: $out" ;;
esac
check "opencode $opencode_version runs a tool round of its bash tool through the gateway" "$status"
runs=$(($(wc -l <"$work/runs.jsonl") - runs_before))
[ "$runs" -eq 1 ] && status=ok || status="$runs Runs for one opencode tool round"
check "opencode's tool round continued the same Run" "$status"
status=0
out=$(opencode_run 'run: echo native-opencode') || status=$?
case "$status:$out" in
  0:*"The command printed: native-opencode"*) status=ok ;;
  *) status="exited $status: $out" ;;
esac
check "Cursor's native shell request was run by opencode's own bash tool" "$status"
status=0
opencode_run 'remember the otter OCELOT-5' >/dev/null || status=$?
runs_before=$(wc -l <"$work/runs.jsonl")
out=$(opencode_run 'what did I ask you to remember?' -c) || status=$?
last=$(sed -n "$((runs_before + 1))p" "$work/runs.jsonl")
case "$status:$out:$last" in
  0:*OCELOT-5*'"label":"agent-resume"'*'"historyReplayed":false'*) status=ok ;;
  *) status="exited $status: $out; Run: $last" ;;
esac
check "opencode run -c continues the conversation as a resume, not a replay" "$status"

# strace does not pass SIGTERM on: stop the gateway it traces, and strace ends with it.
traced=$(ps -o pid= --ppid "$gateway_pid" | tr -d ' ')
kill ${traced:-$gateway_pid} 2>/dev/null || true
wait "$gateway_pid" 2>/dev/null || true

# The gateway's own execve is the only one; every clone is a thread (CLONE_THREAD), none a
# process.
execs=$(grep -c 'execve(' "$work/strace.txt" || true)
forks=$(grep -E 'fork\(|clone3?\(' "$work/strace.txt" | grep -vc CLONE_THREAD || true)
if [ "$execs" -eq 1 ] && [ "$forks" -eq 0 ]; then status=ok; else
  status="$execs execve, $forks process clones: $(grep -E 'execve\(|fork\(' "$work/strace.txt" | head -5)"
fi
check "the gateway spawned nothing (strace: one execve, its own; no fork)" "$status"
grep -q 'nothing ran here' "$work/first.err" && status=ok || status="no exec audit line in: $(cat "$work/first.err")"
check "the gateway logged Cursor's native request as answered, not run" "$status"

runs_before=$(wc -l <"$work/runs.jsonl")
start_gateway second
timeout 60 "$venv/bin/python" "$root/examples/test/openai_client.py" second "$base" "$key" "$work/transcript.json" >"$work/second.txt" 2>&1 || true
count "$work/second.txt"
last=$(sed -n "$((runs_before + 1))p" "$work/runs.jsonl")
case "$last" in
  *'"label":"agent-resume"'*'"historyReplayed":false'*) status=ok ;;
  *) status="the second process's Run was not a resume without replay: $last" ;;
esac
check "the replica saw the second process's Run as a resume, not a rebuild" "$status"

# SIGTERM: the gateway stops accepting, lets running requests finish, and exits 0.
kill -TERM "$gateway_pid"
status=0
wait "$gateway_pid" || status=$?
grep -q 'stopped' "$work/second.err" && [ "$status" -eq 0 ] && status=ok ||
  status="exit $status: $(tail -3 "$work/second.err")"
check "SIGTERM stops the gateway cleanly (exit 0)" "$status"
version=$("$gateway" --version)
old=$("$target/debug/cursor-openai-gateway" --version 2>"$work/old-name.err")
case "$version:$old:$(cat "$work/old-name.err")" in
  "cursor-gateway 0."*"cursor-gateway 0."*deprecated*) status=ok ;;
  *) status="$version / $old / $(cat "$work/old-name.err")" ;;
esac
check "--version names the version and revision; the old name still runs, with a warning" "$status"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
