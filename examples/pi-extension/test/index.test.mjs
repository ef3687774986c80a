// index.mjs as pi drives it, without pi and without the native addon: pi's registration API
// is a plain object, `@earendil-works/pi-ai` is test/fake-pi-ai.mjs and the addon is
// test/fake-addon.cjs (through CURSOR_PI_ADDON). Run with Node >= 22:
// `node --test examples/pi-extension/test/index.test.mjs`; nothing needs building.
import assert from "node:assert/strict";
import fs, { mkdtempSync, writeFileSync } from "node:fs";
import { createRequire, register, syncBuiltinESMExports } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const stub = pathToFileURL(join(here, "fake-pi-ai.mjs")).href;
register(
  "data:text/javascript," +
    encodeURIComponent(
      `export async function resolve(specifier, context, next) {
        return specifier === "@earendil-works/pi-ai"
          ? { url: ${JSON.stringify(stub)}, shortCircuit: true }
          : next(specifier, context);
      }`,
    ),
);

const agentDir = mkdtempSync(join(tmpdir(), "cursor-index-test-"));
const authFile = join(agentDir, "auth.json");
process.env.PI_CODING_AGENT_DIR = agentDir;
process.env.CURSOR_PI_ADDON = join(here, "fake-addon.cjs");
delete process.env.CURSOR_ACCESS_TOKEN;
delete process.env.CURSOR_REFRESH_TOKEN;
delete process.env.CURSOR_API_KEY;
const { fake } = createRequire(import.meta.url)(process.env.CURSOR_PI_ADDON);

// Synchronous reads of auth.json, counted through node:fs as index.mjs imports it.
let syncAuthReads = 0;
const readFileSync = fs.readFileSync;
fs.readFileSync = (path, ...rest) => {
  if (String(path) === authFile) syncAuthReads++;
  return readFileSync(path, ...rest);
};
syncBuiltinESMExports();

const { default: cursorProvider } = await import("../index.mjs");
const pi = {
  providers: {},
  commands: {},
  registerProvider(id, config) {
    this.providers[id] = config;
  },
  registerCommand(name, command) {
    this.commands[name] = command;
  },
};
cursorProvider(pi);
const provider = pi.providers.cursor;

const model = { id: "composer-2.5", api: "cursor-agent", provider: "cursor" };
const context = { messages: [{ role: "user", content: "ping", timestamp: 0 }] };
const handle = { abort() {} };
const refused = {
  error: "auth error: the refresh token was refused (next step: run /login cursor)",
  kind: "auth",
  message: "the refresh token was refused",
  nextStep: "run /login cursor",
};

function storeAuth(access, refresh) {
  writeFileSync(authFile, JSON.stringify({ cursor: { type: "oauth", access, refresh, expires: 4102444800000 } }));
}

// The addon answers every turn `done` at once and remembers the options it was given.
function answerDone() {
  const forwarded = [];
  fake.on.streamSimple = (_model, _context, options, onEvents) => {
    forwarded.push(JSON.parse(options));
    const message = { role: "assistant", content: [], stopReason: "stop" };
    setImmediate(() => onEvents(JSON.stringify([{ type: "done", reason: "stop", message }])));
    return handle;
  };
  return forwarded;
}

// Runs a command's handler the way interactive pi does; returns what it notified.
async function runCommand(name, args) {
  const shown = [];
  const ctx = { hasUI: true, ui: { notify: (text, level) => shown.push({ text, level }) } };
  await pi.commands[name].handler(args, ctx);
  return shown;
}

test("a synchronous throw from the addon's streamSimple becomes the turn's error event", async () => {
  fake.on.streamSimple = () => {
    throw new Error("addon exploded");
  };
  const stream = provider.streamSimple(model, context, { apiKey: "token" });
  const events = await stream.ended;
  assert.deepEqual(events.map((e) => e.type), ["error"]);
  assert.equal(events[0].error.stopReason, "error");
  assert.match(events[0].error.errorMessage, /^local error: .*addon exploded/);
});

test("a native call's failure keeps its kind and next step", async () => {
  fake.on.refreshToken = (_credentials, onDone) => {
    setImmediate(() => onDone(JSON.stringify(refused)));
    return handle;
  };
  await assert.rejects(provider.oauth.refreshToken({ type: "oauth", access: "a", refresh: "r" }), (error) => {
    assert.equal(error.message, refused.error);
    assert.equal(error.kind, "auth");
    assert.equal(error.nextStep, "run /login cursor");
    return true;
  });
});

test("/cursor-doctor reports a failed diagnosis instead of throwing into pi", async () => {
  fake.on.doctor = (_credentials, _catalog, _probe, onDone) => {
    setImmediate(() => onDone(JSON.stringify(refused)));
    return handle;
  };
  const shown = await runCommand("cursor-doctor", "");
  assert.deepEqual(shown, [{ text: `cursor doctor: ${refused.error}`, level: "error" }]);
});

test("/cursor-doctor shows the readable report, and the JSON when asked", async () => {
  const report = { provider: { id: "cursor" }, credentials: { state: "valid" } };
  const probes = [];
  fake.on.doctor = (_credentials, _catalog, probe, onDone) => {
    probes.push(probe);
    setImmediate(() => onDone(JSON.stringify({ ok: { report, text: "ok    credentials  valid", level: "info" } })));
    return handle;
  };
  assert.deepEqual(await runCommand("cursor-doctor", ""), [{ text: "ok    credentials  valid", level: "info" }]);
  const [json] = await runCommand("cursor-doctor", "json --offline");
  assert.deepEqual(JSON.parse(json.text), report);
  assert.deepEqual(probes, [true, false]);
});

test("a turn reads auth.json without blocking, and again only when pi's token changed", async () => {
  const forwarded = answerDone();
  storeAuth("access-1", "refresh-1");
  await provider.streamSimple(model, context, { apiKey: "access-1" }).ended;
  assert.equal(forwarded[0].refreshToken, "refresh-1");
  assert.equal(syncAuthReads, 0, "auth.json was read synchronously");
  // The same access token pairs with the refresh token already read.
  writeFileSync(authFile, "not json");
  await provider.streamSimple(model, context, { apiKey: "access-1" }).ended;
  assert.equal(forwarded[1].refreshToken, "refresh-1");
  // pi refreshed: the new pair is read.
  storeAuth("access-2", "refresh-2");
  await provider.streamSimple(model, context, { apiKey: "access-2" }).ended;
  assert.equal(forwarded[2].refreshToken, "refresh-2");
});

test("CURSOR_API_KEY is the headless apiKey only when CURSOR_ACCESS_TOKEN is unset", () => {
  const registered = (env) => {
    const names = ["CURSOR_ACCESS_TOKEN", "CURSOR_API_KEY"];
    for (const name of names) delete process.env[name];
    Object.assign(process.env, env);
    try {
      const host = { providers: {}, registerProvider: (id, config) => (host.providers[id] = config) };
      cursorProvider(host);
      return host.providers.cursor.apiKey;
    } finally {
      for (const name of names) delete process.env[name];
    }
  };
  assert.equal(registered({ CURSOR_API_KEY: "crsr_x" }), "$CURSOR_API_KEY");
  assert.equal(registered({ CURSOR_API_KEY: "crsr_x", CURSOR_ACCESS_TOKEN: "tok" }), "$CURSOR_ACCESS_TOKEN");
  assert.equal(registered({ CURSOR_API_KEY: "  " }), undefined);
  assert.equal(registered({}), undefined);
});
