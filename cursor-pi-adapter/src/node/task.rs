//! What every asynchronous export shares: the handle JS aborts with, the callback type, and
//! turning a panic into a classified failure.

use std::any::Any;
use std::future::Future;
use std::panic::AssertUnwindSafe;

use cursor_proto::ir::{ErrorInfo, ErrorKind, NextStep};
use futures::FutureExt;
use napi::Status;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi_derive::napi;
use serde_json::{Value, json};

use crate::provider::{AbortHandle, AbortSignal, for_pi};

/// A JS function called from the runtime with one string (`(value) => void`).
pub(crate) type JsCallback = ThreadsafeFunction<String, (), String, Status, false>;

/// A running native call (a stream, a login, a refresh, a doctor run).
#[napi]
#[derive(Debug)]
pub struct StreamHandle {
    abort: AbortHandle,
}

#[napi]
impl StreamHandle {
    /// Stops the call. A stream ends with an `error` event whose reason is `aborted`; a login
    /// or refresh reports an aborted error. Calling it again does nothing.
    #[napi]
    pub fn abort(&self) {
        self.abort.abort();
    }
}

impl StreamHandle {
    pub(crate) fn new(abort: AbortHandle) -> Self {
        Self { abort }
    }
}

/// Queues `value` for the JS callback; the JS thread runs it on its next turn.
pub(crate) fn send(callback: &JsCallback, value: String) {
    // A closing environment refuses the call; there is nobody left to tell.
    let _status = callback.call(value, ThreadsafeFunctionCallMode::NonBlocking);
}

/// Runs `work`, turning a panic into the failure it describes.
pub(crate) async fn catch_panic<T>(work: impl Future<Output = T>) -> Result<T, ErrorInfo> {
    AssertUnwindSafe(work)
        .catch_unwind()
        .await
        .map_err(panic_info)
}

/// A panic as a classified failure.
pub(crate) fn panic_info(payload: Box<dyn Any + Send>) -> ErrorInfo {
    let detail = payload
        .downcast_ref::<&str>()
        .map(|text| (*text).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "no message".to_owned());
    ErrorInfo::new(
        ErrorKind::Local,
        format!("the cursor provider failed internally (panic: {detail})"),
        NextStep::host_bug(
            "report this as a cursor-pi-adapter bug, with the pi version and the command that failed",
        ),
    )
}

/// The `onDone` payload of a call that returns a JSON value or a failure (worded for pi).
pub(crate) fn outcome_json(outcome: Result<Value, ErrorInfo>) -> String {
    match outcome.map_err(|info| for_pi(&info)) {
        Ok(value) => json!({ "ok": value }),
        Err(info) => json!({
            "error": info.to_string(),
            "kind": info.kind.as_str(),
            "message": info.message,
            "nextStep": info.next_step,
        }),
    }
    .to_string()
}

/// Runs `work` until it ends or `signal` fires; an abort is a local "cancelled" failure
/// naming `what` was cancelled.
pub(crate) async fn abortable<T>(
    mut signal: AbortSignal,
    work: impl Future<Output = Result<T, ErrorInfo>>,
    what: &str,
) -> Result<T, ErrorInfo> {
    tokio::select! {
        biased;
        () = signal.aborted() => Err(ErrorInfo::new(
            ErrorKind::Local,
            format!("{what} was cancelled"),
            NextStep::Nothing,
        )),
        result = work => result,
    }
}

/// An error JS sees as a thrown `Error` with the classified text (worded for pi).
pub(crate) fn js_error(info: &ErrorInfo) -> napi::Error {
    napi::Error::from_reason(for_pi(info).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_in_the_work_becomes_a_local_failure_quoting_it() {
        let outcome = futures::executor::block_on(catch_panic(async {
            if true {
                panic!("mapper broke");
            }
            1
        }));
        let info = outcome.unwrap_err();
        assert_eq!(info.kind, ErrorKind::Local);
        assert!(info.message.contains("mapper broke"), "{info}");
        assert_eq!(futures::executor::block_on(catch_panic(async { 7 })), Ok(7));
    }

    /// A cancel has one next step whichever layer noticed it (pi's abort signal or the
    /// transport's cancelled call).
    #[test]
    fn an_abort_is_a_local_failure_with_the_same_next_step_as_a_cancelled_call() {
        use cursor_proto::ir::Classify as _;
        let (abort, signal) = crate::provider::abort_pair();
        abort.abort();
        let outcome: Result<(), ErrorInfo> =
            futures::executor::block_on(abortable(signal, std::future::pending(), "the turn"));
        let info = outcome.unwrap_err();
        assert_eq!(info.kind, ErrorKind::Local);
        assert_eq!(
            info.next_step,
            cursor_transport::CursorError::Canceled.next_step()
        );
    }

    #[test]
    fn outcomes_are_ok_or_a_classified_error_object() {
        let ok: Value = serde_json::from_str(&outcome_json(Ok(json!({"access": "a"})))).unwrap();
        assert_eq!(ok, json!({"ok": {"access": "a"}}));
        let info = ErrorInfo::new(ErrorKind::Auth, "expired", NextStep::Login);
        let error: Value = serde_json::from_str(&outcome_json(Err(info.clone()))).unwrap();
        assert_eq!(error["error"], for_pi(&info).to_string());
        assert_eq!(error["kind"], "auth");
        assert_eq!(error["nextStep"], "run /login cursor");
    }
}
