//! # cursor-catalog (layer L5)
//!
//! Which Cursor models an account may use, which published slug to send for each thinking
//! level, a cache that survives being offline, and which agent host serves the account.
//!
//! - **Discovery** ([`discover`]): `AvailableModels` (with `use_model_parameters` and
//!   `do_not_use_markdown`), `GetUsableModels` and `GetDefaultModelForCli`, issued concurrently as
//!   unary `application/proto` calls with the CLI identity ([`TransportCatalogRpc`]).
//! - **Mapping** ([`map_roster`]): usable slugs are grouped into families by their effort word and
//!   joined with catalog metadata into host-neutral [`ModelRow`]s: display id, name, reasoning,
//!   input kinds, context window, output budget, max mode, and a thinking level → published slug
//!   map plus the backend's default variant.
//! - **Slugs** ([`Catalog::slug_for`]): the slug is what goes on the wire; effort and context are
//!   never sent as parameters (PROTOCOL-AGENT §2.1). [`Catalog::resolve`] adds the other id
//!   form (bare or suffixed) for one retry where the live server disagrees with the catalog
//!   (PROTOCOL-AGENT §13.7).
//! - **Cache** ([`CatalogStore`]): a TTL of ten minutes against an injected `now`, a versioned
//!   JSON [`Snapshot`] the host persists, fallback to that snapshot or to a static table when
//!   discovery fails (with a [`CatalogWarning`], never printed), and healing of pre-vision
//!   snapshots.
//! - **Agent host** ([`CatalogStore::agent_origin`]): `GetServerConfig.agent_url_config`, checked
//!   against the transport's origin allowlist, cached in the snapshot, overridable by the
//!   host's own setting.
//! - **Usage** ([`fetch_usage`]): the plan and the current billing period's spend from
//!   `DashboardService`, as an [`AccountUsage`], with the same identity and classification.
//!
//! Every failure is a [`CatalogError`] with an [`ErrorKind`](cursor_proto::ir::ErrorKind) and a
//! next step.
//!
//! ## Example
//!
//! Listing models from the fixture backend (feature `testing`) on loopback:
//!
//! ```
//! # #[cfg(feature = "testing")]
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use cursor_catalog::{CatalogStore, RefreshOptions, ThinkingLevel, testing::FixtureBackend};
//!
//! let backend = FixtureBackend::start_realistic().await?;
//! let rpc = backend.rpc()?;
//!
//! let (mut store, _warnings) = CatalogStore::restore(None); // first run: static table
//! let report = store.refresh(&rpc, 1_800_000_000_000, RefreshOptions::new()).await;
//! assert!(report.should_persist());
//!
//! let catalog = store.catalog();
//! for row in &catalog.rows {
//!     println!("{:<20} {:<24} images={}", row.id, row.name, row.supports_images());
//! }
//! assert_eq!(catalog.slug_for("grok-4.7", Some(ThinkingLevel::High))?, "grok-4.7-high");
//! assert_eq!(catalog.slug_for("grok-4.7", None)?, "grok-4.7-medium");
//! let persisted = store.snapshot().to_json()?; // the host stores this
//! # assert!(persisted.contains("grok-4.7-high"));
//! # Ok(())
//! # }
//! # #[cfg(not(feature = "testing"))]
//! # fn main() {}
//! ```
#![cfg_attr(docsrs, feature(doc_cfg))]

mod agent_host;
mod catalog;
mod discovery;
mod error;
mod family;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
mod level;
mod mapping;
mod origin_source;
mod row;
mod rpc;
mod snapshot;
mod static_table;
mod store;
mod usage;
mod warning;
mod window;

#[cfg(feature = "testing")]
#[cfg_attr(docsrs, doc(cfg(feature = "testing")))]
pub mod testing;

pub use agent_host::{AgentOrigin, agent_origin_from_server_config, resolve_agent_origin};
pub use catalog::{Catalog, WireModel};
pub use discovery::discover;
pub use error::CatalogError;
pub use level::ThinkingLevel;
pub use mapping::{Mapped, map_roster};
pub use origin_source::AgentOriginSource;
pub use row::{
    DEFAULT_CONTEXT_WINDOW, DEFAULT_MAX_TOKENS, InputKind, MaxMode, ModelCost, ModelRow,
};
pub use rpc::{CatalogRpc, Rpc, TransportCatalogRpc, UsageRpc, available_models_request};
pub use snapshot::{SNAPSHOT_VERSION, Snapshot};
pub use static_table::static_catalog;
pub use store::{CatalogStore, DEFAULT_TTL_MS, RefreshOptions, RefreshOutcome, RefreshReport};
pub use usage::{AccountUsage, UsageRpcs, fetch_usage};
pub use warning::{CatalogSource, CatalogWarning};
pub use window::MAX_MODE_CONTEXT_WINDOW;
