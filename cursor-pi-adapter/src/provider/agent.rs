//! The agent channel: pi turns as [`AgentSession`] turns (`agent.v1.AgentService/Run`).
//!
//! Orchestration lives in cursor-agent's host-neutral session (planning from the resume
//! handle, tool rounds on one stream, one 401 refresh and replay, one stale rebuild, durable
//! handles). This module only maps pi onto it: one session per pi `sessionId`, pi's profile,
//! the slug the catalog publishes for pi's model and thinking level, and pi's credentials
//! (the access token pi resolved, plus the stored refresh token) as the session's
//! [`TokenSource`](cursor_agent::session::TokenSource).

use std::collections::HashMap;
use std::fmt;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use cursor_agent::session::{AgentSession, DebugSink, JsonLinesFile, ModelChoice, SessionConfig};
use cursor_agent::{AgentEvent, HandleStore, Timers};
use cursor_catalog::{Catalog, CatalogStore, ThinkingLevel};
use cursor_proto::ir::{ErrorInfo, Event, Warning};
use cursor_transport::{CliIdentity, Client, Origin};
use futures::stream::{self, BoxStream, StreamExt};

use super::auth::PiTokens;
use super::{
    Channel, ChannelKind, CursorOAuth, PiEnv, Turn, api_origin_from_env, auth_config, pi_profile,
};

pub use cursor_agent::session::Spawner;

/// How many warnings [`Sessions::recent_warnings`] keeps.
const KEPT_WARNINGS: usize = 16;

/// The pi sessions of this process, each an [`AgentSession`] (which may keep a Run waiting
/// for tool results), and the warnings their turns raised.
#[derive(Clone, Default)]
pub struct Sessions {
    sessions: Arc<Mutex<HashMap<String, AgentSession>>>,
    warnings: Arc<Mutex<Vec<Warning>>>,
}

impl fmt::Debug for Sessions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sessions")
            .field("waiting", &self.waiting())
            .finish_non_exhaustive()
    }
}

impl Sessions {
    /// No session yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// How many sessions have a Run waiting for tool results.
    pub fn waiting(&self) -> usize {
        lock(&self.sessions)
            .values()
            .filter(|session| session.is_waiting_for_tools())
            .count()
    }

    /// The latest warnings (an unwritable handle, a corrupt one set aside), oldest first: pi
    /// has no warning event, so `/cursor-doctor` shows them.
    pub fn recent_warnings(&self) -> Vec<Warning> {
        lock(&self.warnings).clone()
    }

    fn get_or_create(&self, id: &str, create: impl FnOnce() -> AgentSession) -> AgentSession {
        lock(&self.sessions)
            .entry(id.to_owned())
            .or_insert_with(create)
            .clone()
    }

    fn remember(&self, warning: Warning) {
        let mut warnings = lock(&self.warnings);
        if warnings.len() == KEPT_WARNINGS {
            warnings.remove(0);
        }
        warnings.push(warning);
    }
}

/// The agent channel over cursor-agent's session.
#[derive(Clone)]
pub struct AgentChannel {
    client: Client,
    origin: Origin,
    catalog: Catalog,
    /// What every session's Runs open with (pi's profile, the workspace, identity, timers).
    config: SessionConfig,
    sessions: Sessions,
    spawn: Spawner,
    handles: Option<HandleStore>,
    oauth: Option<CursorOAuth>,
    debug: Option<Arc<dyn DebugSink>>,
}

impl fmt::Debug for AgentChannel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentChannel")
            .field("origin", &self.origin)
            .field("workspace_uris", &self.config.workspace_uris)
            .field("sessions", &self.sessions)
            .field("handles", &self.handles.as_ref().map(HandleStore::dir))
            .field("oauth", &self.oauth)
            .finish_non_exhaustive()
    }
}

