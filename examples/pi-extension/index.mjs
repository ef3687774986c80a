// The `cursor` provider for pi: a thin JS entry over the native addon built from
// cursor-pi-adapter (feature `node`). Rust does the work (channel choice, Cursor calls, event
// mapping, OAuth); this file only registers the provider and bridges pi's objects:
//
// - streamSimple: pi's model, context and chosen options go to Rust as JSON; events come back
//   in batches (one JSON array per burst), each carrying a `patch` for the assistant message
//   instead of a snapshot. pi wants ONE live `partial` object: each patch is applied to it
//   (O(1) per event, patch.mjs) and the event is pushed with `live` as its message.
// - pi's abort signal calls the native handle's abort(); Rust then ends the stream with an
//   `error` event whose reason is `aborted`.
// - A Run refused with 401 refreshes once with the refresh token stored in auth.json and
//   replays; the new token is not written back (pi owns auth.json).
// - OAuth callbacks, refreshModels and /cursor-doctor wrap the native calls in promises.
// - Nothing here may throw into pi: a turn's failure is its `error` event, a command's is a
//   notification.
import { readFile } from "node:fs/promises";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { createAssistantMessageEventStream } from "@earendil-works/pi-ai";
import { loadAddon } from "./addon-loader.mjs";
import { liveEvent } from "./patch.mjs";

const here = dirname(fileURLToPath(import.meta.url));

// Settles a promise from a native `onDone` payload: {ok} or {error, kind, message, nextStep}.
// A failure rejects with an Error whose message is the whole text and which keeps `kind` and
// `nextStep`, so a caller can act on them without parsing the text.
function nativeCall(start, signal) {
  return new Promise((resolve, reject) => {
    const handle = start((json) => {
      signal?.removeEventListener?.("abort", onAbort);
      try {
        const result = JSON.parse(json);
        if ("ok" in result) resolve(result.ok);
        else reject(Object.assign(new Error(result.error), { kind: result.kind, nextStep: result.nextStep }));
      } catch (error) {
        reject(error);
      }
    });
    function onAbort() {
      handle.abort();
    }
    if (signal?.aborted) handle.abort();
    else signal?.addEventListener?.("abort", onAbort, { once: true });
  });
}

// The refresh token stored beside the access token pi resolved, so a Run refused with 401 can
// refresh once and replay; pi itself still owns and persists auth.json.
// A headless access token (CURSOR_ACCESS_TOKEN) pairs with CURSOR_REFRESH_TOKEN instead.
// auth.json is read without blocking pi, and again only when pi's access token changed: pi
// rewrites both tokens together when it refreshes, so the pair read last still holds.
function refreshTokenReader(info) {
  let last;
  return async (providerId, apiKey) => {
    if (last?.apiKey !== apiKey) {
      const stored = (await storedCredentials())?.[providerId];
      last = { apiKey, refresh: stored?.type === "oauth" && stored.access === apiKey ? stored.refresh : undefined };
    }
    if (last.refresh !== undefined) return last.refresh;
    const headless = headlessToken(info.accessTokenEnv);
    return headless !== undefined && headless === apiKey?.trim() ? headlessToken(info.refreshTokenEnv) : undefined;
  };
}

// A token from the environment; blank counts as unset (as in Rust's HeadlessTokens).
function headlessToken(name) {
  const value = process.env[name]?.trim();
  return value ? value : undefined;
}

// The provider's `apiKey` for headless runs: `$CURSOR_ACCESS_TOKEN`, else `$CURSOR_API_KEY`.
function headlessApiKey(info) {
  for (const name of [info.accessTokenEnv, info.apiKeyEnv]) {
    if (name && headlessToken(name)) return { apiKey: `$${name}` };
  }
  return {};
}

function streamSimple(native, refreshTokenFor, model, context, options) {
  const stream = createAssistantMessageEventStream();
  const live = {};
  let finished = false;
  let handle;
  const signal = options?.signal;
  const finish = () => {
    finished = true;
    signal?.removeEventListener?.("abort", onAbort);
    stream.end();
  };
  // An exception must not escape to pi or into the native callback; the turn fails instead.
  const fail = (what, error) => {
    if (finished) return;
    stream.push({ type: "error", reason: "error", error: failedMessage(model, live, what, error) });
    finish();
  };
  const onEvents = (json) => {
    if (finished) return;
    try {
      for (const event of JSON.parse(json)) {
        stream.push(liveEvent(live, event));
        if (event.type === "done" || event.type === "error") return finish();
      }
    } catch (error) {
      fail("could not read an event from its native addon", error);
    }
  };
  function onAbort() {
    handle?.abort();
  }
  const start = async () => {
    const forwarded = {
      sessionId: options?.sessionId,
      reasoning: options?.reasoning,
      apiKey: options?.apiKey,
      maxTokens: options?.maxTokens,
      refreshToken: await refreshTokenFor(model.provider, options?.apiKey),
    };
    handle = native.streamSimple(
      JSON.stringify(model),
      JSON.stringify(context),
      JSON.stringify(forwarded),
      onEvents,
    );
    // An abort while auth.json was read is honoured here.
    if (signal?.aborted) handle.abort();
    else signal?.addEventListener?.("abort", onAbort, { once: true });
  };
  start().catch((error) => fail("could not start the turn in its native addon", error));
  return stream;
}

