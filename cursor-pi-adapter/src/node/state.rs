//! What the binding keeps for the life of the Node process: one transport client (so turns
//! share connections), the sessions waiting for tool results, and the latest catalog snapshot.

use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use cursor_catalog::CatalogStore;
use cursor_proto::ir::ErrorInfo;
use cursor_transport::Client;
use serde_json::Value;

use crate::provider::{Sessions, Spawner, TurnLog};

static CLIENT: Mutex<Option<Client>> = Mutex::new(None);
static SESSIONS: OnceLock<Sessions> = OnceLock::new();
/// The latest snapshot, and how often a different one replaced it (see [`catalog_generation`]).
static SNAPSHOT: Mutex<(u64, Option<Value>)> = Mutex::new((0, None));
static TURN_LOG: OnceLock<TurnLog> = OnceLock::new();

/// The process's transport client, made on first use.
pub(crate) fn client() -> Result<Client, ErrorInfo> {
    let mut slot = CLIENT.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(client) = slot.as_ref() {
        return Ok(client.clone());
    }
    let client = Client::new().map_err(ErrorInfo::from)?;
    *slot = Some(client.clone());
    Ok(client)
}

/// The sessions whose Run waits for tool results.
pub(crate) fn sessions() -> Sessions {
    SESSIONS.get_or_init(Sessions::new).clone()
}

/// The last turn of this process, for the doctor.
pub(crate) fn turn_log() -> TurnLog {
    TURN_LOG.get_or_init(TurnLog::new).clone()
}

/// Runs driver tasks on napi's runtime.
pub(crate) fn spawner() -> Spawner {
    Arc::new(|task| {
        napi::bindgen_prelude::spawn(task);
    })
}

/// Remembers the snapshot pi stored or a refresh produced, for the slugs and agent origin of
/// later turns.
pub(crate) fn remember_snapshot(snapshot: Value) {
    let mut slot = SNAPSHOT.lock().unwrap_or_else(PoisonError::into_inner);
    if slot.1.as_ref() != Some(&snapshot) {
        *slot = (slot.0 + 1, Some(snapshot));
    }
}

/// Changes whenever a different snapshot is remembered, so a channel built from the catalog
/// knows when it is out of date.
pub(crate) fn catalog_generation() -> u64 {
    SNAPSHOT.lock().unwrap_or_else(PoisonError::into_inner).0
}

/// The remembered snapshot as JSON text, if there is one.
pub(crate) fn snapshot_json() -> Option<String> {
    let slot = SNAPSHOT.lock().unwrap_or_else(PoisonError::into_inner);
    slot.1.as_ref().map(Value::to_string)
}

/// The catalog in effect: the remembered snapshot, else the static table.
pub(crate) fn catalog_store() -> CatalogStore {
    let snapshot = SNAPSHOT
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .1
        .clone();
    CatalogStore::restore_value(snapshot).0
}