impl AgentChannel {
    /// A channel calling `origin` through `client`, choosing slugs from `catalog`, for the
    /// workspace at `workspace_uri`, keeping pi's sessions in `sessions` and running driver
    /// tasks with `spawn`.
    pub fn new(
        client: Client,
        origin: Origin,
        catalog: Catalog,
        workspace_uri: impl Into<String>,
        sessions: Sessions,
        spawn: Spawner,
    ) -> Self {
        Self {
            client,
            origin,
            catalog,
            config: SessionConfig::new()
                .with_profile(pi_profile())
                .with_workspace_uri(workspace_uri)
                // A forked or copied pi session resumes from the turn it branched at
                // (PROTOCOL-AGENT §10.1): every handle here is this user's.
                .with_find_branches(true),
            sessions,
            spawn,
            handles: None,
            oauth: None,
            debug: None,
        }
    }

    /// Writes every turn's debug records to `sink` (`CURSOR_PROVIDER_DEBUG=1`).
    #[must_use]
    pub fn with_debug(mut self, sink: Arc<dyn DebugSink>) -> Self {
        self.debug = Some(sink);
        self
    }

    /// Answers a Run refused with 401 by refreshing the access token once through `oauth` and
    /// replaying the Run once (for turns whose options carry a refresh token).
    #[must_use]
    pub fn with_token_refresh(mut self, oauth: CursorOAuth) -> Self {
        self.oauth = Some(oauth);
        self
    }

    /// Keeps each session's resume handle in `store` (with its branch index on), so a later
    /// process resumes the remote conversation instead of replaying the transcript, and a
    /// forked pi session resumes from the turn it forked at.
    #[must_use]
    pub fn with_handle_store(mut self, store: HandleStore) -> Self {
        // The branch index lets a forked or copied pi session find its parent's turn.
        self.handles = Some(store.with_branch_index(true));
        self
    }

    /// The Run timers of every session (`CURSOR_PROVIDER_IDLE_MS`,
    /// `CURSOR_PROVIDER_FIRST_TOKEN_MS`: [`PiEnv::timers`]).
    #[must_use]
    pub fn with_timers(mut self, timers: Timers) -> Self {
        self.config.timers = timers;
        self
    }

    /// The CLI identity every Run presents (`CURSOR_CLI_VERSION`: [`PiEnv::identity`]).
    #[must_use]
    pub fn with_identity(mut self, identity: CliIdentity) -> Self {
        self.config.identity = identity;
        self
    }

    /// Re-sends `mcp_tools` on every resume (`CURSOR_PROVIDER_RESEND_MCP_ON_RESUME=1`).
    #[must_use]
    pub fn with_resend_mcp_on_resume(mut self, resend: bool) -> Self {
        self.config.resend_mcp_on_resume = resend;
        self
    }

    /// What every session's Runs open with: pi's profile, the workspace, and what the
    /// `with_*` settings above set (the one [`SessionConfig`] each session is built from).
    pub fn session_config(&self) -> &SessionConfig {
        &self.config
    }

    /// The channel for this process, from [`PiEnv`]: the agent origin from
    /// `CURSOR_PROVIDER_AGENT_ORIGIN` or the one `store`'s snapshot discovered (else Cursor's
    /// default), the current directory as the workspace, resume handles in the profile's
    /// handle directory (`CURSOR_PROVIDER_HANDLE_DIR`, else under `$HOME`), and
    /// `CURSOR_PROVIDER_RESEND_MCP_ON_RESUME`, and debug records with `CURSOR_PROVIDER_DEBUG=1`
    /// ([`PiEnv::debug_file`]; every channel of the process writes one file through one
    /// writer), and the timeouts of `CURSOR_PROVIDER_IDLE_MS` and
    /// `CURSOR_PROVIDER_FIRST_TOKEN_MS` ([`PiEnv::timers`]). A 401 is answered by one token
    /// refresh against the API origin ([`api_origin_from_env`]).
    ///
    /// # Errors
    ///
    /// An agent or API origin off the allowlist, or a timeout that is not a whole number of
    /// milliseconds between 1 and one hour.
    pub fn from_env(
        client: Client,
        store: &CatalogStore,
        sessions: Sessions,
        spawn: Spawner,
    ) -> Result<Self, ErrorInfo> {
        Self::from_pi_env(&PiEnv::from_env(), client, store, sessions, spawn)
    }

