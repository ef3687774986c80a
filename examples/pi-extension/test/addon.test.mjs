// The native addon as the JS entry uses it, without pi: run with Node >= 22
// (`node --test examples/pi-extension/test/addon.test.mjs`) after build.sh. Nothing here leaves
// loopback: the one test that streams a real turn runs only when CURSOR_PROVIDER_AGENT_ORIGIN
// names the loopback agent replica (run-pi.sh starts one).
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { liveEvent } from "../patch.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const native = createRequire(import.meta.url)(
  process.env.CURSOR_PI_ADDON ??
    join(here, "..", "native", `cursor-pi-adapter.${process.platform}-${process.arch}.node`),
);

const model = {
  id: "composer-2.5",
  name: "Composer 2.5",
  api: "cursor-agent",
  provider: "cursor",
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
};
const context = {
  messages: [{ role: "user", content: [{ type: "text", text: "ping" }], timestamp: 0 }],
};
const stored = { type: "oauth", access: "access-1", refresh: "refresh-1", expires: 4102444800000 };

// Runs one stream to its terminal event and returns every event.
function stream(modelJson, contextJson, options = { apiKey: "token" }) {
  return new Promise((resolve) => {
    const events = [];
    const live = {};
    native.streamSimple(modelJson, contextJson, JSON.stringify(options), (json) => {
      for (const patched of JSON.parse(json)) {
        // A snapshot of `live` per event, so earlier events keep what they announced.
        const event = structuredClone(liveEvent(live, patched));
        events.push(event);
        if (event.type === "done" || event.type === "error") resolve(events);
      }
    });
  });
}

function withChannel(value, run) {
  const before = process.env.CURSOR_PROVIDER_CHANNEL;
  if (value === undefined) delete process.env.CURSOR_PROVIDER_CHANNEL;
  else process.env.CURSOR_PROVIDER_CHANNEL = value;
  return run().finally(() => {
    if (before === undefined) delete process.env.CURSOR_PROVIDER_CHANNEL;
    else process.env.CURSOR_PROVIDER_CHANNEL = before;
  });
}

test("providerInfo names the provider, its api and the tested pi versions", () => {
  const info = JSON.parse(native.providerInfo());
  assert.equal(info.id, "cursor");
  assert.equal(info.api, "cursor-agent");
  assert.match(info.testedPiVersions, /0\.99\.1/);
});

test("listModels returns pi model configs from the static table", () => {
  const { models, warnings } = JSON.parse(native.listModels());
  assert.deepEqual(warnings, []);
  assert.ok(models.length > 0);
  for (const m of models) {
    assert.equal(typeof m.id, "string");
    assert.ok(m.contextWindow > 0 && m.maxTokens > 0, m.id);
    assert.equal(m.input[0], "text");
  }
});

test("listModels falls back to the static table, with a warning, on a broken snapshot", () => {
  const { models, warnings } = JSON.parse(native.listModels("{broken"));
  assert.ok(models.length > 0);
  assert.equal(warnings.length, 1);
});

const replica = process.env.CURSOR_PROVIDER_AGENT_ORIGIN;

test(
  "the agent channel answers through the replica that CURSOR_PROVIDER_AGENT_ORIGIN names",
  { skip: replica?.startsWith("http://127.0.0.1:") ? false : "needs the loopback agent replica (run-pi.sh starts it)" },
  () =>
    withChannel(undefined, async () => {
      const events = await stream(JSON.stringify(model), JSON.stringify(context));
      assert.deepEqual(events.map((e) => e.type), ["start", "text_start", "text_delta", "text_end", "done"]);
      assert.equal(events.at(-1).message.content[0].text, "pong");
      assert.equal(events.at(-1).message.model, "composer-2.5");
    }),
);

test("a turn without credentials is an auth error pointing at /login cursor, before any request", () =>
  withChannel(undefined, async () => {
    const events = await stream(JSON.stringify(model), JSON.stringify(context), {});
    assert.deepEqual(events.map((e) => e.type), ["error"]);
    assert.match(events[0].error.errorMessage, /^auth error: .*next step: run \/login cursor/);
  }));

const inferenceReplica = process.env.CURSOR_REPLICA_INFERENCE_ORIGIN;

