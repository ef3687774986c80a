//! `streamSimple`: one pi turn on the runtime, events pushed to JS as soon as they exist, in
//! batches, each carrying a patch of the live message rather than a snapshot.

use std::sync::Arc;

use napi::bindgen_prelude::{Function, spawn};
use napi_derive::napi;

use super::batch::EventBatch;
use super::state;
use super::task::{StreamHandle, catch_panic};
use crate::provider::{
    AgentChannel, Channel, ChannelKind, InferenceChannel, Provider, UnavailableChannel, abort_pair,
};

/// Answers one pi `streamSimple(model, context, options)` call.
///
/// `model_json` and `context_json` are pi's objects, `options_json` the forwarded options.
/// `on_event` receives a JSON array of the pi `AssistantMessageEvent`s that arrived since its
/// last call (one call per burst, not per event). Each event carries `patch`, the changes to
/// apply to the caller's live assistant message, instead of a snapshot
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
            let provider = Provider::select(ChannelKind::from_env(), agent, inference)
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

/// The agent channel for this process, or a channel that reports why there is none.
fn agent() -> Arc<dyn Channel> {
    let channel = state::client().and_then(|client| {
        AgentChannel::from_env(
            client,
            &state::catalog_store(),
            state::sessions(),
            state::spawner(),
        )
    });
    match channel {
        Ok(channel) => Arc::new(channel),
        Err(reason) => Arc::new(UnavailableChannel::new(ChannelKind::Agent, reason)),
    }
}

/// The inference channel for this process, or a channel that reports why there is none.
fn inference() -> Arc<dyn Channel> {
    let channel = state::client().and_then(|client| {
        InferenceChannel::from_env(client, &state::catalog_store(), state::spawner())
    });
    match channel {
        Ok(channel) => Arc::new(channel),
        Err(reason) => Arc::new(UnavailableChannel::new(ChannelKind::Inference, reason)),
    }
}
