//! Account usage: the plan and how much of the current billing period is used, from
//! `aiserver.v1.DashboardService` (`GetCurrentPeriodUsage`, `GetPlanInfo`), issued concurrently
//! as unary `application/proto` calls with the same identity and classification as discovery.
//!
//! There is no offline fallback: usage is only worth showing fresh, so a failed call is a
//! [`CatalogError::Usage`] whose kind and next step come from the transport (network, auth,
//! remote refusal, drift), exactly as a failed discovery call's do.

use async_trait::async_trait;
use cursor_proto::aiserver::v1::{
    GetCurrentPeriodUsageRequest, GetCurrentPeriodUsageResponse, GetPlanInfoRequest,
    GetPlanInfoResponse,
};
use cursor_transport::CursorError;
use serde::Serialize;

use crate::error::CatalogError;
use crate::rpc::{TransportCatalogRpc, UsageRpc};

/// The usage calls as decoded messages or classified transport failures.
#[async_trait]
pub trait UsageRpcs: Send + Sync {
    /// `GetCurrentPeriodUsage`.
    async fn current_period_usage(
        &self,
        request: GetCurrentPeriodUsageRequest,
    ) -> Result<GetCurrentPeriodUsageResponse, CursorError>;
    /// `GetPlanInfo`.
    async fn plan_info(
        &self,
        request: GetPlanInfoRequest,
    ) -> Result<GetPlanInfoResponse, CursorError>;
}

#[async_trait]
impl UsageRpcs for TransportCatalogRpc {
    async fn current_period_usage(
        &self,
        request: GetCurrentPeriodUsageRequest,
    ) -> Result<GetCurrentPeriodUsageResponse, CursorError> {
        self.call_path(UsageRpc::GetCurrentPeriodUsage.path(), &request)
            .await
    }

    async fn plan_info(
        &self,
        request: GetPlanInfoRequest,
    ) -> Result<GetPlanInfoResponse, CursorError> {
        self.call_path(UsageRpc::GetPlanInfo.path(), &request).await
    }
}

/// The account's plan and its use in the current period, host-neutral. Money is US cents.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AccountUsage {
    /// The plan's name ("Pro"), when the account has a plan.
    pub plan_name: Option<String>,
    /// The plan's price as Cursor formats it.
    pub plan_price: Option<String>,
    /// What the plan includes per period.
    pub included_cents: Option<i64>,
    /// Period start, Unix milliseconds (0 when Cursor sent none).
    pub period_start_ms: i64,
    /// Period end, Unix milliseconds (0 when Cursor sent none).
    pub period_end_ms: i64,
    /// Spent against the plan this period.
    pub plan_spent_cents: i64,
    /// The plan's allowance this period.
    pub plan_limit_cents: i64,
    /// Left of the allowance.
    pub plan_remaining_cents: i64,
    /// Percent of the plan used, as Cursor computes it.
    pub plan_percent_used: Option<f64>,
    /// Percent of the Auto-model pool used.
    pub auto_percent_used: Option<f64>,
    /// Percent of the named-model pool used.
    pub api_percent_used: Option<f64>,
    /// Usage-based spend beyond the plan this period.
    pub on_demand_spent_cents: i64,
    /// The usage-based limit, when one is set.
    pub on_demand_limit_cents: Option<i64>,
    /// Cursor's own one-line summary, when it sent one.
    pub message: Option<String>,
}

impl AccountUsage {
    /// Joins the two answers.
    pub fn from_responses(
        usage: &GetCurrentPeriodUsageResponse,
        plan: &GetPlanInfoResponse,
    ) -> Self {
        let plan_info = plan.plan_info.as_ref();
        let plan_usage = usage.plan_usage.unwrap_or_default();
        let spend = usage.spend_limit_usage.clone().unwrap_or_default();
        Self {
            plan_name: plan_info
                .map(|p| p.plan_name.clone())
                .filter(|name| !name.is_empty()),
            plan_price: plan_info.and_then(|p| p.price.clone()),
            included_cents: plan_info.map(|p| i64::from(p.included_amount_cents)),
            period_start_ms: usage.billing_cycle_start,
            period_end_ms: usage.billing_cycle_end,
            plan_spent_cents: i64::from(plan_usage.total_spend),
            plan_limit_cents: i64::from(plan_usage.limit),
            plan_remaining_cents: i64::from(plan_usage.remaining),
            plan_percent_used: plan_usage.total_percent_used,
            auto_percent_used: plan_usage.auto_percent_used,
            api_percent_used: plan_usage.api_percent_used,
            on_demand_spent_cents: i64::from(spend.total_spend),
            on_demand_limit_cents: spend.individual_limit.map(i64::from),
            message: Some(usage.display_message.clone()).filter(|m| !m.is_empty()),
        }
    }
}

