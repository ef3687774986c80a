//! T-CATALOG (cache): TTL against an injected clock, snapshots, and pre-vision healing.

use std::time::Duration;

use cursor_catalog::{
    CatalogSource, CatalogStore, CatalogWarning, DEFAULT_TTL_MS, InputKind, RefreshOptions,
    RefreshOutcome, Rpc, SNAPSHOT_VERSION, Snapshot, static_catalog,
    testing::{FixtureBackend, FixtureRoster},
};
use cursor_proto::ir::ErrorKind;

const NOW: u64 = 1_800_000_000_000;

async fn within<T>(future: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(20), future)
        .await
        .expect("test step timed out")
}

async fn online_store(backend: &FixtureBackend, now: u64) -> CatalogStore {
    let mut store = CatalogStore::from_static();
    let report = within(store.refresh(&backend.rpc().unwrap(), now, RefreshOptions::new())).await;
    assert_eq!(report.outcome, RefreshOutcome::Refreshed);
    store
}

#[tokio::test]
async fn a_fresh_catalog_is_not_refetched_until_the_ttl_expires() {
    let backend = FixtureBackend::start_realistic().await.unwrap();
    let rpc = backend.rpc().unwrap();
    let mut store = online_store(&backend, NOW).await;
    assert_eq!(backend.calls(Rpc::AvailableModels), 1);

    let report = within(store.refresh(&rpc, NOW + DEFAULT_TTL_MS - 1, RefreshOptions::new())).await;
    assert_eq!(report.outcome, RefreshOutcome::Fresh);
    assert!(!report.should_persist());
    assert_eq!(backend.total_calls(), 4, "nothing sent while fresh");

    let report = within(store.refresh(&rpc, NOW + DEFAULT_TTL_MS, RefreshOptions::new())).await;
    assert_eq!(report.outcome, RefreshOutcome::Refreshed);
    assert_eq!(backend.calls(Rpc::AvailableModels), 2);
    assert_eq!(store.snapshot().fetched_at_ms, NOW + DEFAULT_TTL_MS);

    let report = within(store.refresh(
        &rpc,
        NOW + DEFAULT_TTL_MS + 1,
        RefreshOptions::new().force(true),
    ))
    .await;
    assert_eq!(
        report.outcome,
        RefreshOutcome::Refreshed,
        "force ignores the TTL"
    );
    assert_eq!(backend.calls(Rpc::AvailableModels), 3);
}

#[tokio::test]
async fn freshness_follows_the_injected_clock_and_ttl() {
    let backend = FixtureBackend::start_realistic().await.unwrap();
    let store = online_store(&backend, NOW).await.with_ttl_ms(1_000);
    assert!(store.is_fresh(NOW));
    assert!(store.is_fresh(NOW + 999));
    assert!(!store.is_fresh(NOW + 1_000));
    assert!(
        !store.is_fresh(NOW - 1),
        "a fetch time in the future is not trusted"
    );
    assert!(
        !CatalogStore::from_static().is_fresh(NOW),
        "the static table is never fresh"
    );

    let (restored, _) = CatalogStore::restore(Some(&store.snapshot().to_json().unwrap()));
    assert!(
        restored.is_fresh(NOW + 1),
        "a recent snapshot from another process counts"
    );
}

#[tokio::test]
async fn a_pre_vision_snapshot_is_healed_on_restore_and_retightened_online() {
    let backend = FixtureBackend::start_realistic().await.unwrap();
    let store = online_store(&backend, NOW).await;
    let mut value = store.snapshot().to_value().unwrap();
    for row in value["catalog"]["rows"].as_array_mut().unwrap() {
        row["input"] = serde_json::json!(["text"]);
    }

    let (mut healed, warnings) = CatalogStore::restore_value(Some(value));
    assert_eq!(warnings, [CatalogWarning::HealedPreVisionSnapshot]);
    assert!(
        healed
            .catalog()
            .rows
            .iter()
            .all(|row| row.input == [InputKind::Text, InputKind::Image])
    );
    assert!(
        !healed.is_fresh(NOW + 1),
        "a healed snapshot must be re-checked online"
    );

    let report =
        within(healed.refresh(&backend.rpc().unwrap(), NOW + 1, RefreshOptions::new())).await;
    assert_eq!(report.outcome, RefreshOutcome::Refreshed);
    assert_eq!(
        healed.catalog().row("grok-4.6").unwrap().input,
        [InputKind::Text],
        "re-tightened"
    );
    assert!(healed.catalog().row("grok-4.7").unwrap().supports_images());
    assert!(healed.is_fresh(NOW + 2));
}