    /// [`from_env`](Self::from_env) with the switches already read into `env`.
    fn from_pi_env(
        env: &PiEnv,
        client: Client,
        store: &CatalogStore,
        sessions: Sessions,
        spawn: Spawner,
    ) -> Result<Self, ErrorInfo> {
        let timers = env.timers()?;
        let identity = env.identity()?;
        let origin = store
            .agent_origin(env.agent_origin.as_deref())
            .map_err(ErrorInfo::from)?
            .origin;
        let oauth = CursorOAuth::with_config(
            Arc::new(client.clone()),
            Arc::new(cursor_transport::TokioClock),
            auth_config(&api_origin_from_env()?),
        );
        let channel = Self::new(
            client,
            origin,
            store.catalog().clone(),
            workspace_uri(),
            sessions,
            spawn,
        )
        .with_token_refresh(oauth)
        .with_resend_mcp_on_resume(env.resend_mcp_on_resume)
        .with_timers(timers)
        .with_identity(identity);
        let channel = match debug_sink(env) {
            Some(sink) => channel.with_debug(sink),
            None => channel,
        };
        Ok(match &env.handle_dir {
            Some(dir) => channel.with_handle_store(HandleStore::new(dir)),
            None => channel,
        })
    }

    /// The published slug (and max mode) for pi's model and thinking level, with the other id
    /// form to retry once and the catalog's models to name if neither is served
    /// (PROTOCOL-AGENT §13.7).
    fn model_for(&self, turn: &Turn) -> Result<ModelChoice, ErrorInfo> {
        let level = turn
            .options
            .reasoning
            .as_deref()
            .and_then(ThinkingLevel::from_host_name);
        let wire = self
            .catalog
            .resolve(&turn.model.id, level)
            .map_err(ErrorInfo::from)?;
        Ok(ModelChoice::new(wire.slug)
            .with_max_mode(wire.max_mode)
            .with_alternate(wire.alternate)
            .with_known_models(self.catalog.model_ids()))
    }

    /// pi's session for `turn`: the one kept for its `sessionId`, or a fresh one that stores
    /// no handle when pi sent none.
    fn session_for(&self, turn: &Turn) -> AgentSession {
        let build = |id: Option<&str>| {
            let tokens = Arc::new(PiTokens::of(&turn.options, self.oauth.clone()));
            let mut builder =
                AgentSession::builder(self.client.clone(), self.origin.clone(), tokens)
                    .config(self.config.clone())
                    .spawner(Arc::clone(&self.spawn));
            if let Some(sink) = &self.debug {
                builder = builder.debug(Arc::clone(sink));
            }
            if let Some(id) = id {
                builder = builder.session_id(id);
                if let Some(store) = &self.handles {
                    builder = builder.handles(Arc::new(store.clone()));
                }
            }
            builder.build()
        };
        match turn.options.session_id.as_deref() {
            Some(id) => self.sessions.get_or_create(id, || build(Some(id))),
            None => build(None),
        }
    }
}

impl Channel for AgentChannel {
    fn kind(&self) -> ChannelKind {
        ChannelKind::Agent
    }

    fn open(&self, turn: Turn) -> BoxStream<'static, Event> {
        let model = match self.model_for(&turn) {
            Ok(model) => model,
            Err(info) => return stream::iter([Event::Error(info)]).boxed(),
        };
        let session = self.session_for(&turn);
        // pi resolves the credential per call: the latest one is what the next Run uses.
        session.set_token_source(Arc::new(PiTokens::of(&turn.options, self.oauth.clone())));
        let sessions = self.sessions.clone();
        session
            .turn(&turn.conversation, &model)
            .filter_map(move |event| {
                let event = match event {
                    AgentEvent::Ir(Event::Warning(warning)) => {
                        sessions.remember(warning);
                        None
                    }
                    AgentEvent::Ir(event) => Some(event),
                    // Exec audit records and checkpoints are not pi events.
                    _ => None,
                };
                futures::future::ready(event)
            })
            .boxed()
    }
}

