//! The usage answers the fixture backend (and the standalone replica) serve.

use cursor_proto::aiserver::v1::{
    CurrentPeriodPlanUsage, CurrentPeriodSpendLimitUsage, GetCurrentPeriodUsageResponse,
    GetPlanInfoResponse, PlanInfo,
};

/// `GetCurrentPeriodUsage` and `GetPlanInfo` as one account would answer them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FixtureUsage {
    /// `GetCurrentPeriodUsage`.
    pub usage: GetCurrentPeriodUsageResponse,
    /// `GetPlanInfo`.
    pub plan: GetPlanInfoResponse,
}

/// 2026-12-01T00:00:00Z, the fixture period's start.
pub const FIXTURE_PERIOD_START_MS: i64 = 1_796_083_200_000;
/// 2027-01-01T00:00:00Z, the fixture period's end.
pub const FIXTURE_PERIOD_END_MS: i64 = 1_798_761_600_000;

impl FixtureUsage {
    /// A Pro account a little past half of its $20 allowance, with a $50 on-demand limit of
    /// which $3.10 is used.
    pub fn realistic() -> Self {
        Self {
            usage: GetCurrentPeriodUsageResponse {
                billing_cycle_start: FIXTURE_PERIOD_START_MS,
                billing_cycle_end: FIXTURE_PERIOD_END_MS,
                plan_usage: Some(CurrentPeriodPlanUsage {
                    total_spend: 1234,
                    included_spend: 1234,
                    bonus_spend: 0,
                    remaining: 766,
                    limit: 2000,
                    auto_percent_used: Some(40.5),
                    api_percent_used: Some(71.2),
                    total_percent_used: Some(61.7),
                }),
                spend_limit_usage: Some(CurrentPeriodSpendLimitUsage {
                    total_spend: 310,
                    individual_limit: Some(5000),
                    individual_used: 310,
                    individual_remaining: 4690,
                    limit_type: "user".into(),
                }),
                display_threshold: Some(50),
                enabled: true,
                display_message: "You've used 62% of your included usage".into(),
            },
            plan: GetPlanInfoResponse {
                plan_info: Some(PlanInfo {
                    plan_name: "Pro".into(),
                    included_amount_cents: 2000,
                    price: Some("$20/mo".into()),
                    billing_cycle_end: Some(FIXTURE_PERIOD_END_MS),
                }),
            },
        }
    }
}
