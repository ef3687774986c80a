//! Host-neutral turn orchestration: everything a host needs to run whole turns against
//! Cursor's agent with its own tools and wording (feature `driver`).
//!
//! An [`AgentSession`] is one host session (one conversation). [`AgentSession::turn`] takes the
//! host's transcript and answers with the turn's events, owning what is hard to get right:
//!
//! - **Planning** from the stored resume [`Handle`](crate::Handle): resume the remote
//!   conversation when the completed user turns still match, rebuild it from the transcript
//!   otherwise.
//! - **Tool rounds on one stream.** A leg that ends with `Done { reason: ToolUse }` keeps its Run
//!   open (heartbeats keep flowing while the host runs its tools); the next `turn` call whose
//!   transcript ends with the results of exactly those calls submits them on the same stream.
//!   Any other call starts a new Run and cancels the waiting one.
//! - **Exactly one 401 refresh and replay**, when the server refused the token before anything
//!   streamed ([`TokenSource::refresh`]).
//! - **Exactly one stale rebuild**: a resume the server no longer knows (blob miss, `not_found`)
//!   is rebuilt once, starting with [`Event::Reset`](cursor_proto::ir::Event::Reset), from the
//!   latest transcript, tool results of the leg that went stale included.
//! - **One retry of a model id Cursor does not serve**: a fresh Run answered `not_found` before
//!   anything streamed opens once more with [`ModelChoice::alternate`] (the other id form, bare
//!   or suffixed), and the session sends that form first from then on; a second `not_found`
//!   reaches the host as `PickModel` naming [`ModelChoice::known_models`] (PROTOCOL-AGENT §13.7).
//! - **Durable handles**: the handle is written atomically when the completed turn's
//!   checkpoint is in hand, before the turn's `Done` reaches the host, so a server that keeps
//!   the response open never delays the host nor loses the handle. A handle that cannot be
//!   written, or a corrupt one set aside, reaches the host as an
//!   [`Event::Warning`](cursor_proto::ir::Event::Warning).
//!
//! One turn against the loopback replica (feature `testing`):
//!
//! ```
//! # #[cfg(feature = "testing")]
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//!
//! use cursor_agent::session::{AgentSession, Client, ModelChoice, StaticToken};
//! use cursor_agent::testing::Replica;
//! use cursor_agent::{AgentEvent, HostProfile};
//! use cursor_agent::ir::{Conversation, Event, Message};
//! use futures::StreamExt as _;
//!
//! let replica = Replica::start().await?;
//! let session = AgentSession::builder(
//!     Client::new()?,
//!     replica.origin(),
//!     Arc::new(StaticToken::new("token")),
//! )
//! .profile(HostProfile::new("my-editor"))
//! .workspace_uri("file:///work")
//! .build();
//!
//! let conversation = Conversation::new("").with_message(Message::user_text("ping"));
//! let mut turn = session.turn(&conversation, &ModelChoice::new("composer-2.5"));
//! let mut text = String::new();
//! while let Some(event) = turn.next().await {
//!     if let AgentEvent::Ir(Event::TextDelta { text: delta }) = event {
//!         text.push_str(&delta);
//!     }
//! }
//! assert_eq!(text, "pong");
//! # Ok(())
//! # }
//! # #[cfg(not(feature = "testing"))]
//! # fn main() {}
//! ```

mod debug;
mod record;
mod tokens;
mod turn;

use std::collections::HashMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use cursor_proto::ir::Conversation;

use futures::future::BoxFuture;

use crate::{HandleRepository, HandleStore, HostProfile, IdSeed, Limits, RunConfig, Timers};

/// The transport pieces a session is built from, so a host needs only this crate.
pub use cursor_transport::{CliIdentity, Client, ClientConfig, Origin};
pub use debug::{DebugSink, JsonLinesFile};
pub use tokens::{StaticToken, TokenSource};
pub use turn::TurnEvents;

use turn::Parked;

/// Runs a Run's driver task to completion on the host's runtime: the driver never spawns.
///
/// The default, [`tokio_spawner`], calls `tokio::spawn` (so [`AgentSession::turn`]'s stream
/// must be polled inside a tokio runtime); a Node binding passes napi's spawn.
pub type Spawner = Arc<dyn Fn(BoxFuture<'static, ()>) + Send + Sync>;

/// A [`Spawner`] that hands each task to `tokio::spawn`.
pub fn tokio_spawner() -> Spawner {
    Arc::new(|task| {
        drop(tokio::spawn(task));
    })
}

/// The model a turn asks for.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelChoice {
    /// The published model slug (it already encodes the effort variant).
    pub slug: String,
    /// `requested_model.max_mode`.
    pub max_mode: bool,
    /// The other id form of the same model (bare for a suffixed slug, suffixed for a bare one),
    /// sent once when Cursor answers `slug` with `not_found` before the host saw anything
    /// (PROTOCOL-AGENT §13.7). The host fills it from its catalog.
    pub alternate: Option<String>,
    /// The model ids the host's catalog lists, named in the error when neither form is served.
    pub known_models: Vec<String>,
}

