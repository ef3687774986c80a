#!/usr/bin/env bash
# Proves the semver check can fail: in a scratch copy of the working tree, a public function
# of cursor-proto (`hex::decode_array`) is removed, and cargo-semver-checks must report
# `function_missing` against the unchanged tree. Run after tools/semver-checks.sh, whose
# rustdoc JSON of the working tree it reuses (a few seconds; the dependencies are built).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
target_dir=${CARGO_TARGET_DIR:-$root/target}
case "$target_dir" in /*) ;; *) target_dir=$root/$target_dir ;; esac
current=$target_dir/semver/current/cursor-proto.json
[ -f "$current" ] || { echo "test-semver-break.sh: run tools/semver-checks.sh first ($current is missing)" >&2; exit 1; }

scratch=$target_dir/semver/planted
rm -rf "$scratch" && mkdir -p "$scratch"
git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf - | tar -xf - -C "$scratch"
python3 - "$scratch/cursor-proto/src/hex.rs" <<'EOF'
import re, sys
path = sys.argv[1]
text = open(path).read()
# The function and the doc comment above it, up to its closing brace at column 0.
planted, n = re.subn(r'(?:///[^\n]*\n)*pub fn decode_array<[^\n]*\n(?:[^\n]*\n)*?\}\n', '', text, count=1)
if n != 1:
    sys.exit("test-semver-break.sh: hex::decode_array not found; update the planted break")
open(path, 'w').write(planted)
EOF
# Only the library is documented, so callers elsewhere in the copy do not matter.
(cd "$scratch" && RUSTC_BOOTSTRAP=1 CARGO_TARGET_DIR=$target_dir \
  RUSTDOCFLAGS="-Z unstable-options --document-private-items --document-hidden-items --output-format=json --cap-lints=allow" \
  cargo doc --quiet --no-deps --lib --all-features -p cursor-proto)
mv "$target_dir/doc/cursor_proto.json" "$scratch/planted.json"

if cargo semver-checks check-release --current-rustdoc "$scratch/planted.json" \
  --baseline-rustdoc "$current" >"$scratch/report.txt" 2>&1; then
  cat "$scratch/report.txt" >&2
  echo "test-semver-break.sh: a removed public function passed the semver check" >&2
  exit 1
fi
grep -q 'function_missing' "$scratch/report.txt" || {
  cat "$scratch/report.txt" >&2
  echo "test-semver-break.sh: the check failed, but not with function_missing" >&2
  exit 1
}
grep -A3 'function_missing' "$scratch/report.txt" | head -n 8
echo "test-semver-break.sh: ok: removing cursor_proto::hex::decode_array is reported as breaking"
