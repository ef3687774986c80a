//! The turn engine: everything a turn does, whatever API asked for it. It finds or starts the
//! conversation, admits the turn (body budget, turn slots), runs it on the conversation's
//! `AgentSession`, clips the reply (stop sequences, output limits), checks a reply format with
//! one corrective turn, streams with keep-alives through a dialect's [`Render`](stream::Render), records where
//! the conversation's history now ends, parks and expires tool rounds, and sweeps expired
//! state.
//!
//! The engine knows no API: a dialect ([`crate::dialects`]) translates its request into a
//! [`TurnRequest`] and renders the engine's output in its own shapes.

pub(crate) mod admission;
pub(crate) mod answer;
pub(crate) mod blocking;
pub(crate) mod clip;
pub(crate) mod conversations;
pub(crate) mod estimate;
pub(crate) mod format;
pub(crate) mod handles;
pub(crate) mod models;
pub(crate) mod stream;
mod sweep;
mod turn;
pub(crate) mod turn_request;
mod writer;

use std::path::PathBuf;
use std::sync::Arc;

use cursor_agent::session::{Client, Origin, TokenSource};
use cursor_catalog::Catalog;

pub(crate) use self::admission::{Admission, BodyPermit};
use self::conversations::{Caps, Conversations};
use self::handles::Handles;
use self::models::Models;
pub use self::sweep::SweepReport;
pub(crate) use self::turn::TurnGuard;
pub(crate) use self::turn_request::{Finish, Leg, Meta, TurnRequest, Whole};
use crate::metrics::{Gauges, Metrics};
use crate::state::index::IndexStore;
use crate::state::responses::ResponseStore;
use crate::state::secret::StateSecret;
use crate::{ClientKeys, Limits};

/// What a gateway is built from.
#[non_exhaustive]
pub struct GatewayConfig {
    /// The HTTP/2 client every Run uses.
    pub client: Client,
    /// Where Runs go.
    pub agent_origin: Origin,
    /// Cursor credentials.
    pub tokens: Arc<dyn TokenSource>,
    /// Handles live in `state/handles`, the conversation index in `state/conversations`,
    /// stored responses in `state/responses`.
    pub state: PathBuf,
    /// The keys clients must send; each is its own namespace.
    pub keys: ClientKeys,
    /// The keys that open the admin routes (`/metrics`) on the API listener; none: they are
    /// served only on an admin listener.
    pub admin_keys: ClientKeys,
    /// Models the gateway lists and resolves.
    pub catalog: Catalog,
    /// The workspace native paths resolve in (`file://` URL).
    pub workspace_uri: String,
    /// Bounds and timeouts.
    pub limits: Limits,
    /// Extra model names (`NAME` → a catalog id), for the names a client sends on its own,
    /// such as Claude Code's main and small-fast model slots.
    pub model_aliases: Vec<(String, String)>,
}

impl GatewayConfig {
    /// A configuration with no client keys and the default [`Limits`].
    pub fn new(
        client: Client,
        agent_origin: Origin,
        tokens: Arc<dyn TokenSource>,
        state: PathBuf,
        catalog: Catalog,
        workspace_uri: impl Into<String>,
    ) -> Self {
        Self {
            client,
            agent_origin,
            tokens,
            state,
            keys: ClientKeys::default(),
            admin_keys: ClientKeys::default(),
            catalog,
            workspace_uri: workspace_uri.into(),
            limits: Limits::DEFAULT,
            model_aliases: Vec::new(),
        }
    }

    /// Adds model aliases (`NAME` → catalog id).
    #[must_use]
    pub fn with_model_aliases(mut self, aliases: Vec<(String, String)>) -> Self {
        self.model_aliases = aliases;
        self
    }

    /// Sets the client keys.
    #[must_use]
    pub fn with_keys(mut self, keys: ClientKeys) -> Self {
        self.keys = keys;
        self
    }

    /// Sets the admin keys.
    #[must_use]
    pub fn with_admin_keys(mut self, keys: ClientKeys) -> Self {
        self.admin_keys = keys;
        self
    }

    /// Sets the limits.
    #[must_use]
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }
}

impl std::fmt::Debug for GatewayConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GatewayConfig")
            .field("agent_origin", &self.agent_origin)
            .field("state", &self.state)
            .field("keys", &self.keys)
            .field("admin_keys", &self.admin_keys)
            .field("models", &self.catalog.rows.len())
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

/// The engine's shared state; cheap to clone.
#[derive(Clone)]
pub(crate) struct Engine {
    inner: Arc<Shared>,
}

