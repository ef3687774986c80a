//! What the JS entry registers: the provider's names and its model list.

use std::panic::catch_unwind;

use cursor_catalog::TransportCatalogRpc;
use cursor_proto::ir::{ErrorInfo, ErrorKind, NextStep};
use cursor_transport::AccessToken;
use napi::bindgen_prelude::spawn;
use napi_derive::napi;
use serde_json::{Value, json};

use super::state;
use super::task::{
    JsCallback, StreamHandle, abortable, catch_panic, js_error, outcome_json, panic_info, send,
};
use crate::compat::TESTED_PI_VERSIONS;
use crate::provider::{
    ACCESS_TOKEN_ENV, API, API_KEY_ENV, CHANNEL_ENV, ChannelKind, PROVIDER_ID, REFRESH_TOKEN_ENV,
    SNAPSHOT_KEY, abort_pair, api_origin_from_env, pi_models, refresh_catalog as refresh,
};

/// `{id, api, channel, channelEnv, snapshotKey, accessTokenEnv, refreshTokenEnv, apiKeyEnv,
/// testedPiVersions, version}`; `channel` is the
/// `CURSOR_PROVIDER_CHANNEL` choice, or `null` when it is malformed.
#[napi]
pub fn provider_info() -> String {
    json!({
        "id": PROVIDER_ID,
        "api": API,
        "channel": ChannelKind::from_env().ok().map(ChannelKind::as_str),
        "channelEnv": CHANNEL_ENV,
        "snapshotKey": SNAPSHOT_KEY,
        "accessTokenEnv": ACCESS_TOKEN_ENV,
        "refreshTokenEnv": REFRESH_TOKEN_ENV,
        "apiKeyEnv": API_KEY_ENV,
        "testedPiVersions": TESTED_PI_VERSIONS,
        "version": env!("CARGO_PKG_VERSION"),
    })
    .to_string()
}

/// `{models, warnings}`: pi `ProviderModelConfig`s from `persisted_catalog` (a snapshot this
/// provider published earlier), else from the static table, and why a snapshot was not used.
#[napi]
pub fn list_models(persisted_catalog: Option<String>) -> napi::Result<String> {
    catch_unwind(|| {
        if let Some(snapshot) = persisted_catalog
            .as_deref()
            .and_then(|s| serde_json::from_str(s).ok())
        {
            state::remember_snapshot(snapshot);
        }
        let (models, warnings) = pi_models(persisted_catalog.as_deref());
        let warnings: Vec<String> = warnings.iter().map(ToString::to_string).collect();
        json!({ "models": models, "warnings": warnings }).to_string()
    })
    .map_err(|panic| js_error(&panic_info(panic)))
}

/// Refreshes the catalog online with `access_token` (pi's `refreshModels` when the network is
/// allowed). `on_done` receives `{ok: {models, snapshot, source, warnings}}`, where `snapshot`
/// is `null` unless there is a new one to persist under `snapshotKey`. A failed discovery is
/// not an error: the stored or static catalog is served with a warning.
#[napi]
pub fn refresh_catalog(
    access_token: String,
    persisted_catalog: Option<String>,
    force: bool,
    on_done: JsCallback,
) -> StreamHandle {
    let (handle, signal) = abort_pair();
    spawn(async move {
        let work = async {
            let persisted = match persisted_catalog
                .as_deref()
                .map(serde_json::from_str::<Value>)
            {
                None => None,
                Some(Ok(value)) => Some(value),
                Some(Err(error)) => {
                    return Err(ErrorInfo::new(
                        ErrorKind::Local,
                        format!("the stored catalog snapshot is not JSON: {error}"),
                        NextStep::fix_local("run the refresh again with force, which replaces it"),
                    ));
                }
            };
            if let Some(stored) = &persisted {
                state::remember_snapshot(stored.clone());
            }
            let client = state::client()?;
            let api = api_origin_from_env()?;
            // A user API key is exchanged first (kept in memory, never persisted).
            let access_token = crate::provider::access_token_for(
                std::sync::Arc::new(client.clone()),
                &api,
                access_token,
            )
            .await?;
            let rpc = TransportCatalogRpc::new(
                client,
                api,
                AccessToken::new(access_token),
                crate::provider::PiEnv::from_env().identity()?,
            );
            let now_ms = cursor_auth::system_unix_time_ms();
            let refreshed = abortable(
                signal,
                async { Ok(refresh(&rpc, persisted, now_ms, force).await) },
                "the model catalog refresh",
            )
            .await?;
            if let Some(snapshot) = &refreshed.snapshot {
                state::remember_snapshot(snapshot.clone());
            }
            Ok(json!({
                "models": refreshed.models,
                "snapshot": refreshed.snapshot,
                "source": refreshed.source,
                "warnings": refreshed.warnings,
            }))
        };
        let outcome = catch_panic(work).await.and_then(|result| result);
        send(&on_done, outcome_json(outcome));
    });
    StreamHandle::new(handle)
}
