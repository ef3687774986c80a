#!/usr/bin/env bash
# Installs cursor-gateway the way a user does, `cargo install` of the published crate, from its
# package tarball (siblings patched to their own tarballs, as in tools/tarball-tests.sh), into a
# temp root; then starts it against the loopback replica, checks `--version`, sends one chat
# completion with curl and reports the time from start to `LISTENING`.
#
#   tools/install-gateway.sh                # debug profile: reuses the test builds (fast)
#   INSTALL_PROFILE=release tools/install-gateway.sh
#
# Needs tools/tarball-tests.sh to have unpacked the tarballs (it runs it when they are missing).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
started=$(date +%s)
source tools/publishable.sh
target_dir=${CARGO_TARGET_DIR:-$root/target}
case "$target_dir" in /*) ;; *) target_dir=$root/$target_dir ;; esac
export CARGO_TARGET_DIR=$target_dir
unpacked=$target_dir/tarball-tests
gateway_src=$unpacked/cursor-gateway-${crate_version[cursor-gateway]}
[ -f "$gateway_src/Cargo.toml" ] || TARBALL_RUN=" " bash tools/tarball-tests.sh

work=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

# The siblings as published: patched to their unpacked tarballs (not on crates.io yet).
config=()
for crate in "${publishable_crates[@]}"; do
  [ "$crate" = cursor-gateway ] && continue
  config+=(--config "patch.crates-io.$crate.path=\"$unpacked/$crate-${crate_version[$crate]}\"")
done
profile_flag=--debug
[ "${INSTALL_PROFILE:-debug}" = release ] && profile_flag=
# --offline: everything is in the registry cache already; the install must not need more.
# shellcheck disable=SC2086
cargo install --quiet --offline $profile_flag --path "$gateway_src" --root "$work/root" \
  "${config[@]}" --bin cursor-gateway
gateway=$work/root/bin/cursor-gateway
echo "install-gateway.sh: installed $("$gateway" --version)"
"$gateway" --version | grep -q "${crate_version[cursor-gateway]}" || { echo "install-gateway.sh: --version does not say ${crate_version[cursor-gateway]}" >&2; exit 1; }
# The revision comes from the .cargo_vcs_info.json cargo package wrote (no .git in a tarball).
packaged_rev=$(sed -n 's/.*"sha1": *"\([0-9a-f]\{12\}\).*/\1/p' "$gateway_src/.cargo_vcs_info.json" 2>/dev/null || true)
if [ -n "$packaged_rev" ]; then
  "$gateway" --version | grep -q "($packaged_rev)" || { echo "install-gateway.sh: --version does not name the packaged revision $packaged_rev" >&2; exit 1; }
fi

cargo build --quiet -p cursor-examples --example replica
"$target_dir/debug/examples/replica" --port 0 >"$work/replica.out" 2>"$work/replica.err" &
pids+=($!)
for _ in $(seq 100); do grep -q '^REPLICA_ORIGIN=' "$work/replica.out" && break; sleep 0.1; done
origin=$(sed -n 's/^REPLICA_ORIGIN=//p' "$work/replica.out")
[ -n "$origin" ] || { echo "install-gateway.sh: the replica did not start: $(cat "$work/replica.err")" >&2; exit 1; }

t0=$(date +%s%N)
CURSOR_ACCESS_TOKEN=x "$gateway" --listen 127.0.0.1:0 --state "$work/state" \
  --agent-origin "$origin" --api-origin "$origin" >"$work/gateway.out" 2>"$work/gateway.err" &
pids+=($!)
for _ in $(seq 400); do grep -q '^LISTENING ' "$work/gateway.out" && break; sleep 0.005; done
t1=$(date +%s%N)
base=$(sed -n 's/^LISTENING //p' "$work/gateway.out")
[ -n "$base" ] || { echo "install-gateway.sh: the gateway did not start: $(cat "$work/gateway.err")" >&2; exit 1; }
echo "install-gateway.sh: LISTENING $base after $(((t1 - t0) / 1000000)) ms"

answer=$(curl -sS --max-time 30 "$base/v1/chat/completions" -H 'content-type: application/json' \
  -d '{"model":"composer-2.5","messages":[{"role":"user","content":"ping"}]}')
content=$(printf '%s' "$answer" | python3 -c 'import json,sys; print(json.load(sys.stdin)["choices"][0]["message"]["content"])' 2>/dev/null || true)
[ "$content" = pong ] || { echo "install-gateway.sh: expected pong, got: $answer" >&2; exit 1; }
echo "install-gateway.sh: ping -> pong; took $(($(date +%s) - started)) s"
