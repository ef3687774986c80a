// A stand-in for the native addon, for test/index.test.mjs: index.mjs loads it through
// CURSOR_PI_ADDON. Each export does what `fake.on[name]` says (a test sets it), else a
// harmless default; every call is recorded in `fake.calls`.
const fake = { on: {}, calls: [] };

function call(name, args, otherwise) {
  fake.calls.push({ name, args });
  return (fake.on[name] ?? otherwise)(...args);
}

const handle = { abort() {} };

module.exports = {
  fake,
  providerInfo: () =>
    JSON.stringify({
      id: "cursor",
      api: "cursor-agent",
      snapshotKey: "cursorCatalog",
      accessTokenEnv: "CURSOR_ACCESS_TOKEN",
      refreshTokenEnv: "CURSOR_REFRESH_TOKEN",
      apiKeyEnv: "CURSOR_API_KEY",
    }),
  listModels: () => JSON.stringify({ models: [], warnings: [] }),
  streamSimple: (...args) => call("streamSimple", args, () => handle),
  refreshToken: (...args) => call("refreshToken", args, () => handle),
  doctor: (...args) => call("doctor", args, () => handle),
  usage: (...args) => call("usage", args, () => handle),
};
