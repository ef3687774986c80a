//! `/cursor-doctor`: what state the provider is in, with every secret left out.

use std::path::Path;

use bytes::Bytes;
use cursor_auth::{Credentials, HttpClient};
use cursor_catalog::{CatalogSource, CatalogStore};
use serde_json::{Value, json};

use crate::compat::TESTED_PI_VERSIONS;

use super::usage::utc_date;
use super::{
    ACCESS_TOKEN_ENV, API, API_KEY_ENV, CHANNEL_ENV, ChannelKind, HANDLE_DIR_ENV, HeadlessTokens,
    PROVIDER_ID, REFRESH_TOKEN_ENV, api_origin_from_env, for_pi,
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
/// `network`, `handle`, `catalog` and `lastTurn` sections. Each section but `provider` says
/// how its check came out: `check` (`ok`, `warn`, `fail` or `skip`), a one-line `summary`
/// and, when something is wrong, the `nextStep` ([`doctor_text`] shows them).
///
/// Tokens never appear (only whether they exist and when they expire), and the host identity
/// is shown as the first eight hex digits of its hash.
///
/// # Cancel safety
///
/// Cancel-safe: read-only checks.
pub async fn diagnose<C: HttpClient + ?Sized>(client: &C, input: DoctorInput<'_>) -> Value {
    json!({
        "provider": {
            "id": PROVIDER_ID,
            "api": API,
            "version": env!("CARGO_PKG_VERSION"),
            "testedPiVersions": TESTED_PI_VERSIONS,
        },
        "channel": channel_section(),
        "credentials": credentials_section(input.credentials_json, input.headless, input.now_ms),
        "headless": HeadlessTokens::doctor_view(input.headless, input.credentials_json.is_some()),
        "identity": identity_section(),
        "network": if input.probe_network {
            network_section(client).await
        } else {
            verdict(json!({"state": "not probed"}), "skip", "not probed (--offline)".to_owned(), None)
        },
        "handle": handle_section(input.waiting_runs, input.handle_dir, input.warnings),
        "catalog": catalog_section(input.persisted_catalog, input.now_ms),
        "lastTurn": last_turn_section(input.last_turn),
    })
}

/// The checks [`doctor_text`] shows, in order: the report's section and the line's name.
const CHECKS: [(&str, &str); 8] = [
    ("channel", "channel"),
    ("credentials", "credentials"),
    ("headless", "headless"),
    ("identity", "identity"),
    ("network", "network"),
    ("handle", "handles"),
    ("catalog", "catalog"),
    ("lastTurn", "last turn"),
];

/// How a check can come out, best first after `skip`.
const OUTCOMES: [&str; 4] = ["ok", "warn", "fail", "skip"];

/// A [`diagnose`] report as `/cursor-doctor` shows it, like `/cursor-usage` shows the usage: a
/// tally line, then one line per check (its outcome, what was found and, when something is
/// wrong, the next step). Also pi's notification type for the worst outcome: `info`,
/// `warning` or `error`.
pub fn doctor_text(report: &Value) -> (String, &'static str) {
    let mut counts = [0_usize; OUTCOMES.len()];
    let mut lines = Vec::new();
    for (key, name) in CHECKS {
        let section = &report[key];
        let Some(check) = section["check"].as_str() else {
            continue;
        };
        if let Some(index) = OUTCOMES.iter().position(|outcome| *outcome == check) {
            counts[index] += 1;
        }
        let summary = section["summary"].as_str().unwrap_or_default();
        let mut line = format!("{check:<4}  {name:<11}  {summary}");
        if let Some(step) = section["nextStep"].as_str() {
            line.push_str(&format!(" (next step: {step})"));
        }
        lines.push(line);
    }
    let tally: Vec<String> = OUTCOMES
        .iter()
        .zip(counts)
        .filter(|(_, count)| *count > 0)
        .map(|(outcome, count)| format!("{count} {outcome}"))
        .collect();
    let version = report["provider"]["version"].as_str().unwrap_or_default();
    lines.insert(
        0,
        format!(
            "cursor doctor: {} (cursor-pi-adapter {version}; /cursor-doctor json shows the full report)",
            tally.join(", ")
        ),
    );
    let level = match counts {
        [_, _, fail, _] if fail > 0 => "error",
        [_, warn, _, _] if warn > 0 => "warning",
        _ => "info",
    };
    (lines.join("\n"), level)
}

/// `section` with its outcome ([`diagnose`] says what the fields mean).
fn verdict(mut section: Value, check: &str, summary: String, next_step: Option<String>) -> Value {
    section["check"] = check.into();
    section["summary"] = summary.into();
    if let Some(step) = next_step {
        section["nextStep"] = step.into();
    }
    section
}

// The doctor's view of the headless tokens is written here, beside the report it is part of,
// so that `headless` stays about the tokens and needs nothing of the doctor.
impl HeadlessTokens {
    /// The `/cursor-doctor` view: which variables are set, never their values. `shadowed` says
    /// that a stored `/login cursor` credential exists, which pi uses instead. Set, it carries
    /// the doctor's `check`, `summary` and `nextStep`; unset, it has no line of its own (the
    /// credentials line covers it).
    pub fn doctor_view(headless: Option<&Self>, shadowed: bool) -> Value {
        let Some(tokens) = headless else {
            return json!({"state": "unset", "env": [ACCESS_TOKEN_ENV, REFRESH_TOKEN_ENV, API_KEY_ENV]});
        };
        let mut view = json!({
            "state": if shadowed { "set, unused: the stored /login cursor credential wins" } else { "in use" },
        });
        if tokens.from_api_key {
            view["apiKey"] = json!(format!(
                "{API_KEY_ENV} present (redacted); exchanged for an access token kept in memory, exchanged again after a 401"
            ));
        } else {
            view["accessToken"] = json!(format!("{ACCESS_TOKEN_ENV} present (redacted)"));
            view["refreshToken"] = json!(if tokens.refresh.is_some() {
                format!("{REFRESH_TOKEN_ENV} present (redacted)")
            } else {
                format!("{REFRESH_TOKEN_ENV} unset: a 401 ends the turn without a refresh")
            });
        }
        let name = tokens.env_name();
        let (check, summary, next_step) = if shadowed {
            (
                "warn",
                format!("{name} is set but unused: the stored /login cursor credential wins"),
                Some(format!(
                    "unset {name}, or remove the stored credential with /logout"
                )),
            )
        } else if tokens.from_api_key {
            ("ok", format!("{API_KEY_ENV} in use"), None)
        } else if tokens.refresh.is_some() {
            (
                "ok",
                format!("{ACCESS_TOKEN_ENV} and {REFRESH_TOKEN_ENV} in use"),
                None,
            )
        } else {
            (
                "warn",
                format!(
                    "{ACCESS_TOKEN_ENV} in use without {REFRESH_TOKEN_ENV}: a 401 ends the turn"
                ),
                Some(format!("set {REFRESH_TOKEN_ENV} too")),
            )
        };
        verdict(view, check, summary, next_step)
    }
}

fn channel_section() -> Value {
    match ChannelKind::from_env() {
        Ok(kind) => verdict(
            json!({"state": "ok", "channel": kind.as_str(), "env": CHANNEL_ENV}),
            "ok",
            format!("{} ({CHANNEL_ENV})", kind.as_str()),
            None,
        ),
        Err(error) => {
            let worded = for_pi(&error);
            verdict(
                json!({"state": "error", "env": CHANNEL_ENV, "error": error.to_string()}),
                "fail",
                worded.message,
                Some(worded.next_step),
            )
        }
    }
}

fn credentials_section(
    credentials_json: Option<&str>,
    headless: Option<&HeadlessTokens>,
    now_ms: u64,
) -> Value {
    let login = || Some("run /login cursor".to_owned());
    let Some(json) = credentials_json else {
        if let Some(tokens) = headless {
            return verdict(
                json!({"state": "none stored; the headless token is used (see headless)"}),
                "ok",
                format!("none stored; {} is used (see headless)", tokens.env_name()),
                None,
            );
        }
        let next_step = format!(
            "run /login cursor, or set {ACCESS_TOKEN_ENV} or {API_KEY_ENV} for headless runs"
        );
        return verdict(
            json!({"state": "missing"}),
            "fail",
            "none stored".to_owned(),
            Some(next_step),
        );
    };
    let credentials = match Credentials::from_json(json) {
        Ok(credentials) => credentials,
        Err(error) => {
            return verdict(
                json!({"state": "unreadable", "error": error.to_string()}),
                "fail",
                format!("the stored entry is unreadable: {error}"),
                login(),
            );
        }
    };
    let expired = credentials.is_expired(now_ms);
    let section = json!({
        "state": if expired { "expired (pi refreshes it on the next request)" } else { "valid" },
        "expires": credentials.expires,
        "accessToken": if credentials.access.is_empty() { "missing" } else { "present (redacted)" },
        "refreshToken": if credentials.refresh.is_empty() { "missing" } else { "present (redacted)" },
    });
    let expires = utc_time(credentials.expires);
    let refreshable = !credentials.refresh.is_empty();
    let (check, summary, next_step) = match (credentials.access.is_empty(), expired, refreshable) {
        (true, _, _) => ("fail", "stored without an access token".to_owned(), login()),
        (false, true, false) => (
            "fail",
            format!("stored token expired {expires} and has no refresh token"),
            login(),
        ),
        (false, true, true) => (
            "ok",
            format!("stored token expired {expires}; pi refreshes it on the next request"),
            None,
        ),
        (false, false, false) => (
            "warn",
            format!("stored, valid until {expires}, but without a refresh token"),
            Some("run /login cursor before it expires".to_owned()),
        ),
        (false, false, true) => ("ok", format!("stored, valid until {expires}"), None),
    };
    verdict(section, check, summary, next_step)
}

fn identity_section() -> Value {
    match cursor_identity::host_identity() {
        Ok(identity) => {
            let machine_id = abbreviate(&identity.machine_id);
            verdict(
                json!({
                    "state": "ok",
                    "machineId": machine_id,
                    "macMachineId": identity.mac_machine_id.as_deref().map(abbreviate),
                }),
                "ok",
                format!("machine id {machine_id}"),
                None,
            )
        }
        Err(error) => verdict(
            json!({"state": "error", "error": error.to_string()}),
            "fail",
            error.to_string(),
            Some(cursor_proto::ir::Classify::next_step(&error).to_string()),
        ),
    }
}

/// Probes the API origin the refreshes use ([`api_origin_from_env`]).
async fn network_section<C: HttpClient + ?Sized>(client: &C) -> Value {
    let origin = match api_origin_from_env() {
        Ok(origin) => origin.to_string(),
        Err(info) => {
            let worded = for_pi(&info);
            return verdict(
                json!({"state": "misconfigured", "error": info.to_string()}),
                "fail",
                worded.message,
                Some(worded.next_step),
            );
        }
    };
    let request = http::Request::get(format!("{origin}/"))
        .body(Bytes::new())
        .map_err(|error| error.to_string());
    let request = match request {
        Ok(request) => request,
        Err(error) => {
            let summary = format!("no request to {origin} could be made: {error}");
            return verdict(
                json!({"state": "error", "origin": origin, "error": error}),
                "fail",
                summary,
                None,
            );
        }
    };
    match client.send(request).await {
        Ok(response) => {
            let status = response.status().as_u16();
            verdict(
                json!({"state": "reachable", "origin": origin, "status": status}),
                "ok",
                format!("{origin} answers (HTTP {status})"),
                None,
            )
        }
        Err(error) => verdict(
            json!({
                "state": "unreachable", "origin": origin, "kind": error.kind().as_str(), "error": error.message(),
            }),
            "fail",
            format!("{origin} unreachable ({} error: {})", error.kind(), error.message()),
            Some("check the network connection and any proxy; /cursor-doctor --offline skips this check".to_owned()),
        ),
    }
}

fn handle_section(
    waiting_runs: usize,
    dir: Option<&Path>,
    warnings: &[cursor_proto::ir::Warning],
) -> Value {
    let warnings: Vec<&str> = warnings.iter().map(|w| w.message.as_str()).collect();
    // The latest warning is what went wrong; the JSON keeps the others.
    let latest = warnings
        .last()
        .map(|warning| format!("; latest of {} warnings: {warning}", warnings.len()))
        .unwrap_or_default();
    let outcome = if warnings.is_empty() { "ok" } else { "warn" };
    let Some(dir) = dir else {
        return verdict(
            json!({
                "waitingRuns": waiting_runs,
                "warnings": warnings,
                "store": null,
                "detail": "no handle directory (set CURSOR_PROVIDER_HANDLE_DIR or HOME): every new process rebuilds the remote conversation from the transcript",
            }),
            "warn",
            format!(
                "no handle directory: every new pi process sends the whole transcript again{latest}"
            ),
            Some(format!("set {HANDLE_DIR_ENV} or HOME")),
        );
    };
    // Handles are named by pi session id; only their number is shown.
    let stored = std::fs::read_dir(dir).map(|entries| {
        entries
            .filter_map(Result::ok)
            .filter(|entry| entry.path().extension().is_some_and(|ext| ext == "json"))
            .count()
    });
    let stored = stored.unwrap_or(0);
    let summary = format!(
        "{stored} stored in {}; Runs waiting for tool results: {waiting_runs}{latest}",
        dir.display()
    );
    verdict(
        json!({
            "waitingRuns": waiting_runs,
            "warnings": warnings,
            "store": dir.display().to_string(),
            "storedHandles": stored,
        }),
        outcome,
        summary,
        None,
    )
}

fn catalog_section(persisted: Option<&str>, now_ms: u64) -> Value {
    let (store, warnings) = CatalogStore::restore(persisted);
    let warnings: Vec<String> = warnings.iter().map(ToString::to_string).collect();
    let models = store.catalog().rows.len();
    let fetched = store.snapshot().fetched_at_ms;
    let online = "let pi run online once (without --offline): it refreshes the list";
    let (check, summary, next_step) = if let Some(warning) = warnings.first() {
        ("warn", format!("{models} models; {warning}"), Some(online))
    } else if store.source() == CatalogSource::Static {
        (
            "ok",
            format!(
                "{models} models from the built-in table; pi fetches Cursor's list when it runs online"
            ),
            None,
        )
    } else if store.is_fresh(now_ms) {
        (
            "ok",
            format!("{models} models from Cursor, fetched {}", utc_time(fetched)),
            None,
        )
    } else {
        (
            "warn",
            format!(
                "{models} models from Cursor, fetched {}: out of date",
                utc_time(fetched)
            ),
            Some(online),
        )
    };
    verdict(
        json!({
            "source": store.source().as_str(),
            "models": models,
            "defaultModel": store.catalog().default_model,
            "fetchedAtMs": fetched,
            "fresh": store.is_fresh(now_ms),
            "warnings": warnings,
        }),
        check,
        summary,
        next_step.map(str::to_owned),
    )
}

fn last_turn_section(turn: Option<&super::LastTurn>) -> Value {
    let Some(turn) = turn else {
        return verdict(
            json!({"state": "no turn in this process yet"}),
            "skip",
            "no turn in this process yet".to_owned(),
            None,
        );
    };
    let served_by = turn
        .served_by
        .as_deref()
        .unwrap_or("not reported by Cursor");
    let ended = if turn.ended.is_empty() {
        "running"
    } else {
        turn.ended.as_str()
    };
    let summary = match &turn.served_by {
        Some(served) => format!("{}, served by {served}, ended: {ended}", turn.model),
        None => format!(
            "{}, ended: {ended} (Cursor did not name the model that served it)",
            turn.model
        ),
    };
    let (check, next_step) = if ended.starts_with("error") {
        (
            "warn",
            Some("the turn's error message in the transcript says what to do".to_owned()),
        )
    } else {
        ("ok", None)
    };
    verdict(
        json!({"model": turn.model, "servedBy": served_by, "ended": ended}),
        check,
        summary,
        next_step,
    )
}

/// `YYYY-MM-DD HH:MM UTC` of Unix milliseconds.
fn utc_time(ms: u64) -> String {
    let ms = i64::try_from(ms).unwrap_or(i64::MAX);
    let minutes = ms.div_euclid(60_000);
    format!(
        "{} {:02}:{:02} UTC",
        utc_date(ms),
        minutes.div_euclid(60).rem_euclid(24),
        minutes.rem_euclid(60)
    )
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
            from_api_key: false,
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

    /// The line of `check` in `text`, which must have exactly one.
    fn line<'a>(text: &'a str, check: &str) -> &'a str {
        let lines: Vec<&str> = text.lines().filter(|l| l[6..].starts_with(check)).collect();
        assert_eq!(lines.len(), 1, "{check} in:\n{text}");
        lines[0]
    }

    #[tokio::test]
    async fn the_readable_report_is_one_line_per_check_with_what_to_do() {
        let stored = r#"{"type":"oauth","access":"secret-access","refresh":"","expires":5000}"#;
        let input = DoctorInput {
            credentials_json: Some(stored),
            now_ms: 10_000,
            probe_network: true,
            ..DoctorInput::default()
        };
        let report = diagnose(&Offline, input).await;
        let (text, level) = doctor_text(&report);
        assert!(!text.contains("secret-access"), "{text}");
        assert_eq!(level, "error", "{text}");
        let first = text.lines().next().unwrap();
        assert!(first.starts_with("cursor doctor: "), "{text}");
        assert!(
            first.contains("1 warn") && first.contains("2 fail"),
            "{text}"
        );
        assert!(first.contains("/cursor-doctor json"), "{text}");
        assert_eq!(
            line(&text, "credentials"),
            "fail  credentials  stored token expired 1970-01-01 00:00 UTC and has no refresh token \
             (next step: run /login cursor)"
        );
        assert!(
            line(&text, "network").starts_with("fail  network      ")
                && line(&text, "network").contains("unreachable (network error: connect refused)")
                && line(&text, "network").ends_with("/cursor-doctor --offline skips this check)"),
            "{text}"
        );
        assert!(
            line(&text, "handles").starts_with("warn  handles      no handle directory")
                && line(&text, "handles")
                    .ends_with("(next step: set CURSOR_PROVIDER_HANDLE_DIR or HOME)"),
            "{text}"
        );
        assert_eq!(
            line(&text, "catalog"),
            "ok    catalog      11 models from the built-in table; pi fetches Cursor's list when it runs online"
                .replace("11", &report["catalog"]["models"].to_string())
        );
        assert_eq!(
            line(&text, "last turn"),
            "skip  last turn    no turn in this process yet"
        );
        // The headless line shows only when a headless token is set.
        assert!(!text.contains("headless"), "{text}");
        // Every check line is one the JSON also carries.
        let checks = report
            .as_object()
            .unwrap()
            .values()
            .filter(|s| s.get("check").is_some());
        assert_eq!(checks.count() + 1, text.lines().count(), "{text}");
    }

    #[tokio::test]
    async fn a_healthy_report_is_info_and_names_what_was_found() {
        let stored = r#"{"type":"oauth","access":"secret-access","refresh":"secret-refresh","expires":4102444800000}"#;
        let dir = tempfile::tempdir().unwrap();
        let turn = super::super::LastTurn {
            model: "composer-2.5".to_owned(),
            served_by: Some("Composer 2.5".to_owned()),
            ended: "stop".to_owned(),
        };
        let input = DoctorInput {
            credentials_json: Some(stored),
            now_ms: 10_000,
            handle_dir: Some(dir.path()),
            waiting_runs: 1,
            last_turn: Some(&turn),
            ..DoctorInput::default()
        };
        let report = diagnose(&Offline, input).await;
        let (text, _) = doctor_text(&report);
        assert!(!text.contains("secret-"), "{text}");
        assert_eq!(
            line(&text, "credentials"),
            "ok    credentials  stored, valid until 2100-01-01 00:00 UTC"
        );
        assert_eq!(
            line(&text, "network"),
            "skip  network      not probed (--offline)"
        );
        assert_eq!(
            line(&text, "handles"),
            format!(
                "ok    handles      0 stored in {}; Runs waiting for tool results: 1",
                dir.path().display()
            )
        );
        assert_eq!(
            line(&text, "last turn"),
            "ok    last turn    composer-2.5, served by Composer 2.5, ended: stop"
        );
        assert_eq!(report["credentials"]["check"], "ok");
    }

    #[test]
    fn a_last_turn_that_failed_is_a_warning_and_an_unnamed_server_is_said_so() {
        let turn = super::super::LastTurn {
            model: "composer-2.5".to_owned(),
            served_by: None,
            ended: "error: network".to_owned(),
        };
        let section = last_turn_section(Some(&turn));
        assert_eq!(section["check"], "warn", "{section}");
        assert_eq!(
            section["summary"],
            "composer-2.5, ended: error: network (Cursor did not name the model that served it)"
        );
        assert_eq!(section["servedBy"], "not reported by Cursor");
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
