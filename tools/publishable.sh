# Sourced by .ci/run and tools/*.sh from the workspace root. Sets `publishable_crates`, the
# workspace members published to the registry (every member whose manifest does not say
# `publish = false`), `crate_version[<crate>]`, each one's own version (they are released
# independently: release-plz.toml), and `workspace_version`, the `[workspace.package]` version
# (the `v<version>` tags of the pi package).
workspace_version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)
publishable_crates=()
declare -A crate_version=()
for member in $(sed -n '/^members = \[/,/^\]/s/^ *"\(.*\)",\{0,1\}$/\1/p' Cargo.toml); do
  grep -q '^publish = false' "$member/Cargo.toml" && continue
  name=$(sed -n 's/^name = "\(.*\)"$/\1/p' "$member/Cargo.toml" | head -n 1)
  publishable_crates+=("$name")
  version=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$member/Cargo.toml" | head -n 1)
  crate_version[$name]=${version:-$workspace_version}
done
unset member name version
