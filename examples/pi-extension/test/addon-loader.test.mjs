// The loader's platform choice (addon-loader.mjs), with faked Node reports and file systems: musl
// vs glibc, the package it asks for, and the error that names the missing package.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { linuxLibc, loadAddon, PACKAGE, TRIPLES, triple } from "../addon-loader.mjs";

const here = join(dirname(fileURLToPath(import.meta.url)), "..");
const noFile = () => {
  throw Object.assign(new Error("ENOENT"), { code: "ENOENT" });
};
const report = (header, extra = {}) => ({ excludeNetwork: false, getReport: () => ({ header, ...extra }) });

test("a report with glibcVersionRuntime means glibc, even where an ldd names musl", () => {
  const ldd = () => "#!/bin/sh\n# musl ldd\n";
  assert.equal(linuxLibc({ report: report({ glibcVersionRuntime: "2.36" }), readFile: ldd }), "gnu");
});

test("a report without glibcVersionRuntime means musl (Node on Alpine)", () => {
  const musl = report({ osName: "Linux" }, { sharedObjects: ["/lib/ld-musl-x86_64.so.1"] });
  assert.equal(linuxLibc({ report: musl, readFile: noFile }), "musl");
});

test("a report given as a JSON string is read too", () => {
  const asString = { getReport: () => JSON.stringify({ header: { glibcVersionRuntime: "2.17" } }) };
  assert.equal(linuxLibc({ report: asString, readFile: noFile }), "gnu");
  const muslString = { getReport: () => JSON.stringify({ header: {} }) };
  assert.equal(linuxLibc({ report: muslString, readFile: noFile }), "musl");
});

test("without a report, ldd decides: musl's names musl, glibc's does not", () => {
  assert.equal(linuxLibc({ report: null, readFile: () => "exec /lib/ld-musl-aarch64.so.1 --list" }), "musl");
  assert.equal(linuxLibc({ report: null, readFile: () => "#! /bin/bash\n# glibc ldd\nTEXTDOMAIN=libc" }), "gnu");
  const throwing = { getReport: () => { throw new Error("report disabled"); } };
  assert.equal(linuxLibc({ report: throwing, readFile: () => "musl libc (x86_64)" }), "musl");
});

test("with neither a report nor ldd, glibc is assumed", () => {
  assert.equal(linuxLibc({ report: null, readFile: noFile }), "gnu");
});

test("the report's network setting is put back after the look", () => {
  const fake = report({ glibcVersionRuntime: "2.36" });
  let during;
  fake.getReport = () => {
    during = fake.excludeNetwork;
    return { header: { glibcVersionRuntime: "2.36" } };
  };
  linuxLibc({ report: fake, readFile: noFile });
  assert.equal(during, true);
  assert.equal(fake.excludeNetwork, false);
});

test("triples: every platform Node runs the provider on maps to a built package", () => {
  assert.equal(triple("linux", "x64", "gnu"), "linux-x64-gnu");
  assert.equal(triple("linux", "arm64", "musl"), "linux-arm64-musl");
  assert.equal(triple("darwin", "arm64"), "darwin-arm64");
  assert.equal(triple("win32", "x64"), "win32-x64-gnu");
  for (const [platform, arch, libc] of [
    ["linux", "x64", "gnu"],
    ["linux", "arm64", "gnu"],
    ["linux", "x64", "musl"],
    ["linux", "arm64", "musl"],
    ["darwin", "x64"],
    ["darwin", "arm64"],
    ["win32", "x64"],
  ]) {
    assert.ok(TRIPLES.includes(triple(platform, arch, libc)), `${platform} ${arch} ${libc}`);
  }
});

test("the main package's optionalDependencies are exactly the platform packages", () => {
  const main = JSON.parse(readFileSync(join(here, "package.json"), "utf8"));
  const wanted = TRIPLES.map((t) => `${PACKAGE}-${t}`).sort();
  assert.deepEqual(Object.keys(main.optionalDependencies).sort(), wanted);
  for (const t of TRIPLES) {
    const platform = JSON.parse(readFileSync(join(here, "npm", t, "package.json"), "utf8"));
    assert.equal(platform.name, `${PACKAGE}-${t}`);
    assert.equal(platform.version, main.version, `${t} has the main package's version`);
    assert.equal(main.optionalDependencies[platform.name], main.version);
    assert.equal(platform.main, `cursor-pi-adapter.${t}.node`);
    const [os, cpu, libc] = t.split("-");
    assert.deepEqual(platform.os, [os]);
    assert.deepEqual(platform.cpu, [cpu]);
    if (os === "linux") assert.deepEqual(platform.libc, [libc === "gnu" ? "glibc" : "musl"]);
    else assert.equal(platform.libc, undefined);
  }
});

// A requireFrom whose resolve finds nothing: the platform package is not installed.
const nothingInstalled = Object.assign(() => assert.fail("nothing to require"), {
  resolve: (name) => {
    throw Object.assign(new Error(`Cannot find module '${name}'`), { code: "MODULE_NOT_FOUND" });
  },
});

test("a missing musl package is named, with how to install it", () => {
  assert.throws(
    () => loadAddon("/nowhere", { env: {}, platformTriple: "linux-arm64-musl", requireFrom: nothingInstalled }),
    (error) =>
      error.message.includes("pi-cursor-reins-linux-arm64-musl is missing") &&
      error.message.includes("npm install pi-cursor-reins-linux-arm64-musl"),
  );
});

test("an unbuilt platform names the package and lists the prebuilt ones", () => {
  assert.throws(
    () => loadAddon("/nowhere", { env: {}, platformTriple: "linux-riscv64-gnu", requireFrom: nothingInstalled }),
    (error) =>
      error.message.includes("pi-cursor-reins-linux-riscv64-gnu is missing") &&
      error.message.includes("no prebuilt addon for linux-riscv64-gnu") &&
      error.message.includes("win32-x64-gnu") &&
      error.message.includes("build the addon from source"),
  );
});

test("the package the platform triple names is the one required", () => {
  const required = [];
  const fake = Object.assign((path) => (required.push(path), { ok: true }), {
    resolve: (name) => `/resolved/${name}`,
  });
  assert.deepEqual(loadAddon("/nowhere", { env: {}, platformTriple: "linux-x64-musl", requireFrom: fake }), { ok: true });
  assert.deepEqual(required, ["/resolved/pi-cursor-reins-linux-x64-musl"]);
});

test("an empty or blank CURSOR_PI_ADDON counts as unset", () => {
  for (const value of ["", "  "]) {
    const required = [];
    const fake = Object.assign((path) => (required.push(path), { ok: true }), {
      resolve: (name) => `/resolved/${name}`,
    });
    const env = { CURSOR_PI_ADDON: value };
    assert.deepEqual(loadAddon("/nowhere", { env, platformTriple: "linux-x64-gnu", requireFrom: fake }), { ok: true });
    assert.deepEqual(required, ["/resolved/pi-cursor-reins-linux-x64-gnu"]);
  }
});
