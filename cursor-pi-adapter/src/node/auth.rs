//! pi's OAuth callbacks: `login`, `refreshToken`, `getApiKey`.

use std::panic::catch_unwind;
use std::sync::Arc;

use cursor_proto::ir::{ErrorInfo, ErrorKind, NextStep};
use napi::bindgen_prelude::spawn;
use napi_derive::napi;
use serde_json::Value;

use super::state;
use super::task::{
    JsCallback, StreamHandle, abortable, catch_panic, js_error, outcome_json, panic_info, send,
};
use crate::provider::{CursorOAuth, abort_pair, api_key, api_origin_from_env, auth_config};

/// Signs in: `on_auth` receives the deep link for the user to open; `on_done` receives
/// `{ok: <auth.json entry>}` once the browser sign-in completes, or `{error, kind, message,
/// nextStep}`.
#[napi]
pub fn login(on_auth: JsCallback, on_done: JsCallback) -> StreamHandle {
    let (handle, signal) = abort_pair();
    spawn(async move {
        let work = async {
            let oauth = oauth()?;
            let login = oauth.login(|url| send(&on_auth, url.to_owned()));
            abortable(signal, login, "the Cursor sign-in").await
        };
        let outcome = catch_panic(work).await.and_then(|result| result);
        send(
            &on_done,
            outcome_json(outcome.and_then(|entry| parse_entry(&entry))),
        );
    });
    StreamHandle::new(handle)
}

/// Refreshes a stored entry; `on_done` receives `{ok: <new entry>}` or the failure.
#[napi]
pub fn refresh_token(credentials_json: String, on_done: JsCallback) -> StreamHandle {
    let (handle, signal) = abort_pair();
    spawn(async move {
        let work = async {
            let oauth = oauth()?;
            abortable(
                signal,
                oauth.refresh(&credentials_json),
                "the token refresh",
            )
            .await
        };
        let outcome = catch_panic(work).await.and_then(|result| result);
        send(
            &on_done,
            outcome_json(outcome.and_then(|entry| parse_entry(&entry))),
        );
    });
    StreamHandle::new(handle)
}

/// The access token of a stored entry (pi's `getApiKey`); throws the auth error when there is
/// none.
#[napi]
pub fn get_api_key(credentials_json: String) -> napi::Result<String> {
    catch_unwind(|| api_key(&credentials_json))
        .map_err(panic_info)
        .and_then(|result| result)
        .map_err(|info| js_error(&info))
}

fn oauth() -> Result<CursorOAuth, ErrorInfo> {
    let client = state::client()?;
    // The refresh goes to the API origin (CURSOR_PROVIDER_API_ORIGIN in tests).
    Ok(CursorOAuth::with_config(
        Arc::new(client),
        Arc::new(cursor_transport::TokioClock),
        auth_config(&api_origin_from_env()?),
    ))
}

fn parse_entry(entry: &str) -> Result<Value, ErrorInfo> {
    serde_json::from_str(entry).map_err(|error| {
        ErrorInfo::new(
            ErrorKind::Local,
            format!("the credentials did not serialize as JSON: {error}"),
            NextStep::Login,
        )
    })
}
