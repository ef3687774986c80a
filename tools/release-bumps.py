#!/usr/bin/env python3
"""A breaking bump of a crate is a breaking bump of every sibling that exposes its types.

cargo-semver-checks does not look inside items a crate shows from another crate, so a release
PR that bumps cursor-proto 0.1 -> 0.2 but cursor-agent (which re-exports `cursor_proto::ir`)
only 0.1.0 -> 0.1.1 would ship a break under a patch version. This check fails then, naming the
crate and the version it needs (docs/RELEASING.md "Re-exports").

A crate exposes a sibling when its manifest's `allowed_external_types` (checked exact by
tools/external-types.sh) names one of the sibling's types, or its sources `pub use` the
sibling. Each crate's baseline is its newest `<crate>-v<version>` tag, else its manifest at
the baseline revision (`RELEASE_BUMPS_BASELINE_REV`, default: the merge-base with origin/main
on another branch, else HEAD~1), i.e. what the release PR changed.

    tools/release-bumps.py             # check the working tree against the baselines
    tools/release-bumps.py --graph     # print who exposes whom
"""

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

# RELEASE_BUMPS_ROOT: another checkout to check (tools/test-release-bumps.sh plants bumps in one).
ROOT = Path(os.environ.get("RELEASE_BUMPS_ROOT") or Path(__file__).resolve().parent.parent)
PUB_USE = re.compile(r"^\s*pub\s+use\s+(?:::)?(cursor_[a-z_]+)", re.MULTILINE)


def git(*args, check=True):
    out = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)
    if check and out.returncode != 0:
        sys.exit(f"release-bumps: git {' '.join(args)}: {out.stderr.strip()}")
    return out.stdout.strip() if out.returncode == 0 else None


def members():
    """(name, dir, manifest) of every publishable workspace member."""
    workspace = tomllib.loads((ROOT / "Cargo.toml").read_text())
    found = []
    for member in workspace["workspace"]["members"]:
        manifest = tomllib.loads((ROOT / member / "Cargo.toml").read_text())
        if manifest["package"].get("publish", True) is False:
            continue
        found.append((manifest["package"]["name"], member, manifest))
    return found, workspace["workspace"]["package"]["version"]


def version_of(manifest, workspace_version):
    version = manifest["package"].get("version", workspace_version)
    return workspace_version if isinstance(version, dict) else version


def exposed_siblings(name, member, manifest, siblings):
    """Siblings whose types `name` shows in its public API, with where it shows them."""
    crate_of = {sibling.replace("-", "_"): sibling for sibling in siblings if sibling != name}
    shown = {}
    allowed = (
        manifest.get("package", {})
        .get("metadata", {})
        .get("cargo_check_external_types", {})
        .get("allowed_external_types", [])
    )
    for path in allowed:
        sibling = crate_of.get(path.split("::", 1)[0])
        if sibling:
            shown.setdefault(sibling, set()).add("Cargo.toml allowed_external_types")
    for source in (ROOT / member / "src").rglob("*.rs"):
        for used in PUB_USE.findall(source.read_text()):
            sibling = crate_of.get(used)
            if sibling:
                shown.setdefault(sibling, set()).add(f"pub use in {source.relative_to(ROOT)}")
    return shown


def baseline_rev():
    if os.environ.get("RELEASE_BUMPS_BASELINE_REV"):
        return os.environ["RELEASE_BUMPS_BASELINE_REV"]
    head = git("rev-parse", "HEAD")
    main = git("rev-parse", "--verify", "--quiet", "origin/main", check=False)
    if main and main != head:
        return git("merge-base", "HEAD", "origin/main")
    return git("rev-parse", "--verify", "--quiet", "HEAD~1", check=False) or head


def baseline_version(name, member, rev, workspace_version):
    tags = git("tag", "--list", f"{name}-v*", "--sort=-v:refname", check=False)
    if tags:
        return tags.splitlines()[0][len(name) + 2 :], tags.splitlines()[0]
    text = git("show", f"{rev}:{member}/Cargo.toml", check=False)
    if text is None:
        return None, f"{rev} (the crate is new there)"
    root = git("show", f"{rev}:Cargo.toml", check=False)
    old_workspace = tomllib.loads(root)["workspace"]["package"]["version"] if root else workspace_version
    return version_of(tomllib.loads(text), old_workspace), rev[:12]


def parts(version):
    return tuple(int(p) for p in re.match(r"(\d+)\.(\d+)\.(\d+)", version).groups())


def breaking_part(version):
    """The part whose bump may break: the minor before 1.0 (cargo's rule), else the major."""
    major, minor, _ = parts(version)
    return (0, minor) if major == 0 else (major,)


def is_breaking(old, new):
    return old is not None and breaking_part(old) != breaking_part(new)


def next_breaking(version):
    major, minor, _ = parts(version)
    return f"0.{minor + 1}.0" if major == 0 else f"{major + 1}.0.0"


def main():
    crates, workspace_version = members()
    names = [name for name, _, _ in crates]
    exposes = {name: exposed_siblings(name, member, manifest, names) for name, member, manifest in crates}
    if "--graph" in sys.argv:
        for name in names:
            print(f"{name}: {', '.join(sorted(exposes[name])) or '(no sibling types)'}")
        return 0
    rev = baseline_rev()
    now, breaks = {}, {}
    for name, member, manifest in crates:
        now[name] = version_of(manifest, workspace_version)
        old, source = baseline_version(name, member, rev, workspace_version)
        breaks[name] = is_breaking(old, now[name])
        if old is not None and old != now[name]:
            kind = "breaking" if breaks[name] else "compatible"
            print(f"release-bumps: {name} {old} -> {now[name]} ({kind}, against {source})")
    failures = []
    for name in names:
        for sibling, where in sorted(exposes[name].items()):
            if breaks[sibling] and not breaks[name]:
                failures.append(
                    f"{name} {now[name]} shows types of {sibling} ({'; '.join(sorted(where))}), "
                    f"whose bump to {now[sibling]} is breaking: bump {name} to at least "
                    f"{next_breaking(now[name])} (release-plz set-version {name}@{next_breaking(now[name])})"
                )
    for failure in failures:
        print(f"release-bumps: {failure}", file=sys.stderr)
    if not failures:
        print(f"release-bumps: every crate that shows a broken sibling's types is bumped breaking too (baseline {rev[:12]})")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
