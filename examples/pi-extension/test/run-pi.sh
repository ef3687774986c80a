#!/bin/sh
# End-to-end tests inside real pi. Builds the addon (build.sh; PROFILE=debug reuses the debug
# build) and the loopback replica of Cursor's backend (`cargo run -p cursor-examples --example
# replica`), unless CURSOR_PI_SKIP_BUILD is set; then runs the addon's own tests and, for every
# pi version tools/pi/install.sh installs, runs pi headless with this extension pointed at the
# replica and checks what pi prints:
#   - `--list-models cursor` lists the catalog's models (with a seeded, unexpired credential),
#     and lists a stored catalog snapshot instead when pi's models store has one;
#   - `--mode json -p ping`: the assistant message streams message_start → text_start →
#     text_delta… → text_end → message_end, agent_end comes last, and the text is `pong`
#     (test/check-json-events.mjs); `-p ping` prints `pong`;
#   - `-p "run: echo …"` under strace, against a replica that ignores the allowed-tools header:
#     the replica asks for a native shell exec, the provider turns it into a call of pi's bash
#     tool, pi runs it, the answer quotes its output, and the only process exec'd besides pi
#     itself is that command through pi's shell;
#   - the same prompt against a replica that honours the header reaches pi's bash as an MCP
#     call (the header allows only the MCP tool group);
#   - `--model cursor/grok-4.7 -p "tool: bash {…}"`: the replica asks for the MCP state (exec
#     arm 36) first, as Cursor does for Grok models, and calls the tool because the state the
#     provider reported lists it;
#   - `-p "tool: bash {…}"`: the same through an MCP call of pi's tool;
#   - two `tool:` lines in one prompt: the replica asks for both MCP calls before awaiting any
#     result (parallel calls), pi runs both, and both results go back on the same Run;
#   - resume across processes: one pi process is asked to remember a pass phrase, a second
#     (`-c`, the same pi session) recalls it, and the replica saw the second Run as a resume of
#     the same remote conversation without the history replayed; that replica keeps every
#     response open after `turn_ended` and sends heartbeats, as Cursor may;
#   - pi 1.6.0 only: a host tool called as `<provider>-bash` (the replica's --tool-naming dash),
#     an expired checkpoint (--checkpoint-ttl 1) that rebuilds once, and an interaction query of
#     an unknown kind that fails the turn with the drift wording;
#   - pi 1.6.0 only: a session of 6 turns whose file, cut after turn 3, pi forks (`--fork`) into
#     a new session in a new process: two more turns there resume from turn 3's checkpoint (the
#     replica saw resumes only, no history replayed) and recall only turns 1-3 and the fork's;
#   - pi 1.6.0 only: a context overflow (the replica's script `exhausted context-overflow`, a bare
#     zero-token `resource_exhausted`) on the second turn of a kept session makes pi compact and
#     send the turn again, which answers (docs/PROTOCOL-AGENT.md §13.2);
#   - `--mode rpc` abort: a Run the replica keeps silent is aborted with {"type":"abort"}, pi
#     ends the turn with stopReason `aborted`, and the replica saw the Run cancelled
#     (test/rpc-abort.mjs);
#   - 401: against a second replica that refuses every Run and every token refresh, `-p ping`
#     exits non-zero, names `/login cursor`, and the turn was not retried (at most the Run and
#     its one replay);
#   - `-p ping` with CURSOR_PROVIDER_CHANNEL=inference and the API origin on the replica's
#     RunInference listener prints `pong`, and the agent replica saw no Run (no fallback);
#   - a tool round on the inference channel against the replica in its live shape (the call id
#     on every tool-call part, the whole argument JSON in the last): `-p "tool: bash {…}"`
#     makes pi run its bash tool and the next turn's answer quotes the command's output;
#   - `-p /cursor-doctor --offline` prints one line per check (the stored credential is ok) and
#     `-p "/cursor-doctor json --offline"` the JSON report, neither with the seeded tokens;
#   - `-p /cursor-usage` prints the replica account's plan and usage, and a classified network
#     error when the API origin refuses connections;
#   - headless: with no auth.json, CURSOR_ACCESS_TOKEN/CURSOR_REFRESH_TOKEN list the models,
#     answer `-p ping`, refresh on a 401, show as redacted in the doctor and are written nowhere.
#   - headless with a user API key: with no auth.json and only CURSOR_API_KEY (`crsr_…`), the
# agent channel exchanges it at the replica's /auth/exchange_user_api_key and answers `-p ping`; the
# doctor shows it redacted; it is written nowhere; a refused key fails the turn naming
# CURSOR_API_KEY. Then it measures what loading the extension adds to `pi --list-models`
# (COLD_START_RUNS runs each, default 10; 0 skips it), and the latency from a replica text frame to
# pi's message_update over a burst of LATENCY_DELTAS back-to-back deltas (default 200; 0 skips it;
# test/latency.mjs; every delta must arrive). Everything runs offline with a private HOME. The last
# line is `N passed, M failed`; the exit status is non-zero when a check failed.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
root=$(cd "$here/../.." && pwd)
cd "$root"

