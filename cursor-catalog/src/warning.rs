//! Warnings returned beside a result: the host decides whether and how to show them.

use cursor_proto::ir::ErrorInfo;

/// Where the catalog in effect came from.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CatalogSource {
    /// The static table shipped in this crate (first run, nothing persisted).
    Static,
    /// A snapshot the host persisted earlier.
    Snapshot,
    /// A discovery round trip in this process.
    Online,
}

impl CatalogSource {
    /// `static`, `snapshot` or `online`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Static => "static",
            Self::Snapshot => "snapshot",
            Self::Online => "online",
        }
    }
}

impl std::fmt::Display for CatalogSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Something the host should know about but that did not stop the catalog from being served.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CatalogWarning {
    /// Discovery failed; the catalog from `serving` is still in effect.
    DiscoveryFailed {
        /// The classified failure.
        error: ErrorInfo,
        /// What is served instead.
        serving: CatalogSource,
    },
    /// Agent host discovery failed; the previously known agent origin (if any) stays.
    AgentHostDiscoveryFailed {
        /// The classified failure.
        error: ErrorInfo,
    },
    /// The account's default model is not among its usable models.
    DefaultModelNotUsable {
        /// The default model's slug.
        model_id: String,
    },
    /// Usable slugs without catalog metadata were left out.
    UnmatchedUsableIds {
        /// The slugs left out.
        ids: Vec<String>,
    },
    /// A persisted snapshot listed every model as text-only (written before image support was
    /// mapped); images are allowed until the next online refresh says otherwise.
    HealedPreVisionSnapshot,
    /// A persisted snapshot could not be used; the static table is served.
    SnapshotDiscarded {
        /// Why.
        error: ErrorInfo,
    },
}

impl std::fmt::Display for CatalogWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::DiscoveryFailed { error, serving } => {
                write!(f, "Cursor model discovery failed, serving the {serving} catalog: {error}")
            }
            Self::AgentHostDiscoveryFailed { error } => {
                write!(f, "Cursor agent host discovery failed: {error}")
            }
            Self::DefaultModelNotUsable { model_id } => {
                write!(f, "Cursor's default model {model_id:?} is not usable by this account")
            }
            Self::UnmatchedUsableIds { ids } => write!(
                f,
                "{} usable Cursor model ids had no catalog metadata and are not listed: {}",
                ids.len(),
                ids.join(", ")
            ),
            Self::HealedPreVisionSnapshot => f.write_str(
                "the saved Cursor model list predates image support; images are allowed until the next refresh",
            ),
            Self::SnapshotDiscarded { error } => {
                write!(f, "the saved Cursor model list was ignored: {error}")
            }
        }
    }
}