/** Runs `run` with CURSOR_PROVIDER_API_ORIGIN set to `origin`, then restores it. */
function withApiOrigin(origin, run) {
  const before = process.env.CURSOR_PROVIDER_API_ORIGIN;
  process.env.CURSOR_PROVIDER_API_ORIGIN = origin;
  return run().finally(() => {
    if (before === undefined) delete process.env.CURSOR_PROVIDER_API_ORIGIN;
    else process.env.CURSOR_PROVIDER_API_ORIGIN = before;
  });
}

test(
  "the inference channel answers through the RunInference replica on the API origin",
  { skip: inferenceReplica?.startsWith("http://127.0.0.1:") ? false : "needs the loopback RunInference replica (run-pi.sh starts it)" },
  () =>
    withApiOrigin(inferenceReplica, () =>
      withChannel("inference", async () => {
        const events = await stream(JSON.stringify(model), JSON.stringify(context));
        assert.equal(events.at(-1).type, "done", JSON.stringify(events));
        assert.equal(events.at(-1).message.content[0].text, "pong");
      }),
    ),
);

test(
  "an inference failure is the turn's error and is never answered by the agent channel",
  { skip: replica?.startsWith("http://127.0.0.1:") ? false : "needs the loopback agent replica (run-pi.sh starts it)" },
  () =>
    // The agent replica's origin serves Run but not RunInference: the agent channel would
    // answer `pong`, the inference channel must fail instead.
    withApiOrigin(replica, () =>
      withChannel("inference", async () => {
        const events = await stream(JSON.stringify(model), JSON.stringify(context));
        assert.deepEqual(events.map((e) => e.type), ["error"]);
        assert.doesNotMatch(JSON.stringify(events), /pong/);
      }),
    ),
);

test("a malformed context is a local error naming pi's shapes", async () => {
  const events = await stream(JSON.stringify(model), JSON.stringify({ messages: 3 }));
  assert.equal(events.length, 1);
  assert.match(events[0].error.errorMessage, /^local error: pi context/);
});

test("abort on a finished stream is harmless", async () => {
  const handle = native.streamSimple(JSON.stringify(model), JSON.stringify(context), "{}", () => {});
  handle.abort();
  handle.abort();
});

test("getApiKey returns the access token and throws the auth error for a bad entry", () => {
  assert.equal(native.getApiKey(JSON.stringify(stored)), "access-1");
  assert.throws(() => native.getApiKey('{"type":"api_key"}'), /auth error: .*next step: run \/login cursor/);
});

test("doctor reports every section offline, as JSON and as one line per check, never showing a token", async () => {
  const result = await new Promise((resolve) =>
    native.doctor(JSON.stringify(stored), undefined, false, (json) => resolve(JSON.parse(json))),
  );
  const { report, text, level } = result.ok;
  assert.equal(report.provider.id, "cursor");
  assert.equal(report.credentials.state, "valid");
  assert.equal(report.network.state, "not probed");
  assert.equal(report.catalog.source, "static");
  const [tally, ...lines] = text.split("\n");
  assert.match(tally, /^cursor doctor: \d+ ok.*\/cursor-doctor json/);
  assert.ok(lines.every((line) => /^(ok|warn|fail|skip) +\S/.test(line)), text);
  assert.match(text, /^ok +credentials +stored, valid until 2100-01-01/m);
  assert.match(text, /^skip +network +not probed/m);
  assert.ok(["info", "warning", "error"].includes(level), level);
  const all = JSON.stringify(result);
  assert.ok(!all.includes("access-1") && !all.includes("refresh-1"), all);
});

test("an API origin override off the allowlist refuses the token refresh instead of using api2", async () => {
  process.env.CURSOR_PROVIDER_API_ORIGIN = "https://example.com";
  try {
    const result = await new Promise((resolve) =>
      native.refreshToken(JSON.stringify(stored), (json) => resolve(JSON.parse(json))),
    );
    assert.equal(result.kind, "local", JSON.stringify(result));
    assert.match(result.message, /CURSOR_PROVIDER_API_ORIGIN is refused/);
    assert.ok(!JSON.stringify(result).includes("refresh-1"));
  } finally {
    delete process.env.CURSOR_PROVIDER_API_ORIGIN;
  }
});
