//! `/cursor-usage`: the account's plan and how much of the billing period is used, fetched
//! from Cursor's dashboard RPCs through cursor-catalog ([`fetch_usage`]) and worded for pi.

use cursor_auth::Credentials;
use cursor_catalog::{AccountUsage, UsageRpcs, fetch_usage};
use cursor_proto::ir::{Classify as _, ErrorInfo, ErrorKind, NextStep};
use serde_json::{Value, json};

use super::HeadlessTokens;

/// The token the usage calls send: the stored `/login cursor` credential's, else the headless
/// one.
///
/// # Errors
///
/// An auth error when there is neither, or the stored one has expired (pi refreshes it only
/// for a model request, and a refresh made here could not be stored back).
pub fn usage_token(
    credentials_json: Option<&str>,
    headless: Option<&HeadlessTokens>,
    now_ms: u64,
) -> Result<String, ErrorInfo> {
    let Some(json) = credentials_json else {
        return headless.map(|tokens| tokens.access.clone()).ok_or_else(|| {
            ErrorInfo::new(
                ErrorKind::Auth,
                "there is no Cursor credential to ask for the usage with",
                NextStep::Login,
            )
        });
    };
    let credentials = Credentials::from_json(json)
        .map_err(|error| ErrorInfo::new(ErrorKind::Auth, error.to_string(), NextStep::Login))?;
    if credentials.is_expired(now_ms) {
        return Err(ErrorInfo::new(
            ErrorKind::Auth,
            "the stored Cursor token has expired (pi refreshes it on the next prompt to a cursor model)",
            NextStep::Login,
        ));
    }
    Ok(credentials.access)
}

/// Fetches the usage through `rpc`: `{usage, text}`, where `usage` is the [`AccountUsage`] as
/// JSON and `text` the lines `/cursor-usage` shows.
///
/// # Errors
///
/// The classified failure of the first call that failed (network, auth, remote refusal,
/// drift), as the catalog's discovery would report it.
///
/// # Cancel safety
///
/// Cancel-safe: read-only calls.
pub async fn account_usage<R: UsageRpcs + ?Sized>(
    rpc: &R,
    now_ms: u64,
) -> Result<Value, ErrorInfo> {
    let usage = fetch_usage(rpc).await.map_err(|error| error.to_info())?;
    Ok(json!({ "usage": usage, "text": usage_text(&usage, now_ms) }))
}

/// The usage as a few lines of text.
pub fn usage_text(usage: &AccountUsage, now_ms: u64) -> String {
    let mut lines = Vec::new();
    let plan = usage.plan_name.as_deref().unwrap_or("no plan");
    lines.push(match &usage.plan_price {
        Some(price) => format!("Cursor plan: {plan} ({price})"),
        None => format!("Cursor plan: {plan}"),
    });
    if usage.period_end_ms > 0 {
        let now = i64::try_from(now_ms).unwrap_or(i64::MAX);
        let days_left = (usage.period_end_ms - now).max(0) / 86_400_000;
        lines.push(format!(
            "Period: {} to {} (UTC), {days_left} days left",
            utc_date(usage.period_start_ms),
            utc_date(usage.period_end_ms)
        ));
    }
    let percent = usage
        .plan_percent_used
        .map(|p| format!(" ({p:.1}%)"))
        .unwrap_or_default();
    lines.push(format!(
        "Included usage: {} of {} used{percent}, {} left",
        dollars(usage.plan_spent_cents),
        dollars(usage.plan_limit_cents),
        dollars(usage.plan_remaining_cents)
    ));
    if let (Some(auto), Some(api)) = (usage.auto_percent_used, usage.api_percent_used) {
        lines.push(format!("  Auto models {auto:.1}% · named models {api:.1}%"));
    }
    lines.push(match usage.on_demand_limit_cents {
        Some(limit) => format!(
            "On-demand: {} of a {} limit",
            dollars(usage.on_demand_spent_cents),
            dollars(limit)
        ),
        None => format!(
            "On-demand: {} (no limit set)",
            dollars(usage.on_demand_spent_cents)
        ),
    });
    if let Some(message) = &usage.message {
        lines.push(format!("Cursor says: {message}"));
    }
    lines.join("\n")
}

fn dollars(cents: i64) -> String {
    let sign = if cents < 0 { "-" } else { "" };
    let cents = cents.unsigned_abs();
    format!("{sign}${}.{:02}", cents / 100, cents % 100)
}

/// `YYYY-MM-DD` of Unix milliseconds (days to civil date, proleptic Gregorian).
pub(super) fn utc_date(ms: i64) -> String {
    let days = ms.div_euclid(86_400_000);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

#[cfg(test)]
mod tests {
    use cursor_catalog::testing::{
        FIXTURE_PERIOD_START_MS, FixtureBackend, fixture_rpc, refused_origin,
    };

    use super::*;

    const NOW: u64 = 1_797_120_000_000; // 2026-12-13

    #[test]
    fn dates_and_dollars_are_spelled_plainly() {
        assert_eq!(utc_date(0), "1970-01-01");
        assert_eq!(utc_date(FIXTURE_PERIOD_START_MS), "2026-12-01");
        assert_eq!(utc_date(951_782_400_000), "2000-02-29");
        assert_eq!(dollars(1234), "$12.34");
        assert_eq!(dollars(5), "$0.05");
        assert_eq!(dollars(-250), "-$2.50");
    }

    #[tokio::test]
    async fn the_fixture_account_reads_as_plan_period_and_spend() {
        let backend = FixtureBackend::start_realistic().await.unwrap();
        let report = account_usage(&backend.rpc().unwrap(), NOW).await.unwrap();
        let text = report["text"].as_str().unwrap();
        assert_eq!(
            text,
            "Cursor plan: Pro ($20/mo)\n\
             Period: 2026-12-01 to 2027-01-01 (UTC), 19 days left\n\
             Included usage: $12.34 of $20.00 used (61.7%), $7.66 left\n  \
             Auto models 40.5% · named models 71.2%\n\
             On-demand: $3.10 of a $50.00 limit\n\
             Cursor says: You've used 62% of your included usage"
        );
        assert_eq!(report["usage"]["planName"], "Pro");
    }

    #[tokio::test]
    async fn offline_is_a_network_error_not_an_empty_report() {
        let rpc = fixture_rpc(refused_origin().unwrap()).unwrap();
        let error = account_usage(&rpc, NOW).await.unwrap_err();
        assert_eq!(error.kind, ErrorKind::Network, "{error}");
    }

    #[test]
    fn the_token_is_the_stored_one_else_the_headless_one_never_an_expired_one() {
        let stored = r#"{"type":"oauth","access":"stored","refresh":"r","expires":5000}"#;
        let headless = HeadlessTokens {
            access: "env".to_owned(),
            refresh: None,
            from_api_key: false,
        };
        assert_eq!(
            usage_token(Some(stored), Some(&headless), 1000).unwrap(),
            "stored"
        );
        assert_eq!(usage_token(None, Some(&headless), 1000).unwrap(), "env");
        let expired = usage_token(Some(stored), Some(&headless), 9000).unwrap_err();
        assert_eq!(expired.kind, ErrorKind::Auth);
        assert_eq!(expired.next_step, NextStep::Login, "{expired}");
        assert_eq!(
            usage_token(None, None, 0).unwrap_err().next_step,
            NextStep::Login
        );
    }
}
