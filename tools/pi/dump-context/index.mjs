// A pi extension registering a fake provider, `dump/dump-1`, that records exactly what pi hands a
// provider's streamSimple and answers without any network:
//
//   * a turn whose last message is from the user gets one thinking block plus a `read` tool call
//     for the PNG named by PI_DUMP_READ_PATH (default `pixel.png`), so pi runs the tool and calls
//     again with a toolResult carrying an image;
//   * the turn after that narrows the active tools to `read` and `bash` (pi records the change as
//     a later system message with `toolsRemoved`) and calls `read` on a missing file, so the next
//     context holds a failed tool result (`isError: true`);
//   * any later turn gets the text `done after <n> messages`.
//
// Every call writes `<PI_DUMP_CONTEXT_DIR>/call-<n>.json` holding the context JSON as received,
// the context's own keys (they tell the 0.86 TranscriptContext split apart), the sorted option
// keys, and the resolved model. Without PI_DUMP_CONTEXT_DIR nothing is written.
//
// Load it with `pi -e tools/pi/dump-context/index.mjs --model dump/dump-1 ...`; see
// tools/pi/capture-fixtures.sh for the full headless command line.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createAssistantMessageEventStream } from "@earendil-works/pi-ai";

let calls = 0;

function dump(model, context, options) {
  const dir = process.env.PI_DUMP_CONTEXT_DIR;
  if (!dir) return;
  mkdirSync(dir, { recursive: true });
  const record = {
    call: calls,
    contextKeys: Object.keys(context),
    context,
    optionKeys: Object.keys(options ?? {}).sort(),
    reasoning: options?.reasoning ?? null,
    model,
  };
  writeFileSync(join(dir, `call-${calls}.json`), `${JSON.stringify(record, null, 2)}\n`);
}

function emptyUsage() {
  return {
    input: 0,
    output: 0,
    cacheRead: 0,
    cacheWrite: 0,
    totalTokens: 0,
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
  };
}

function setUsage(model, message, input, output) {
  const usage = message.usage;
  usage.input = input;
  usage.output = output;
  usage.totalTokens = input + output;
  usage.cost.input = (model.cost.input / 1e6) * input;
  usage.cost.output = (model.cost.output / 1e6) * output;
  usage.cost.total = usage.cost.input + usage.cost.output;
}

function answer(pi, model, context, stream) {
  const message = {
    role: "assistant",
    content: [],
    api: model.api,
    provider: model.provider,
    model: model.id,
    usage: emptyUsage(),
    stopReason: "pending",
    timestamp: Date.now(),
  };
  stream.push({ type: "start", partial: message });

  const toolResults = context.messages.filter((m) => m.role === "toolResult").length;
  if (toolResults < 2) {
    const first = toolResults === 0;
    const thought = first ? "read the picture" : "now a file that is not there";
    const thinking = { type: "thinking", thinking: "", thinkingSignature: `sig-dump-${calls}` };
    message.content.push(thinking);
    stream.push({ type: "thinking_start", contentIndex: 0, partial: message });
    thinking.thinking += thought;
    stream.push({ type: "thinking_delta", contentIndex: 0, delta: thought, partial: message });
    stream.push({ type: "thinking_end", contentIndex: 0, content: thinking.thinking, partial: message });

    if (!first) pi.setActiveTools(["read", "bash"]);
    const path = first ? (process.env.PI_DUMP_READ_PATH ?? "pixel.png") : "missing.txt";
    const args = JSON.stringify({ path });
    const call = { type: "toolCall", id: `call_dump_${calls}`, name: "read", arguments: {} };
    message.content.push(call);
    stream.push({ type: "toolcall_start", contentIndex: 1, partial: message });
    stream.push({ type: "toolcall_delta", contentIndex: 1, delta: args, partial: message });
    call.arguments = JSON.parse(args);
    stream.push({ type: "toolcall_end", contentIndex: 1, toolCall: call, partial: message });
    message.stopReason = "toolUse";
  } else {
    const text = { type: "text", text: "" };
    message.content.push(text);
    stream.push({ type: "text_start", contentIndex: 0, partial: message });
    const reply = `done after ${context.messages.length} messages`;
    text.text += reply;
    stream.push({ type: "text_delta", contentIndex: 0, delta: reply, partial: message });
    stream.push({ type: "text_end", contentIndex: 0, content: text.text, partial: message });
    message.stopReason = "stop";
  }
  setUsage(model, message, 10 * calls, 3);
  stream.push({ type: "done", reason: message.stopReason, message });
  stream.end();
}

export default function (pi) {
  pi.registerProvider("dump", {
    name: "Context dump",
    baseUrl: "http://127.0.0.1:9",
    apiKey: "unused",
    api: "dump-api",
    models: [
      {
        id: "dump-1",
        name: "Dump 1",
        reasoning: false,
        input: ["text", "image"],
        cost: { input: 1, output: 2, cacheRead: 0.5, cacheWrite: 1.5 },
        contextWindow: 100000,
        maxTokens: 4096,
      },
    ],
    streamSimple(model, context, options) {
      calls += 1;
      dump(model, context, options);
      const stream = createAssistantMessageEventStream();
      // Answer on a later tick, as a real provider would, so pi is already iterating.
      setTimeout(() => answer(pi, model, context, stream), 0);
      return stream;
    },
  });
}
