// Finds the native addon for this machine, napi-rs style: every platform has its own npm
// package (pi-cursor-reins-<triple>) holding one prebuilt `.node` file, and the main package
// lists them all under `optionalDependencies`; npm installs only the one whose `os`, `cpu` and
// `libc` match. Order: CURSOR_PI_ADDON, a build.sh build in native/ (a source checkout), the
// platform package.
import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";

export const PACKAGE = "pi-cursor-reins";

// The triples with a platform package (npm/<triple>/package.json), all built by
// tools/build-addons.sh. Windows is the GNU ABI build: Node-API is a C interface, so one
// package per CPU serves every Windows Node.
export const TRIPLES = [
  "linux-x64-gnu",
  "linux-arm64-gnu",
  "linux-x64-musl",
  "linux-arm64-musl",
  "darwin-x64",
  "darwin-arm64",
  "win32-x64-gnu",
];

// Which C library this Node runs on (a glibc build does not load on musl, nor the reverse).
// Node's own report is the authority: it has `header.glibcVersionRuntime` only when Node runs on
// glibc. Without a report, musl's ldd script names musl. `report` and `readFile` are for tests.
export function linuxLibc({ report = process.report, readFile = readFileSync } = {}) {
  let header;
  // Skipping the network part keeps getReport fast where interfaces are slow to list; the
  // setting is the process's, so it is put back.
  const excluded = report?.excludeNetwork;
  try {
    if (excluded === false) report.excludeNetwork = true;
    const raw = report?.getReport?.();
    header = (typeof raw === "string" ? JSON.parse(raw) : raw)?.header;
  } catch {
    header = undefined;
  } finally {
    if (excluded === false) report.excludeNetwork = false;
  }
  if (header !== undefined) return header.glibcVersionRuntime ? "gnu" : "musl";
  try {
    return readFile("/usr/bin/ldd", "utf8").includes("musl") ? "musl" : "gnu";
  } catch {
    return "gnu";
  }
}

// The platform triple of `platform`/`arch` (Node's names), as the package names spell it.
export function triple(platform = process.platform, arch = process.arch, libc = platform === "linux" ? linuxLibc() : undefined) {
  if (platform === "linux") return `linux-${arch}-${libc}`;
  if (platform === "win32") return `win32-${arch}-gnu`;
  return `${platform}-${arch}`;
}

// Loads the addon, or throws an Error that names what is missing and how to get it.
// `here` is the main package's folder; `env`, `platformTriple` and `requireFrom` are for tests.
export function loadAddon(here, { env = process.env, platformTriple = triple(), requireFrom = createRequire(join(here, "index.mjs")) } = {}) {
  // An empty or blank value is unset, as for the provider's other switches.
  const explicit = env.CURSOR_PI_ADDON?.trim() || undefined;
  const local = join(here, "native", `cursor-pi-adapter.${process.platform}-${process.arch}.node`);
  const path = explicit ?? (existsSync(local) ? local : undefined);
  if (path !== undefined) {
    try {
      return requireFrom(path);
    } catch (error) {
      throw new Error(
        `cursor provider: cannot load the native addon at ${path} (${error.message}). ` +
          "Rebuild it with examples/pi-extension/build.sh, or unset CURSOR_PI_ADDON.",
      );
    }
  }
  const wanted = `${PACKAGE}-${platformTriple}`;
  let resolved;
  try {
    resolved = requireFrom.resolve(wanted);
  } catch {
    const declared = TRIPLES.includes(platformTriple)
      ? `npm skipped or failed to install it; install it beside ${PACKAGE} (npm install ${wanted})`
      : `there is no prebuilt addon for ${platformTriple} (prebuilt: ${TRIPLES.join(", ")})`;
    throw new Error(
      `cursor provider: the native addon package ${wanted} is missing: ${declared}, ` +
        "or build the addon from source (examples/pi-extension/build.sh in the cursor-reins repository).",
    );
  }
  try {
    return requireFrom(resolved);
  } catch (error) {
    throw new Error(
      `cursor provider: ${wanted} is installed but its addon does not load (${error.message}); ` +
        `reinstall ${PACKAGE} so both packages have the same version.`,
    );
  }
}
