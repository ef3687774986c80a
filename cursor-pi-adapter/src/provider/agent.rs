//! The agent channel: pi turns over cursor-agent's async driver (`agent.v1.AgentService/Run`).
//!
//! One pi session maps to one live Run while tools are pending. A leg that ends with
//! `toolUse` keeps its Run open (the driver keeps heartbeats flowing while pi runs the tools);
//! the next `streamSimple` call of the same session, whose transcript ends with those tool
//! results, submits them on that Run and streams the next leg. Any other call starts a new Run,
//! cancelling a Run the session left waiting.
//!
//! Across processes, a session's remote conversation is remembered by a resume
//! [`Handle`](cursor_agent::Handle) in a [`HandleStore`]: cursor-agent's resume planner decides
//! per Run whether to resume it (history not replayed) or rebuild it from the full transcript,
//! and a resume found stale mid-run is rebuilt once, starting with a `Reset`.
//!
//! A Run refused with 401 before it streamed anything refreshes the access token once (when
//! the channel has a [`CursorOAuth`] and pi's stored entry has a refresh token) and is
//! replayed once with the new token; a failed refresh or a second 401 ends the turn with the
//! auth error, whose next step is `/login cursor`.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use cursor_agent::driver::{self, RunEvents, RunHandle};
use cursor_agent::{
    AgentError, AgentEvent, Handle, HandleStore, Loaded, Plan, RunConfig, RunLabel, Session,
};
use cursor_catalog::{Catalog, CatalogStore, MaxMode, ThinkingLevel};
use cursor_proto::ir::{ErrorInfo, ErrorKind, Event, Message, NextStep, StopReason, ToolResult};
use cursor_transport::{
    AccessToken, CallKind, CliIdentity, Client, Origin, RequestHeaders, RequestId,
};
use futures::channel::oneshot;
use futures::future::BoxFuture;
use futures::stream::{self, BoxStream, StreamExt};

use super::{
    Channel, ChannelKind, CursorOAuth, PiEnv, Turn, api_origin_from_env, auth_config, pi_profile,
};

/// Runs a driver task to completion on the host's runtime (napi's in the Node binding, tokio's
/// in tests): the driver itself never spawns.
pub type Spawner = Arc<dyn Fn(BoxFuture<'static, ()>) + Send + Sync>;

/// The Runs pi sessions left waiting for tool results, shared by every turn of the process.
#[derive(Clone, Default)]
pub struct Sessions {
    waiting: Arc<Mutex<HashMap<String, WaitingRun>>>,
}

impl fmt::Debug for Sessions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sessions")
            .field("waiting", &self.lock().len())
            .finish()
    }
}

impl Sessions {
    /// No session is waiting.
    pub fn new() -> Self {
        Self::default()
    }

    /// How many sessions have a Run waiting for tool results.
    pub fn waiting(&self) -> usize {
        self.lock().len()
    }

    fn take(&self, session: &str) -> Option<WaitingRun> {
        self.lock().remove(session)
    }

    fn park(&self, session: String, run: WaitingRun) {
        if let Some(previous) = self.lock().insert(session, run) {
            previous.handle.cancel();
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, WaitingRun>> {
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A running Run: its command handle, its events, and what a stale resume needs.
struct WaitingRun {
    handle: RunHandle,
    events: RunEvents,
    /// The ids of the tool calls of the current leg, in order.
    pending: Vec<String>,
    /// Resolves to the Run's failure once its task ends.
    finished: oneshot::Receiver<Option<AgentError>>,
    /// Set while the Run is a resume that may still be rebuilt once.
    recovery: Option<Recovery>,
    /// Set while a 401 may still be answered by one refresh and replay.
    auth_replay: Option<AuthReplay>,
    /// Whether an event of this Run reached pi (a Run that streamed is never replayed).
    streamed: bool,
}

/// What replaying a Run refused with 401 needs.
struct AuthReplay {
    oauth: CursorOAuth,
    refresh_token: String,
    channel: AgentChannel,
    turn: Turn,
}

/// What rebuilding a stale resume needs.
struct Recovery {
    planner: Session,
    channel: AgentChannel,
    turn: Turn,
}

/// The agent channel over cursor-agent's driver.
#[derive(Clone)]
pub struct AgentChannel {
    client: Client,
    origin: Origin,
    identity: CliIdentity,
    catalog: Catalog,
    workspace_uri: String,
    sessions: Sessions,
    spawn: Spawner,
    handles: Option<HandleStore>,
    oauth: Option<CursorOAuth>,
}

impl fmt::Debug for AgentChannel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentChannel")
            .field("origin", &self.origin)
            .field("workspace_uri", &self.workspace_uri)
            .field("sessions", &self.sessions)
            .field("handles", &self.handles.as_ref().map(HandleStore::dir))
            .field("oauth", &self.oauth)
            .finish_non_exhaustive()
    }
}

impl AgentChannel {
    /// A channel calling `origin` through `client`, choosing slugs from `catalog`, for the
    /// workspace at `workspace_uri`, keeping waiting Runs in `sessions` and running driver tasks
    /// with `spawn`.
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
            identity: CliIdentity::default(),
            catalog,
            workspace_uri: workspace_uri.into(),
            sessions,
            spawn,
            handles: None,
            oauth: None,
        }
    }

