// Abort through pi's RPC mode: queues a silent Run on the replica, prompts, sends
// {"type":"abort"} a second after pi handed the prompt to the provider, and checks that pi ends the turn with
// stopReason "aborted" within a few seconds.
//
//   node rpc-abort.mjs <replica origin> <pi command...>
//
// Prints one line `ok: …` and exits 0, or prints why and exits 1. pi's own JSONL goes to
// $RPC_ABORT_LOG when set.
import { spawn } from "node:child_process";
import { appendFileSync } from "node:fs";
import { createInterface } from "node:readline";
import { scriptReplica } from "./replica-script.mjs";

const [origin, ...command] = process.argv.slice(2);
if (!origin || command.length === 0) {
  console.error("usage: rpc-abort.mjs <replica origin> <pi command...>");
  process.exit(2);
}


function fail(why) {
  console.error(`rpc abort: ${why}`);
  process.exit(1);
}

await scriptReplica(origin, "silent");
const pi = spawn(command[0], command.slice(1), { stdio: ["pipe", "pipe", "inherit"] });
const deadline = setTimeout(() => {
  pi.kill();
  fail("pi did not end the aborted turn within 30 s");
}, 30_000);
const send = (object) => pi.stdin.write(`${JSON.stringify(object)}\n`);

let abortSentAt = 0;
let promptSeen = false;
const lines = createInterface({ input: pi.stdout });
send({ id: "p1", type: "prompt", message: "please stall" });
for await (const line of lines) {
  if (process.env.RPC_ABORT_LOG) appendFileSync(process.env.RPC_ABORT_LOG, `${line}\n`);
  let event;
  try {
    event = JSON.parse(line);
  } catch {
    continue;
  }
  if (event.type === "response" && event.command === "prompt" && event.success === false) {
    fail(`pi refused the prompt: ${line}`);
  }
  if (event.type === "message_end" && event.message?.role === "user" && !promptSeen) {
    promptSeen = true;
    // The turn went to the provider, whose Run is open and silent: abort it mid-stream.
    setTimeout(() => {
      abortSentAt = Date.now();
      send({ id: "a1", type: "abort" });
    }, 1000);
  }
  if (event.type === "message_end" && event.message?.role === "assistant") {
    const reason = event.message.stopReason;
    if (abortSentAt === 0) fail(`the turn ended before the abort (stopReason ${reason}): ${line}`);
    if (reason !== "aborted") fail(`stopReason is ${reason}, not aborted: ${line}`);
    const ms = Date.now() - abortSentAt;
    clearTimeout(deadline);
    pi.stdin.end();
    pi.kill();
    console.log(`ok: stopReason aborted ${ms} ms after the abort command`);
    process.exit(0);
  }
}
fail("pi's output ended before the assistant message did");
