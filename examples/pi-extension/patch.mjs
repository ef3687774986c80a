// Rebuilds pi events from the native addon's patched events onto ONE live assistant message
// (cursor-pi-adapter `EventMapper::with_patches`): each event's `patch` is applied to `live`,
// then the event's message key (`partial`, `message` for done, `error` for error) is `live`.
// O(1) per event however long the answer grows.

/** Applies `event.patch` (or copies a snapshot) onto `live`; returns the event pi gets. */
export function liveEvent(live, event) {
  const key = event.type === "done" ? "message" : event.type === "error" ? "error" : "partial";
  if ("patch" in event) {
    applyPatch(live, event.patch, event.delta);
    delete event.patch;
  } else {
    // A snapshot (a failure reported outside the turn): copied onto the live object.
    for (const field of Object.keys(live)) delete live[field];
    Object.assign(live, event[key]);
  }
  event[key] = live;
  return event;
}

// Applies one event's patch (cursor-pi-adapter `EventMapper::with_patches`) to the live message.
export function applyPatch(live, patch, delta) {
  for (const op of patch) {
    switch (op[0]) {
      case "full":
        for (const field of Object.keys(live)) delete live[field];
        Object.assign(live, op[1]);
        break;
      case "push":
        live.content.push(op[1]);
        break;
      case "append": {
        const block = live.content[op[1]];
        if (block.type === "thinking") block.thinking += delta;
        else block.text += delta;
        break;
      }
      case "set":
        live.content[op[1]] = op[2];
        break;
      case "clear":
        live.content.length = 0;
        break;
      case "fields":
        for (const [field, value] of Object.entries(op[1])) {
          if (value === null) delete live[field];
          else live[field] = value;
        }
        break;
      default:
        throw new Error(`unknown patch operation ${op[0]}`);
    }
  }
}