    /// Answers a Run refused with 401 by refreshing the access token once through `oauth` and
    /// replaying the Run once (for turns whose options carry a refresh token).
    #[must_use]
    pub fn with_token_refresh(mut self, oauth: CursorOAuth) -> Self {
        self.oauth = Some(oauth);
        self
    }

    /// Keeps each session's resume handle in `store`, so a later process resumes the remote
    /// conversation instead of replaying the transcript.
    #[must_use]
    pub fn with_handle_store(mut self, store: HandleStore) -> Self {
        self.handles = Some(store);
        self
    }

    /// The channel for this process: the agent origin from `CURSOR_PROVIDER_AGENT_ORIGIN` or
    /// the one `store`'s snapshot discovered (else Cursor's default), the current directory as
    /// the workspace, and resume handles where cursor-agent's `ResumeEnv` says
    /// (`CURSOR_PROVIDER_HANDLE_DIR`, else under `$HOME`). A 401 is answered by one token
    /// refresh against the API origin ([`api_origin_from_env`]).
    ///
    /// # Errors
    ///
    /// An agent or API origin off the allowlist.
    pub fn from_env(
        client: Client,
        store: &CatalogStore,
        sessions: Sessions,
        spawn: Spawner,
    ) -> Result<Self, ErrorInfo> {
        let origin = store
            .agent_origin(PiEnv::from_env().agent_origin.as_deref())
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
        .with_token_refresh(oauth);
        Ok(match PiEnv::from_env().handle_dir {
            Some(dir) => channel.with_handle_store(HandleStore::new(dir)),
            None => channel,
        })
    }

    /// Plans the turn's Run (resume or rebuild) from the session's stored handle and starts it;
    /// a 401 on it may be answered by one refresh and replay.
    fn start(&self, turn: &Turn) -> Result<WaitingRun, ErrorInfo> {
        let mut run = self.start_once(turn)?;
        let refresh = turn.options.refresh_token.as_deref().map(str::trim);
        if let (Some(oauth), Some(refresh)) = (&self.oauth, refresh.filter(|r| !r.is_empty())) {
            run.auth_replay = Some(AuthReplay {
                oauth: oauth.clone(),
                refresh_token: refresh.to_owned(),
                channel: self.clone(),
                turn: turn.clone(),
            });
        }
        Ok(run)
    }

    /// Plans the turn's Run from the session's stored handle and starts it, without a replay.
    fn start_once(&self, turn: &Turn) -> Result<WaitingRun, ErrorInfo> {
        turn.options.access_token()?;
        let level = turn
            .options
            .reasoning
            .as_deref()
            .and_then(ThinkingLevel::from_host_name);
        let slug = self
            .catalog
            .slug_for(&turn.model.id, level)
            .map_err(ErrorInfo::from)?
            .to_owned();
        let mut config =
            RunConfig::new(slug, self.workspace_uri.clone(), id_seed()?).with_profile(pi_profile());
        config.max_mode = self
            .catalog
            .row(&turn.model.id)
            .is_some_and(|row| row.max_mode == MaxMode::Required);
        let mut planner = Session::new(config);
        let stored = self.stored_handle(turn);
        let plan = planner.plan(stored, &turn.conversation);
        if plan.drops_handle() {
            self.forget_handle(turn);
        }
        let resuming = plan.label() == RunLabel::Resume;
        let mut run = self.launch(plan, turn)?;
        if resuming {
            run.recovery = Some(Recovery {
                planner,
                channel: self.clone(),
                turn: turn.clone(),
            });
        }
        Ok(run)
    }