/// Fetches the plan and the current period's usage, both calls at once.
///
/// # Errors
///
/// [`CatalogError::Usage`] for the first call that failed, classified by the transport; and
/// protocol drift when the period ends before it starts.
///
/// # Cancel safety
///
/// Cancel-safe: read-only calls; dropping the future drops them and changes nothing.
pub async fn fetch_usage<R: UsageRpcs + ?Sized>(rpc: &R) -> Result<AccountUsage, CatalogError> {
    let (usage, plan) = futures::join!(
        rpc.current_period_usage(GetCurrentPeriodUsageRequest::default()),
        rpc.plan_info(GetPlanInfoRequest::default()),
    );
    let usage =
        usage.map_err(|source| CatalogError::usage(UsageRpc::GetCurrentPeriodUsage, source))?;
    let plan = plan.map_err(|source| CatalogError::usage(UsageRpc::GetPlanInfo, source))?;
    if usage.billing_cycle_end < usage.billing_cycle_start {
        return Err(CatalogError::usage(
            UsageRpc::GetCurrentPeriodUsage,
            CursorError::drift(format!(
                "the billing period ends ({}) before it starts ({})",
                usage.billing_cycle_end, usage.billing_cycle_start
            )),
        ));
    }
    Ok(AccountUsage::from_responses(&usage, &plan))
}

#[cfg(test)]
mod tests {
    use cursor_proto::aiserver::v1::{CurrentPeriodPlanUsage, PlanInfo};
    use cursor_proto::ir::{Classify as _, ErrorKind};

    use super::*;

    struct Canned {
        usage: Result<GetCurrentPeriodUsageResponse, fn() -> CursorError>,
    }

    #[async_trait]
    impl UsageRpcs for Canned {
        async fn current_period_usage(
            &self,
            _request: GetCurrentPeriodUsageRequest,
        ) -> Result<GetCurrentPeriodUsageResponse, CursorError> {
            self.usage.clone().map_err(|make| make())
        }
        async fn plan_info(
            &self,
            _request: GetPlanInfoRequest,
        ) -> Result<GetPlanInfoResponse, CursorError> {
            Ok(GetPlanInfoResponse {
                plan_info: Some(PlanInfo {
                    plan_name: "Pro".into(),
                    included_amount_cents: 2000,
                    price: Some("$20/mo".into()),
                    billing_cycle_end: None,
                }),
            })
        }
    }

    fn period(start: i64, end: i64) -> GetCurrentPeriodUsageResponse {
        GetCurrentPeriodUsageResponse {
            billing_cycle_start: start,
            billing_cycle_end: end,
            plan_usage: Some(CurrentPeriodPlanUsage {
                total_spend: 1234,
                limit: 2000,
                remaining: 766,
                total_percent_used: Some(61.7),
                ..CurrentPeriodPlanUsage::default()
            }),
            ..GetCurrentPeriodUsageResponse::default()
        }
    }

    #[test]
    fn paths_map_back_and_live_on_the_dashboard_service() {
        for rpc in UsageRpc::ALL {
            assert_eq!(UsageRpc::from_path(rpc.path()), Some(rpc));
            assert!(
                rpc.path().starts_with("/aiserver.v1.DashboardService/"),
                "{rpc}"
            );
            assert!(rpc.path().ends_with(rpc.name()), "{rpc}");
        }
        assert_eq!(
            UsageRpc::from_path("/aiserver.v1.AiService/AvailableModels"),
            None
        );
    }

    #[tokio::test]
    async fn both_answers_join_into_one_usage() {
        let rpc = Canned {
            usage: Ok(period(1, 2)),
        };
        let usage = fetch_usage(&rpc).await.unwrap();
        assert_eq!(usage.plan_name.as_deref(), Some("Pro"));
        assert_eq!(usage.included_cents, Some(2000));
        assert_eq!(usage.plan_spent_cents, 1234);
        assert_eq!(usage.plan_remaining_cents, 766);
        assert_eq!(usage.plan_percent_used, Some(61.7));
        assert_eq!(usage.message, None);
    }

    #[tokio::test]
    async fn a_failed_call_keeps_the_transport_classification() {
        let rpc = Canned {
            usage: Err(|| CursorError::network_msg("refused")),
        };
        let error = fetch_usage(&rpc).await.unwrap_err();
        assert_eq!(error.kind(), ErrorKind::Network);
        assert!(
            error
                .to_string()
                .starts_with("GetCurrentPeriodUsage failed"),
            "{error}"
        );
        assert_eq!(error.next_step(), CursorError::network_msg("x").next_step());
    }

    #[tokio::test]
    async fn a_period_ending_before_it_starts_is_drift() {
        let rpc = Canned {
            usage: Ok(period(5, 4)),
        };
        assert_eq!(
            fetch_usage(&rpc).await.unwrap_err().kind(),
            ErrorKind::ProtocolDrift
        );
    }
}
