//! `fetch_usage` against the fixture backend on loopback: the plan and period joined, and the
//! same classification as discovery when a call fails or the network is down.

use cursor_catalog::{
    UsageRpc, fetch_usage,
    testing::{
        FIXTURE_PERIOD_END_MS, FIXTURE_PERIOD_START_MS, Fault, FixtureBackend, fixture_rpc,
        refused_origin,
    },
};
use cursor_proto::ir::{Classify as _, ErrorInfo, ErrorKind, NextStep};

#[tokio::test]
async fn the_fixture_account_reports_its_plan_and_period() {
    let backend = FixtureBackend::start_realistic().await.unwrap();
    let usage = fetch_usage(&backend.rpc().unwrap()).await.unwrap();
    assert_eq!(usage.plan_name.as_deref(), Some("Pro"));
    assert_eq!(usage.plan_price.as_deref(), Some("$20/mo"));
    assert_eq!(
        (usage.period_start_ms, usage.period_end_ms),
        (FIXTURE_PERIOD_START_MS, FIXTURE_PERIOD_END_MS)
    );
    assert_eq!(
        (usage.plan_spent_cents, usage.plan_limit_cents),
        (1234, 2000)
    );
    assert_eq!(usage.on_demand_limit_cents, Some(5000));
    // Discovery was not touched.
    assert_eq!(backend.total_calls(), 0);
}

#[tokio::test]
async fn offline_is_a_network_error_with_the_transports_next_step() {
    let rpc = fixture_rpc(refused_origin().unwrap()).unwrap();
    let info = ErrorInfo::from(fetch_usage(&rpc).await.unwrap_err());
    assert_eq!(info.kind, ErrorKind::Network, "{info}");
    assert_eq!(info.next_step, NextStep::Retry, "{info}");
}

#[tokio::test]
async fn a_refused_token_is_auth_and_garbage_is_drift() {
    let backend = FixtureBackend::start_realistic().await.unwrap();
    backend.set_usage_fault(UsageRpc::GetPlanInfo, Some(Fault::unauthenticated()));
    let error = fetch_usage(&backend.rpc().unwrap()).await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Auth, "{error}");
    assert!(
        error.to_string().starts_with("GetPlanInfo failed"),
        "{error}"
    );

    backend.set_usage_fault(UsageRpc::GetPlanInfo, None);
    backend.set_usage_fault(UsageRpc::GetCurrentPeriodUsage, Some(Fault::Garbage));
    let error = fetch_usage(&backend.rpc().unwrap()).await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::ProtocolDrift, "{error}");
}
