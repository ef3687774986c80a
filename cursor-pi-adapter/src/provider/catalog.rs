//! pi's `refreshModels`: the catalog from the snapshot pi keeps, brought up to date online.

use cursor_catalog::{CatalogRpc, CatalogStore, RefreshOptions};
use serde_json::Value;

use super::pi_model;

/// The key under which this provider's catalog snapshot rides in pi's models-store entry
/// (`{models, checkedAt, cursorCatalog}`), beside the `models` pi reads itself.
pub const SNAPSHOT_KEY: &str = "cursorCatalog";

/// What a refresh hands back to pi.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq)]
pub struct CatalogRefresh {
    /// pi `ProviderModelConfig`s to serve.
    pub models: Vec<Value>,
    /// A new snapshot to persist under [`SNAPSHOT_KEY`]; `None` when nothing changed.
    pub snapshot: Option<Value>,
    /// Where the served catalog came from: `static`, `snapshot` or `online`.
    pub source: &'static str,
    /// Why discovery or the stored snapshot could not be used, for the user.
    pub warnings: Vec<String>,
}

/// Serves the catalog in `persisted` (the value stored under [`SNAPSHOT_KEY`], else the static
/// table) and refreshes it through `rpc` unless it is still fresh (`force` refreshes anyway).
/// A failed discovery keeps serving what was there, with a warning: the list never empties
/// because the network is down.
///
/// # Cancel safety
///
/// Cancel-safe: nothing is persisted here; the caller stores the returned snapshot.
pub async fn refresh_catalog<R: CatalogRpc + ?Sized>(
    rpc: &R,
    persisted: Option<Value>,
    now_ms: u64,
    force: bool,
) -> CatalogRefresh {
    let (mut store, restored) = CatalogStore::restore_value(persisted);
    let report = store
        .refresh(rpc, now_ms, RefreshOptions::new().force(force))
        .await;
    // A failed discovery is reported among the warnings (`DiscoveryFailed`).
    let warnings = restored
        .iter()
        .chain(&report.warnings)
        .map(ToString::to_string)
        .collect();
    let snapshot = if report.should_persist() {
        store.snapshot().to_value().ok()
    } else {
        None
    };
    CatalogRefresh {
        models: store.catalog().rows.iter().map(pi_model).collect(),
        snapshot,
        source: store.source().as_str(),
        warnings,
    }
}