impl ModelChoice {
    /// The model published as `slug`, without max mode.
    pub fn new(slug: impl Into<String>) -> Self {
        Self {
            slug: slug.into(),
            max_mode: false,
            alternate: None,
            known_models: Vec::new(),
        }
    }

    /// Sets [`ModelChoice::alternate`].
    #[must_use]
    pub fn with_alternate(mut self, alternate: Option<String>) -> Self {
        self.alternate = alternate;
        self
    }

    /// Sets [`ModelChoice::known_models`].
    #[must_use]
    pub fn with_known_models(mut self, known_models: Vec<String>) -> Self {
        self.known_models = known_models;
        self
    }

    /// Sets [`ModelChoice::max_mode`].
    #[must_use]
    pub fn with_max_mode(mut self, max_mode: bool) -> Self {
        self.max_mode = max_mode;
        self
    }
}

/// One host session against Cursor's agent: see the [module docs](self). Cheap to clone;
/// clones share the session (and the Run it may keep waiting for tool results).
#[derive(Clone)]
pub struct AgentSession {
    inner: Arc<Inner>,
}

struct Inner {
    client: Client,
    origin: Origin,
    config: SessionConfig,
    session_id: Option<String>,
    handles: Option<Arc<dyn HandleRepository>>,
    spawner: Spawner,
    debug: Option<Arc<dyn DebugSink>>,
    tokens: Mutex<Arc<dyn TokenSource>>,
    /// The Run the last leg left waiting for tool results.
    parked: Mutex<Option<Parked>>,
    /// True while the configuration warnings (no session id, no workspace) are still owed
    /// to the first turn.
    config_warnings_owed: AtomicBool,
    /// Turn streams alive now (a second one is a concurrent turn).
    active_turns: AtomicUsize,
    /// Model id → the other form Cursor served after refusing it, for later turns.
    learned_models: Mutex<HashMap<String, String>>,
}

impl fmt::Debug for AgentSession {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentSession")
            .field("origin", &self.inner.origin)
            .field("profile", &self.inner.config.profile.host_name)
            .field("session_id", &self.inner.session_id)
            .field("handles", &self.inner.handles)
            .field("waiting_for_tools", &self.is_waiting_for_tools())
            .finish_non_exhaustive()
    }
}

impl AgentSession {
    /// A session calling `origin` through `client`, opening Runs with `tokens`.
    pub fn builder(client: Client, origin: Origin, tokens: Arc<dyn TokenSource>) -> SessionBuilder {
        SessionBuilder {
            client,
            origin,
            tokens,
            config: SessionConfig::default(),
            session_id: None,
            handles: None,
            spawner: None,
            debug: None,
        }
    }

    /// Answers `conversation`'s trailing turn with `model`: see the [module docs](self).
    ///
    /// The stream yields the driver's [`AgentEvent`](crate::AgentEvent)s (text, thinking, tool
    /// calls, usage, exec audit records, warnings) and ends after the leg's one `Done`, `Error`
    /// or `Aborted`. Dropping it cancels the Run.
    ///
    /// Turns of one session follow each other: a session is one conversation. A turn started
    /// while another still streams gets a [`WarningCode::ConcurrentTurn`] warning, and a
    /// transcript whose trailing tool results do not answer the waiting Run's calls cancels
    /// that Run with a [`WarningCode::ToolResultsMismatch`] warning. The first turn also warns
    /// about a session that cannot resume ([`WarningCode::NoResume`]: handles without a
    /// [`session_id`](SessionBuilder::session_id)) or has no workspace
    /// ([`WarningCode::NoWorkspace`]).
    ///
    /// [`WarningCode::ConcurrentTurn`]: cursor_proto::ir::WarningCode::ConcurrentTurn
    /// [`WarningCode::ToolResultsMismatch`]: cursor_proto::ir::WarningCode::ToolResultsMismatch
    /// [`WarningCode::NoResume`]: cursor_proto::ir::WarningCode::NoResume
    /// [`WarningCode::NoWorkspace`]: cursor_proto::ir::WarningCode::NoWorkspace
    pub fn turn(&self, conversation: &Conversation, model: &ModelChoice) -> TurnEvents {
        turn::open(&self.inner, conversation, model)
    }