    /// Opens `plan`'s Run for `turn` and hands its task to the spawner; the task stores the
    /// resume handle when the Run ends well.
    fn launch(&self, plan: Plan, turn: &Turn) -> Result<WaitingRun, ErrorInfo> {
        let token = turn.options.access_token()?;
        let run = plan
            .open(&turn.conversation, driver::now())
            .map_err(ErrorInfo::from)?;
        let request_id = RequestId::generate().map_err(ErrorInfo::from)?;
        let headers = RequestHeaders::cli(
            &AccessToken::new(token),
            &self.identity,
            CallKind::Stream,
            &request_id,
        )
        .map_err(ErrorInfo::from)?;
        let (handle, events, task) =
            driver::start(self.client.clone(), self.origin.clone(), headers, run);
        let (done, finished) = oneshot::channel();
        let store = self.handles.clone().zip(turn.options.session_id.clone());
        let conversation = turn.conversation.clone();
        (self.spawn)(Box::pin(async move {
            let run = task.await;
            let failure = run.failure().cloned();
            let handle = Handle::capture(&run, &conversation);
            if let (None, Some((store, session)), Some(handle)) = (&failure, store, handle) {
                // A handle that cannot be written only costs the next process a rebuild.
                let _saved = store.save(&session, &handle);
            }
            let _ = done.send(failure);
        }));
        Ok(WaitingRun {
            handle,
            events,
            pending: Vec::new(),
            finished,
            recovery: None,
            auth_replay: None,
            streamed: false,
        })
    }

    fn stored_handle(&self, turn: &Turn) -> Option<Handle> {
        let store = self.handles.as_ref()?;
        let session = turn.options.session_id.as_deref()?;
        store.load(session).ok().and_then(Loaded::handle)
    }

    fn forget_handle(&self, turn: &Turn) {
        if let (Some(store), Some(session)) = (&self.handles, &turn.options.session_id) {
            // A handle that cannot be removed is found stale again next time.
            let _removed = store.remove(session);
        }
    }
}

impl Channel for AgentChannel {
    fn kind(&self) -> ChannelKind {
        ChannelKind::Agent
    }

    fn open(&self, turn: Turn) -> BoxStream<'static, Event> {
        let session = turn.options.session_id.clone();
        let waiting = session.as_deref().and_then(|s| self.sessions.take(s));
        let leg = match (waiting, trailing_results(&turn.conversation.messages)) {
            (Some(run), Some(results)) if answers(&run.pending, &results) => {
                Leg::Submit(run, results)
            }
            (waiting, _) => {
                // A new user turn (or a transcript pi edited): the waiting Run is obsolete.
                if let Some(run) = waiting {
                    run.handle.cancel();
                }
                match self.start(&turn) {
                    Ok(run) => Leg::Stream(run),
                    Err(info) => return stream::iter([Event::Error(info)]).boxed(),
                }
            }
        };
        let sessions = self.sessions.clone();
        stream::unfold(Some(leg), move |leg| {
            let sessions = sessions.clone();
            let session = session.clone();
            async move { next_event(leg?, &sessions, session).await }
        })
        .boxed()
    }
}

/// Where a turn's stream stands.
enum Leg {
    /// Tool results to submit before streaming.
    Submit(WaitingRun, Vec<ToolResult>),
    /// Streaming the Run's events.
    Stream(WaitingRun),
}

async fn next_event(
    leg: Leg,
    sessions: &Sessions,
    session: Option<String>,
) -> Option<(Event, Option<Leg>)> {
    let mut run = match leg {
        Leg::Submit(run, results) => match run.handle.submit_tool_results(results).await {
            Ok(()) => run,
            Err(error) => return Some((Event::Error(error.into()), None)),
        },
        Leg::Stream(run) => run,
    };
    loop {
        let Some(event) = run.events.next().await else {
            // The driver ends its stream only after a final event; without one the turn is
            // cut off, which the orchestrator reports.
            return None;
        };
        let AgentEvent::Ir(event) = event else {
            // Checkpoints and exec audit records are not pi events.
            continue;
        };
        match &event {
            Event::ToolCall(call) => run.pending.push(call.id.clone()),
            Event::Done {
                reason: StopReason::ToolUse,
            } => {
                if let Some(session) = session {
                    sessions.park(session, run);
                }
                return Some((event, None));
            }
            Event::Error(info)
                if info.kind == ErrorKind::Auth && !run.streamed && run.auth_replay.is_some() =>
            {
                match replay_with_fresh_token(run, info).await {
                    Ok(replayed) => {
                        run = replayed;
                        continue;
                    }
                    Err(info) => return Some((Event::Error(info), None)),
                }
            }
            Event::Error(_) if run.recovery.is_some() => match rebuild_if_stale(run).await {
                // The rebuilt Run starts with a `Reset` of its own.
                Some(Ok(rebuilt)) => {
                    run = rebuilt;
                    continue;
                }
                Some(Err(info)) => return Some((Event::Error(info), None)),
                None => return Some((event, None)),
            },
            Event::Done { .. } | Event::Error(_) | Event::Aborted => {
                return Some((event, None));
            }
            _ => {}
        }
        run.streamed = true;
        return Some((event, Some(Leg::Stream(run))));
    }
}

