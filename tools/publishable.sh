# Sourced by .ci/run and tools/semver-checks.sh from the workspace root. Sets
# `publishable_crates`, the workspace members published to the registry (every member whose
# manifest does not say `publish = false`), and `workspace_version`.
workspace_version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)
publishable_crates=()
for member in $(sed -n '/^members = \[/,/^\]/s/^ *"\(.*\)",\{0,1\}$/\1/p' Cargo.toml); do
  grep -q '^publish = false' "$member/Cargo.toml" && continue
  publishable_crates+=("$(sed -n 's/^name = "\(.*\)"$/\1/p' "$member/Cargo.toml" | head -n 1)")
done
