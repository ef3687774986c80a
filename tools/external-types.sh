#!/usr/bin/env bash
# Checks that each published crate's public API shows only the foreign types its manifest
# names ([package.metadata.cargo_check_external_types]), with cargo-check-external-types: a
# type of another crate in a public signature ties our semver to that crate's, so each one is
# named on purpose. The tool reads rustdoc's unstable JSON, so it runs on the nightly that its
# version pins (its rust-toolchain.toml); rustup installs that nightly (minimal profile, ~10 s)
# and cargo the tool (~1 min) into CARGO_HOME when missing. Used by .ci/run.
#
#   tools/external-types.sh
#   EXTERNAL_TYPES_LIST=1 tools/external-types.sh   # prints every crate's foreign types instead
#
# `cargo rustdoc`, which the tool runs, documents one target only, and cursor-gateway has
# binaries beside its library; so the check runs on a copy of the working tree whose gateway
# manifest builds the library alone (sources untouched).
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/publishable.sh
nightly=nightly-2026-03-20 # cargo-check-external-types 0.5.0's rust-toolchain.toml
version=0.5.0
started=$(date +%s)
target_dir=${CARGO_TARGET_DIR:-$PWD/target}
rustup run "$nightly" rustc --version >/dev/null 2>&1 || rustup toolchain install "$nightly" --profile minimal
if [ "$(cargo check-external-types --version 2>/dev/null | awk '{print $2}')" != "$version" ]; then
  cargo install --quiet --locked "cargo-check-external-types@$version"
fi

copy=$target_dir/external-types/tree
rm -rf "$copy" && mkdir -p "$copy"
git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf - | tar -xf - -C "$copy"
python3 - "$copy/cursor-gateway/Cargo.toml" <<'EOF'
import re, sys
path = sys.argv[1]
text = open(path).read()
text = re.sub(r'\[\[bin\]\]\n(?:[^\[\n][^\n]*\n|\n)*', '', text)
text = text.replace('[package]\n', '[package]\nautobins = false\n', 1)
open(path, 'w').write(text)
EOF

list_only=${EXTERNAL_TYPES_LIST:-}
empty=$target_dir/external-types/none.toml
echo 'allowed_external_types = []' >"$empty"
status=0
for crate in "${publishable_crates[@]}"; do
  dir=$copy/$(cargo metadata --no-deps --format-version 1 --manifest-path "$copy/Cargo.toml" |
    python3 -c "import json,sys,os; r=json.load(sys.stdin); print([os.path.relpath(os.path.dirname(p['manifest_path']), r['workspace_root']) for p in r['packages'] if p['name']=='$crate'][0])")
  if [ -n "$list_only" ]; then
    echo "== $crate"
    (cd "$dir" && CARGO_TARGET_DIR=$target_dir/external-types/target \
      cargo "+$nightly" check-external-types --all-features --config "$empty" 2>&1 || true) |
      sed -n 's/^error: Unapproved external type `\([^`]*\)`.*/\1/p' | sort -u
    continue
  fi
  echo "external-types.sh: $crate"
  (cd "$dir" && CARGO_TARGET_DIR=$target_dir/external-types/target \
    cargo "+$nightly" check-external-types --all-features) || status=1
done
echo "external-types.sh: took $(($(date +%s) - started)) s"
exit $status
