//! The cache: the catalog in effect, its TTL, refreshes and the offline fallback.
//!
//! Time is always passed in (`now_ms`, milliseconds since the Unix epoch); nothing here reads a
//! clock. Persistence belongs to the host: it stores [`CatalogStore::snapshot`] after a refresh
//! that [`RefreshReport::should_persist`], and hands the JSON back to [`CatalogStore::restore`].

use cursor_proto::ir::Classify as _;
use cursor_proto::{aiserver::v1::GetServerConfigRequest, ir::ErrorInfo};

use crate::{
    agent_host::{AgentOrigin, agent_origin_from_server_config, resolve_agent_origin},
    catalog::Catalog,
    discovery::discover,
    error::CatalogError,
    rpc::{CatalogRpc, Rpc},
    snapshot::Snapshot,
    static_table::static_catalog,
    warning::{CatalogSource, CatalogWarning},
};

/// How long a fetched catalog counts as fresh: ten minutes.
pub const DEFAULT_TTL_MS: u64 = 600_000;

/// Knobs of one [`CatalogStore::refresh`].
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RefreshOptions {
    /// Refresh even while the catalog is fresh.
    pub force: bool,
    /// Whether the account is in privacy mode, which picks `agent_url` over `agentn_url`.
    /// Defaults to true, like the transport's `CliIdentity::ghost_mode`.
    pub privacy_mode: bool,
    /// An opaque, non-secret key of the signed-in account (for example a hash of the user id).
    /// A catalog fetched for another account is never fresh. Stored in the snapshot.
    pub account: Option<String>,
}

impl Default for RefreshOptions {
    fn default() -> Self {
        Self {
            force: false,
            privacy_mode: true,
            account: None,
        }
    }
}

impl RefreshOptions {
    /// The defaults: no force, privacy mode on.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets [`RefreshOptions::force`].
    #[must_use]
    pub fn force(mut self, force: bool) -> Self {
        self.force = force;
        self
    }

    /// Sets [`RefreshOptions::account`].
    #[must_use]
    pub fn account(mut self, account: impl Into<String>) -> Self {
        self.account = Some(account.into());
        self
    }

    /// Sets [`RefreshOptions::privacy_mode`].
    #[must_use]
    pub fn privacy_mode(mut self, privacy_mode: bool) -> Self {
        self.privacy_mode = privacy_mode;
        self
    }
}

/// What a refresh did.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RefreshOutcome {
    /// The catalog was fresh; nothing was sent.
    Fresh,
    /// Discovery succeeded; the catalog and snapshot are new.
    Refreshed,
    /// Discovery failed; the previous catalog is still served.
    FellBack {
        /// The classified failure.
        error: ErrorInfo,
    },
}

/// The result of [`CatalogStore::refresh`]: never an error, always something to serve.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RefreshReport {
    /// What happened.
    pub outcome: RefreshOutcome,
    /// What the host should show or log.
    pub warnings: Vec<CatalogWarning>,
}

impl RefreshReport {
    /// Whether the host should persist [`CatalogStore::snapshot`] now.
    pub fn should_persist(&self) -> bool {
        self.outcome == RefreshOutcome::Refreshed
    }
}

/// The catalog in effect and where it came from.
#[derive(Clone, Debug)]
pub struct CatalogStore {
    snapshot: Snapshot,
    source: CatalogSource,
    ttl_ms: u64,
    /// A healed snapshot must be re-tightened online, so it never counts as fresh.
    healed: bool,
}

impl Default for CatalogStore {
    fn default() -> Self {
        Self::from_static()
    }
}

impl CatalogStore {
    /// Serves the static table (first run).
    pub fn from_static() -> Self {
        Self {
            snapshot: Snapshot::new(static_catalog(), 0, None),
            source: CatalogSource::Static,
            ttl_ms: DEFAULT_TTL_MS,
            healed: false,
        }
    }

    /// Restores from the JSON the host persisted, or the static table when there is none or it
    /// is unreadable (then with [`CatalogWarning::SnapshotDiscarded`]).
    pub fn restore(persisted: Option<&str>) -> (Self, Vec<CatalogWarning>) {
        match persisted.map(Snapshot::from_json) {
            None => (Self::from_static(), Vec::new()),
            Some(Ok(snapshot)) => Self::restore_snapshot(snapshot),
            Some(Err(error)) => (
                Self::from_static(),
                vec![CatalogWarning::SnapshotDiscarded {
                    error: error.to_info(),
                }],
            ),
        }
    }

    /// [`CatalogStore::restore`] for hosts that persist JSON values rather than text.
    pub fn restore_value(persisted: Option<serde_json::Value>) -> (Self, Vec<CatalogWarning>) {
        match persisted.map(Snapshot::from_value) {
            None => (Self::from_static(), Vec::new()),
            Some(Ok(snapshot)) => Self::restore_snapshot(snapshot),
            Some(Err(error)) => (
                Self::from_static(),
                vec![CatalogWarning::SnapshotDiscarded {
                    error: error.to_info(),
                }],
            ),
        }
    }

