#!/bin/sh
# Interactive pi as a person uses it, driven under tmux (send-keys, capture-pane), against the
# loopback replica. For every version in TUI_PI_VERSIONS (default "1.6.0"):
#   login: a HOME with no credential; `/login cursor` shows the sign-in link while the replica
#     answers the poll "not yet" a few times, then pi reports the login and auth.json holds the
#     replica's tokens; `/model` selects cursor/composer-2.5 and a prompt `ping` is answered
#     `pong`;
#   doctor and model: with a stored credential, `/cursor-doctor --offline` shows one line per
#     check and `/cursor-doctor json --offline` the JSON report, neither with the tokens;
#     `/model` lists the cursor models and selects one, which the footer then names;
#     `/cursor-usage` shows the replica account's plan.
# Every screen seen is kept; on a failure the last one is printed as text. Needs tmux.
# CURSOR_PI_SKIP_BUILD=1 uses the addon in native/ and the replica already built. The last
# line is `N passed, M failed`.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
root=$(cd "$here/../.." && pwd)
cd "$root"
if [ -z "${CURSOR_PI_SKIP_BUILD:-}" ]; then
  sh "$here/build.sh" >/dev/null
  cargo build --quiet -p cursor-examples --example replica ${CARGO_BUILD_JOBS:+-j "$CARGO_BUILD_JOBS"}
fi
replica_bin="${CARGO_TARGET_DIR:-$root/target}/debug/examples/replica"
[ -x "$replica_bin" ] || { echo "tui.sh: no replica at $replica_bin" >&2; exit 1; }
command -v tmux >/dev/null 2>&1 || { echo "tui.sh: tmux is required (apt-get install -y tmux)" >&2; exit 1; }
eval "$(bash tools/pi/install.sh 2>/dev/null)"

work=$(mktemp -d)
# One tmux server per check: a new session on a server still shutting down can fail.
checks=0
socket="cursor-tui-$$-0"
cleanup() {
  tmux -L "$socket" kill-server 2>/dev/null || true
  stop_replicas
  rm -rf "$work"
}
trap cleanup EXIT
. "$here/test/lib.sh"
# Six "not yet" answers at cursor-auth's 500 ms poll interval keep the link up for ~3 s.
start_replica tui --login-polls 6

on_begin() {
  checks=$((checks + 1))
  socket="cursor-tui-$$-$checks"
  : >"$work/screens.txt"
}
on_fail() {
  echo "---- last screen ----" >&2
  screen >&2
  echo "---------------------" >&2
}
on_end() {
  tmux -L "$socket" kill-server 2>/dev/null || true
}

# start_pi <entry> <home>: interactive pi in a 160x50 tmux window, offline, with the extension.
start_pi() {
  tmux -L "$socket" -f /dev/null new-session -d -s pi -x 160 -y 50 -c "$work" \
    "env HOME='$2' PATH='$PI_NODE_BIN:/usr/bin:/bin' TERM=xterm-256color LANG=C.UTF-8 PI_SKIP_VERSION_CHECK=1 \
      CURSOR_PROVIDER_AGENT_ORIGIN='$origin' CURSOR_PROVIDER_API_ORIGIN='$origin' \
      node '$1' --offline -e '$here/index.mjs'; sleep 600"
}
screen() {
  tmux -L "$socket" capture-pane -p -J -S -300 -t pi 2>/dev/null || echo "(no tmux pane)"
}
# wait_for <fixed text> [seconds]: polls the screen every 0.2 s, keeping each one seen.
wait_for() {
  deadline=$(($(date +%s) + ${2:-15}))
  while [ "$(date +%s)" -le "$deadline" ]; do
    shown=$(screen)
    printf '%s\n=====\n' "$shown" >>"$work/screens.txt"
    case "$shown" in
      *"$1"*) return 0 ;;
    esac
    sleep 0.2
  done
  return 1
}
# type_line <text>: types the text, then Enter once the editor shows it.
type_line() {
  tmux -L "$socket" send-keys -t pi -l "$1"
  sleep 0.5
  tmux -L "$socket" send-keys -t pi Enter
}
# select_model <id>: /model, filter by the id, Enter.
select_model() {
  type_line "/model"
  wait_for "[cursor]" 10 || problem "/model listed no cursor model"
  tmux -L "$socket" send-keys -t pi -l "$1"
  sleep 0.5
  tmux -L "$socket" send-keys -t pi Enter
  wait_for "Model: $1" 10 || problem "/model did not select $1"
}