    /// Replaces the credentials later Runs open with (the host's login changed).
    pub fn set_token_source(&self, tokens: Arc<dyn TokenSource>) {
        *lock(&self.inner.tokens) = tokens;
    }

    /// True while a Run of this session waits for the host's tool results.
    pub fn is_waiting_for_tools(&self) -> bool {
        lock(&self.inner.parked).is_some()
    }

    /// Cancels the Run waiting for tool results, if any.
    pub fn cancel_waiting(&self) {
        if let Some(parked) = lock(&self.inner.parked).take() {
            parked.cancel();
        }
    }

    /// The host's session id the handle is stored under, if it has one.
    pub fn session_id(&self) -> Option<&str> {
        self.inner.session_id.as_deref()
    }

    /// The host profile Runs open with.
    pub fn profile(&self) -> &HostProfile {
        &self.inner.config.profile
    }

    /// What every Run of this session opens with.
    pub fn config(&self) -> &SessionConfig {
        &self.inner.config
    }
}

/// What every Run of a session opens with besides the model: who the host is, where its
/// workspace is, the CLI identity, timers and limits. One value a host builds once (from its
/// settings or environment) and hands to each session's builder
/// ([`SessionBuilder::config`]); a host provider keeps one per process.
#[non_exhaustive]
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SessionConfig {
    /// Who the host is ([`HostProfile::default`] unless set).
    pub profile: HostProfile,
    /// Where resume handles are kept on disk (a [`HandleStore`] there), unless the builder's
    /// [`handles`](SessionBuilder::handles) gives a repository; `None` keeps none.
    pub handle_dir: Option<PathBuf>,
    /// Workspace roots (`file://` URLs); the first one is where native paths resolve. Empty
    /// means `file:///`, with a [`WarningCode::NoWorkspace`] warning on the first turn.
    ///
    /// [`WarningCode::NoWorkspace`]: cursor_proto::ir::WarningCode::NoWorkspace
    pub workspace_uris: Vec<String>,
    /// The identity the CLI headers carry.
    pub identity: CliIdentity,
    /// Deadlines and intervals of every Run.
    pub timers: Timers,
    /// Size and count caps of every Run.
    pub limits: Limits,
    /// Re-send `mcp_tools` on every resume, even when the tool set is unchanged.
    pub resend_mcp_on_resume: bool,
    /// When the session has no handle of its own, look its history up in the whole handle
    /// repository ([`HandleRepository::find_branch`]): a forked or copied host session then
    /// resumes from the turn it branched at, with its own copy of the handle (PROTOCOL-AGENT
    /// §10.1). Only for hosts whose sessions all belong to one user (a coding agent's handle
    /// directory; its [`HandleStore`] keeps the index with
    /// [`with_branch_index`](HandleStore::with_branch_index)); a multi-tenant host finds
    /// branches within its own scopes instead.
    pub find_branches: bool,
}

impl SessionConfig {
    /// The defaults: generic profile, no workspace, default identity, timers and limits.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets [`SessionConfig::profile`].
    #[must_use]
    pub fn with_profile(mut self, profile: HostProfile) -> Self {
        self.profile = profile;
        self
    }

    /// Sets [`SessionConfig::handle_dir`].
    #[must_use]
    pub fn with_handle_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.handle_dir = Some(dir.into());
        self
    }

    /// Adds a workspace root to [`SessionConfig::workspace_uris`].
    #[must_use]
    pub fn with_workspace_uri(mut self, uri: impl Into<String>) -> Self {
        self.workspace_uris.push(uri.into());
        self
    }

    /// Sets [`SessionConfig::identity`].
    #[must_use]
    pub fn with_identity(mut self, identity: CliIdentity) -> Self {
        self.identity = identity;
        self
    }

    /// Sets [`SessionConfig::timers`].
    #[must_use]
    pub fn with_timers(mut self, timers: Timers) -> Self {
        self.timers = timers;
        self
    }

    /// Sets [`SessionConfig::limits`].
    #[must_use]
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Sets [`SessionConfig::resend_mcp_on_resume`].
    #[must_use]
    pub fn with_resend_mcp_on_resume(mut self, resend: bool) -> Self {
        self.resend_mcp_on_resume = resend;
        self
    }

    /// Sets [`SessionConfig::find_branches`].
    #[must_use]
    pub fn with_find_branches(mut self, find: bool) -> Self {
        self.find_branches = find;
        self
    }

    /// The configuration one Run of the session opens with: this one's profile, workspace,
    /// timers and limits, with `model` and ids minted from `id_seed` (the planner sets the
    /// conversation id and the resume flag).
    pub(crate) fn run_config(&self, model: &ModelChoice, id_seed: IdSeed) -> RunConfig {
        RunConfig {
            model: model.slug.clone(),
            max_mode: model.max_mode,
            workspace_uris: self.workspace_uris.clone(),
            profile: self.profile.clone(),
            conversation_id: None,
            resume: false,
            timers: self.timers,
            limits: self.limits,
            id_seed,
        }
    }
}

