//! `streamSimple`: one pi turn on the runtime, each event pushed to JS as soon as it exists.

use std::sync::Arc;

use napi::bindgen_prelude::spawn;
use napi_derive::napi;

use super::state;
use super::task::{JsCallback, StreamHandle, catch_panic, send};
use crate::provider::{
    AgentChannel, Channel, ChannelKind, InferenceChannel, Provider, UnavailableChannel, abort_pair,
};

/// Answers one pi `streamSimple(model, context, options)` call.
///
/// `model_json` and `context_json` are pi's objects, `options_json` the forwarded options.
/// `on_event` receives each pi `AssistantMessageEvent` as JSON; the last one is always a
/// `done` or an `error` (reason `aborted` after [`StreamHandle::abort`]).
#[napi]
pub fn stream_simple(
    model_json: String,
    context_json: String,
    options_json: String,
    on_event: JsCallback,
) -> StreamHandle {
    let (handle, signal) = abort_pair();
    spawn(async move {
        let work = async {
            let provider = Provider::select(ChannelKind::from_env(), agent, inference);
            provider
                .stream(&model_json, &context_json, &options_json, signal, |event| {
                    send(&on_event, event.to_string());
                })
                .await;
        };
        if let Err(info) = catch_panic(work).await {
            send(
                &on_event,
                Provider::failure_event(&model_json, info).to_string(),
            );
        }
    });
    StreamHandle::new(handle)
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
