// Cost per text delta through the native addon alone (no pi), against the loopback replica:
//
//   node bridge-bench.mjs <replica origin> [deltas...]     (default 200 2000 10000)
//
// For each count the replica is scripted (POST /replica/script `text N`) to answer the next Run
// with N one-word text deltas back to back; streamSimple runs the turn through the addon and
// patch.mjs rebuilds pi's events on one live message, as index.mjs does. Prints, per count, the
// time from the call to `done` per delta (and split: up to the first text_delta pi sees, which
// holds the turn's opening and every delta merged into that first event, then the rest per
// delta), the JSON bytes handed to JS against the answer's text
// length, how many callbacks carried them (events arriving together share one), how many
// text_delta events pi saw (deltas that reach the Run together merge into one), and the CPU
// time this process spent on the turn (every thread: JS and the addon's runtime, not the
// replica's), per delta beyond what a one-delta turn costs. The wall time also holds the
// replica's own pace of sending; the CPU time is what a delta costs here.
// Exits 1 when a turn fails or its text is not the N words.
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { liveEvent } from "../patch.mjs";
import { scriptReplica } from "./replica-script.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const [origin, ...counts] = process.argv.slice(2);
if (!origin) {
  console.error("usage: bridge-bench.mjs <replica origin> [deltas...]");
  process.exit(2);
}
process.env.CURSOR_PROVIDER_AGENT_ORIGIN = origin;
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
const context = { messages: [{ role: "user", content: [{ type: "text", text: "go" }], timestamp: 0 }] };


// One turn of `deltas` text deltas; resolves with what it cost.
function turn(deltas) {
  return new Promise((resolve, reject) => {
    const live = {};
    let bytes = 0;
    let callbacks = 0;
    let textDeltas = 0;
    let firstDelta;
    const started = performance.now();
    const cpuStarted = process.cpuUsage();
    native.streamSimple(JSON.stringify(model), JSON.stringify(context), JSON.stringify({ apiKey: "token" }), (json) => {
      bytes += Buffer.byteLength(json);
      callbacks += 1;
      const parsed = JSON.parse(json);
      // An addon from before batching (one snapshot event per call) is measured the same way.
      for (const patched of Array.isArray(parsed) ? parsed : [parsed]) {
        const event = liveEvent(live, patched);
        if (event.type === "text_delta") {
          textDeltas += 1;
          firstDelta ??= performance.now();
        }
        if (event.type === "error") return reject(new Error(event.error.errorMessage));
        if (event.type === "done") {
          const elapsed = performance.now() - started;
          const text = event.message.content.map((block) => block.text ?? "").join("");
          const streaming = performance.now() - firstDelta;
          const used = process.cpuUsage(cpuStarted);
          const cpu = (used.user + used.system) / 1000;
          return resolve({ elapsed, streaming, cpu, bytes, callbacks, textDeltas, text });
        }
      }
    });
  });
}

const sizes = counts.length > 0 ? counts.map(Number) : [200, 2000, 10000];
await scriptReplica(origin, "text 50");
await turn(50); // warm-up: the connection, the runtime, the JIT
// A one-delta turn's CPU is the turn's own cost (request, opening, done): what a delta adds
// is measured beyond it.
let opening = Infinity;
for (let i = 0; i < 5; i++) {
  await scriptReplica(origin, "text 1");
  opening = Math.min(opening, (await turn(1)).cpu);
}
console.log(`a one-delta turn: ${opening.toFixed(2)} ms of CPU (best of 5)`);
let failed = false;
for (const deltas of sizes) {
  await scriptReplica(origin, `text ${deltas}`);
  const result = await turn(deltas);
  const textBytes = Buffer.byteLength(result.text);
  // Deltas that reach the Run together merge, so pi may see fewer, longer text_deltas.
  const ok = result.textDeltas <= deltas && result.text.split(/\s+/).filter(Boolean).length === deltas;
  failed ||= !ok;
  console.log(
    `${deltas} deltas: ${result.elapsed.toFixed(1)} ms, ${((result.elapsed * 1000) / deltas).toFixed(2)} us/delta ` +
      `(${(result.elapsed - result.streaming).toFixed(2)} ms to the first delta, then ` +
      `${((result.streaming * 1000) / deltas).toFixed(2)} us/delta); ` +
      `${result.bytes} bytes to JS for ${textBytes} bytes of text (${(result.bytes / textBytes).toFixed(2)}x, ` +
      `${((result.bytes - 2 * textBytes) / (result.textDeltas + 4)).toFixed(0)} B/event beyond 2x the text) ` +
      `in ${result.callbacks} callbacks, ${result.textDeltas} text_delta events${ok ? "" : " — WRONG TEXT"}; ` +
      `CPU ${result.cpu.toFixed(2)} ms, ${((Math.max(0, result.cpu - opening) * 1000) / (deltas - 1)).toFixed(2)} us/delta beyond the one-delta turn`,
  );
}
process.exit(failed ? 1 : 0);
