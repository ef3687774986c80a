//! T-CATALOG (discovery): the four RPCs over the transport against the fixture backend on
//! loopback, their failures, and agent host discovery.

use cursor_proto::ir::Classify as _;
use std::time::Duration;

use async_trait::async_trait;
use cursor_catalog::{
    AgentOriginSource, CatalogError, CatalogRpc, CatalogSource, CatalogStore, CatalogWarning,
    RefreshOptions, RefreshOutcome, Rpc, TransportCatalogRpc, discover, static_catalog,
    testing::{
        FIXTURE_AGENT_ORIGIN, FIXTURE_AGENTN_ORIGIN, Fault, FixtureBackend, FixtureRoster,
        refused_origin,
    },
};
use cursor_proto::{
    agent::v1::{
        GetDefaultModelForCliRequest, GetDefaultModelForCliResponse, GetUsableModelsRequest,
        GetUsableModelsResponse,
    },
    aiserver::v1::{
        AvailableModelsRequest, AvailableModelsResponse, GetServerConfigRequest,
        GetServerConfigResponse,
    },
    ir::ErrorKind,
};
use cursor_transport::{AccessToken, CliIdentity, Client, CursorError, Origin};
use tokio::sync::Barrier;

const NOW: u64 = 1_800_000_000_000;

async fn within<T>(future: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(20), future)
        .await
        .expect("test step timed out")
}

#[tokio::test]
async fn discovery_over_loopback_lists_the_roster_with_one_call_per_rpc() {
    let backend = FixtureBackend::start_realistic().await.unwrap();
    let rpc = backend.rpc().unwrap();
    let mapped = within(discover(&rpc)).await.unwrap();
    assert_eq!(mapped.catalog.rows.len(), 10);
    assert_eq!(
        mapped.catalog.default_model.as_deref(),
        Some("composer-2.5")
    );
    for rpc in [
        Rpc::AvailableModels,
        Rpc::GetUsableModels,
        Rpc::GetDefaultModelForCli,
    ] {
        assert_eq!(backend.calls(rpc), 1, "{rpc}");
    }
    assert_eq!(
        backend.calls(Rpc::GetServerConfig),
        0,
        "discover alone does not ask for the agent host"
    );
}

#[tokio::test]
async fn a_refresh_stores_catalog_and_discovered_agent_host() {
    let backend = FixtureBackend::start_realistic().await.unwrap();
    let rpc = backend.rpc().unwrap();
    let mut store = CatalogStore::from_static();
    let report = within(store.refresh(&rpc, NOW, RefreshOptions::new().privacy_mode(false))).await;
    assert_eq!(report.outcome, RefreshOutcome::Refreshed);
    assert_eq!(report.warnings, []);
    assert!(report.should_persist());
    assert_eq!(store.source(), CatalogSource::Online);
    assert_eq!(backend.total_calls(), 4);
    let agent = store.agent_origin(None).unwrap();
    assert_eq!(agent.source, AgentOriginSource::Discovered);
    assert_eq!(agent.origin, Origin::parse(FIXTURE_AGENTN_ORIGIN).unwrap());

    within(store.refresh(
        &rpc,
        NOW,
        RefreshOptions::new().force(true).privacy_mode(true),
    ))
    .await;
    assert_eq!(
        store.agent_origin(None).unwrap().origin,
        Origin::parse(FIXTURE_AGENT_ORIGIN).unwrap()
    );
    let overridden = store
        .agent_origin(Some("https://agentn.us.api5.cursor.sh"))
        .unwrap();
    assert_eq!(overridden.source, AgentOriginSource::Override);
    assert_eq!(overridden.origin, Origin::default_agent());
}

#[tokio::test]
async fn an_empty_roster_falls_back_with_a_remote_refusal_warning() {
    let backend = FixtureBackend::start(FixtureRoster::empty()).await.unwrap();
    let mut store = CatalogStore::from_static();
    let report = within(store.refresh(&backend.rpc().unwrap(), NOW, RefreshOptions::new())).await;
    let RefreshOutcome::FellBack { error } = &report.outcome else {
        panic!("{report:?}")
    };
    assert_eq!(error.kind, ErrorKind::RemoteRefusal);
    assert!(matches!(
        &report.warnings[0],
        CatalogWarning::DiscoveryFailed {
            serving: CatalogSource::Static,
            ..
        }
    ));
    assert_eq!(
        store.catalog(),
        &static_catalog(),
        "first run keeps serving the static table"
    );
    assert!(!report.should_persist());
}