/// After a Run was refused with 401 (`refused`) before it streamed: refreshes the access token
/// once and starts the Run again with it, never to be replayed again. A refresh that fails
/// ends the turn with the auth error.
async fn replay_with_fresh_token(
    mut run: WaitingRun,
    refused: &ErrorInfo,
) -> Result<WaitingRun, ErrorInfo> {
    let Some(replay) = run.auth_replay.take() else {
        return Err(refused.clone());
    };
    run.handle.cancel();
    let access = replay.turn.options.access_token()?;
    let fresh = replay
        .oauth
        .refresh_access(access, &replay.refresh_token)
        .await
        .map_err(|failure| {
            ErrorInfo::new(
                ErrorKind::Auth,
                format!(
                    "Cursor refused the access token ({}) and refreshing it failed: {}",
                    refused.message, failure.message
                ),
                NextStep::Login,
            )
        })?;
    let mut turn = replay.turn;
    turn.options.api_key = Some(fresh);
    replay.channel.start_once(&turn)
}

/// After a resumed Run failed: when it failed because the resume was stale, the rebuild to
/// stream instead (its handle dropped); `None` when the failure was anything else.
async fn rebuild_if_stale(mut run: WaitingRun) -> Option<Result<WaitingRun, ErrorInfo>> {
    let mut recovery = run.recovery.take()?;
    let failure = (&mut run.finished).await.ok().flatten()?;
    let plan = recovery.planner.recover(&failure).ok()?;
    recovery.channel.forget_handle(&recovery.turn);
    Some(recovery.channel.launch(plan, &recovery.turn))
}

/// The tool results after the transcript's last assistant message, if it ends with some.
fn trailing_results(messages: &[Message]) -> Option<Vec<ToolResult>> {
    let results: Vec<ToolResult> = messages
        .iter()
        .rev()
        .map_while(|message| match message {
            Message::ToolResult(result) => Some(result.clone()),
            _ => None,
        })
        .collect();
    if results.is_empty() {
        return None;
    }
    Some(results.into_iter().rev().collect())
}

/// Whether `results` answer exactly the `pending` calls.
fn answers(pending: &[String], results: &[ToolResult]) -> bool {
    pending.len() == results.len()
        && pending
            .iter()
            .all(|id| results.iter().any(|result| &result.tool_call_id == id))
}

fn id_seed() -> Result<cursor_agent::IdSeed, ErrorInfo> {
    cursor_agent::IdSeed::random().map_err(ErrorInfo::from)
}

/// The current directory as a `file://` URL (Cursor's workspace root).
fn workspace_uri() -> String {
    let path = std::env::current_dir().unwrap_or_else(|_| std::path::PathBuf::from("/"));
    let mut uri = String::from("file://");
    for byte in path.to_string_lossy().bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'/' | b'-' | b'_' | b'.' | b'~' => {
                uri.push(char::from(byte));
            }
            other => uri.push_str(&format!("%{other:02X}")),
        }
    }
    uri
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_trailing_tool_results_count_and_must_answer_every_pending_call() {
        let messages = vec![
            Message::ToolResult(ToolResult::text("old", "bash", "x", false)),
            Message::user_text("again"),
            Message::ToolResult(ToolResult::text("a", "bash", "1", false)),
            Message::ToolResult(ToolResult::text("b", "read", "2", false)),
        ];
        let results = trailing_results(&messages).unwrap();
        let ids: Vec<&str> = results.iter().map(|r| r.tool_call_id.as_str()).collect();
        assert_eq!(ids, ["a", "b"]);
        assert!(answers(&["b".into(), "a".into()], &results));
        assert!(!answers(&["a".into()], &results));
        assert!(trailing_results(&[Message::user_text("hi")]).is_none());
    }
}
