// Scripts the next Run of the standalone replica (examples/replica.rs): POST /replica/script.
// The replica is HTTP/2 only (prior knowledge), so node's http2 client carries the request.
import { connect } from "node:http2";

/** Sends `body` (`silent`, `text N`) to the replica at `origin`; resolves once it answered 200. */
export function scriptReplica(origin, body) {
  return new Promise((resolve, reject) => {
    const session = connect(origin);
    session.on("error", reject);
    const request = session.request({ ":method": "POST", ":path": "/replica/script" });
    let status = 0;
    request.on("response", (headers) => (status = headers[":status"]));
    request.on("error", reject);
    request.resume();
    request.on("end", () => {
      session.close();
      status === 200 ? resolve() : reject(new Error(`/replica/script answered ${status}`));
    });
    request.end(body);
  });
}