#[tokio::test]
async fn offline_first_run_serves_the_static_table_with_a_network_warning() {
    let rpc = cursor_catalog::testing::fixture_rpc(refused_origin().unwrap()).unwrap();
    let (mut store, warnings) = CatalogStore::restore(None);
    assert_eq!(warnings, []);
    let report = within(store.refresh(&rpc, NOW, RefreshOptions::new())).await;
    let RefreshOutcome::FellBack { error } = &report.outcome else {
        panic!("{report:?}")
    };
    assert_eq!(error.kind, ErrorKind::Network, "{error}");
    assert_eq!(store.source(), CatalogSource::Static);
    assert_eq!(store.catalog(), &static_catalog());
    assert!(!store.catalog().is_empty());
    let shown = report.warnings[0].to_string();
    assert!(shown.contains("serving the static catalog"), "{shown}");
    assert_eq!(
        store.agent_origin(None).unwrap().source,
        AgentOriginSource::Default
    );
}

#[tokio::test]
async fn offline_restart_serves_the_persisted_snapshot() {
    let backend = FixtureBackend::start_realistic().await.unwrap();
    let mut online = CatalogStore::from_static();
    within(online.refresh(&backend.rpc().unwrap(), NOW, RefreshOptions::new())).await;
    let persisted = online.snapshot().to_json().unwrap();
    drop(backend);

    let (mut restarted, warnings) = CatalogStore::restore(Some(&persisted));
    assert_eq!(warnings, []);
    let offline = cursor_catalog::testing::fixture_rpc(refused_origin().unwrap()).unwrap();
    let report = within(restarted.refresh(&offline, NOW + 3_600_000, RefreshOptions::new())).await;
    assert!(
        matches!(report.outcome, RefreshOutcome::FellBack { .. }),
        "{report:?}"
    );
    assert!(matches!(
        &report.warnings[0],
        CatalogWarning::DiscoveryFailed {
            serving: CatalogSource::Snapshot,
            ..
        }
    ));
    assert_eq!(restarted.source(), CatalogSource::Snapshot);
    assert_eq!(restarted.catalog(), online.catalog());
    assert_eq!(
        restarted.agent_origin(None).unwrap(),
        online.agent_origin(None).unwrap(),
        "agent host cached too"
    );
}

#[tokio::test]
async fn any_one_failing_catalog_rpc_keeps_the_previous_catalog() {
    let backend = FixtureBackend::start_realistic().await.unwrap();
    let rpc = backend.rpc().unwrap();
    let mut store = CatalogStore::from_static();
    within(store.refresh(&rpc, NOW, RefreshOptions::new())).await;
    let before = store.snapshot().clone();
    for failing in [
        Rpc::AvailableModels,
        Rpc::GetUsableModels,
        Rpc::GetDefaultModelForCli,
    ] {
        backend.set_fault(failing, Some(Fault::unavailable()));
        let report = within(store.refresh(&rpc, NOW, RefreshOptions::new().force(true))).await;
        let RefreshOutcome::FellBack { error } = &report.outcome else {
            panic!("{failing}: {report:?}")
        };
        assert_eq!(error.kind, ErrorKind::Network, "{failing}");
        assert!(
            error.message.starts_with(failing.name()),
            "{failing}: {}",
            error.message
        );
        assert_eq!(store.snapshot(), &before, "{failing}: snapshot kept");
        assert_eq!(store.source(), CatalogSource::Online);
        backend.set_fault(failing, None);
    }
    backend.set_fault(Rpc::GetUsableModels, Some(Fault::unauthenticated()));
    let report = within(store.refresh(&rpc, NOW, RefreshOptions::new().force(true))).await;
    let RefreshOutcome::FellBack { error } = &report.outcome else {
        panic!("{report:?}")
    };
    assert_eq!(error.kind, ErrorKind::Auth);
    assert_eq!(error.next_step, cursor_proto::ir::NextStep::Login);
    assert!(error.is_unauthenticated(), "{error}");
}

