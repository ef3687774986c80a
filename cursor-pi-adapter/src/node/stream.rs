//! `streamSimple`: one pi turn on the runtime, events pushed to JS as soon as they exist, in
//! batches, each carrying a patch of the live message rather than a snapshot.

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use cursor_proto::ir::ErrorInfo;
use napi::bindgen_prelude::{Function, spawn};
use napi_derive::napi;

use super::batch::EventBatch;
use super::state;
use super::task::{StreamHandle, catch_panic};
use crate::provider::{
    API_ORIGIN_ENV, AgentChannel, Channel, ChannelKind, InferenceChannel, PiEnv, Provider,
    UnavailableChannel, abort_pair,
};

/// Answers one pi `streamSimple(model, context, options)` call.
///
/// `model_json` and `context_json` are pi's objects, `options_json` the forwarded options.
/// `on_event` receives a JSON array of the pi `AssistantMessageEvent`s that arrived since its
/// last call (one call per burst, not per event); while a megabyte of them waits for a busy JS
/// thread, the turn reads no further. Each event carries `patch`, the changes to apply to the
/// caller's live assistant message, instead of a snapshot
/// ([`EventMapper::with_patches`](crate::compat::EventMapper::with_patches)); an event without
/// `patch` carries its snapshot. The last one is always a `done` or an `error` (reason
/// `aborted` after [`StreamHandle::abort`]).
#[napi]
pub fn stream_simple(
    model_json: String,
    context_json: String,
    options_json: String,
    on_event: Function<'_, String, ()>,
) -> napi::Result<StreamHandle> {
    let batch = EventBatch::new(&on_event)?;
    let (handle, signal) = abort_pair();
    spawn(async move {
        let work = async {
            // The turn pulls events only while the JS batch has room (backpressure).
            let provider = Provider::select(
                ChannelKind::from_env(),
                || batch.paced(channel(ChannelKind::Agent)),
                || batch.paced(channel(ChannelKind::Inference)),
            )
            .with_turn_log(state::turn_log());
            provider
                .stream_patched(&model_json, &context_json, &options_json, signal, |event| {
                    batch.send(&event.to_string());
                })
                .await;
        };
        if let Err(info) = catch_panic(work).await {
            batch.send(&Provider::failure_event(&model_json, info).to_string());
        }
    });
    Ok(StreamHandle::new(handle))
}

/// What a channel is built from: the environment, the catalog snapshot and the working
/// directory.
#[derive(Debug, PartialEq)]
struct ChannelInputs {
    kind: ChannelKind,
    env: PiEnv,
    api_origin: Option<OsString>,
    catalog: u64,
    cwd: Option<PathBuf>,
}

impl ChannelInputs {
    fn now(kind: ChannelKind) -> Self {
        Self {
            kind,
            env: PiEnv::from_env(),
            api_origin: std::env::var_os(API_ORIGIN_ENV),
            catalog: state::catalog_generation(),
            cwd: std::env::current_dir().ok(),
        }
    }
}

/// The channel of `kind` for a turn: the last turn's while its inputs are unchanged, so turns
/// share one debug writer and one token refresher instead of each building its own.
fn channel(kind: ChannelKind) -> Arc<dyn Channel> {
    static LAST: Mutex<Option<(ChannelInputs, Arc<dyn Channel>)>> = Mutex::new(None);
    let inputs = ChannelInputs::now(kind);
    let mut last = LAST.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some((built_from, channel)) = last.as_ref()
        && *built_from == inputs
    {
        return Arc::clone(channel);
    }
    let built = match kind {
        ChannelKind::Agent => agent(),
        ChannelKind::Inference => inference(),
    };
    match built {
        Ok(channel) => {
            *last = Some((inputs, Arc::clone(&channel)));
            channel
        }
        // Not kept: the next turn tries again.
        Err(reason) => Arc::new(UnavailableChannel::new(kind, reason)),
    }
}

fn agent() -> Result<Arc<dyn Channel>, ErrorInfo> {
    let channel = AgentChannel::from_env(
        state::client()?,
        &state::catalog_store(),
        state::sessions(),
        state::spawner(),
    )?;
    Ok(Arc::new(channel))
}

fn inference() -> Result<Arc<dyn Channel>, ErrorInfo> {
    let channel =
        InferenceChannel::from_env(state::client()?, &state::catalog_store(), state::spawner())?;
    Ok(Arc::new(channel))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn turns_share_the_channel_built_from_the_same_inputs() {
        let first = channel(ChannelKind::Agent);
        assert!(
            format!("{first:?}").starts_with("AgentChannel"),
            "{first:?}"
        );
        assert!(
            Arc::ptr_eq(&first, &channel(ChannelKind::Agent)),
            "a second turn built its own channel"
        );
        // A new catalog snapshot is a new input: the next turn gets a channel built from it.
        state::remember_snapshot(serde_json::json!({"changed": true}));
        assert!(!Arc::ptr_eq(&first, &channel(ChannelKind::Agent)));
    }
}
