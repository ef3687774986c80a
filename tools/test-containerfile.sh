#!/usr/bin/env bash
# Tests cursor-gateway/Containerfile: builds it and runs the image (--version, and a refusal to
# listen on 0.0.0.0 without a client key) where podman, buildah or a working docker exists;
# otherwise lints it: hadolint when installed, and always the lines that make the image what
# docs/RELEASING.md promises (scratch base, non-root user, 0.0.0.0:8787, key via env or file).
set -euo pipefail
cd "$(dirname "$0")/.."
file=cursor-gateway/Containerfile
fail() { echo "test-containerfile.sh: $*" >&2; exit 1; }

# The promises, checked as text (cheap, and the only check on a machine without a container tool).
grep -qx 'FROM scratch' "$file" || fail "the final stage is not FROM scratch"
[ "$(grep -c '^FROM ' "$file")" -eq 2 ] || fail "expected two stages (build, scratch)"
user=$(sed -n 's/^USER \(.*\)$/\1/p' "$file" | tail -n 1)
case "$user" in "" | 0 | 0:* | root | root:*) fail "the image runs as root (USER '$user')" ;; esac
grep -q '^ENTRYPOINT \["/cursor-gateway", "--listen", "0.0.0.0:8787"' "$file" || fail "ENTRYPOINT does not listen on 0.0.0.0:8787"
grep -q 'CURSOR_GATEWAY_API_KEY' "$file" && grep -q -- '--api-key-file' "$file" ||
  fail "the key's two ways in (CURSOR_GATEWAY_API_KEY, --api-key-file) are not documented"
grep -q -- '--locked' "$file" || fail "the build does not use Cargo.lock (--locked)"
grep -q '^ENV .*\(KEY\|TOKEN\)' "$file" && fail "a credential is baked into the image"
if command -v hadolint >/dev/null 2>&1; then hadolint "$file"; fi

tool=
for candidate in podman buildah docker; do
  command -v "$candidate" >/dev/null 2>&1 || continue
  [ "$candidate" = docker ] && ! docker info >/dev/null 2>&1 && continue
  tool=$candidate
  break
done
if [ -z "$tool" ]; then
  echo "test-containerfile.sh: linted $file (no podman, buildah or running docker here; not built)"
  exit 0
fi
image=localhost/cursor-gateway:test
if [ "$tool" = buildah ]; then
  buildah bud -f "$file" -t "$image" .
  echo "test-containerfile.sh: built with buildah (not run: buildah has no run of an entrypoint)"
  exit 0
fi
"$tool" build -f "$file" -t "$image" .
"$tool" run --rm "$image" --version
# 0.0.0.0 without a client key must be refused.
if "$tool" run --rm "$image" >/dev/null 2>&1; then fail "the image served 0.0.0.0 without a key"; fi
echo "test-containerfile.sh: built and ran $image with $tool"