#[tokio::test]
async fn a_malformed_response_is_protocol_drift_and_the_snapshot_is_kept() {
    let backend = FixtureBackend::start_realistic().await.unwrap();
    let rpc = backend.rpc().unwrap();
    let mut store = CatalogStore::from_static();
    within(store.refresh(&rpc, NOW, RefreshOptions::new())).await;
    let before = store.snapshot().clone();
    backend.set_fault(Rpc::AvailableModels, Some(Fault::Garbage));
    let err = within(discover(&rpc)).await.unwrap_err();
    assert!(
        matches!(
            err,
            CatalogError::Rpc {
                rpc: Rpc::AvailableModels,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(err.kind(), ErrorKind::ProtocolDrift);
    let report = within(store.refresh(&rpc, NOW + 700_000, RefreshOptions::new())).await;
    let RefreshOutcome::FellBack { error } = &report.outcome else {
        panic!("{report:?}")
    };
    assert_eq!(error.kind, ErrorKind::ProtocolDrift);
    assert_eq!(store.snapshot(), &before);
}

#[tokio::test]
async fn a_failing_server_config_still_refreshes_the_models() {
    let backend = FixtureBackend::start_realistic().await.unwrap();
    let rpc = backend.rpc().unwrap();
    let mut store = CatalogStore::from_static();
    within(store.refresh(&rpc, NOW, RefreshOptions::new())).await;
    let agent = store.agent_origin(None).unwrap();
    backend.set_fault(Rpc::GetServerConfig, Some(Fault::Garbage));
    let report = within(store.refresh(&rpc, NOW, RefreshOptions::new().force(true))).await;
    assert_eq!(report.outcome, RefreshOutcome::Refreshed);
    let [CatalogWarning::AgentHostDiscoveryFailed { error }] = report.warnings.as_slice() else {
        panic!("{:?}", report.warnings)
    };
    assert_eq!(error.kind, ErrorKind::ProtocolDrift);
    assert_eq!(
        store.agent_origin(None).unwrap(),
        agent,
        "the known agent host stays"
    );
}

#[tokio::test]
async fn a_discovered_agent_host_off_the_allowlist_is_an_error_not_a_default() {
    let mut roster = FixtureRoster::realistic();
    if let Some(urls) = roster.server_config.agent_url_config.as_mut() {
        urls.agent_url = "https://agentx.global.api5.cursor.sh".into();
        urls.agentn_url = "https://agentn.a.b.api5.cursor.sh".into();
    }
    let backend = FixtureBackend::start(roster).await.unwrap();
    let mut store = CatalogStore::from_static();
    let report = within(store.refresh(&backend.rpc().unwrap(), NOW, RefreshOptions::new())).await;
    assert_eq!(report.outcome, RefreshOutcome::Refreshed);
    assert!(matches!(
        report.warnings.as_slice(),
        [CatalogWarning::AgentHostDiscoveryFailed { .. }]
    ));
    let err = store.agent_origin(None).unwrap_err();
    assert!(
        matches!(
            err,
            CatalogError::AgentOriginRefused {
                from: AgentOriginSource::Discovered,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(err.kind(), ErrorKind::ProtocolDrift);
    assert!(
        store
            .agent_origin(Some("https://agentn.us.api5.cursor.sh"))
            .is_ok(),
        "an override still works"
    );
}

#[tokio::test]
async fn catalog_calls_carry_the_token_and_the_cli_identity() {
    let backend = FixtureBackend::start_realistic().await.unwrap();
    let wrong = TransportCatalogRpc::new(
        Client::new().unwrap(),
        backend.origin(),
        AccessToken::new("someone-else"),
        CliIdentity::default(),
    );
    let err = within(discover(&wrong)).await.unwrap_err();
    assert_eq!(
        err.kind(),
        ErrorKind::Auth,
        "the fixture checks the bearer token: {err}"
    );
    // With the right token the fixture's CLI-identity and request-flag checks pass.
    assert!(within(discover(&backend.rpc().unwrap())).await.is_ok());
}

/// Answers only once all calls of a round are in flight together.
struct Rendezvous {
    barrier: Barrier,
    roster: FixtureRoster,
}

impl Rendezvous {
    async fn meet(&self) {
        self.barrier.wait().await;
    }
}

#[async_trait]
impl CatalogRpc for Rendezvous {
    async fn available_models(
        &self,
        _: AvailableModelsRequest,
    ) -> Result<AvailableModelsResponse, CursorError> {
        self.meet().await;
        Ok(self.roster.available.clone())
    }
    async fn usable_models(
        &self,
        _: GetUsableModelsRequest,
    ) -> Result<GetUsableModelsResponse, CursorError> {
        self.meet().await;
        Ok(self.roster.usable.clone())
    }
    async fn default_model(
        &self,
        _: GetDefaultModelForCliRequest,
    ) -> Result<GetDefaultModelForCliResponse, CursorError> {
        self.meet().await;
        Ok(self.roster.default.clone())
    }
    async fn server_config(
        &self,
        _: GetServerConfigRequest,
    ) -> Result<GetServerConfigResponse, CursorError> {
        self.meet().await;
        Ok(self.roster.server_config.clone())
    }
}

#[tokio::test]
async fn the_catalog_calls_and_server_config_are_issued_concurrently() {
    // A sequential implementation would wait forever at the barrier.
    let three = Rendezvous {
        barrier: Barrier::new(3),
        roster: FixtureRoster::realistic(),
    };
    assert!(within(discover(&three)).await.is_ok());
    let four = Rendezvous {
        barrier: Barrier::new(4),
        roster: FixtureRoster::realistic(),
    };
    let mut store = CatalogStore::from_static();
    let report = within(store.refresh(&four, NOW, RefreshOptions::new())).await;
    assert_eq!(report.outcome, RefreshOutcome::Refreshed);
}
