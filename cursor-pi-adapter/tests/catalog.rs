//! `refreshModels` against cursor-catalog's loopback fixture backend.

use cursor_catalog::Rpc;
use cursor_catalog::testing::{Fault, FixtureBackend, fixture_rpc, refused_origin};
use cursor_pi_adapter::provider::refresh_catalog;

const NOW_MS: u64 = 1_800_000_000_000;

#[tokio::test]
async fn a_first_refresh_discovers_online_and_returns_a_snapshot_to_persist() {
    let backend = FixtureBackend::start_realistic().await.unwrap();
    let refresh = refresh_catalog(&backend.rpc().unwrap(), None, NOW_MS, false).await;
    assert_eq!(refresh.source, "online", "{:?}", refresh.warnings);
    assert!(!refresh.models.is_empty());
    assert!(
        refresh
            .models
            .iter()
            .all(|m| m["id"].is_string() && m["contextWindow"].is_u64())
    );
    assert!(refresh.snapshot.is_some());
    assert!(backend.total_calls() > 0);
}

#[tokio::test]
async fn a_fresh_snapshot_is_served_without_calling_cursor() {
    let backend = FixtureBackend::start_realistic().await.unwrap();
    let first = refresh_catalog(&backend.rpc().unwrap(), None, NOW_MS, false).await;
    let calls = backend.total_calls();
    let second = refresh_catalog(
        &backend.rpc().unwrap(),
        first.snapshot.clone(),
        NOW_MS + 1_000,
        false,
    )
    .await;
    assert_eq!(backend.total_calls(), calls, "no call while fresh");
    assert_eq!(second.source, "snapshot");
    assert_eq!(second.models, first.models);
    assert!(second.snapshot.is_none(), "nothing new to persist");

    let forced = refresh_catalog(
        &backend.rpc().unwrap(),
        first.snapshot,
        NOW_MS + 1_000,
        true,
    )
    .await;
    assert!(backend.total_calls() > calls, "force asks again");
    assert_eq!(forced.source, "online");
}

#[tokio::test]
async fn when_cursor_is_unreachable_the_stored_catalog_is_served_with_a_warning() {
    let backend = FixtureBackend::start_realistic().await.unwrap();
    let stored = refresh_catalog(&backend.rpc().unwrap(), None, NOW_MS, false)
        .await
        .snapshot;
    let offline = fixture_rpc(refused_origin().unwrap()).unwrap();
    let later = NOW_MS + 24 * 60 * 60 * 1000;
    let refresh = refresh_catalog(&offline, stored, later, false).await;
    assert_eq!(refresh.source, "snapshot");
    assert!(!refresh.models.is_empty());
    assert!(refresh.snapshot.is_none());
    assert!(
        refresh
            .warnings
            .iter()
            .any(|w| w.contains("discovery failed")),
        "{:?}",
        refresh.warnings
    );
}

#[tokio::test]
async fn a_failing_discovery_on_first_run_serves_the_static_table() {
    let backend = FixtureBackend::start_realistic().await.unwrap();
    backend.set_fault(Rpc::AvailableModels, Some(Fault::unavailable()));
    let refresh = refresh_catalog(&backend.rpc().unwrap(), None, NOW_MS, false).await;
    assert_eq!(refresh.source, "static");
    assert!(!refresh.models.is_empty());
    assert!(!refresh.warnings.is_empty());
}
