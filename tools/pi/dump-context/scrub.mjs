// Turns the raw dumps of index.mjs into stable fixtures: run-specific paths become placeholders
// and times become 0, so two captures of the same pi version are byte-identical.
//
//   node scrub.mjs <raw dump dir> <fixture dir> <from=placeholder>...
//
// Writes, for every raw call-<n>.json:
//   call-<n>.context.json  the context exactly as pi passed it to streamSimple (scrubbed)
//   call-<n>.meta.json     the context's keys, the option keys, options.reasoning and the model
import { readdirSync, readFileSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const [rawDir, outDir, ...pairs] = process.argv.slice(2);
if (!rawDir || !outDir) {
  console.error("usage: node scrub.mjs <raw dump dir> <fixture dir> <from=placeholder>...");
  process.exit(2);
}
// Longest first, so a path never loses to one of its own prefixes.
const replacements = pairs
  .map((pair) => {
    const at = pair.indexOf("=");
    return [pair.slice(0, at), pair.slice(at + 1)];
  })
  .filter(([from]) => from.length > 0)
  .sort((a, b) => b[0].length - a[0].length);

const TIME_KEYS = new Set(["timestamp", "durationMs"]);

function scrub(value) {
  if (typeof value === "string") {
    let text = value;
    for (const [from, to] of replacements) text = text.split(from).join(to);
    return text;
  }
  if (Array.isArray(value)) return value.map(scrub);
  if (value && typeof value === "object") {
    const out = {};
    for (const [key, inner] of Object.entries(value)) {
      out[key] = TIME_KEYS.has(key) && typeof inner === "number" ? 0 : scrub(inner);
    }
    return out;
  }
  return value;
}

const write = (path, value) => writeFileSync(path, `${JSON.stringify(value, null, 2)}\n`);

mkdirSync(outDir, { recursive: true });
const dumps = readdirSync(rawDir).filter((name) => /^call-\d+\.json$/.test(name));
if (dumps.length === 0) {
  console.error(`no call-<n>.json dumps in ${rawDir}`);
  process.exit(1);
}
for (const name of dumps) {
  const record = JSON.parse(readFileSync(join(rawDir, name), "utf8"));
  const stem = name.replace(/\.json$/, "");
  write(join(outDir, `${stem}.context.json`), scrub(record.context));
  const { contextKeys, optionKeys, reasoning, model } = record;
  write(join(outDir, `${stem}.meta.json`), scrub({ contextKeys, optionKeys, reasoning, model }));
}
console.log(`${dumps.length} calls -> ${outDir}`);
