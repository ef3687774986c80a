# Shared by the pi end-to-end scripts (run-pi.sh, tui.sh, install-pi.sh): sourced, never run.
# The sourcing script sets $work (its scratch directory) and $replica_bin first.

# start_replica <name> [flags]: starts a loopback replica logging its Runs to $work/<name>.jsonl,
# records its pid for stop_replicas, and sets `origin` and `inference_origin`.
start_replica() {
  name=$1
  shift
  : >"$work/$name.jsonl"
  "$replica_bin" --port 0 --log "$work/$name.jsonl" "$@" >"$work/$name.origin" 2>"$work/$name.err" &
  echo $! >>"$work/pids"
  i=0
  while ! grep -qs '^REPLICA_ORIGIN=' "$work/$name.origin" && [ "$i" -lt 100 ]; do
    sleep 0.1
    i=$((i + 1))
  done
  origin=$(sed -n 's/^REPLICA_ORIGIN=//p' "$work/$name.origin")
  inference_origin=$(sed -n 's/^REPLICA_INFERENCE_ORIGIN=//p' "$work/$name.origin")
  case "$origin" in
    http://127.0.0.1:*) ;;
    *) echo "$(basename "$0"): the $name replica did not start: $(cat "$work/$name.err")" >&2; exit 1 ;;
  esac
}

# stop_replicas: kills every replica start_replica started.
stop_replicas() {
  [ -f "$work/pids" ] || return 0
  while read -r pid; do kill "$pid" 2>/dev/null || true; done <"$work/pids"
}

# begin <name> … problem <why> … end: one check, passed when no problem was noted. A script
# that needs more per check defines on_begin (called by begin), on_fail (called by a failing
# end) and on_end (called by every end).
passed=0
failed=0
begin() {
  check=$1
  problems=""
  if command -v on_begin >/dev/null 2>&1; then on_begin; fi
}
problem() {
  problems="$problems
    $*"
}
end() {
  if [ -z "$problems" ]; then
    passed=$((passed + 1))
    echo "ok   $check"
  else
    failed=$((failed + 1))
    echo "FAIL $check:$problems" >&2
    if command -v on_fail >/dev/null 2>&1; then on_fail; fi
  fi
  if command -v on_end >/dev/null 2>&1; then on_end; fi
}
