//! The arms of a server frame as the wire has them, before prost drops what it does not know.
//! The inference channel fails closed: a frame whose arm this version does not know (where an
//! exec request or any new server-driven step would have to live) is protocol drift, named by
//! its field numbers, never skipped.

use cursor_proto::wire;

/// `RunInferenceServerMessage` arms: heartbeat, run_ready, invocation_response, invocation_end.
const SERVER_ARMS: [u32; 4] = [1, 2, 3, 4];
const INVOCATION_RESPONSE: u32 = 3;
/// `RunInferenceInvocationResponse.response`.
const RESPONSE: u32 = 2;
/// `InferenceStreamResponse` arms this version reads.
const READ_ARMS: [u32; 7] = [1, 2, 3, 5, 7, 8, 9];
/// Arms that carry no part of the answer (response info, provider metadata, image
/// descriptions; docs/PROTOCOL.md §6.3): known, and skipped.
pub(crate) const SKIPPED_ARMS: [u32; 3] = [4, 6, 10];

/// What a well-formed server frame carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Shape {
    /// An arm the typed message represents; handle the decoded message.
    Read,
    /// An invocation response whose arm is known to carry nothing to read.
    Skipped,
}

/// Checks the arms of one serialized server message; the error text names the field numbers.
pub(crate) fn check(bytes: &[u8]) -> Result<Shape, String> {
    let top = fields(bytes, "RunInferenceServerMessage")?;
    let numbers: Vec<u32> = top.iter().map(|(n, _)| *n).collect();
    if let Some(unknown) = numbers.iter().find(|n| !SERVER_ARMS.contains(n)) {
        return Err(format!(
            "a RunInference server message with field {unknown} (fields {numbers:?}), an arm \
             this version does not know; the inference channel has no exec or other \
             server-driven step"
        ));
    }
    // A oneof: the last arm on the wire wins, as prost decodes it.
    let Some((INVOCATION_RESPONSE, payload)) = top.last().copied() else {
        return Ok(Shape::Read);
    };
    let Some((_, response)) = fields(payload, "invocation_response (field 3)")?
        .into_iter()
        .rfind(|(n, _)| *n == RESPONSE)
    else {
        return Err("an invocation_response (field 3) without its response (field 3.2)".to_owned());
    };
    let arms: Vec<u32> = fields(response, "the response (field 3.2)")?
        .iter()
        .map(|(n, _)| *n)
        .collect();
    let known = |arm: &u32| READ_ARMS.contains(arm) || SKIPPED_ARMS.contains(arm);
    if let Some(arm) = arms.iter().find(|arm| !known(arm)) {
        return Err(format!(
            "an invocation_response (field 3) whose response (field 3.2) has arm {arm} \
             (fields {arms:?}), which this version does not know"
        ));
    }
    match arms.last() {
        None => {
            Err("an invocation_response (field 3) whose response (field 3.2) has no arm".into())
        }
        Some(arm) if SKIPPED_ARMS.contains(arm) => Ok(Shape::Skipped),
        Some(_) => Ok(Shape::Read),
    }
}

fn fields<'a>(bytes: &'a [u8], what: &str) -> Result<Vec<(u32, &'a [u8])>, String> {
    wire::fields(bytes).map_err(|error| format!("{what} does not decode: {error}"))
}
