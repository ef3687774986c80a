//! The persisted form of the catalog: versioned JSON the host stores and hands back.

use serde::{Deserialize, Serialize};

use crate::{catalog::Catalog, error::CatalogError, row::InputKind};

/// The snapshot format this crate writes and reads.
pub const SNAPSHOT_VERSION: u32 = 1;

/// A catalog as persisted by the host, with when it was fetched and the agent origin found
/// beside it.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Snapshot {
    /// Format version ([`SNAPSHOT_VERSION`]).
    pub version: u32,
    /// When discovery produced it, in milliseconds since the Unix epoch.
    pub fetched_at_ms: u64,
    /// The catalog.
    pub catalog: Catalog,
    /// The agent origin `GetServerConfig` named, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_origin: Option<String>,
    /// The account key the catalog was fetched for ([`crate::RefreshOptions::account`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account: Option<String>,
}

impl Snapshot {
    /// A current-version snapshot.
    pub fn new(catalog: Catalog, fetched_at_ms: u64, agent_origin: Option<String>) -> Self {
        Self {
            version: SNAPSHOT_VERSION,
            fetched_at_ms,
            catalog,
            agent_origin,
            account: None,
        }
    }

    /// Serializes to JSON.
    pub fn to_json(&self) -> Result<String, CatalogError> {
        serde_json::to_string(self).map_err(|err| CatalogError::Snapshot {
            message: err.to_string(),
        })
    }

    /// Serializes to a JSON value (for hosts whose persistence takes objects).
    pub fn to_value(&self) -> Result<serde_json::Value, CatalogError> {
        serde_json::to_value(self).map_err(|err| CatalogError::Snapshot {
            message: err.to_string(),
        })
    }

    /// Reads a snapshot from JSON text.
    pub fn from_json(json: &str) -> Result<Self, CatalogError> {
        let value: serde_json::Value =
            serde_json::from_str(json).map_err(|err| CatalogError::Snapshot {
                message: err.to_string(),
            })?;
        Self::from_value(value)
    }

    /// Reads a snapshot from a JSON value, refusing other versions and empty catalogs.
    pub fn from_value(value: serde_json::Value) -> Result<Self, CatalogError> {
        let version = value.get("version").and_then(serde_json::Value::as_u64);
        if version != Some(u64::from(SNAPSHOT_VERSION)) {
            let found = version.map_or_else(|| "none".to_owned(), |v| v.to_string());
            return Err(CatalogError::Snapshot {
                message: format!("format version {found}, this crate reads {SNAPSHOT_VERSION}"),
            });
        }
        let snapshot: Self =
            serde_json::from_value(value).map_err(|err| CatalogError::Snapshot {
                message: err.to_string(),
            })?;
        if snapshot.catalog.is_empty() {
            return Err(CatalogError::Snapshot {
                message: "it lists no models".to_owned(),
            });
        }
        if let Some(row) = snapshot
            .catalog
            .rows
            .iter()
            .find(|r| r.id.is_empty() || r.default_slug.is_empty())
        {
            return Err(CatalogError::Snapshot {
                message: format!("row {:?} has no id or default slug", row.id),
            });
        }
        Ok(snapshot)
    }

    /// Whether every row is text-only: the shape snapshots had before image support was mapped.
    pub fn is_pre_vision(&self) -> bool {
        !self.catalog.is_empty()
            && self
                .catalog
                .rows
                .iter()
                .all(|row| row.input == [InputKind::Text])
    }

    /// Allows images on every row of a pre-vision snapshot; the next online refresh restores
    /// Cursor's per-model `supports_images`. Returns whether anything changed.
    pub fn heal_pre_vision(&mut self) -> bool {
        if !self.is_pre_vision() {
            return false;
        }
        for row in &mut self.catalog.rows {
            row.input.push(InputKind::Image);
        }
        true
    }
}
