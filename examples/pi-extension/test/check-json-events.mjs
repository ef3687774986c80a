// Checks the JSONL `pi --mode json -p <prompt>` printed (on stdin) for one streamed text answer:
//
//   - the assistant message goes message_start → message_update(text_start) →
//     message_update(text_delta)… → message_update(text_end) → message_end, with nothing of
//     another kind in between;
//   - the deltas rejoin to the final text, which is the expected answer (argv[2]);
//   - agent_end comes after the assistant's message_end, and only agent_settled may follow it.
//
// Prints `ok: …` and exits 0, or prints the first violation and exits 1.
import { readFileSync } from "node:fs";

const expected = process.argv[2];
const events = readFileSync(0, "utf8")
  .split("\n")
  .filter((line) => line.trim() !== "")
  .map((line, index) => {
    try {
      return JSON.parse(line);
    } catch {
      throw new Error(`line ${index + 1} is not JSON: ${line.slice(0, 200)}`);
    }
  });

function fail(why) {
  console.error(`json events: ${why}`);
  console.error(events.map((e) => e.assistantMessageEvent?.type ?? e.type).join(" "));
  process.exit(1);
}

const isAssistant = (event) => event.message?.role === "assistant";
const start = events.findIndex((e) => e.type === "message_start" && isAssistant(e));
if (start < 0) fail("no assistant message_start");
const end = events.findIndex((e, i) => i > start && e.type === "message_end" && isAssistant(e));
if (end < 0) fail("no assistant message_end");

// Between start and end: only message_update, in the order text_start, text_delta+, text_end.
const kinds = events.slice(start + 1, end).map((e) => {
  if (e.type !== "message_update") fail(`a ${e.type} event inside the assistant message`);
  return e.assistantMessageEvent?.type;
});
const order = kinds.join(" ");
if (!/^text_start( text_delta)+ text_end$/.test(order)) fail(`assistant updates in the order: ${order}`);

const deltas = events
  .slice(start + 1, end)
  .filter((e) => e.assistantMessageEvent.type === "text_delta")
  .map((e) => e.assistantMessageEvent.delta)
  .join("");
const final = events[end].message.content
  .filter((block) => block.type === "text")
  .map((block) => block.text)
  .join("");
if (deltas !== final) fail(`the deltas ${JSON.stringify(deltas)} do not rejoin to ${JSON.stringify(final)}`);
if (final !== expected) fail(`the final text is ${JSON.stringify(final)}, not ${JSON.stringify(expected)}`);
if (events[end].message.stopReason !== "stop") fail(`stopReason ${events[end].message.stopReason}`);

const agentEnd = events.findIndex((e) => e.type === "agent_end");
if (agentEnd < end) fail("agent_end missing or before the assistant's message_end");
const after = events.slice(agentEnd + 1).map((e) => e.type);
if (after.some((type) => type !== "agent_settled")) fail(`after agent_end: ${after.join(" ")}`);

console.log(`ok: ${kinds.length - 2} text_delta(s) in order, final text ${JSON.stringify(final)}, agent_end last`);
