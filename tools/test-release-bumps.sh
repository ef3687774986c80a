#!/usr/bin/env bash
# Plants release PRs in a scratch clone and checks that tools/release-bumps.py refuses the ones
# that would ship a break under a compatible version and accepts the rest. Used by .ci/run
# (about 1 s: git and a manifest edit, no build).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
check=$root/tools/release-bumps.py
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
git clone --quiet --shared . "$scratch/repo"
cd "$scratch/repo"
git -c user.name=ci -c user.email=ci@localhost commit --quiet --allow-empty -m baseline

set_version() { # crate version
  sed -i "0,/^version = \".*\"/s//version = \"$2\"/" "$1/Cargo.toml"
}
expect() { # pass|fail label [stderr must name these crates...]
  local want=$1 label=$2
  shift 2
  local rc=0
  RELEASE_BUMPS_ROOT=$PWD python3 "$check" >"$scratch/out" 2>"$scratch/err" || rc=$?
  if { [ "$want" = pass ] && [ $rc -ne 0 ]; } || { [ "$want" = fail ] && [ $rc -eq 0 ]; }; then
    cat "$scratch/out" "$scratch/err" >&2
    echo "test-release-bumps.sh: $label: expected $want, rc $rc" >&2
    exit 1
  fi
  for crate in "$@"; do
    grep -q "^release-bumps: $crate " "$scratch/err" || {
      cat "$scratch/err" >&2
      echo "test-release-bumps.sh: $label: $crate not named" >&2
      exit 1
    }
  done
  echo "test-release-bumps.sh: ok: $label"
}

expect pass "no bumps"

set_version cursor-proto 0.1.1
expect pass "a compatible bump of cursor-proto alone"

set_version cursor-proto 0.2.0
set_version cursor-agent 0.1.1
expect fail "cursor-proto 0.2.0 with cursor-agent only patched" cursor-agent cursor-auth cursor-gateway
grep -q "release-plz set-version cursor-agent@0.2.0" "$scratch/err" ||
  { echo "test-release-bumps.sh: the fix is not named" >&2; exit 1; }

for crate in cursor-auth cursor-identity cursor-transport cursor-agent cursor-inference \
  cursor-catalog cursor-pi-adapter cursor-gateway; do
  set_version "$crate" 0.2.0
done
expect pass "cursor-proto 0.2.0 with every crate that shows its types at 0.2.0"

git checkout --quiet -- .
set_version cursor-transport 0.2.0
expect fail "cursor-transport 0.2.0 alone" cursor-agent cursor-inference cursor-catalog cursor-pi-adapter cursor-gateway
if grep -q "^release-bumps: cursor-auth " "$scratch/err"; then
  echo "test-release-bumps.sh: cursor-auth shows no cursor-transport type but was asked to bump" >&2
  exit 1
fi

# A published crate's baseline is its release tag, not the previous commit.
git checkout --quiet -- .
git tag cursor-proto-v0.0.9
expect fail "cursor-proto 0.1.0 after the tag cursor-proto-v0.0.9" cursor-agent

# docs/RELEASING.md's table says what the check computes.
cd "$root"
python3 - <<'PY'
import re, subprocess, sys
graph = {}
for line in subprocess.run(["python3", "tools/release-bumps.py", "--graph"], capture_output=True, text=True, check=True).stdout.splitlines():
    crate, shown = line.split(": ", 1)
    graph[crate] = set() if shown.startswith("(") else set(shown.split(", "))
table = {}
for row in re.findall(r"^\| (cursor-[a-z-]+) \| ([^|]*) \|", open("docs/RELEASING.md").read(), re.M):
    table[row[0]] = {c.strip() for c in row[1].split(",") if c.strip()}
wrong = {c: (table.get(c), g) for c, g in graph.items() if g and table.get(c) != g}
if wrong:
    sys.exit(f"test-release-bumps.sh: docs/RELEASING.md's table disagrees with tools/release-bumps.py --graph: {wrong}")
print("test-release-bumps.sh: ok: docs/RELEASING.md's table matches the graph")
PY