/// Builds an [`AgentSession`]; see [`AgentSession::builder`].
#[must_use = "call build() to get the session"]
pub struct SessionBuilder {
    client: Client,
    origin: Origin,
    tokens: Arc<dyn TokenSource>,
    config: SessionConfig,
    session_id: Option<String>,
    handles: Option<Arc<dyn HandleRepository>>,
    spawner: Option<Spawner>,
    debug: Option<Arc<dyn DebugSink>>,
}

impl fmt::Debug for SessionBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SessionBuilder")
            .field("origin", &self.origin)
            .field("profile", &self.config.profile)
            .field("session_id", &self.session_id)
            .finish_non_exhaustive()
    }
}

/// The setters below are shorthands for [`SessionConfig`]'s `with_*` methods on the one
/// configuration the builder holds ([`config`](Self::config) replaces it whole).
impl SessionBuilder {
    /// Everything Runs open with at once (replaces what the setters below set so far).
    pub fn config(mut self, config: SessionConfig) -> Self {
        self.config = config;
        self
    }

    /// Sets [`SessionConfig::profile`].
    pub fn profile(mut self, profile: HostProfile) -> Self {
        self.config = self.config.with_profile(profile);
        self
    }

    /// Sets [`SessionConfig::handle_dir`]: handles are kept in a [`HandleStore`] there.
    pub fn handle_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.config = self.config.with_handle_dir(dir);
        self
    }

    /// Adds a workspace root ([`SessionConfig::workspace_uris`]).
    pub fn workspace_uri(mut self, uri: impl Into<String>) -> Self {
        self.config = self.config.with_workspace_uri(uri);
        self
    }

    /// Sets [`SessionConfig::identity`].
    pub fn identity(mut self, identity: CliIdentity) -> Self {
        self.config = self.config.with_identity(identity);
        self
    }

    /// Sets [`SessionConfig::timers`].
    pub fn timers(mut self, timers: Timers) -> Self {
        self.config = self.config.with_timers(timers);
        self
    }

    /// Sets [`SessionConfig::limits`].
    pub fn limits(mut self, limits: Limits) -> Self {
        self.config = self.config.with_limits(limits);
        self
    }

    /// Sets [`SessionConfig::resend_mcp_on_resume`].
    pub fn resend_mcp_on_resume(mut self, resend: bool) -> Self {
        self.config = self.config.with_resend_mcp_on_resume(resend);
        self
    }

    /// The host's session id: the key the resume handle is stored under. Without one the
    /// session never loads or stores a handle.
    pub fn session_id(mut self, id: impl Into<String>) -> Self {
        self.session_id = Some(id.into());
        self
    }

    /// Where handles are kept (overrides [`handle_dir`](Self::handle_dir)).
    pub fn handles(mut self, handles: Arc<dyn HandleRepository>) -> Self {
        self.handles = Some(handles);
        self
    }

    /// Writes debug records of every turn to `sink` (see [`DebugSink`]: labels, counts,
    /// timings and classifications only, never tokens or content).
    pub fn debug(mut self, sink: Arc<dyn DebugSink>) -> Self {
        self.debug = Some(sink);
        self
    }

    /// How driver tasks run (default: [`tokio_spawner`]).
    pub fn spawner(mut self, spawner: Spawner) -> Self {
        self.spawner = Some(spawner);
        self
    }

    /// The session.
    pub fn build(self) -> AgentSession {
        let mut config = self.config;
        let handles = self.handles.or_else(|| {
            config
                .handle_dir
                .clone()
                .map(|dir| Arc::new(HandleStore::new(dir)) as Arc<dyn HandleRepository>)
        });
        let no_workspace = config.workspace_uris.is_empty();
        let no_resume = handles.is_some() && self.session_id.is_none();
        if no_workspace {
            config.workspace_uris = vec!["file:///".to_owned()];
        }
        AgentSession {
            inner: Arc::new(Inner {
                client: self.client,
                origin: self.origin,
                config,
                session_id: self.session_id,
                handles,
                spawner: self.spawner.unwrap_or_else(tokio_spawner),
                debug: self.debug,
                tokens: Mutex::new(self.tokens),
                parked: Mutex::new(None),
                config_warnings_owed: AtomicBool::new(no_workspace || no_resume),
                active_turns: AtomicUsize::new(0),
                learned_models: Mutex::new(HashMap::new()),
            }),
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
