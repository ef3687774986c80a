#!/bin/sh
# Builds the addon and cursor-agent's loopback replica of the agent backend (unless
# CURSOR_PI_SKIP_BUILD is set), then runs real pi (every version tools/pi/install.sh installs)
# headless with this extension, its agent channel pointed at the replica, and checks what pi
# prints:
#   - `--list-models cursor` lists the catalog's models (with a seeded, unexpired credential),
#     and lists a stored catalog snapshot instead when pi's models store has one;
#   - `-p ping` prints the replica's `pong`;
#   - `-p "run: echo …"`: the replica asks for a native shell exec, the provider turns it into a
#     call of pi's bash tool, pi runs it, and the answer quotes its output;
#   - `-p "tool: bash {…}"`: the same through an MCP call of pi's tool;
#   - resume across processes: one pi process is asked to remember a pass phrase, a second
#     (`-c`, the same pi session) recalls it, and the replica saw the second Run as a resume of
#     the same remote conversation without the history replayed;
#   - `-p` with CURSOR_PROVIDER_CHANNEL=inference ends with the inference refusal (exit 1);
#   - `-p /cursor-doctor --offline` prints the report without the seeded tokens;
#   - the addon's own tests (test/addon.test.mjs).
# Then it measures what loading the extension adds to `pi --list-models` (COLD_START_RUNS
# runs each, default 10). Everything runs offline with a private HOME.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
root=$(cd "$here/../.." && pwd)
cd "$root"

# CURSOR_PI_SKIP_BUILD=1 tests the addon already in native/.
if [ -z "${CURSOR_PI_SKIP_BUILD:-}" ]; then
  sh "$here/build.sh" >/dev/null
  cargo build -p cursor-pi-adapter --example agent_replica >/dev/null
fi
eval "$(bash tools/pi/install.sh 2>/dev/null)"
PATH="$PI_NODE_BIN:$PATH"
export PATH

work=$(mktemp -d)
"${CARGO_TARGET_DIR:-$root/target}/debug/examples/agent_replica" >"$work/origin" 2>"$work/runs.jsonl" &
replica=$!
trap 'kill "$replica" 2>/dev/null; rm -rf "$work"' EXIT
i=0
while [ ! -s "$work/origin" ] && [ "$i" -lt 100 ]; do
  sleep 0.1
  i=$((i + 1))
done
CURSOR_PROVIDER_AGENT_ORIGIN=$(head -n 1 "$work/origin")
export CURSOR_PROVIDER_AGENT_ORIGIN
case "$CURSOR_PROVIDER_AGENT_ORIGIN" in
  http://127.0.0.1:*) ;;
  *) echo "the agent replica did not start" >&2; exit 1 ;;
esac
mkdir -p "$work/home/.pi/agent"
auth="$work/home/.pi/agent/auth.json"
printf '%s' '{"cursor":{"type":"oauth","access":"seeded-access","refresh":"seeded-refresh","expires":4102444800000}}' >"$auth"
chmod 600 "$auth"

failures=0
fail() {
  echo "FAIL $*" >&2
  failures=$((failures + 1))
}

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

HOME="$work/home" node --test "$here/test/addon.test.mjs" >"$work/addon.log" 2>&1 || {
  cat "$work/addon.log" >&2
  fail "addon tests"
}

