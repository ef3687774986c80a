//! `/cursor-doctor`: what state the provider is in, with every secret left out.

use std::path::Path;

use bytes::Bytes;
use cursor_auth::{Credentials, HttpClient};
use cursor_catalog::CatalogStore;
use serde_json::{Value, json};

use crate::compat::TESTED_PI_VERSIONS;

use super::{
    ACCESS_TOKEN_ENV, API, CHANNEL_ENV, ChannelKind, HeadlessTokens, PROVIDER_ID,
    api_origin_from_env,
};

/// What the doctor looks at besides the environment.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, Default)]
pub struct DoctorInput<'a> {
    /// pi's stored `auth.json` entry for `cursor`, if the host can read it.
    pub credentials_json: Option<&'a str>,
    /// The catalog snapshot pi keeps for this provider, if any.
    pub persisted_catalog: Option<&'a str>,
    /// Unix milliseconds now.
    pub now_ms: u64,
    /// Whether to send one request to Cursor's API origin to test the network.
    pub probe_network: bool,
    /// How many sessions have a Run waiting for tool results ([`Sessions::waiting`]).
    ///
    /// [`Sessions::waiting`]: super::Sessions::waiting
    pub waiting_runs: usize,
    /// Where resume handles are kept ([`PiEnv::handle_dir`](super::PiEnv::handle_dir)), if
    /// anywhere.
    pub handle_dir: Option<&'a Path>,
    /// The latest warnings of this process's turns ([`Sessions::recent_warnings`]).
    ///
    /// [`Sessions::recent_warnings`]: super::Sessions::recent_warnings
    pub warnings: &'a [cursor_proto::ir::Warning],
    /// The headless tokens from the environment ([`HeadlessTokens::from_env`]), if set.
    pub headless: Option<&'a HeadlessTokens>,
    /// The last turn this process ran ([`TurnLog::last`](super::TurnLog::last)), if any.
    pub last_turn: Option<&'a super::LastTurn>,
}

/// The report, as JSON: `provider`, `channel`, `credentials`, `headless`, `identity`,
/// `network`, `handle`, `catalog` and `lastTurn` sections.
///
/// Tokens never appear (only whether they exist and when they expire), and the host identity
/// is shown as the first eight hex digits of its hash.
pub async fn diagnose<C: HttpClient + ?Sized>(client: &C, input: DoctorInput<'_>) -> Value {
    json!({
        "provider": {"id": PROVIDER_ID, "api": API, "testedPiVersions": TESTED_PI_VERSIONS},
        "channel": channel_section(),
        "credentials": credentials_section(input.credentials_json, input.headless, input.now_ms),
        "headless": HeadlessTokens::doctor_view(input.headless, input.credentials_json.is_some()),
        "identity": identity_section(),
        "network": if input.probe_network { network_section(client).await } else { json!({"state": "not probed"}) },
        "handle": handle_section(input.waiting_runs, input.handle_dir, input.warnings),
        "catalog": catalog_section(input.persisted_catalog, input.now_ms),
        "lastTurn": match input.last_turn {
            Some(turn) => json!({
                "model": turn.model,
                "servedBy": turn.served_by.as_deref().unwrap_or("not reported by Cursor"),
                "ended": if turn.ended.is_empty() { "running" } else { turn.ended.as_str() },
            }),
            None => json!({"state": "no turn in this process yet"}),
        },
    })
}

fn channel_section() -> Value {
    match ChannelKind::from_env() {
        Ok(kind) => json!({"state": "ok", "channel": kind.as_str(), "env": CHANNEL_ENV}),
        Err(error) => json!({"state": "error", "env": CHANNEL_ENV, "error": error.to_string()}),
    }
}

fn credentials_section(
    credentials_json: Option<&str>,
    headless: Option<&HeadlessTokens>,
    now_ms: u64,
) -> Value {
    let Some(json) = credentials_json else {
        if headless.is_some() {
            return json!({"state": "none stored; the headless token is used (see headless)"});
        }
        let next_step = format!("run /login cursor, or set {ACCESS_TOKEN_ENV} for headless runs");
        return json!({"state": "missing", "nextStep": next_step});
    };
    match Credentials::from_json(json) {
        Ok(credentials) => json!({
            "state": if credentials.is_expired(now_ms) { "expired (pi refreshes it on the next request)" } else { "valid" },
            "expires": credentials.expires,
            "accessToken": if credentials.access.is_empty() { "missing" } else { "present (redacted)" },
            "refreshToken": if credentials.refresh.is_empty() { "missing" } else { "present (redacted)" },
        }),
        Err(error) => {
            json!({"state": "unreadable", "error": error.to_string(), "nextStep": "run /login cursor"})
        }
    }
}

fn identity_section() -> Value {
    match cursor_identity::host_identity() {
        Ok(identity) => json!({
            "state": "ok",
            "machineId": abbreviate(&identity.machine_id),
            "macMachineId": identity.mac_machine_id.as_deref().map(abbreviate),
        }),
        Err(error) => {
            json!({"state": "error", "error": error.to_string(), "nextStep": cursor_proto::ir::Classify::next_step(&error).to_string()})
        }
    }
}

/// Probes the API origin the refreshes use ([`api_origin_from_env`]).
async fn network_section<C: HttpClient + ?Sized>(client: &C) -> Value {
    let origin = match api_origin_from_env() {
        Ok(origin) => origin.to_string(),
        Err(info) => return json!({"state": "misconfigured", "error": info.to_string()}),
    };
    let request = http::Request::get(format!("{origin}/"))
        .body(Bytes::new())
        .map_err(|error| error.to_string());
    let request = match request {
        Ok(request) => request,
        Err(error) => return json!({"state": "error", "origin": origin, "error": error}),
    };
    match client.send(request).await {
        Ok(response) => {
            json!({"state": "reachable", "origin": origin, "status": response.status().as_u16()})
        }
        Err(error) => json!({
            "state": "unreachable", "origin": origin, "kind": error.kind().as_str(), "error": error.message(),
        }),
    }
}

