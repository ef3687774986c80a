// Measures how long a replica text frame takes to become pi's `message_update` event:
//
//   node latency.mjs <replica origin> <deltas> <pi command...>
//
// The replica is scripted (POST /replica/script `text N`) to answer the next Run with N
// one-word text deltas sent back to back. pi (with this extension, `--mode json -p`) reaches
// the replica through a TCP relay here that timestamps every chunk the replica sends; each
// text_delta line pi prints is timestamped on arrival, and each replica delta (one word) is
// found in the text_delta that carries it (deltas that reach the Run together arrive merged).
// Back to back, a delta's latency includes waiting behind the earlier deltas of the burst.
// Prints one summary line; exits 1 when pi fails or the text is not every delta in order.
import { spawn } from "node:child_process";
import { createConnection, createServer } from "node:net";
import { performance } from "node:perf_hooks";
import { createInterface } from "node:readline";
import { scriptReplica } from "./replica-script.mjs";

const [origin, count, ...command] = process.argv.slice(2);
const deltas = Number(count);
if (!origin || !(deltas > 0) || command.length === 0) {
  console.error("usage: latency.mjs <replica origin> <deltas> <pi command...>");
  process.exit(2);
}
const target = new URL(origin);


// Relay: every chunk from the replica is timestamped with its size.
const chunks = [];
const relay = createServer((client) => {
  const upstream = createConnection({ host: target.hostname, port: Number(target.port) });
  // Without these a relayed burst can wait 40 ms for a delayed ACK (Nagle): the relay's stall,
  // not the extension's.
  client.setNoDelay(true);
  upstream.setNoDelay(true);
  client.pipe(upstream);
  upstream.on("data", (data) => {
    chunks.push({ at: performance.now(), bytes: data.length });
    client.write(data);
  });
  upstream.on("end", () => client.end());
  upstream.on("error", () => client.destroy());
  client.on("error", () => upstream.destroy());
});
await new Promise((resolve) => relay.listen(0, "127.0.0.1", resolve));
const relayOrigin = `http://127.0.0.1:${relay.address().port}`;

await scriptReplica(origin, `text ${deltas}`);
const pi = spawn(command[0], command.slice(1), {
  stdio: ["ignore", "pipe", "inherit"],
  env: { ...process.env, CURSOR_PROVIDER_AGENT_ORIGIN: relayOrigin },
});
// Replica delta i is the word `w<i> `; deltas that reach the Run together merge into one
// text_delta, so each word's arrival is that of the text_delta carrying it.
const arrivals = [];
let text = "";
let events = 0;
for await (const line of createInterface({ input: pi.stdout })) {
  const at = performance.now();
  if (!line.includes('"text_delta"')) continue;
  const event = JSON.parse(line);
  if (event.type === "message_update" && event.assistantMessageEvent?.type === "text_delta") {
    events += 1;
    text += event.assistantMessageEvent.delta;
    const words = text.split(" ").length - 1;
    while (arrivals.length < words) arrivals.push(at);
  }
}
const status = await new Promise((resolve) => pi.on("close", resolve));
relay.close();
const expected = Array.from({ length: deltas }, (_, i) => `w${i + 1} `).join("");
if (status !== 0 || text !== expected) {
  console.error(
    `latency: pi exited ${status} after ${arrivals.length} of ${deltas} deltas` +
      (text === expected ? "" : ` (text ${JSON.stringify(text.slice(0, 80))}…)`),
  );
  process.exit(1);
}

// The burst: the replica's chunks from the first large one (the HTTP/2 handshake chunks before
// it are small). Delta i's frame is taken to end (i+1)/N of the way through the burst's bytes
// (the frames are nearly the same size); its latency is its arrival in pi's output minus the
// arrival at the relay of the chunk holding that byte.
const start = chunks.findIndex((c) => c.bytes >= 256);
const burst = chunks.slice(Math.max(start, 0));
const total = burst.reduce((sum, c) => sum + c.bytes, 0);
const latencies = arrivals.map((at, i) => {
  const offset = ((i + 1) / deltas) * total;
  let seen = 0;
  const chunk = burst.find((c) => (seen += c.bytes) >= offset) ?? burst.at(-1);
  return at - chunk.at;
});
const first = latencies[0];
latencies.sort((a, b) => a - b);
const pct = (p) => latencies[Math.min(latencies.length - 1, Math.ceil((p / 100) * latencies.length) - 1)];
const fmt = (ms) => `${ms.toFixed(2)} ms`;
console.log(
  `${deltas} back-to-back text deltas, replica frame at the relay → pi message_update: ` +
    `first ${fmt(first)}, p50 ${fmt(pct(50))}, p99 ${fmt(pct(99))}, max ${fmt(latencies.at(-1))} ` +
    `(burst of ${total} bytes in ${burst.length} chunk(s) over ${fmt(burst.at(-1).at - burst[0].at)}; ` +
    `${events} text_delta event(s), deltas that arrived together merged)`,
);
