// A pi extension registering `replay/replay-1`, a provider that streams pi events recorded in an
// EventMapper snapshot (cursor-pi-adapter/fixtures/events/<name>.json, field `pi`) into real pi.
// It proves that what the Rust mapper produces is what pi accepts, and shows the one job a
// binding has on top: pi wants a single live `partial` object, while each recorded event carries
// a snapshot, so the snapshot's fields are copied onto one live message before each push.
//
//   PI_REPLAY_EVENTS=<fixture.json> pi -e tools/pi/replay-events/index.mjs --model replay/replay-1 -p hi
//
// The first call replays the fixture; a later call (after pi ran the replayed tool calls)
// answers `replayed <n> tool results` so a tool round ends.
import { readFileSync } from "node:fs";
import { createAssistantMessageEventStream } from "@earendil-works/pi-ai";

let calls = 0;

function textAnswer(model, text) {
  const message = {
    role: "assistant",
    content: [{ type: "text", text }],
    api: model.api,
    provider: model.provider,
    model: model.id,
    usage: {
      input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0,
      cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
    },
    stopReason: "stop",
    timestamp: Date.now(),
  };
  return [
    { type: "start", partial: message },
    { type: "done", reason: "stop", message },
  ];
}

export default function (pi) {
  pi.registerProvider("replay", {
    name: "Event replay",
    baseUrl: "http://127.0.0.1:9",
    apiKey: "unused",
    api: "cursor-agent",
    models: [
      {
        id: "replay-1",
        name: "Replay 1",
        reasoning: true,
        input: ["text", "image"],
        cost: { input: 1.25, output: 10, cacheRead: 0.125, cacheWrite: 1.25 },
        contextWindow: 200000,
        maxTokens: 64000,
      },
    ],
    streamSimple(model, context) {
      calls += 1;
      const stream = createAssistantMessageEventStream();
      const results = context.messages.filter((m) => m.role === "toolResult").length;
      const recorded =
        calls === 1
          ? JSON.parse(readFileSync(process.env.PI_REPLAY_EVENTS, "utf8")).pi
          : textAnswer(model, `replayed ${results} tool results`);
      setTimeout(() => {
        const live = {};
        for (const event of recorded) {
          const key = "partial" in event ? "partial" : "message" in event ? "message" : "error";
          for (const field of Object.keys(live)) delete live[field];
          Object.assign(live, event[key]);
          stream.push({ ...event, [key]: live });
        }
        stream.end();
      }, 0);
      return stream;
    },
  });
}