/// The debug sink `CURSOR_PROVIDER_DEBUG=1` asks for: the process's writer of the debug file.
pub(super) fn debug_sink(env: &PiEnv) -> Option<Arc<dyn DebugSink>> {
    env.debug_file
        .as_deref()
        .filter(|_| env.debug)
        .map(debug_writer)
}

/// The process's one writer of the debug file at `path`: its one thread orders the appends and
/// the rotation of every turn, whichever channel or session the turn came through.
pub(super) fn debug_writer(path: &Path) -> Arc<dyn DebugSink> {
    static WRITERS: Mutex<Vec<Arc<JsonLinesFile>>> = Mutex::new(Vec::new());
    let mut writers = lock(&WRITERS);
    if let Some(writer) = writers.iter().find(|writer| writer.path() == path) {
        return Arc::clone(writer) as Arc<dyn DebugSink>;
    }
    let writer = Arc::new(JsonLinesFile::new(path));
    writers.push(Arc::clone(&writer));
    writer
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The current directory as a `file://` URL (Cursor's workspace root).
fn workspace_uri() -> String {
    let path = std::env::current_dir().unwrap_or_else(|_| std::path::PathBuf::from("/"));
    cursor_agent::file_uri::from_path(&path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::test_env::lookup;
    use crate::provider::{DEBUG_ENV, TurnOptions};

    #[test]
    fn channels_for_one_debug_file_write_through_one_writer() {
        let home = tempfile::tempdir().unwrap();
        let home = home.path().to_str().unwrap();
        let env = PiEnv::from_lookup(lookup(&[("HOME", home), (DEBUG_ENV, "1")]));
        let spawn: Spawner = Arc::new(|_task| {});
        let build = || {
            let store = CatalogStore::restore(None).0;
            let client = Client::new().unwrap();
            AgentChannel::from_pi_env(&env, client, &store, Sessions::new(), Arc::clone(&spawn))
                .unwrap()
        };
        let (first, second) = (build(), build());
        // Two writers would each lock only themselves and rotate the file under the other.
        assert!(
            Arc::ptr_eq(
                first.debug.as_ref().unwrap(),
                second.debug.as_ref().unwrap()
            ),
            "two channels got their own writer of one debug file"
        );
    }

    /// The pi switches reach every session through one [`SessionConfig`].
    #[test]
    fn the_environment_becomes_the_session_config_every_session_is_built_from() {
        use crate::provider::{CLI_VERSION_ENV, IDLE_MS_ENV, RESEND_MCP_ENV};
        let home = tempfile::tempdir().unwrap();
        let home = home.path().to_str().unwrap();
        let env = PiEnv::from_lookup(lookup(&[
            ("HOME", home),
            (IDLE_MS_ENV, "4321"),
            (RESEND_MCP_ENV, "1"),
            (CLI_VERSION_ENV, "cli-2026.11.20-abcdef0"),
        ]));
        let store = CatalogStore::restore(None).0;
        let channel = AgentChannel::from_pi_env(
            &env,
            Client::new().unwrap(),
            &store,
            Sessions::new(),
            Arc::new(|_task| {}),
        )
        .unwrap();
        let config = channel.session_config();
        assert_eq!(
            config.timers.idle_timeout,
            std::time::Duration::from_millis(4321)
        );
        assert!(config.resend_mcp_on_resume);
        assert_eq!(config.identity.client_version, "cli-2026.11.20-abcdef0");
        assert_eq!(config.profile, pi_profile());
        assert_eq!(config.workspace_uris, [workspace_uri()]);

        let turn = Turn::new(
            crate::compat::ModelInfo::new("cursor-agent", "cursor", "auto"),
            cursor_proto::ir::Conversation::new(""),
            TurnOptions::from_json(r#"{"sessionId": "s-1", "apiKey": "token"}"#).unwrap(),
        );
        assert_eq!(channel.session_for(&turn).config(), config);
    }
}