# CURSOR_PI_SKIP_BUILD=1 tests the addon already in native/ and the replica already built.
if [ -z "${CURSOR_PI_SKIP_BUILD:-}" ]; then
  sh "$here/build.sh" >/dev/null
  cargo build --quiet -p cursor-examples --example replica ${CARGO_BUILD_JOBS:+-j "$CARGO_BUILD_JOBS"}
fi
replica_bin="${CARGO_TARGET_DIR:-$root/target}/debug/examples/replica"
[ -x "$replica_bin" ] || { echo "run-pi.sh: no replica at $replica_bin (build it or unset CURSOR_PI_SKIP_BUILD)" >&2; exit 1; }
command -v strace >/dev/null 2>&1 || { echo "run-pi.sh: strace is required (apt-get install -y strace)" >&2; exit 1; }
eval "$(bash tools/pi/install.sh 2>/dev/null)"
PATH="$PI_NODE_BIN:$PATH"
export PATH

work=$(mktemp -d)
: >"$work/pids"
cleanup() {
  stop_replicas
  rm -rf "$work"
}
trap cleanup EXIT

. "$here/test/lib.sh"

start_replica runs
runs_inference=$inference_origin
CURSOR_REPLICA_INFERENCE_ORIGIN=$runs_inference
export CURSOR_REPLICA_INFERENCE_ORIGIN
CURSOR_PROVIDER_AGENT_ORIGIN=$origin
CURSOR_PROVIDER_API_ORIGIN=$origin
export CURSOR_PROVIDER_AGENT_ORIGIN CURSOR_PROVIDER_API_ORIGIN
# The live backend does not always honour x-cursor-agent-allowed-tools (docs/PROTOCOL-AGENT.md
# §12.3): the native exec check runs against a replica that sends native execs whatever the header
# says.
start_replica native --ignore-allowed-tools
native=$origin
start_replica refusing --fail-auth
refusing=$origin
# Its own replica for the abort, so a silent Run it queues can never reach another check.
start_replica stalling
stalling=$origin
# A replica that behaves like Cursor after a turn: it keeps the response open and sends
# heartbeats, so the resume check proves the handle is stored before pi sees the turn done.
start_replica holding --hold-open --heartbeat-ms 50
holding=$origin
# Its own replica for the context overflow, so the scripted refusal meets only that check.
start_replica overflowing
overflowing=$origin
# Live-server rules (PROTOCOL-AGENT §13): host tools called as `<provider>-<tool>`, checkpoints
# that expire after a second, and the scripted interaction queries.
start_replica ruled --tool-naming dash --checkpoint-ttl 1
ruled=$origin

mkdir -p "$work/home/.pi/agent"
auth="$work/home/.pi/agent/auth.json"
printf '%s' '{"cursor":{"type":"oauth","access":"seeded-access","refresh":"seeded-refresh","expires":4102444800000}}' >"$auth"
chmod 600 "$auth"


# pi <entry> <args...>: runs pi offline in the private HOME from an empty directory.
pi() {
  entry=$1
  shift
  (cd "$work" && HOME="$work/home" PI_SKIP_VERSION_CHECK=1 node "$entry" --offline --no-session "$@" </dev/null)
}

# pi_kept <entry> <args...>: the same, keeping pi's session in $work/sessions.
pi_kept() {
  entry=$1
  shift
  (cd "$work" && HOME="$work/home" PI_SKIP_VERSION_CHECK=1 node "$entry" --offline --session-dir "$work/sessions" "$@" </dev/null)
}

# pi_holding <entry> <args...>: pi_kept against the replica that holds responses open.
pi_holding() {
  (
    CURSOR_PROVIDER_AGENT_ORIGIN=$holding
    CURSOR_PROVIDER_API_ORIGIN=$holding
    export CURSOR_PROVIDER_AGENT_ORIGIN CURSOR_PROVIDER_API_ORIGIN
    pi_kept "$@"
  )
}

# script_replica <origin> <body>: scripts the next Run of that replica (POST /replica/script).
script_replica() {
  node -e 'fetch(process.argv[1] + "/replica/script", {method: "POST", body: process.argv[2]}).then(r => process.exit(r.ok ? 0 : 1), () => process.exit(1))' "$1" "$2"
}