struct Shared {
    client: Client,
    agent_origin: Origin,
    tokens: Arc<dyn TokenSource>,
    state: PathBuf,
    workspace_uri: String,
    keys: ClientKeys,
    admin_keys: ClientKeys,
    limits: Limits,
    models: Models,
    secret: StateSecret,
    handles: Arc<Handles>,
    conversations: Conversations,
    responses: ResponseStore,
    admission: Arc<Admission>,
    metrics: Arc<Metrics>,
    writer: writer::IndexWriter,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("state", &self.inner.state)
            .field("limits", &self.inner.limits)
            .finish_non_exhaustive()
    }
}

impl Engine {
    /// An engine over `config`. Reads nothing but the gateway's secret: conversations are
    /// looked up on disk when a request needs them.
    pub(crate) fn new(config: GatewayConfig) -> Self {
        let GatewayConfig {
            client,
            agent_origin,
            tokens,
            state,
            keys,
            admin_keys,
            catalog,
            workspace_uri,
            limits,
            model_aliases,
        } = config;
        if let Err(error) = crate::state::files::private_dir(&state) {
            tracing::warn!(%error, state = %state.display(), "the state directory could not be created");
        }
        let metrics = Arc::new(Metrics::default());
        let secret = StateSecret::load_or_create(&state);
        let index = IndexStore::new(state.join("conversations"));
        let writer = writer::IndexWriter::start(index.clone());
        let conversations = Conversations::new(
            index,
            Caps {
                max_in_memory: limits.max_conversations,
                max_parked: limits.max_parked_rounds,
                max_parked_per_key: limits.max_parked_per_key,
            },
            Arc::clone(&metrics),
        );
        Self {
            inner: Arc::new(Shared {
                handles: Arc::new(Handles::new(state.join("handles"))),
                responses: ResponseStore::new(state.join("responses"), secret.clone()),
                admission: Admission::new(&limits, Arc::clone(&metrics)),
                models: Models::new(catalog, model_aliases),
                client,
                agent_origin,
                tokens,
                workspace_uri,
                keys,
                admin_keys,
                limits,
                secret,
                conversations,
                metrics,
                writer,
                state,
            }),
        }
    }

    pub(crate) fn limits(&self) -> &Limits {
        &self.inner.limits
    }

    pub(crate) fn keys(&self) -> &ClientKeys {
        &self.inner.keys
    }

    pub(crate) fn admin_keys(&self) -> &ClientKeys {
        &self.inner.admin_keys
    }

    pub(crate) fn metrics(&self) -> &Metrics {
        &self.inner.metrics
    }

    pub(crate) fn models(&self) -> &Models {
        &self.inner.models
    }

    pub(crate) fn secret(&self) -> &StateSecret {
        &self.inner.secret
    }

    pub(crate) fn admission(&self) -> &Arc<Admission> {
        &self.inner.admission
    }

    pub(crate) fn responses(&self) -> &ResponseStore {
        &self.inner.responses
    }

    pub(crate) fn conversations(&self) -> &Conversations {
        &self.inner.conversations
    }

    pub(crate) fn handles(&self) -> &Arc<Handles> {
        &self.inner.handles
    }

    /// The counters' text, with the gauges only the engine knows and `connections`.
    pub(crate) fn metrics_text(&self, connections: usize) -> String {
        let (conversations, parked) = self.inner.conversations.counts();
        self.inner.metrics.render(Gauges {
            conversations,
            parked,
            connections,
            body_bytes: self.inner.admission.body_bytes(),
        })
    }

    /// Converts what earlier versions left under `--state` (the conversation index's old files)
    /// and makes directories an earlier version created open private. Blocks: run it once
    /// before serving, off the async workers.
    pub(crate) fn prepare_state(&self) {
        let state = &self.inner.state;
        for dir in [
            state.clone(),
            state.join("handles"),
            state.join("conversations"),
            state.join("responses"),
        ] {
            match crate::state::files::tighten_dir(&dir) {
                Ok(true) => {
                    tracing::info!(dir = %dir.display(), "made an existing state directory private (0700)")
                }
                Ok(false) => {}
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
                Err(error) => {
                    tracing::warn!(dir = %dir.display(), %error, "could not check a state directory's mode")
                }
            }
        }
        let migrated = self.inner.conversations.index().migrate_legacy();
        if migrated > 0 {
            tracing::info!(
                migrated,
                "conversation index converted to this version's records"
            );
        }
    }
}
