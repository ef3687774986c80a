//! `/cursor-doctor`: the provider's state, secrets redacted.

use bytes::Bytes;
use cursor_auth::{HttpClient, HttpError};
use napi::bindgen_prelude::spawn;
use napi_derive::napi;
use serde_json::json;

use super::state;
use super::task::{JsCallback, StreamHandle, catch_panic, outcome_json, send};
use crate::provider::{DoctorInput, HeadlessTokens, abort_pair, diagnose, doctor_text};

/// Runs the diagnosis; `on_done` receives `{ok: {report, text, level}}`: the report (see
/// [`diagnose`]), the lines `/cursor-doctor` shows and pi's
/// notification type for them ([`doctor_text`]). With `probe_network`, one request goes to
/// Cursor's API origin. Without `persisted_catalog`, the catalog checked is the one turns use.
#[napi]
pub fn doctor(
    credentials_json: Option<String>,
    persisted_catalog: Option<String>,
    probe_network: bool,
    on_done: JsCallback,
) -> StreamHandle {
    let (handle, _signal) = abort_pair();
    spawn(async move {
        let work = async {
            let persisted_catalog = persisted_catalog.or_else(state::snapshot_json);
            let handle_dir = crate::provider::PiEnv::from_env().handle_dir;
            let warnings = state::sessions().recent_warnings();
            let headless = HeadlessTokens::from_env();
            let last_turn = state::turn_log().last();
            let input = DoctorInput {
                credentials_json: credentials_json.as_deref(),
                persisted_catalog: persisted_catalog.as_deref(),
                now_ms: cursor_auth::system_unix_time_ms(),
                probe_network,
                waiting_runs: state::sessions().waiting(),
                handle_dir: handle_dir.as_deref(),
                warnings: &warnings,
                headless: headless.as_ref(),
                last_turn: last_turn.as_ref(),
            };
            let report = match state::client() {
                Ok(client) => diagnose(&client, input).await,
                Err(error) => diagnose(&NoClient(error.to_string()), input).await,
            };
            let (text, level) = doctor_text(&report);
            json!({"report": report, "text": text, "level": level})
        };
        send(&on_done, outcome_json(catch_panic(work).await));
    });
    StreamHandle::new(handle)
}

/// Stands in when the transport client cannot be built, so the report says why.
#[derive(Debug)]
struct NoClient(String);

#[async_trait::async_trait]
impl HttpClient for NoClient {
    async fn send(
        &self,
        _request: http::Request<Bytes>,
    ) -> Result<http::Response<Bytes>, HttpError> {
        Err(HttpError::new(
            cursor_proto::ir::ErrorKind::Local,
            self.0.clone(),
        ))
    }
}
