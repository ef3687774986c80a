// A stand-in for pi's `@earendil-works/pi-ai`, for test/index.test.mjs: the one export
// index.mjs uses, as a stream that keeps what is pushed and resolves `ended` on `end()`.
export function createAssistantMessageEventStream() {
  let end;
  const ended = new Promise((resolve) => {
    end = resolve;
  });
  const events = [];
  return {
    events,
    ended,
    push: (event) => events.push(event),
    end: () => end(events),
  };
}