for version in ${TUI_PI_VERSIONS:-1.6.0}; do
  entry=$(eval echo "\$PI_$(echo "$version" | tr . _)")

  begin "$version TUI: /login cursor shows the link, completes the poll, then a prompt is answered"
  home="$work/login-home-$version"
  mkdir -p "$home"
  start_pi "$entry" "$home" || problem "tmux could not start pi"
  wait_for "Warning: No models available" 20 || problem "pi did not start without models"
  # The first Enter picks `cursor` in the completion list, the second runs the command.
  tmux -L "$socket" send-keys -t pi -l "/login cursor"
  sleep 0.5
  tmux -L "$socket" send-keys -t pi Enter
  sleep 0.5
  tmux -L "$socket" send-keys -t pi Enter
  login_started=$(date +%s)
  wait_for "loginDeepControl?challenge=" 10 || problem "the sign-in link never showed"
  wait_for "Logged in to Cursor" 20 || problem "pi never reported the login"
  # Six "not yet" poll rounds at 500 ms: the link was up for a while, not answered at once.
  [ $(($(date +%s) - login_started)) -ge 2 ] || problem "the login completed before the poll said not yet"
  grep -q '"access": "replica-login-access-' "$home/.pi/agent/auth.json" 2>/dev/null ||
    problem "auth.json lacks the replica's tokens: $(cat "$home/.pi/agent/auth.json" 2>&1)"
  select_model composer-2.5
  type_line "ping"
  wait_for "pong" 20 || problem "the prompt after the login got no pong"
  end

  begin "$version TUI: /cursor-doctor and /model selection of a cursor model"
  home="$work/doctor-home-$version"
  mkdir -p "$home/.pi/agent"
  printf '%s' '{"cursor":{"type":"oauth","access":"tui-secret-access","refresh":"tui-secret-refresh","expires":4102444800000}}' >"$home/.pi/agent/auth.json"
  chmod 600 "$home/.pi/agent/auth.json"
  start_pi "$entry" "$home" || problem "tmux could not start pi"
  wait_for "index.mjs" 20 || problem "pi did not start with the extension"
  tmux -L "$socket" send-keys -t pi -l "/cursor-doctor --offline"
  sleep 0.5
  tmux -L "$socket" send-keys -t pi Enter
  sleep 0.5
  tmux -L "$socket" send-keys -t pi Enter
  wait_for "ok    credentials  stored, valid until 2100-01-01" 15 || problem "/cursor-doctor showed no credentials line"
  case "$(screen)" in
    *'"accessToken"'*) problem "/cursor-doctor showed JSON unasked" ;;
  esac
  # The JSON is taller than the window: its last section is what stays on screen.
  type_line "/cursor-doctor json --offline"
  wait_for '"lastTurn": {' 15 || problem "/cursor-doctor json showed no JSON report"
  case "$(screen)" in
    *tui-secret-*) problem "the doctor showed a token" ;;
  esac
  type_line "/cursor-usage"
  wait_for "Cursor plan: Pro" 15 || problem "/cursor-usage showed no plan"
  select_model composer-2.5-fast
  wait_for "composer-2.5-fast •" 10 || problem "the footer does not name composer-2.5-fast"
  type_line "ping"
  wait_for "pong" 20 || problem "the prompt on the selected model got no pong"
  end
done

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
