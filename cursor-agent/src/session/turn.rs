//! One turn of a session: plan, open, stream, replay once on 401, rebuild once when stale,
//! persist the handle, park the Run across a tool round.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll};

use cursor_proto::ir::{
    Classify as _, Conversation, ErrorInfo, ErrorKind, Event, Message, NextStep, StopReason,
    ToolResult, Warning, WarningCode,
};
use cursor_transport::{AccessToken, CallKind, RequestHeaders, RequestId};
use futures::stream::{self, BoxStream, Stream, StreamExt as _};

use super::record::{ErrorRecord, PlanRecord, Record};
use super::{Inner, ModelChoice, lock};
use crate::driver::{self, RunEvents, RunHandle};
use crate::{
    AgentError, AgentEvent, Fingerprint, Handle, HandleRepository, IdSeed, Loaded, Plan,
    ResumePlanner, ResumePoint, RunLabel, StoreError,
};

/// The events of one turn leg; see [`AgentSession::turn`](super::AgentSession::turn).
#[must_use = "a turn makes no progress unless its events are read"]
pub struct TurnEvents {
    inner: BoxStream<'static, AgentEvent>,
}

impl std::fmt::Debug for TurnEvents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TurnEvents").finish_non_exhaustive()
    }
}

impl TurnEvents {
    /// The turn's next event; `None` once the leg ended (after its `Done`, `Error` or
    /// `Aborted`).
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: dropping the future before it completes loses no event (the stream keeps
    /// its place), so `next()` can sit in a `tokio::select!` beside other work.
    pub async fn next(&mut self) -> Option<AgentEvent> {
        futures::StreamExt::next(&mut self.inner).await
    }
}

impl Stream for TurnEvents {
    type Item = AgentEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<AgentEvent>> {
        self.inner.as_mut().poll_next(cx)
    }
}

/// A Run in flight: its commands, its events (and typed failure), the tool calls of the
/// current leg.
struct Live {
    handle: RunHandle,
    events: RunEvents,
    pending: Vec<String>,
}

/// What the turn knows across its legs and attempts.
struct Ctx {
    /// The latest transcript the host sent (after a tool round, it ends with the results).
    conversation: Conversation,
    model: ModelChoice,
    token: Option<String>,
    planner: Option<ResumePlanner>,
    label: RunLabel,
    /// The stored turn the current Run resumed from as a branch (its fingerprint), kept as a
    /// branch point when the turn's handle is saved.
    branched_from: Option<Fingerprint>,
    /// The remote conversation the current Run belongs to.
    conversation_id: Option<String>,
    auth_replay_left: bool,
    /// One transparent retry of a network failure before the host saw anything.
    network_retry_left: bool,
    /// One transparent retry, after a backoff, of a capacity refusal before the host saw
    /// anything.
    capacity_retry_left: bool,
    rebuild_left: bool,
    /// The model ids this turn asked for that Cursor answered `not_found`, in order.
    models_not_found: Vec<String>,
    /// An event of a Run of this turn reached the host, of any kind (a Run that streamed is
    /// never replayed).
    streamed: bool,
}

/// A Run waiting for the host's tool results, with its turn's context.
pub(super) struct Parked {
    live: Live,
    ctx: Ctx,
}

impl Parked {
    pub(super) fn cancel(self) {
        self.live.handle.cancel();
    }
}

enum Step {
    Start,
    Submit(Live, Vec<ToolResult>),
    Stream(Live),
    /// The leg ended with `ToolUse`: once its `Done` is noted, the Run parks with the context.
    Park(Live),
    Finished,
}

/// A turn's stream: open, or its Run parked for the host's tool results.
enum Turn {
    Open(Box<State>),
    Parked(Spent),
}

struct State {
    shared: Arc<Inner>,
    ctx: Ctx,
    step: Step,
    /// Events to hand out before reading on (warnings).
    queue: VecDeque<AgentEvent>,
    /// What the leg handed out so far, for its debug record.
    counts: LegCounts,
    active: ActiveTurn,
}

/// What is left of a turn once its Run parked: events queued after its `Done` (warnings).
struct Spent {
    shared: Arc<Inner>,
    queue: VecDeque<AgentEvent>,
    _active: ActiveTurn,
}

/// Counts a turn as active until its stream ends or is dropped.
struct ActiveTurn(Arc<Inner>);

impl ActiveTurn {
    fn new(shared: &Arc<Inner>) -> Self {
        shared.active_turns.fetch_add(1, Ordering::AcqRel);
        Self(Arc::clone(shared))
    }
}

impl Drop for ActiveTurn {
    fn drop(&mut self) {
        // The turn's stream ended or was dropped.
        self.0.active_turns.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A leg's events by kind and its start, for the debug record (never their content).
#[derive(Default)]
struct LegCounts {
    started: Option<std::time::Instant>,
    text: usize,
    thinking: usize,
    tool_calls: usize,
    execs: usize,
}

pub(super) fn open(
    shared: &Arc<Inner>,
    conversation: &Conversation,
    model: &ModelChoice,
) -> TurnEvents {
    let mut queue = VecDeque::new();
    let mut warn = |code, message: String, next_step: Option<NextStep>| {
        queue.push_back(AgentEvent::Ir(Event::Warning(Warning::new(
            code, message, next_step,
        ))));
    };
    if shared.config_warnings_owed.swap(false, Ordering::AcqRel) {
        if shared.handles.is_some() && shared.session_id.is_none() {
            warn(
                WarningCode::NoResume,
                "handles are configured but the session has no session_id: no handle is loaded or stored, so every new process rebuilds the conversation".into(),
                Some(NextStep::fix_config("give the session builder a session_id")),
            );
        }
        if shared.config.workspace_uris == ["file:///"] {
            warn(
                WarningCode::NoWorkspace,
                "the session has no workspace root: Cursor is told the workspace is file:/// and native paths resolve against /".into(),
                Some(NextStep::fix_config("give the session builder a workspace_uri")),
            );
        }
    }
    if shared.active_turns.load(Ordering::Acquire) > 0 {
        warn(
            WarningCode::ConcurrentTurn,
            "another turn of this session is still streaming: both Runs now work on one conversation and may resume or cancel each other's state".into(),
            Some(NextStep::host_bug("read a turn to its end before starting the next")),
        );
    }
    let parked = lock(&shared.parked).take();
    let (ctx, step) = match (parked, trailing_results(&conversation.messages)) {
        (Some(mut parked), Some(results)) if answers(&parked.live.pending, &results) => {
            parked.ctx.conversation = conversation.clone();
            parked.live.pending.clear();
            (parked.ctx, Step::Submit(parked.live, results))
        }
        (parked, trailing) => {
            // A new user turn (or a transcript the host edited): a waiting Run is obsolete.
            if let Some(parked) = parked {
                if let Some(results) = trailing {
                    let got: Vec<&str> = results.iter().map(|r| r.tool_call_id.as_str()).collect();
                    warn(
                        WarningCode::ToolResultsMismatch,
                        format!(
                            "the transcript ends with results for [{}] but the waiting Run issued [{}]: that Run was cancelled and this turn opens a new one",
                            got.join(", "),
                            parked.live.pending.join(", ")
                        ),
                        Some(NextStep::host_bug(
                            "end the transcript with one result for each tool call of the last leg",
                        )),
                    );
                }
                parked.cancel();
            }
            (
                Ctx::new(conversation.clone(), learned_form(shared, model)),
                Step::Start,
            )
        }
    };
    let state = State {
        active: ActiveTurn::new(shared),
        shared: Arc::clone(shared),
        ctx,
        step,
        queue,
        counts: LegCounts {
            started: Some(std::time::Instant::now()),
            ..LegCounts::default()
        },
    };
    TurnEvents {
        inner: stream::unfold(Turn::Open(Box::new(state)), next).boxed(),
    }
}

impl Ctx {
    fn new(conversation: Conversation, model: ModelChoice) -> Self {
        Self {
            conversation,
            model,
            token: None,
            planner: None,
            label: RunLabel::Rebuild,
            branched_from: None,
            conversation_id: None,
            auth_replay_left: true,
            network_retry_left: true,
            capacity_retry_left: true,
            rebuild_left: true,
            models_not_found: Vec::new(),
            streamed: false,
        }
    }
}

async fn next(turn: Turn) -> Option<(AgentEvent, Turn)> {
    match turn {
        Turn::Open(mut state) => {
            let event = next_event(&mut state).await?;
            state.note_event(&event);
            let turn = match state.step {
                Step::Park(_) => Turn::Parked((*state).park()),
                _ => Turn::Open(state),
            };
            Some((event, turn))
        }
        Turn::Parked(mut spent) => {
            let event = spent.queue.pop_front()?;
            if let (Some(sink), AgentEvent::Ir(Event::Warning(warning))) =
                (&spent.shared.debug, &event)
            {
                sink.record(&Record::Warning { code: warning.code }.to_value());
            }
            Some((event, Turn::Parked(spent)))
        }
    }
}

async fn next_event(state: &mut State) -> Option<AgentEvent> {
    loop {
        if let Some(event) = state.queue.pop_front() {
            return Some(event);
        }
        match std::mem::replace(&mut state.step, Step::Finished) {
            Step::Finished => return None,
            Step::Start => match state.start().await {
                Ok(live) => state.step = Step::Stream(live),
                Err(info) => state.fail(info),
            },
            Step::Submit(live, results) => match live.handle.submit_tool_results(results).await {
                Ok(()) => state.step = Step::Stream(live),
                Err(error) => state.fail(error.to_info()),
            },
            Step::Stream(live) => {
                if let Some(event) = state.on_event(live).await {
                    return Some(event);
                }
            }
            // Parking takes the state: `next` does it once the leg's `Done` is noted.
            Step::Park(live) => {
                state.step = Step::Park(live);
                return None;
            }
        }
    }
}

impl State {
    fn debug(&self, record: &Record<'_>) {
        if let Some(sink) = &self.shared.debug {
            sink.record(&record.to_value());
        }
    }

    /// Counts what the host sees and records decisions and leg ends (labels only).
    fn note_event(&mut self, event: &AgentEvent) {
        if self.shared.debug.is_none() {
            return;
        }
        let counts = &mut self.counts;
        match event {
            AgentEvent::Ir(Event::TextDelta { .. }) => counts.text += 1,
            AgentEvent::Ir(Event::ThinkingDelta { .. }) => counts.thinking += 1,
            AgentEvent::Ir(Event::ToolCall(_)) => counts.tool_calls += 1,
            AgentEvent::Exec(audit) => {
                counts.execs += 1;
                let outcome = match &audit.outcome {
                    crate::ExecOutcome::Refused => "refused",
                    crate::ExecOutcome::Thrown => "thrown",
                    crate::ExecOutcome::ContextReported => "contextReported",
                    crate::ExecOutcome::McpStateReported { .. } => "mcpStateReported",
                    crate::ExecOutcome::Translated { .. } => "translated",
                    crate::ExecOutcome::HostToolCall { .. } => "hostToolCall",
                    crate::ExecOutcome::ToolNotFound { .. } => "toolNotFound",
                };
                let arm = format!("{:?}", audit.arm);
                self.debug(&Record::Exec { arm, outcome });
            }
            AgentEvent::Ir(Event::Warning(warning)) => {
                self.debug(&Record::Warning { code: warning.code });
            }
            AgentEvent::Ir(end @ (Event::Done { .. } | Event::Error(_) | Event::Aborted)) => {
                let ms = counts.started.map_or(0, |at| {
                    u64::try_from(at.elapsed().as_millis()).unwrap_or(u64::MAX)
                });
                let (done, error, aborted) = match end {
                    Event::Done { reason } => (Some(*reason), None, None),
                    Event::Error(info) => (
                        None,
                        Some(ErrorRecord {
                            kind: info.kind,
                            next_step: step_name(&info.next_step),
                            http_status: info.http_status,
                            code: info.code.clone(),
                        }),
                        None,
                    ),
                    _ => (None, None, Some(true)),
                };
                let (text_deltas, thinking_deltas, tool_calls, execs) = (
                    counts.text,
                    counts.thinking,
                    counts.tool_calls,
                    counts.execs,
                );
                self.debug(&Record::LegEnd {
                    run: self.ctx.label.as_str(),
                    ms,
                    text_deltas,
                    thinking_deltas,
                    tool_calls,
                    execs,
                    done,
                    error,
                    aborted,
                });
            }
            _ => {}
        }
    }

    /// Reads the Run's next event and decides what the host sees; `None` when nothing is to be
    /// handed out yet (the state moved on: a replay, a rebuild, a queued warning, the end).
    async fn on_event(&mut self, mut live: Live) -> Option<AgentEvent> {
        // The driver ends its stream only after a final event; without one the host's stream
        // ends too, and the host reports the cut-off turn.
        let event = live.events.next().await?;
        match event {
            AgentEvent::Resumable(point) => {
                self.persist(*point).await;
                self.step = Step::Stream(live);
                None
            }
            AgentEvent::Ir(Event::Done {
                reason: StopReason::ToolUse,
            }) => {
                // A resumed conversation's stored handle is marked first: if the results
                // never come, the next Run must not resume it.
                if self.ctx.label == RunLabel::Resume {
                    self.mark_awaiting_tool_results().await;
                }
                self.step = Step::Park(live);
                Some(AgentEvent::Ir(Event::Done {
                    reason: StopReason::ToolUse,
                }))
            }
            AgentEvent::Ir(Event::Error(info)) => {
                if self.may_replay_auth(&info) {
                    live.handle.cancel();
                    match self.replay_auth(&info).await {
                        Ok(replayed) => self.step = Step::Stream(replayed),
                        Err(failure) => self.fail(failure),
                    }
                    return None;
                }
                let failure = live.events.failure().cloned();
                if self.may_retry_network(failure.as_ref()) {
                    self.ctx.network_retry_left = false;
                    self.debug(&Record::NetworkRetry {
                        run: self.ctx.label.as_str(),
                        failure: &info.message,
                    });
                    match self.start().await {
                        Ok(retried) => self.step = Step::Stream(retried),
                        Err(failure) => self.fail(failure),
                    }
                    return None;
                }
                if self.may_retry_capacity(&info) {
                    self.ctx.capacity_retry_left = false;
                    let backoff = self.shared.config.timers.capacity_retry_backoff;
                    self.debug(&Record::CapacityRetry {
                        run: self.ctx.label.as_str(),
                        backoff_ms: u64::try_from(backoff.as_millis()).unwrap_or(u64::MAX),
                    });
                    tokio::time::sleep(backoff).await;
                    match self.start().await {
                        Ok(retried) => self.step = Step::Stream(retried),
                        Err(failure) => self.fail(failure),
                    }
                    return None;
                }
                if self.may_retry_model(failure.as_ref()) {
                    match self.retry_model(&info).await {
                        Ok(retried) => self.step = Step::Stream(retried),
                        Err(failure) => self.fail(failure),
                    }
                    return None;
                }
                if self.model_not_found(failure.as_ref()) {
                    return Some(AgentEvent::Ir(Event::Error(self.pick_model(&info))));
                }
                match self.rebuild_if_stale(failure).await {
                    Some(Ok(rebuilt)) => {
                        self.step = Step::Stream(rebuilt);
                        None
                    }
                    Some(Err(failure)) => {
                        self.fail(failure);
                        None
                    }
                    None => Some(AgentEvent::Ir(Event::Error(info))),
                }
            }
            event @ AgentEvent::Ir(Event::Done { .. } | Event::Aborted) => Some(event),
            AgentEvent::Ir(Event::ToolCall(call)) => {
                live.pending.push(call.id.clone());
                self.ctx.streamed = true;
                self.step = Step::Stream(live);
                Some(AgentEvent::Ir(Event::ToolCall(call)))
            }
            other => {
                // Whatever the host receives (an exec audit and a checkpoint too, not only
                // text) ends the retry window: a retried Run would hand it out again.
                self.ctx.streamed = true;
                self.step = Step::Stream(live);
                Some(other)
            }
        }
    }

    /// Plans the turn's Run from the stored handle and opens it.
    async fn start(&mut self) -> Result<Live, ErrorInfo> {
        let token = match self.ctx.token.clone() {
            Some(token) => token,
            None => {
                let tokens = Arc::clone(&*lock(&self.shared.tokens));
                tokens.access_token().await?
            }
        };
        self.ctx.token = Some(token);
        let config = self
            .shared
            .config
            .run_config(&self.ctx.model, IdSeed::random().map_err(ErrorInfo::from)?);
        let mut planner = ResumePlanner::new(config)
            .with_resend_mcp_on_resume(self.shared.config.resend_mcp_on_resume);
        let mut stored = self.load_handle().await;
        if stored.is_none() && self.shared.config.find_branches {
            stored = self.find_branch().await;
        }
        let plan = planner.plan(stored, &self.ctx.conversation);
        self.ctx.branched_from = plan
            .resume_from()
            .filter(|from| from.branch)
            .map(|from| from.fingerprint);
        self.debug(&Record::Plan(PlanRecord::of(&plan)));
        if plan.drops_handle() {
            self.remove_handle().await;
        }
        self.ctx.label = plan.label();
        self.ctx.planner = Some(planner);
        self.launch(plan)
    }

    /// Opens `plan`'s Run and hands its task to the spawner.
    fn launch(&mut self, plan: Plan) -> Result<Live, ErrorInfo> {
        let token = self.ctx.token.clone().unwrap_or_default();
        let run = plan
            .open(&self.ctx.conversation, driver::now())
            .map_err(ErrorInfo::from)?;
        self.ctx.conversation_id = Some(run.conversation_id().to_owned());
        let request_id = RequestId::generate().map_err(ErrorInfo::from)?;
        let mut headers = RequestHeaders::cli(
            &AccessToken::new(token),
            &self.shared.config.identity,
            CallKind::Stream,
            &request_id,
        )
        .map_err(ErrorInfo::from)?;
        if let Some(allowed) = self.shared.config.profile.allowed_tools_header() {
            headers
                .insert(crate::ALLOWED_TOOLS_HEADER, &allowed)
                .map_err(ErrorInfo::from)?;
        }
        let (handle, events, task) = driver::start(
            self.shared.client.clone(),
            self.shared.origin.clone(),
            headers,
            run,
        );
        (self.shared.spawner)(Box::pin(async move {
            drop(task.await);
        }));
        Ok(Live {
            handle,
            events,
            pending: Vec::new(),
        })
    }

    /// Only the server's refusal of the token, before anything streamed, once per turn.
    fn may_replay_auth(&self, info: &ErrorInfo) -> bool {
        self.ctx.auth_replay_left && !self.ctx.streamed && info.is_unauthenticated()
    }

    /// Refreshes the refused token once and opens the turn's Run again with the fresh one.
    async fn replay_auth(&mut self, refused: &ErrorInfo) -> Result<Live, ErrorInfo> {
        self.ctx.auth_replay_left = false;
        self.debug(&Record::AuthReplay);
        let rejected = self.ctx.token.take().unwrap_or_default();
        let tokens = Arc::clone(&*lock(&self.shared.tokens));
        let fresh = tokens.refresh(&rejected).await.map_err(|failure| {
            ErrorInfo::new(
                ErrorKind::Auth,
                format!(
                    "Cursor refused the access token ({}) and refreshing it failed: {}",
                    refused.message, failure.message
                ),
                NextStep::Login,
            )
        })?;
        self.ctx.token = Some(fresh);
        self.start().await
    }

    /// A transport failure (refused, reset, GOAWAY, stream reset) before the host saw any event of
    /// the turn: the Run is opened once more, planned afresh, exactly as the 401 replay does
    /// (docs/PROTOCOL-AGENT.md §9, §12.5: retrying is safe only before the first byte the user
    /// saw). Timeouts and clean early ends are not retried: waiting again would double the wait,
    /// and a backend that ends a stream on purpose ends the next one too.
    fn may_retry_network(&self, failure: Option<&AgentError>) -> bool {
        self.ctx.network_retry_left
            && !self.ctx.streamed
            && matches!(failure, Some(AgentError::Remote(info)) if info.kind == ErrorKind::Network)
    }

    /// Cursor at capacity refused the Run before the host saw anything: one more try after a
    /// backoff may find room (PROTOCOL-AGENT §13.2); a second refusal reaches the host.
    fn may_retry_capacity(&self, info: &ErrorInfo) -> bool {
        self.ctx.capacity_retry_left
            && !self.ctx.streamed
            && info.kind == ErrorKind::RemoteRefusal
            && info.next_step == NextStep::WaitAndRetry
    }

    /// Cursor answered a fresh (not resumed) Run `not_found` before anything streamed: it does
    /// not serve the model id in this form (a resumed Run's `not_found` is a stale resume).
    fn model_not_found(&self, failure: Option<&AgentError>) -> bool {
        !self.ctx.streamed
            && self.ctx.label != RunLabel::Resume
            && matches!(failure, Some(AgentError::Remote(info)) if info.code.as_deref() == Some("not_found"))
    }

    /// Once per turn, and only with an other id form the host gave (PROTOCOL-AGENT §13.7).
    fn may_retry_model(&self, failure: Option<&AgentError>) -> bool {
        self.ctx.models_not_found.is_empty()
            && self.ctx.model.alternate.is_some()
            && self.model_not_found(failure)
    }

    /// Opens the Run again with the model's other id form, and remembers that form for the
    /// session's later turns.
    async fn retry_model(&mut self, refused: &ErrorInfo) -> Result<Live, ErrorInfo> {
        let alternate = self.ctx.model.alternate.take().unwrap_or_default();
        let first = std::mem::replace(&mut self.ctx.model.slug, alternate.clone());
        self.debug(&Record::ModelRetry {
            refused: &first,
            retry: &alternate,
            failure: &refused.message,
        });
        {
            let mut learned = lock(&self.shared.learned_models);
            let before = learned.len();
            // A learned form refused now gives way: the host's form goes first again.
            learned.retain(|_, form| *form != first);
            if learned.len() == before {
                learned.insert(first.clone(), alternate);
            }
        }
        self.ctx.models_not_found.push(first);
        self.start().await
    }

    /// Neither id form is served: the host should pick a model its catalog lists.
    fn pick_model(&mut self, refused: &ErrorInfo) -> ErrorInfo {
        let mut tried = std::mem::take(&mut self.ctx.models_not_found);
        tried.push(self.ctx.model.slug.clone());
        {
            // A form learned earlier stopped working: the next turn starts from the host's.
            let mut learned = lock(&self.shared.learned_models);
            learned.retain(|_, form| !tried.contains(form));
        }
        let listed = if self.ctx.model.known_models.is_empty() {
            "refresh the model list".to_owned()
        } else {
            format!(
                "the catalog lists {}",
                self.ctx.model.known_models.join(", ")
            )
        };
        let mut info = ErrorInfo::new(
            ErrorKind::RemoteRefusal,
            format!(
                "Cursor does not serve model {} ({}); {listed}",
                tried.join(" nor "),
                refused.message
            ),
            NextStep::PickModel,
        );
        info.code.clone_from(&refused.code);
        info.http_status = refused.http_status;
        info
    }

    /// After a Run failed: when a resume was stale or Cursor lost the conversation's state,
    /// the rebuild to stream instead (once per turn, the handle dropped); `None` when the
    /// failure was anything else, or a second loss in the turn.
    async fn rebuild_if_stale(
        &mut self,
        failure: Option<AgentError>,
    ) -> Option<Result<Live, ErrorInfo>> {
        if !self.ctx.rebuild_left {
            return None;
        }
        let failure = failure?;
        // Lost server state is rebuilt whatever the Run was; a stale handle only on a resume.
        if self.ctx.label != RunLabel::Resume && !failure.is_server_state_lost() {
            return None;
        }
        let plan = self.ctx.planner.as_mut()?.recover(&failure).ok()?;
        self.ctx.rebuild_left = false;
        self.ctx.label = RunLabel::Rebuild;
        self.ctx.branched_from = None;
        self.debug(&Record::StaleRebuild(PlanRecord::of(&plan)));
        self.remove_handle().await;
        Some(self.launch(plan))
    }

    /// Keeps the Run open for the host's tool results, with the turn's context; what is left
    /// hands out the events queued meanwhile.
    fn park(self) -> Spent {
        let Self {
            shared,
            ctx,
            step,
            queue,
            active,
            ..
        } = self;
        if let Step::Park(live) = step {
            let previous = lock(&shared.parked).replace(Parked { live, ctx });
            if let Some(previous) = previous {
                previous.cancel();
            }
        }
        Spent {
            shared,
            queue,
            _active: active,
        }
    }

    fn fail(&mut self, info: ErrorInfo) {
        self.step = Step::Finished;
        self.queue.push_back(AgentEvent::Ir(Event::Error(info)));
    }

    fn warn(&mut self, code: WarningCode, message: String, next_step: Option<NextStep>) {
        self.queue
            .push_back(AgentEvent::Ir(Event::Warning(Warning::new(
                code, message, next_step,
            ))));
    }

    /// The repository and session id when this session keeps handles.
    fn store(&self) -> Option<(Arc<dyn HandleRepository>, String)> {
        Some((
            self.shared.handles.clone()?,
            self.shared.session_id.clone()?,
        ))
    }

    async fn load_handle(&mut self) -> Option<Handle> {
        let (repo, session) = self.store()?;
        match off_runtime(repo, move |repo| repo.load(&session)).await {
            Ok(Loaded::Found(handle)) => Some(handle),
            Ok(Loaded::Corrupt(warning)) => {
                self.warn(WarningCode::HandleSetAside, warning.to_string(), None);
                None
            }
            Ok(_) => None,
            Err(error) => {
                self.warn(
                    WarningCode::HandleSetAside,
                    format!("the resume handle could not be read ({error}); the conversation will be rebuilt"),
                    Some(error.next_step()),
                );
                None
            }
        }
    }

    async fn remove_handle(&mut self) {
        let Some((repo, session)) = self.store() else {
            return;
        };
        if let Err(error) = off_runtime(repo, move |repo| repo.remove(&session)).await {
            self.warn(
                WarningCode::HandleNotRemoved,
                format!("the stale resume handle could not be removed ({error}); it will be found stale again"),
                Some(error.next_step()),
            );
        }
    }

    /// Marks the stored handle of the current conversation as waiting for tool results.
    async fn mark_awaiting_tool_results(&mut self) {
        let Some((repo, session)) = self.store() else {
            return;
        };
        let Some(conversation_id) = self.ctx.conversation_id.clone() else {
            return;
        };
        // One read-modify-write: nothing may slip in between the load and the save.
        let marked = off_runtime(repo, move |repo| {
            let Loaded::Found(mut handle) = repo.load(&session)? else {
                return Ok(());
            };
            // The last turn, or an earlier one this Run resumed under its own id (§10.1).
            let mut marked = false;
            if handle.conversation_id == conversation_id {
                handle.awaiting_tool_results = true;
                marked = true;
            }
            for turn in &mut handle.earlier {
                if turn.conversation_id == conversation_id {
                    turn.awaiting_tool_results = true;
                    marked = true;
                }
            }
            if !marked {
                return Ok(());
            }
            repo.save(&session, &handle)
        })
        .await;
        if let Err(error) = marked {
            // Left unmarked, a retried turn may resume a conversation that waits forever.
            self.warn(
                WarningCode::HandleNotSaved,
                format!("the resume handle could not be marked as waiting for tool results ({error}); if this tool round is abandoned, remove it to avoid a stalled resume"),
                Some(error.next_step()),
            );
        }
    }

    /// Writes the completed turn's handle before its `Done` is handed out: the stored handle
    /// advanced by this turn, its earlier turns kept (PROTOCOL-AGENT §10.1).
    async fn persist(&mut self, point: ResumePoint) {
        let Some((repo, session)) = self.store() else {
            return;
        };
        let next = Handle::from_point(point, &self.ctx.conversation);
        let branched_from = self.ctx.branched_from;
        // One read-modify-write, as `mark_awaiting_tool_results` does.
        let saved = off_runtime(repo, move |repo| {
            let handle = match repo.load(&session) {
                Ok(Loaded::Found(stored)) => stored.advance(next, branched_from.as_ref()),
                _ => next,
            };
            repo.save(&session, &handle)
        })
        .await;
        if let Err(error) = saved {
            self.warn(
                WarningCode::HandleNotSaved,
                format!("the resume handle could not be written ({error}); the next process rebuilds the conversation instead of resuming it"),
                Some(error.next_step()),
            );
        }
    }

    /// A handle of another session of the repository holding the turn this session's history
    /// branched from, copied up to that turn and saved as this session's own
    /// ([`SessionConfig::find_branches`](super::SessionConfig::find_branches)).
    async fn find_branch(&mut self) -> Option<Handle> {
        let (repo, session) = self.store()?;
        let messages = self.ctx.conversation.messages.clone();
        let history = Fingerprint::of_history(crate::root_prompt::history_of(&messages));
        let found = off_runtime(repo, move |repo| {
            let Some((from, parent)) = repo.find_branch(&history)? else {
                return Ok(None);
            };
            if from == session {
                return Ok(None);
            }
            let Some(fingerprint) = parent.find_history(&history).copied() else {
                return Ok(None);
            };
            let Some(copy) = parent.branch_at(&fingerprint, &messages) else {
                return Ok(None);
            };
            repo.save(&session, &copy)?;
            Ok(Some((from, copy)))
        })
        .await;
        match found {
            Ok(Some((_, copy))) => {
                self.debug(&Record::BranchFound {
                    turns: copy.turns(),
                });
                Some(copy)
            }
            Ok(None) => None,
            Err(error) => {
                self.warn(
                    WarningCode::HandleNotSaved,
                    format!("the branch's resume handle could not be copied ({error}); the conversation will be rebuilt"),
                    Some(error.next_step()),
                );
                None
            }
        }
    }
}

/// `model` with the id form an earlier turn of this session found Cursor serves, the host's
/// form kept as the alternate.
fn learned_form(shared: &Inner, model: &ModelChoice) -> ModelChoice {
    let mut model = model.clone();
    if let Some(learned) = lock(&shared.learned_models).get(&model.slug) {
        let host = std::mem::replace(&mut model.slug, learned.clone());
        model.alternate = Some(host);
    }
    model
}

/// Runs a handle-store call on tokio's blocking pool: file locks and fsync may block for
/// seconds, and a session may run on a current-thread runtime (a CLI, the Node addon) whose
/// other tasks must keep running meanwhile.
async fn off_runtime<T: Send + 'static>(
    repo: Arc<dyn HandleRepository>,
    call: impl FnOnce(&dyn HandleRepository) -> Result<T, StoreError> + Send + 'static,
) -> Result<T, StoreError> {
    match tokio::task::spawn_blocking(move || call(repo.as_ref())).await {
        Ok(result) => result,
        Err(join) if join.is_panic() => std::panic::resume_unwind(join.into_panic()),
        Err(join) => Err(StoreError::Interrupted(join.to_string())),
    }
}

/// A next step's tag (`login`, `retry`, ...) without its detail text.
fn step_name(step: &NextStep) -> String {
    serde_json::to_value(step)
        .ok()
        .and_then(|value| {
            value
                .get("step")
                .and_then(serde_json::Value::as_str)
                .map(str::to_owned)
        })
        .unwrap_or_default()
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