# pi_headless <entry> <args...>: pi offline in a HOME without auth.json, with the headless
# tokens in the environment.
pi_headless() {
  entry=$1
  shift
  mkdir -p "$work/headless/.pi/agent"
  (cd "$work" && HOME="$work/headless" PI_SKIP_VERSION_CHECK=1 CURSOR_ACCESS_TOKEN=env-access-token \
    CURSOR_REFRESH_TOKEN=env-refresh-token node "$entry" --offline --no-session "$@" </dev/null)
}

# pi_api_key <key> <entry> <args...>: pi offline in a HOME without auth.json, with only the
# user API key in the environment.
pi_api_key() {
  key=$1
  entry=$2
  shift 2
  mkdir -p "$work/apikey/.pi/agent"
  (cd "$work" && env -u CURSOR_ACCESS_TOKEN -u CURSOR_REFRESH_TOKEN HOME="$work/apikey" PI_SKIP_VERSION_CHECK=1 \
    CURSOR_API_KEY="$key" node "$entry" --offline --no-session "$@" </dev/null)
}

# last_exec_kinds <log>: the last Run's execs as `kind:status` words, in order.
last_exec_kinds() {
  tail -n 1 "$1" | node -e '
    let text = "";
    process.stdin.on("data", (chunk) => (text += chunk));
    process.stdin.on("end", () => {
      const run = JSON.parse(text);
      console.log(run.execs.map((exec) => `${exec.kind}:${exec.status}`).join(" "));
    });'
}

# expect_last_execs <log> <kinds>: the last Run's execs were exactly <kinds>, else a problem.
expect_last_execs() {
  last_exec_kinds "$1" >"$work/kinds.txt" 2>&1 || problem "$(cat "$work/kinds.txt")"
  [ "$(cat "$work/kinds.txt")" = "$2" ] || problem "execs: $(cat "$work/kinds.txt")"
}

# runs_logged <log>: how many Runs a replica finished.
runs_logged() {
  wc -l <"$1" | tr -d ' '
}

begin "addon and index.mjs tests (node --test test/addon.test.mjs test/index.test.mjs)"
HOME="$work/home" node --test "$here/test/addon.test.mjs" "$here/test/index.test.mjs" >"$work/addon.log" 2>&1 ||
  problem "$(cat "$work/addon.log")"
end

begin "index.mjs imports no child_process (the provider never spawns)"
if grep -n 'child_process' "$here/index.mjs" >"$work/grep.txt"; then problem "$(cat "$work/grep.txt")"; fi
end