    /// Serves `snapshot`, healing a pre-vision one ([`Snapshot::heal_pre_vision`]).
    pub fn restore_snapshot(mut snapshot: Snapshot) -> (Self, Vec<CatalogWarning>) {
        let healed = snapshot.heal_pre_vision();
        let warnings = if healed {
            vec![CatalogWarning::HealedPreVisionSnapshot]
        } else {
            Vec::new()
        };
        let store = Self {
            snapshot,
            source: CatalogSource::Snapshot,
            ttl_ms: DEFAULT_TTL_MS,
            healed,
        };
        (store, warnings)
    }

    /// Uses `ttl_ms` instead of [`DEFAULT_TTL_MS`].
    #[must_use]
    pub fn with_ttl_ms(mut self, ttl_ms: u64) -> Self {
        self.ttl_ms = ttl_ms;
        self
    }

    /// The catalog in effect.
    pub fn catalog(&self) -> &Catalog {
        &self.snapshot.catalog
    }

    /// The snapshot to persist.
    pub fn snapshot(&self) -> &Snapshot {
        &self.snapshot
    }

    /// Where the catalog in effect came from.
    pub fn source(&self) -> CatalogSource {
        self.source
    }

    /// Whether the catalog was fetched less than the TTL before `now_ms`. The static table and
    /// a healed snapshot are never fresh; a fetch time in the future is not trusted.
    pub fn is_fresh(&self, now_ms: u64) -> bool {
        let fetched = self.snapshot.fetched_at_ms;
        self.source != CatalogSource::Static
            && !self.healed
            && fetched <= now_ms
            && now_ms - fetched < self.ttl_ms
    }

    /// The agent origin to use: `override_origin` (the host's setting, if it
    /// has one), else the discovered one, else [`cursor_transport::Origin::default_agent`].
    /// A discovered or overriding origin off the allowlist is an error.
    pub fn agent_origin(&self, override_origin: Option<&str>) -> Result<AgentOrigin, CatalogError> {
        resolve_agent_origin(override_origin, self.snapshot.agent_origin.as_deref())
    }

    /// Brings the catalog up to date unless it is fresh: the three catalog calls and
    /// `GetServerConfig` go out concurrently. On failure the catalog in effect stays and the
    /// report says why; the agent origin is updated whenever `GetServerConfig` answered.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: the store changes only after every call answered, so a dropped refresh
    /// leaves the catalog in effect as it was.
    pub async fn refresh<R: CatalogRpc + ?Sized>(
        &mut self,
        rpc: &R,
        now_ms: u64,
        options: RefreshOptions,
    ) -> RefreshReport {
        let same_account = options.account.is_none() || options.account == self.snapshot.account;
        if !options.force && same_account && self.is_fresh(now_ms) {
            return RefreshReport {
                outcome: RefreshOutcome::Fresh,
                warnings: Vec::new(),
            };
        }
        let (models, config) = futures::join!(
            discover(rpc),
            rpc.server_config(GetServerConfigRequest::default())
        );

        let mut warnings = Vec::new();
        let mut agent_origin = self.snapshot.agent_origin.clone();
        match config {
            Ok(config) => match agent_origin_from_server_config(&config, options.privacy_mode) {
                Ok(Some(origin)) => agent_origin = Some(origin.to_string()),
                Ok(None) => {}
                Err(error) => {
                    warnings.push(CatalogWarning::AgentHostDiscoveryFailed {
                        error: error.to_info(),
                    });
                    // Keep what Cursor named so using it fails loudly instead of quietly
                    // falling back to an older or default host.
                    if let CatalogError::AgentOriginRefused { origin, .. } = error {
                        agent_origin = Some(origin);
                    }
                }
            },
            Err(error) => {
                let error = CatalogError::rpc(Rpc::GetServerConfig, error);
                warnings.push(CatalogWarning::AgentHostDiscoveryFailed {
                    error: error.to_info(),
                });
            }
        }

        match models {
            Ok(mapped) => {
                warnings.splice(0..0, mapped.warnings);
                self.snapshot = Snapshot::new(mapped.catalog, now_ms, agent_origin);
                self.snapshot.account = options.account;
                self.source = CatalogSource::Online;
                self.healed = false;
                RefreshReport {
                    outcome: RefreshOutcome::Refreshed,
                    warnings,
                }
            }
            Err(error) => {
                self.snapshot.agent_origin = agent_origin;
                let error = error.to_info();
                warnings.insert(
                    0,
                    CatalogWarning::DiscoveryFailed {
                        error: error.clone(),
                        serving: self.source,
                    },
                );
                RefreshReport {
                    outcome: RefreshOutcome::FellBack { error },
                    warnings,
                }
            }
        }
    }
}