#[tokio::test]
async fn a_snapshot_with_some_image_rows_is_restored_as_is() {
    let backend = FixtureBackend::start_realistic().await.unwrap();
    let store = online_store(&backend, NOW).await;
    let (restored, warnings) = CatalogStore::restore(Some(&store.snapshot().to_json().unwrap()));
    assert_eq!(warnings, []);
    assert_eq!(restored.source(), CatalogSource::Snapshot);
    assert_eq!(restored.snapshot(), store.snapshot());
    assert_eq!(
        restored.catalog().row("grok-4.6").unwrap().input,
        [InputKind::Text]
    );
}

#[test]
fn unreadable_snapshots_fall_back_to_the_static_table_with_a_warning() {
    let valid = Snapshot::new(static_catalog(), NOW, None)
        .to_value()
        .unwrap();
    let mut other_version = valid.clone();
    other_version["version"] = serde_json::json!(SNAPSHOT_VERSION + 1);
    let mut no_rows = valid.clone();
    no_rows["catalog"]["rows"] = serde_json::json!([]);
    let mut bad_row = valid;
    bad_row["catalog"]["rows"][0]["defaultSlug"] = serde_json::json!("");
    let cases = [
        "not json".to_owned(),
        "{}".to_owned(),
        other_version.to_string(),
        no_rows.to_string(),
        bad_row.to_string(),
        r#"{"version":1,"fetchedAtMs":"soon","catalog":{"rows":[]}}"#.to_owned(),
    ];
    for persisted in cases {
        let (store, warnings) = CatalogStore::restore(Some(&persisted));
        assert_eq!(store.source(), CatalogSource::Static, "{persisted}");
        assert_eq!(store.catalog(), &static_catalog());
        let [CatalogWarning::SnapshotDiscarded { error }] = warnings.as_slice() else {
            panic!("{warnings:?}")
        };
        assert_eq!(error.kind, ErrorKind::Local, "{persisted}");
    }
}

#[tokio::test]
async fn snapshots_round_trip_through_json_with_their_version() {
    let backend = FixtureBackend::start(FixtureRoster::realistic())
        .await
        .unwrap();
    let store = online_store(&backend, NOW).await;
    let json = store.snapshot().to_json().unwrap();
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(value["version"], SNAPSHOT_VERSION);
    assert_eq!(value["fetchedAtMs"], NOW);
    assert!(value["agentOrigin"].is_string());
    assert_eq!(&Snapshot::from_json(&json).unwrap(), store.snapshot());
}

#[tokio::test]
async fn a_catalog_fetched_for_another_account_is_not_fresh() {
    let backend = FixtureBackend::start_realistic().await.unwrap();
    let rpc = backend.rpc().unwrap();
    let mut store = CatalogStore::from_static();
    let alice = || RefreshOptions::new().account("account-a");
    within(store.refresh(&rpc, NOW, alice())).await;
    assert_eq!(store.snapshot().account.as_deref(), Some("account-a"));
    let report = within(store.refresh(&rpc, NOW + 1, alice())).await;
    assert_eq!(report.outcome, RefreshOutcome::Fresh);
    let report =
        within(store.refresh(&rpc, NOW + 2, RefreshOptions::new().account("account-b"))).await;
    assert_eq!(
        report.outcome,
        RefreshOutcome::Refreshed,
        "another account refetches"
    );
    assert_eq!(store.snapshot().account.as_deref(), Some("account-b"));
    assert_eq!(backend.calls(Rpc::AvailableModels), 2);
}