ext="$here/index.mjs"
model=cursor/composer-2.5
for version in 0.99.1 1.0.3 1.6.0; do
  entry=$(eval echo "\$PI_$(echo "$version" | tr . _)")

  begin "$version --list-models"
  models=$(pi "$entry" -e "$ext" --list-models cursor 2>&1) || problem "exited $?"
  rows=$(printf '%s\n' "$models" | grep -c '^cursor ' || true)
  [ "$rows" -ge 5 ] || problem "listed $rows cursor models: $models"
  printf '%s\n' "$models" | grep -q '^cursor  *composer-2.5 ' || problem "lacks composer-2.5"
  end

  begin "$version --mode json -p ping streams its events in order"
  pi "$entry" -e "$ext" --model "$model" --mode json -p ping >"$work/json.jsonl" 2>"$work/json.err" || problem "exited $? $(cat "$work/json.err")"
  node "$here/test/check-json-events.mjs" pong <"$work/json.jsonl" >"$work/json.ok" 2>&1 || problem "$(cat "$work/json.ok")"
  end

  begin "$version -p ping"
  out=$(pi "$entry" -e "$ext" --model "$model" -p ping 2>&1) || problem "exited $?"
  [ "$out" = "pong" ] || problem "printed: $out"
  end

  begin "$version native exec through pi's bash, and no other process"
  status=0
  out=$(cd "$work" && CURSOR_PROVIDER_AGENT_ORIGIN=$native HOME="$work/home" PI_SKIP_VERSION_CHECK=1 strace -f -qq -s 4096 -e trace=execve -e signal=none \
    -o "$work/strace.txt" node "$entry" --offline --no-session -e "$ext" --model "$model" -p "run: echo native-$version" </dev/null 2>&1) || status=$?
  [ "$status" -eq 0 ] || problem "exited $status: $out"
  case "$out" in
    *"native-$version"*) ;;
    *) problem "printed: $out" ;;
  esac
  # The first execve is pi's own node; every other one must be the requested command run
  # through the shell pi's bash tool uses.
  execs=$(grep -c 'execve(' "$work/strace.txt" || true)
  head -n 1 "$work/strace.txt" | grep -q "execve(\"[^\"]*/node\", \[\"node\", \"$entry\"" ||
    problem "the first exec is not pi's node: $(head -n 1 "$work/strace.txt")"
  # The command as the replica asked, run in the workspace it named (a guarded `cd` when
  # the host's tool has no working-directory argument).
  shell_execs=$(grep -cE "execve\(\"[^\"]*/(bash|sh)\", \[\"[^\"]*\", \"-c\", \"(cd -- '[^']*' && \{\\\\n)?echo native-$version(\\\\n\})?\"\]" "$work/strace.txt" || true)
  [ "$shell_execs" -ge 1 ] || problem "pi's shell never ran the command: $(cat "$work/strace.txt")"
  [ "$execs" -eq $((shell_execs + 1)) ] ||
    problem "$((execs - 1 - shell_execs)) other exec(s): $(grep -vE "echo native-$version" "$work/strace.txt" | tail -n +2)"
  end

  begin "$version the native exec arrived as a native shell request"
  expect_last_execs "$work/native.jsonl" "shell_stream:success"
  end

  begin "$version run: under the allowed-tools header becomes an MCP call of pi's bash"
  out=$(pi "$entry" -e "$ext" --model "$model" -p "run: echo allowed-$version" 2>&1) || problem "exited $?"
  case "$out" in
    *"allowed-$version"*) ;;
    *) problem "printed: $out" ;;
  esac
  expect_last_execs "$work/runs.jsonl" "mcp:success"
  end

  begin "$version a Grok tool round starts with the MCP state (exec arm 36)"
  out=$(pi "$entry" -e "$ext" --model cursor/grok-4.7 -p "tool: bash {\"command\":\"echo grok-$version\"}" 2>&1) || problem "exited $?"
  case "$out" in
    *"grok-$version"*) ;;
    *) problem "printed: $out" ;;
  esac
  expect_last_execs "$work/runs.jsonl" "mcp_state:success mcp:success"
  end

  begin "$version MCP tool call of pi's bash"
  out=$(pi "$entry" -e "$ext" --model "$model" -p "tool: bash {\"command\":\"echo mcp-$version\"}" 2>&1) || problem "exited $?"
  case "$out" in
    *"mcp-$version"*) ;;
    *) problem "printed: $out" ;;
  esac
  end

  begin "$version parallel MCP calls of pi's bash in one round of one Run"
  both=$(printf 'tool: bash {"command":"echo left-%s"}\ntool: bash {"command":"echo right-%s"}' "$version" "$version")
  out=$(pi "$entry" -e "$ext" --model "$model" -p "$both" 2>&1) || problem "exited $?"
  case "$out" in
    *"left-$version"*"right-$version"*) ;;
    *) problem "printed: $out" ;;
  esac
  expect_last_execs "$work/runs.jsonl" "mcp:success mcp:success"
  end

  begin "$version resume across processes (server holds the response open)"
  rm -rf "$work/sessions"
  remember="remember the pass phrase XK-PLATYPUS-77 / $version"
  pi_holding "$entry" -e "$ext" --model "$model" -p "$remember" >/dev/null 2>&1 || problem "remember exited $?"
  out=$(pi_holding "$entry" -e "$ext" -c --model "$model" -p "what did I ask you to remember?" 2>&1) || problem "recall exited $?"
  case "$out" in
    *"XK-PLATYPUS-77 / $version"*) ;;
    *) problem "recall printed: $out" ;;
  esac
  record=$(tail -n 1 "$work/holding.jsonl")
  case "$record" in
    *'"label":"agent-resume"'*'"historyReplayed":false'*) ;;
    *) problem "recall was not a resume without history: $record" ;;
  esac
  end

  if [ "$version" = 1.6.0 ]; then
    begin "$version a session forked at turn 3 of 6 resumes from that turn (docs/PROTOCOL-AGENT.md §10.1)"
    # Six turns in one kept pi session; then its file cut after the third answer, forked by pi
    # (--fork) into a new session in a new process, and two more turns there. The replica must
    # see resumes only (no history replayed), and the fork must remember only turns 1-3.
    rm -rf "$work/sessions" "$work/fork-base"
    before=$(runs_logged "$work/runs.jsonl")
    n=0
    for ask in "remember the alpha" "remember the bravo" "remember the charlie" \
      "remember the delta" "remember the echo" "what did I ask you to remember?"; do
      flag=-c
      [ "$n" -eq 0 ] && flag=
      pi_kept "$entry" -e "$ext" $flag --model "$model" -p "$ask" >"$work/six.out" 2>&1 || problem "turn $n exited $?: $(cat "$work/six.out")"
      n=$((n + 1))
    done
    grep -q "the alpha; the bravo; the charlie; the delta; the echo" "$work/six.out" || problem "six turns recalled: $(cat "$work/six.out")"
    parent=$(ls "$work"/sessions/*.jsonl | head -n 1)
    mkdir -p "$work/fork-base"
    # The session file up to and including the third assistant message.
    node -e '
      const fs = require("fs");
      const lines = fs.readFileSync(process.argv[1], "utf8").split("\n").filter(Boolean);
      const kept = [];
      let answers = 0;
      for (const line of lines) {
        kept.push(line);
        const entry = JSON.parse(line);
        if (entry.type === "message" && entry.message && entry.message.role === "assistant" && ++answers === 3) break;
      }
      if (answers !== 3) { console.error("fewer than three answers"); process.exit(1); }
      fs.writeFileSync(process.argv[2], kept.join("\n") + "\n");
    ' "$parent" "$work/fork-base/at-turn-3.jsonl" || problem "could not cut the session file"
    pi_kept "$entry" -e "$ext" --fork "$work/fork-base/at-turn-3.jsonl" --model "$model" -p "remember the foxtrot" >"$work/fork.out" 2>&1 ||
      problem "fork turn exited $?: $(cat "$work/fork.out")"
    sessions=$(ls "$work"/sessions/*.jsonl | wc -l | tr -d ' ')
    [ "$sessions" -eq 2 ] || problem "pi kept $sessions sessions, not the parent and the fork"
    out=$(pi_kept "$entry" -e "$ext" -c --model "$model" -p "what did I ask you to remember?" 2>&1) || problem "fork recall exited $?"
    case "$out" in
      *"the alpha; the bravo; the charlie; the foxtrot."*) ;;
      *) problem "the fork recalled: $out" ;;
    esac
    # Runs: the first turn rebuilt (nothing to resume), every later one resumed.
    tail -n +"$((before + 2))" "$work/runs.jsonl" >"$work/fork-runs.jsonl"
    total=$(runs_logged "$work/fork-runs.jsonl")
    [ "$total" -eq 7 ] || problem "$total Runs after the first, not 7: $(cat "$work/fork-runs.jsonl")"
    resumed=$(grep -c '"label":"agent-resume"' "$work/fork-runs.jsonl" || true)
    replayed=$(grep -c '"historyReplayed":true' "$work/fork-runs.jsonl" || true)
    [ "$resumed" -eq 7 ] && [ "$replayed" -eq 0 ] ||
      problem "$resumed of 7 resumed, $replayed replayed history: $(cat "$work/fork-runs.jsonl")"
    end
  fi

  if [ "$version" = 1.6.0 ]; then
    begin "$version a context overflow makes pi compact and answer the turn"
    # pi keeps the last 20k tokens out of a compaction; a tiny keep lets it summarize one turn.
    rm -rf "$work/sessions" "$work/home-overflow"
    cp -R "$work/home" "$work/home-overflow"
    printf '%s' '{"compaction":{"keepRecentTokens":5}}' >"$work/home-overflow/.pi/agent/settings.json"
    (
      cd "$work"
      HOME="$work/home-overflow"
      PI_SKIP_VERSION_CHECK=1
      CURSOR_PROVIDER_AGENT_ORIGIN=$overflowing
      CURSOR_PROVIDER_API_ORIGIN=$overflowing
      export HOME PI_SKIP_VERSION_CHECK CURSOR_PROVIDER_AGENT_ORIGIN CURSOR_PROVIDER_API_ORIGIN
      kept() { node "$entry" --offline --session-dir "$work/sessions" -e "$ext" --model "$model" "$@" </dev/null; }
      kept -p "remember the code OVF-$version" >/dev/null 2>&1 || echo "remember exited $?"
      script_replica "$overflowing" "exhausted context-overflow" || echo "the replica took no script"
      kept -c -p ping 2>&1 || echo "exited $?"
    ) >"$work/overflow.out"
    out=$(cat "$work/overflow.out")
    [ "$out" = "pong" ] || problem "printed: $out"
    # After the refused Run pi compacted (one Run for its summary) and sent the turn again: the
    # refusal is followed by at least two Runs, the last answering ping.
    refused=$(grep -n '"outcome":"resource-exhausted"' "$work/overflowing.jsonl" | cut -d: -f1 | tail -n 1)
    total=$(runs_logged "$work/overflowing.jsonl")
    { [ -n "$refused" ] && [ "$total" -ge $((refused + 2)) ]; } ||
      problem "no refusal followed by a compaction and the turn: $(cat "$work/overflowing.jsonl")"
    tail -n 1 "$work/overflowing.jsonl" | grep -q '"userText":"ping".*"answer":"pong"' ||
      problem "the last Run did not answer ping: $(tail -n 1 "$work/overflowing.jsonl")"
    end
  fi

  if [ "$version" = 1.6.0 ]; then
    # pi_ruled <args...>: pi with a kept session against the replica playing the live rules.
    pi_ruled() {
      (cd "$work" && HOME="$work/home" PI_SKIP_VERSION_CHECK=1 CURSOR_PROVIDER_AGENT_ORIGIN=$ruled \
        CURSOR_PROVIDER_API_ORIGIN=$ruled node "$entry" --offline --session-dir "$work/sessions" \
        -e "$ext" --model "$model" "$@" </dev/null)
    }
    begin "$version a host tool called as <provider>-bash reaches pi's bash"
    rm -rf "$work/sessions"
    out=$(pi_ruled -p "tool: bash {\"command\":\"echo dash-$version\"}" 2>&1) || problem "exited $?"
    case "$out" in
      *"The tool bash answered"*"dash-$version"*) ;;
      *) problem "printed: $out" ;;
    esac
    grep -q '"name":"[^"]*-bash"' "$work/ruled.jsonl" || grep -q -- '-bash' "$work/ruled.jsonl" ||
      problem "the replica did not call the dash form: $(tail -n 1 "$work/ruled.jsonl")"
    end

    begin "$version an expired checkpoint rebuilds once and the turn answers"
    rm -rf "$work/sessions"
    pi_ruled -p "remember the heron TTL-$version" >/dev/null 2>&1 || problem "remember exited $?"
    sleep 1.5
    before=$(runs_logged "$work/ruled.jsonl")
    out=$(pi_ruled -c -p "what did I ask you to remember?" 2>&1) || problem "recall exited $?"
    case "$out" in
      *"TTL-$version"*) ;;
      *) problem "recall printed: $out" ;;
    esac
    recent=$(sed -n "$((before + 1)),\$p" "$work/ruled.jsonl")
    case "$recent" in
      *'"label":"agent-resume"'*'state-lost'*'"label":"agent-rebuild"'*) ;;
      *) problem "not one lost resume then one rebuild: $recent" ;;
    esac
    [ "$(printf '%s\n' "$recent" | grep -c .)" -eq 2 ] || problem "more than two Runs: $recent"
    end

    begin "$version an interaction query of an unknown kind fails the turn, classified"
    script_replica "$ruled" "interaction-query 99" || problem "the replica took no script"
    rm -rf "$work/sessions"
    out=$(pi_ruled -p ping 2>&1) && problem "pi answered: $out"
    case "$out" in
      *"update the cursor crates"*) ;;
      *) problem "printed: $out" ;;
    esac
    end
  fi

  begin "$version --mode rpc abort of a silent Run"
  before=$(runs_logged "$work/stalling.jsonl")
  out=$(cd "$work" && HOME="$work/home" PI_SKIP_VERSION_CHECK=1 RPC_ABORT_LOG="$work/rpc.jsonl" \
    CURSOR_PROVIDER_AGENT_ORIGIN=$stalling CURSOR_PROVIDER_API_ORIGIN=$stalling \
    node "$here/test/rpc-abort.mjs" "$stalling" node "$entry" --offline --no-session -e "$ext" --model "$model" --mode rpc 2>&1) ||
    problem "$out"
  # The replica records a silent Run once the client has closed it.
  i=0
  while [ "$(runs_logged "$work/stalling.jsonl")" -le "$before" ] && [ "$i" -lt 50 ]; do
    sleep 0.1
    i=$((i + 1))
  done
  record=$(tail -n 1 "$work/stalling.jsonl")
  case "$record" in
    *'"userText":"please stall"'*'"outcome":"silent"'*) ;;
    *) problem "the replica did not see the silent Run closed: $record" ;;
  esac
  end

  begin "$version 401: one refresh, no retry, /login cursor"
  before=$(runs_logged "$work/refusing.jsonl")
  status=0
  out=$(CURSOR_PROVIDER_AGENT_ORIGIN=$refusing CURSOR_PROVIDER_API_ORIGIN=$refusing pi "$entry" -e "$ext" --model "$model" -p ping 2>&1) || status=$?
  [ "$status" -ne 0 ] || problem "exited 0: $out"
  case "$out" in
    # The refresh reached the replica's token endpoint (the API origin override), which
    # ended the session.
    *"auth error: "*"refreshing it failed: Cursor ended the session"*"/login cursor"*) ;;
    *) problem "printed: $out" ;;
  esac
  sleep 0.2
  attempts=$(($(runs_logged "$work/refusing.jsonl") - before))
  { [ "$attempts" -ge 1 ] && [ "$attempts" -le 2 ]; } || problem "the replica saw $attempts Run(s)"
  end

  begin "$version inference channel"
  before=$(runs_logged "$work/runs.jsonl")
  status=0
  out=$(CURSOR_PROVIDER_CHANNEL=inference CURSOR_PROVIDER_API_ORIGIN=$runs_inference pi "$entry" -e "$ext" --model "$model" -p ping 2>&1) || status=$?
  [ "$status" -eq 0 ] || problem "exited $status: $out"
  case "$out" in
    *pong*) ;;
    *) problem "printed: $out" ;;
  esac
  sleep 0.2
  [ "$(runs_logged "$work/runs.jsonl")" -eq "$before" ] || problem "the agent replica saw a Run"
  end

  begin "$version inference channel tool round (live shape)"
  before=$(runs_logged "$work/runs.jsonl")
  status=0
  out=$(CURSOR_PROVIDER_CHANNEL=inference CURSOR_PROVIDER_API_ORIGIN=$runs_inference pi "$entry" -e "$ext" --model "$model" \
    -p "tool: bash {\"command\": \"echo inference-round-$version\"}" 2>&1) || status=$?
  [ "$status" -eq 0 ] || problem "exited $status: $out"
  case "$out" in
    *"got: "*"inference-round-$version"*) ;;
    *) problem "printed: $out" ;;
  esac
  sleep 0.2
  [ "$(runs_logged "$work/runs.jsonl")" -eq "$before" ] || problem "the agent replica saw a Run"
  end

  begin "$version /cursor-doctor: one line per check, the JSON on request"
  out=$(pi "$entry" -e "$ext" --model "$model" -p "/cursor-doctor --offline" 2>&1) || problem "exited $?"
  case "$out" in
    *seeded-access* | *seeded-refresh*) problem "printed a token" ;;
    "cursor doctor: "*"ok    credentials  stored, valid until 2100-01-01"*"skip  network      not probed"*) ;;
    *) problem "printed: $out" ;;
  esac
  out=$(pi "$entry" -e "$ext" --model "$model" -p "/cursor-doctor json --offline" 2>&1) || problem "json exited $?"
  case "$out" in
    *seeded-access* | *seeded-refresh*) problem "json printed a token" ;;
    *'"accessToken": "present (redacted)"'*) ;;
    *) problem "json printed: $out" ;;
  esac
  end

  begin "$version /cursor-usage: plan and period from the replica, a network error offline"
  out=$(pi "$entry" -e "$ext" -p "/cursor-usage" 2>&1) || problem "exited $?"
  case "$out" in
    *"Cursor plan: Pro (\$20/mo)"*"Included usage: \$12.34 of \$20.00 used (61.7%)"*) ;;
    *) problem "printed: $out" ;;
  esac
  out=$(CURSOR_PROVIDER_API_ORIGIN=http://127.0.0.1:1 pi "$entry" -e "$ext" -p "/cursor-usage" 2>&1) || true
  case "$out" in
    *"cursor usage: network error: "*"(next step: "*) ;;
    *) problem "offline printed: $out" ;;
  esac
  end

  begin "$version headless CURSOR_ACCESS_TOKEN/CURSOR_REFRESH_TOKEN without a stored credential"
  rm -rf "$work/headless"
  models=$(pi_headless "$entry" -e "$ext" --list-models cursor 2>&1) || problem "--list-models exited $?"
  rows=$(printf '%s\n' "$models" | grep -c '^cursor ' || true)
  [ "$rows" -ge 5 ] || problem "listed $rows cursor models: $models"
  out=$(pi_headless "$entry" -e "$ext" --model "$model" -p ping 2>&1) || problem "-p ping exited $?"
  [ "$out" = "pong" ] || problem "-p ping printed: $out"
  out=$(pi_headless "$entry" -e "$ext" --model "$model" -p "/cursor-doctor --offline" 2>&1) || problem "doctor exited $?"
  case "$out" in
    *env-access-token* | *env-refresh-token*) problem "the doctor printed a token" ;;
    *"ok    headless     CURSOR_ACCESS_TOKEN and CURSOR_REFRESH_TOKEN in use"*) ;;
    *) problem "the doctor printed: $out" ;;
  esac
  # The refresh on a 401 uses CURSOR_REFRESH_TOKEN: the replica's token endpoint refuses it.
  out=$(CURSOR_PROVIDER_AGENT_ORIGIN=$refusing CURSOR_PROVIDER_API_ORIGIN=$refusing pi_headless "$entry" -e "$ext" --model "$model" -p ping 2>&1) &&
    problem "the refused run exited 0"
  case "$out" in
    *"refreshing it failed"*) ;;
    *) problem "the 401 was not refreshed with the headless refresh token: $out" ;;
  esac
  if grep -rl 'env-access-token\|env-refresh-token' "$work/headless" >"$work/grep.txt" 2>/dev/null; then
    problem "a token was written to $(cat "$work/grep.txt")"
  fi
  # Without the variables the same HOME has no credential at all.
  status=0
  out=$(cd "$work" && HOME="$work/headless" PI_SKIP_VERSION_CHECK=1 node "$entry" --offline --no-session -e "$ext" --model "$model" -p ping </dev/null 2>&1) || status=$?
  [ "$status" -ne 0 ] || problem "without CURSOR_ACCESS_TOKEN -p ping exited 0: $out"
  end

  begin "$version headless CURSOR_API_KEY on the agent channel"
  rm -rf "$work/apikey"
  before=$(runs_logged "$work/runs.jsonl")
  out=$(pi_api_key crsr_e2e-user-key "$entry" -e "$ext" --model "$model" -p ping 2>&1) || problem "-p ping exited $?"
  [ "$out" = "pong" ] || problem "-p ping printed: $out"
  sleep 0.2
  [ "$(runs_logged "$work/runs.jsonl")" -gt "$before" ] || problem "the agent replica saw no Run"
  out=$(pi_api_key crsr_e2e-user-key "$entry" -e "$ext" --model "$model" -p "/cursor-doctor --offline" 2>&1) || problem "doctor exited $?"
  case "$out" in
    *e2e-user-key*) problem "the doctor printed the key" ;;
    *"ok    headless     CURSOR_API_KEY in use"*) ;;
    *) problem "the doctor printed: $out" ;;
  esac
  out=$(pi_api_key crsr_refused-key "$entry" -e "$ext" --model "$model" -p ping 2>&1) && problem "the refused key exited 0"
  case "$out" in
    *refused-key*) problem "printed the key: $out" ;;
    *"CURSOR_API_KEY"*"refused the user API key"*) ;;
    *) problem "the refused key printed: $out" ;;
  esac
  if grep -rl 'e2e-user-key\|refused-key' "$work/apikey" >"$work/grep.txt" 2>/dev/null; then
    problem "the key was written to $(cat "$work/grep.txt")"
  fi
  end

  # A catalog snapshot stored by an earlier online refresh is what offline runs list.
  begin "$version --list-models from a stored snapshot"
  store="$work/home/.pi/agent/models-store.json"
  printf '%s' '{"cursor":{"models":[],"checkedAt":1,"cursorCatalog":{"version":1,"fetchedAtMs":1,"catalog":{"rows":[{"id":"snapshot-only","name":"Snapshot Only","reasoning":false,"input":["text"],"contextWindow":100000,"maxTokens":8000,"defaultSlug":"snapshot-only","slugs":["snapshot-only"]}]}}}}' >"$store"
  stored=$(pi "$entry" -e "$ext" --list-models cursor 2>&1) || problem "exited $?"
  rm -f "$store"
  case "$stored" in
    *composer-2.5*) problem "listed the static table despite a stored snapshot: $stored" ;;
    *"snapshot-only"*) ;;
    *) problem "did not list the stored snapshot: $stored" ;;
  esac
  end
done

# Cold start of `--list-models`: pi alone, pi with a JS-only extension (tools/pi/replay-events),
# and pi with this extension; the three alternate so load from other work hits them alike.
runs=${COLD_START_RUNS:-10}
median_ms() {
  sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}
elapsed_ms() {
  start=$(date +%s%N)
  pi "$@" >/dev/null 2>&1 || true
  stop=$(date +%s%N)
  echo $(((stop - start) / 1000000))
}
if [ "$runs" -gt 0 ]; then
  for version in 0.99.1 1.6.0; do
    entry=$(eval echo "\$PI_$(echo "$version" | tr . _)")
    : >"$work/bare" && : >"$work/js" && : >"$work/native"
    i=0
    while [ "$i" -lt "$runs" ]; do
      elapsed_ms "$entry" --list-models >>"$work/bare"
      elapsed_ms "$entry" -e "$root/tools/pi/replay-events/index.mjs" --list-models >>"$work/js"
      elapsed_ms "$entry" -e "$here/index.mjs" --list-models >>"$work/native"
      i=$((i + 1))
    done
    bare=$(median_ms <"$work/bare")
    js=$(median_ms <"$work/js")
    native=$(median_ms <"$work/native")
    echo "pi $version --list-models, median of $runs: ${bare} ms alone, ${js} ms with a JS-only extension, ${native} ms with this extension"
  done
fi

# Latency from a replica text frame to pi's message_update, for a burst of back-to-back
# deltas (LATENCY_DELTAS, default 200; 0 skips it); every delta must arrive.
deltas=${LATENCY_DELTAS:-200}
if [ "$deltas" -gt 0 ]; then
  for version in 0.99.1 1.6.0; do
    entry=$(eval echo "\$PI_$(echo "$version" | tr . _)")
    begin "$version streams $deltas back-to-back deltas"
    out=$(cd "$work" && HOME="$work/home" PI_SKIP_VERSION_CHECK=1 node "$here/test/latency.mjs" \
      "$CURSOR_PROVIDER_AGENT_ORIGIN" "$deltas" node "$entry" --offline --no-session -e "$ext" --model "$model" --mode json -p go 2>&1) ||
      problem "$out"
    end
    [ -n "$problems" ] || echo "pi $version: $out"
  done
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