for version in 0.99.1 1.0.3 1.6.0; do
  entry=$(eval echo "\$PI_$(echo "$version" | tr . _)")
  ext="$here/index.mjs"

  models=$(pi "$entry" -e "$ext" --list-models cursor 2>&1) || fail "$version --list-models exited $?"
  rows=$(printf '%s\n' "$models" | grep -c '^cursor ' || true)
  [ "$rows" -ge 5 ] || fail "$version --list-models listed $rows cursor models: $models"
  printf '%s\n' "$models" | grep -q '^cursor  *composer-2.5 ' || fail "$version --list-models lacks composer-2.5"

  out=$(pi "$entry" -e "$ext" --model cursor/composer-2.5 -p ping 2>&1) || fail "$version ping exited $?"
  [ "$out" = "pong" ] || fail "$version ping printed: $out"

  out=$(pi "$entry" -e "$ext" --model cursor/composer-2.5 -p "run: echo native-$version" 2>&1) ||
    fail "$version native exec exited $?"
  case "$out" in
    *"native-$version"*) ;;
    *) fail "$version native exec printed: $out" ;;
  esac

  out=$(pi "$entry" -e "$ext" --model cursor/composer-2.5 -p "tool: bash {\"command\":\"echo mcp-$version\"}" 2>&1) ||
    fail "$version MCP tool call exited $?"
  case "$out" in
    *"mcp-$version"*) ;;
    *) fail "$version MCP tool call printed: $out" ;;
  esac

  rm -rf "$work/sessions"
  remember="remember the pass phrase XK-PLATYPUS-77 / $version"
  pi_kept "$entry" -e "$ext" --model cursor/composer-2.5 -p "$remember" >/dev/null 2>&1 ||
    fail "$version remember exited $?"
  out=$(pi_kept "$entry" -e "$ext" -c --model cursor/composer-2.5 -p "what did I ask you to remember?" 2>&1) ||
    fail "$version recall exited $?"
  case "$out" in
    *"XK-PLATYPUS-77 / $version"*) ;;
    *) fail "$version recall printed: $out" ;;
  esac
  record=$(tail -n 1 "$work/runs.jsonl")
  case "$record" in
    *'"label":"agent-resume"'*'"historyReplayed":false'*) ;;
    *) fail "$version recall was not a resume without history: $record" ;;
  esac

  status=0
  out=$(CURSOR_PROVIDER_CHANNEL=inference pi "$entry" -e "$ext" --model cursor/composer-2.5 -p ping 2>&1) || status=$?
  [ "$status" -eq 1 ] || fail "$version inference -p exited $status"
  case "$out" in
    *"CURSOR_PROVIDER_CHANNEL=inference selects the RunInference channel"*"the turn was not sent to any other channel"*) ;;
    *) fail "$version inference -p printed: $out" ;;
  esac

  out=$(pi "$entry" -e "$ext" --model cursor/composer-2.5 -p "/cursor-doctor --offline" 2>&1) || fail "$version doctor exited $?"
  case "$out" in
    *seeded-access* | *seeded-refresh*) fail "$version doctor printed a token" ;;
    *'"accessToken": "present (redacted)"'*) ;;
    *) fail "$version doctor printed: $out" ;;
  esac
  # A catalog snapshot stored by an earlier online refresh is what offline runs list.
  store="$work/home/.pi/agent/models-store.json"
  printf '%s' '{"cursor":{"models":[],"checkedAt":1,"cursorCatalog":{"version":1,"fetchedAtMs":1,"catalog":{"rows":[{"id":"snapshot-only","name":"Snapshot Only","reasoning":false,"input":["text"],"contextWindow":100000,"maxTokens":8000,"defaultSlug":"snapshot-only","slugs":["snapshot-only"]}]}}}}' >"$store"
  stored=$(pi "$entry" -e "$ext" --list-models cursor 2>&1) || fail "$version stored --list-models exited $?"
  rm -f "$store"
  case "$stored" in
    *composer-2.5*) fail "$version listed the static table despite a stored snapshot: $stored" ;;
    *"snapshot-only"*) ;;
    *) fail "$version did not list the stored snapshot: $stored" ;;
  esac
  echo "pi $version: list-models ($rows models), stored snapshot, ping, native exec via bash, MCP tool call, resume across processes, inference refusal, doctor: ok"
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
  end=$(date +%s%N)
  echo $(((end - start) / 1000000))
}
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

if [ "$failures" -ne 0 ]; then
  echo "$failures check(s) failed" >&2
  exit 1
fi
echo "all pi checks passed"
