//! `/cursor-usage`: the account's plan and the period's usage.

use cursor_catalog::TransportCatalogRpc;
use cursor_transport::AccessToken;
use napi::bindgen_prelude::spawn;
use napi_derive::napi;

use super::state;
use super::task::{JsCallback, StreamHandle, abortable, catch_panic, outcome_json, send};
use crate::provider::{
    HeadlessTokens, abort_pair, account_usage, api_origin_from_env, usage_token,
};

/// Fetches the usage with the stored credential (`credentials`, pi's `auth.json` entry) or the
/// headless token; `on_done` receives `{ok: {usage, text}}` or the classified failure.
#[napi]
pub fn usage(credentials_json: Option<String>, on_done: JsCallback) -> StreamHandle {
    let (handle, signal) = abort_pair();
    spawn(async move {
        let work = async {
            let now_ms = cursor_auth::system_unix_time_ms();
            let headless = HeadlessTokens::from_env();
            let token = usage_token(credentials_json.as_deref(), headless.as_ref(), now_ms)?;
            let client = state::client()?;
            let api = api_origin_from_env()?;
            // A user API key is exchanged first (kept in memory, never persisted).
            let token =
                crate::provider::access_token_for(std::sync::Arc::new(client.clone()), &api, token)
                    .await?;
            let rpc = TransportCatalogRpc::new(
                client,
                api,
                AccessToken::new(token),
                crate::provider::PiEnv::from_env().identity()?,
            );
            abortable(signal, account_usage(&rpc, now_ms), "the usage request").await
        };
        let outcome = catch_panic(work).await.and_then(|result| result);
        send(&on_done, outcome_json(outcome));
    });
    StreamHandle::new(handle)
}