// pi's refreshModels: the catalog snapshot rides in pi's models store beside `models`. Offline
// (every -p, json and --list-models run) it is served as stored; with the network allowed and
// a login, Rust refreshes it from Cursor and a new snapshot is persisted.
async function refreshModels(native, info, context) {
  const stored = context.stored?.[info.snapshotKey];
  const persisted = stored === undefined ? undefined : JSON.stringify(stored);
  const token =
    context.credential?.type === "oauth"
      ? context.credential.access
      : (headlessToken(info.accessTokenEnv) ?? (info.apiKeyEnv && headlessToken(info.apiKeyEnv)));
  if (!context.allowNetwork || !token) return JSON.parse(native.listModels(persisted)).models;
  const refreshed = await nativeCall(
    (onDone) => native.refreshCatalog(token, persisted, context.force === true, onDone),
    context.signal,
  );
  if (refreshed.snapshot) {
    await context.publish({
      persist: { models: refreshed.models, checkedAt: Date.now(), [info.snapshotKey]: refreshed.snapshot },
    });
  }
  return refreshed.models;
}

// The assistant message of a turn the JS side itself had to fail; `what` went wrong.
function failedMessage(model, live, what, error) {
  const zero = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };
  return {
    role: "assistant",
    content: [],
    api: model.api,
    provider: model.provider,
    model: model.id,
    usage: { ...zero, totalTokens: 0, cost: { ...zero, total: 0 } },
    timestamp: Date.now(),
    ...live,
    stopReason: "error",
    errorMessage:
      `local error: the cursor extension ${what} (${error?.message ?? error}) ` +
      "(next step: rebuild the addon with build.sh so it matches index.mjs)",
  };
}

function agentDir() {
  return process.env.PI_CODING_AGENT_DIR ?? join(homedir(), ".pi", "agent");
}

// pi's auth.json, or undefined when it is missing or unreadable.
async function storedCredentials() {
  try {
    return JSON.parse(await readFile(join(agentDir(), "auth.json"), "utf8"));
  } catch {
    return undefined;
  }
}

// A command's output: a notification in pi's TUI, else stdout (stderr for a failure).
function show(ctx, text, level, failed = level === "error") {
  if (ctx?.hasUI) ctx.ui.notify(text, level);
  else (failed ? process.stderr : process.stdout).write(`${text}\n`);
}

export default function cursorProvider(pi) {
  const native = loadAddon(here);
  const info = JSON.parse(native.providerInfo());
  const { models, warnings } = JSON.parse(native.listModels());
  for (const warning of warnings) console.warn(`cursor provider: ${warning}`);
  const refreshTokenFor = refreshTokenReader(info);

  pi.registerProvider(info.id, {
    name: "Cursor",
    baseUrl: "https://api2.cursor.sh",
    api: info.api,
    models,
    // Headless runs (CI, `pi -p`): pi resolves this only when auth.json has no credential for
    // the provider, and stores nothing for it. Unset, the provider stays OAuth-only. An access
    // token wins over a user API key (CURSOR_API_KEY, `crsr_…`), which the native side
    // exchanges for an access token kept in memory only.
    ...headlessApiKey(info),
    refreshModels: (context) => refreshModels(native, info, context),
    streamSimple: (model, context, options) => streamSimple(native, refreshTokenFor, model, context, options),
    oauth: {
      name: "Cursor",
      login: (callbacks) =>
        nativeCall(
          (onDone) =>
            native.login(
              (url) =>
                callbacks.onAuth({
                  url,
                  instructions: "Open the link and sign in to Cursor; pi continues when the sign-in completes.",
                }),
              onDone,
            ),
          callbacks.signal,
        ),
      refreshToken: (credentials, signal) =>
        nativeCall((onDone) => native.refreshToken(JSON.stringify(credentials), onDone), signal),
      getApiKey: (credentials) => native.getApiKey(JSON.stringify(credentials)),
    },
  });

  pi.registerCommand?.("cursor-usage", {
    description: "Show the Cursor account's plan and how much of the billing period is used",
    handler: async (_args, ctx) => {
      let text;
      let level = "info";
      try {
        const credentials = (await storedCredentials())?.[info.id];
        const report = await nativeCall((onDone) =>
          native.usage(credentials ? JSON.stringify(credentials) : undefined, onDone),
        );
        text = report.text;
      } catch (error) {
        text = `cursor usage: ${error.message}`;
        level = "error";
      }
      show(ctx, text, level);
    },
  });

  pi.registerCommand?.("cursor-doctor", {
    description:
      "Check the Cursor provider (channel, credentials, identity, network, handles, catalog, last turn); " +
      "`json` shows the full report, `--offline` skips the network",
    handler: async (args, ctx) => {
      const words = String(args ?? "").split(/\s+/);
      let text;
      let level;
      let failed = false;
      try {
        const credentials = (await storedCredentials())?.[info.id];
        const diagnosis = await nativeCall((onDone) =>
          native.doctor(
            credentials ? JSON.stringify(credentials) : undefined,
            undefined,
            !words.includes("--offline"),
            onDone,
          ),
        );
        ({ text, level } = words.includes("json")
          ? { text: JSON.stringify(diagnosis.report, null, 2), level: "info" }
          : diagnosis);
      } catch (error) {
        text = `cursor doctor: ${error.message}`;
        level = "error";
        failed = true;
      }
      // The report goes to stdout headless even when a check failed; only a failed run is stderr.
      show(ctx, text, level, failed);
    },
  });
}