fn handle_section(
    waiting_runs: usize,
    dir: Option<&Path>,
    warnings: &[cursor_proto::ir::Warning],
) -> Value {
    let warnings: Vec<&str> = warnings.iter().map(|w| w.message.as_str()).collect();
    let Some(dir) = dir else {
        return json!({
            "waitingRuns": waiting_runs,
            "warnings": warnings,
            "store": null,
            "detail": "no handle directory (set CURSOR_PROVIDER_HANDLE_DIR or HOME): every new process rebuilds the remote conversation from the transcript",
        });
    };
    // Handles are named by pi session id; only their number is shown.
    let stored = std::fs::read_dir(dir).map(|entries| {
        entries
            .filter_map(Result::ok)
            .filter(|entry| entry.path().extension().is_some_and(|ext| ext == "json"))
            .count()
    });
    json!({
        "waitingRuns": waiting_runs,
        "warnings": warnings,
        "store": dir.display().to_string(),
        "storedHandles": stored.unwrap_or(0),
    })
}

fn catalog_section(persisted: Option<&str>, now_ms: u64) -> Value {
    let (store, warnings) = CatalogStore::restore(persisted);
    json!({
        "source": store.source().as_str(),
        "models": store.catalog().rows.len(),
        "defaultModel": store.catalog().default_model,
        "fetchedAtMs": store.snapshot().fetched_at_ms,
        "fresh": store.is_fresh(now_ms),
        "warnings": warnings.iter().map(ToString::to_string).collect::<Vec<_>>(),
    })
}

fn abbreviate(hash: &str) -> String {
    let prefix: String = hash.chars().take(8).collect();
    format!("{prefix}…")
}

#[cfg(test)]
mod tests {
    use cursor_auth::HttpError;
    use cursor_proto::ir::ErrorKind;

    use super::*;

    #[derive(Debug)]
    struct Offline;

    #[async_trait::async_trait]
    impl HttpClient for Offline {
        async fn send(
            &self,
            _request: http::Request<Bytes>,
        ) -> Result<http::Response<Bytes>, HttpError> {
            Err(HttpError::new(ErrorKind::Network, "connect refused"))
        }
    }

    #[tokio::test]
    async fn the_report_never_contains_tokens_and_reports_each_section() {
        let stored = r#"{"type":"oauth","access":"secret-access","refresh":"secret-refresh","expires":5000}"#;
        let input = DoctorInput {
            credentials_json: Some(stored),
            persisted_catalog: None,
            now_ms: 10_000,
            probe_network: true,
            waiting_runs: 2,
            handle_dir: None,
            warnings: &[cursor_proto::ir::Warning::new(
                cursor_proto::ir::WarningCode::HandleNotSaved,
                "the resume handle could not be written (disk full)",
                None,
            )],
            headless: None,
            last_turn: None,
        };
        let report = diagnose(&Offline, input).await;
        let text = report.to_string();
        assert!(
            !text.contains("secret-access") && !text.contains("secret-refresh"),
            "{text}"
        );
        assert!(
            report["credentials"]["state"]
                .as_str()
                .unwrap()
                .starts_with("expired"),
            "{text}"
        );
        assert_eq!(report["network"]["state"], "unreachable", "{text}");
        assert_eq!(report["network"]["kind"], "network", "{text}");
        assert_eq!(report["catalog"]["source"], "static", "{text}");
        assert_eq!(report["provider"]["id"], "cursor", "{text}");
        assert_eq!(report["handle"]["waitingRuns"], 2, "{text}");
        assert_eq!(
            report["handle"]["warnings"][0], "the resume handle could not be written (disk full)",
            "{text}"
        );
    }

    #[tokio::test]
    async fn missing_credentials_point_at_login() {
        let report = diagnose(&Offline, DoctorInput::default()).await;
        assert_eq!(report["credentials"]["state"], "missing");
        assert_eq!(report["network"]["state"], "not probed");
        assert_eq!(report["handle"]["store"], Value::Null);
        assert_eq!(report["headless"]["state"], "unset");
    }

    #[tokio::test]
    async fn a_headless_token_stands_in_for_a_missing_credential_redacted() {
        let tokens = HeadlessTokens {
            access: "env-secret-access".to_owned(),
            refresh: Some("env-secret-refresh".to_owned()),
        };
        let input = DoctorInput {
            headless: Some(&tokens),
            ..DoctorInput::default()
        };
        let report = diagnose(&Offline, input).await;
        let text = report.to_string();
        assert!(!text.contains("env-secret"), "{text}");
        assert_eq!(report["headless"]["state"], "in use", "{text}");
        assert!(
            report["credentials"]["state"]
                .as_str()
                .unwrap()
                .contains("headless"),
            "{text}"
        );
    }

    #[tokio::test]
    async fn stored_handles_are_counted_without_naming_sessions() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("0190-session.json"), "{}").unwrap();
        let input = DoctorInput {
            handle_dir: Some(dir.path()),
            ..DoctorInput::default()
        };
        let report = diagnose(&Offline, input).await;
        assert_eq!(report["handle"]["storedHandles"], 1);
        assert!(!report.to_string().contains("0190-session"), "{report}");
    }
}
