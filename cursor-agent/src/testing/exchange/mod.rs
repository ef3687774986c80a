//! One Run stream as the replica serves it.

use cursor_proto::agent::v1::{
    self as wire, AgentClientMessage, AgentRunRequest, AgentServerMessage,
    ConversationStateStructure, agent_client_message::Message as Client,
    agent_server_message::Message as Server, exec_client_control_message::Message as Control,
    interaction_update::Message as Update, kv_client_message::Message as KvReply,
};
use std::time::Duration;

use cursor_proto::selected_context_blob::SelectedContextBlob;
use cursor_transport::envelope::{Code, ConnectError};
use cursor_transport::testing::ServerCall;
use prost::Message as _;
use serde_json::Value;

use super::checkpoint::{StoredConversation, Turn};
use super::model::{self, Intent};
use super::{
    AllowedTools, Exhaustion, Fault, HoldOpen, Replica, RunRecord, Script, StateLoss, ToolNaming,
};
use crate::RunLabel;

mod execs;

/// How the stream ends once the exchange stops.
enum End {
    Ok,
    Error(ConnectError),
    /// Keep the stream open (until the client closes or resets it, or for a while).
    HoldOpen(HoldOpen),
    Unauthorized,
    /// The client is gone or broke the exchange; nothing more to send.
    Abandon,
    /// Break the transport under the stream.
    Fault(Fault),
}

/// Why the exchange stopped early: the record's outcome and how to end the stream.
struct Stop {
    outcome: String,
    end: End,
}

impl Stop {
    fn gone(what: impl std::fmt::Display) -> Self {
        Self {
            outcome: format!("client-closed: {what}"),
            end: End::Abandon,
        }
    }

    fn reject(why: impl Into<String>) -> Self {
        let why = why.into();
        Self {
            outcome: format!("rejected: {why}"),
            end: End::Error(ConnectError::new(Code::InvalidArgument, why)),
        }
    }
}

/// Serves one call and records it.
pub(super) async fn serve(replica: Replica, mut call: ServerCall) {
    // RunSSE is the same Run over HTTP/1.1; its client messages come from BidiAppend.
    let path = call.path();
    if path != cursor_transport::client::AGENT_RUN_PATH
        && path != cursor_transport::client::AGENT_RUN_SSE_PATH
    {
        let error = ConnectError::new(Code::Unimplemented, "the replica serves only Run");
        let _ = call.finish_error(error).await;
        return;
    }
    let script = replica.next_script();
    call.set_compression(replica.compression());
    let header = |name: &str| call.header(name).map(str::to_owned);
    let record = RunRecord {
        allowed_tools: header(ALLOWED_TOOLS_HEADER),
        client_version: header("x-cursor-client-version").unwrap_or_default(),
        http1: call.is_http1(),
        ..RunRecord::default()
    };
    let mut exchange = Exchange {
        replica: &replica,
        call: &mut call,
        record,
        next_id: 1,
        provider: String::new(),
        tools: Vec::new(),
        conversation: None,
        awaiting_exec: false,
        generation: replica.generation(),
        tool_naming: match &script {
            Script::ToolNaming(naming) => *naming,
            _ => replica.tool_naming(),
        },
    };
    let end = match exchange.run(script).await {
        Ok(end) => {
            if exchange.record.outcome.is_empty() {
                exchange.record.outcome = "completed".into();
            }
            end
        }
        Err(stop) => {
            // The client left while the model waited for an exec result: the backend keeps
            // waiting for it (docs/PROTOCOL-AGENT.md §12.5).
            if exchange.awaiting_exec
                && matches!(stop.end, End::Abandon)
                && let Some((id, mut conversation)) = exchange.conversation.take()
            {
                conversation.owes_tool_result = true;
                replica.store(&id, conversation);
            }
            exchange.record.outcome = stop.outcome;
            stop.end
        }
    };
    let record = exchange.record;
    replica.record(record);
    match end {
        End::Ok => {
            let _ = call.finish_ok().await;
        }
        End::Error(error) => {
            let _ = call.finish_error(error).await;
        }
        End::Unauthorized => {
            let error = ConnectError::new(Code::Unauthenticated, "Not logged in");
            let _ = call
                .respond(401, "application/json", error.to_unary_json())
                .await;
        }
        End::HoldOpen(hold) => hold_open(&replica, call, hold).await,
        End::Abandon => {}
        End::Fault(Fault::ResetStream) => {
            call.reset(cursor_transport::testing::REASON_INTERNAL_ERROR)
        }
        End::Fault(Fault::CloseConnection) => call.sever(),
        End::Fault(Fault::GoawayWithError) => call.goaway_with_error(),
    }
}

/// The first-party tool restriction header (docs/PROTOCOL-AGENT.md §12.3).
const ALLOWED_TOOLS_HEADER: &str = "x-cursor-agent-allowed-tools";

/// What Cursor says to a client below its version floor (docs/PROTOCOL-AGENT.md §12.4).
const UPDATE_REQUIRED: &str =
    "Please update to the latest version of Cursor to continue using the Agent";

/// Keeps a finished stream open as `hold` says, with idle heartbeats when configured, until
/// the client closes or resets it.
async fn hold_open(replica: &Replica, mut call: ServerCall, hold: HoldOpen) {
    let until = match hold {
        HoldOpen::For(wait) => Some(tokio::time::Instant::now() + wait),
        _ => None,
    };
    let heartbeat = AgentServerMessage {
        message: Some(Server::InteractionUpdate(wire::InteractionUpdate {
            message: Some(Update::Heartbeat(wire::HeartbeatUpdate::default())),
            ..Default::default()
        })),
        ..Default::default()
    }
    .encode_to_vec();
    loop {
        let tick = replica.idle_heartbeat();
        tokio::select! {
            received = call.recv() => match received {
                Ok(Some(_)) => {}
                // Closed or reset by the client.
                _ => return,
            },
            () = sleep_or_never(tick) => {
                if call.send(&heartbeat).await.is_err() {
                    return;
                }
            }
            () = sleep_until_or_never(until) => {
                let _ = call.finish_ok().await;
                return;
            }
        }
    }
}

async fn sleep_or_never(wait: Option<Duration>) {
    match wait {
        Some(wait) => tokio::time::sleep(wait).await,
        None => std::future::pending().await,
    }
}

async fn sleep_until_or_never(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

struct Exchange<'a> {
    replica: &'a Replica,
    call: &'a mut ServerCall,
    record: RunRecord,
    /// Ids of KV and exec requests, unique within the stream.
    next_id: u32,
    /// The MCP provider identifier of the host's tools.
    provider: String,
    /// The names of the host's tools (from the run request, or kept from earlier Runs).
    tools: Vec<String>,
    /// The conversation id and what it held when this Run began (to mark it when the client
    /// abandons a tool round).
    conversation: Option<(String, StoredConversation)>,
    /// An exec request is out and its `stream_close` has not arrived yet.
    awaiting_exec: bool,
    /// How the model names the host tools it calls.
    tool_naming: ToolNaming,
    /// The backend's generation when this Run began (see [`Replica::restart`]).
    generation: u64,
}

impl Exchange<'_> {
    async fn run(&mut self, script: Script) -> Result<End, Stop> {
        if self.replica.fail_auth() || script == Script::Unauthenticated {
            return Err(Stop {
                outcome: "unauthenticated".into(),
                end: End::Unauthorized,
            });
        }
        let request = self.run_request().await?;
        let script = match script {
            Script::Delayed(wait, then) => {
                tokio::time::sleep(wait).await;
                *then
            }
            other => other,
        };
        if let Some(floor) = self.replica.min_client_version()
            && self.record.client_version.as_str() < floor.as_str()
        {
            return Err(refused("update-required", UPDATE_REQUIRED));
        }
        if self.replica.refuses_model(&self.record.model) {
            return Err(model_not_found(&self.record.model));
        }
        let state = request.conversation_state.clone().unwrap_or_default();
        let conversation_id = request.conversation_id.clone().unwrap_or_default();
        match &script {
            Script::NotFound => return Err(not_found()),
            Script::MalformedFrame => {
                self.send_bytes(&[0xff, 0xff, 0xff, 0xff]).await?;
                return self.scripted();
            }
            Script::Frames(frames) => {
                for frame in frames {
                    self.send_bytes(&frame.encode_to_vec()).await?;
                }
                return self.scripted();
            }
            Script::Burst(frames) => {
                let encoded: Vec<Vec<u8>> = frames.iter().map(|f| f.encode_to_vec()).collect();
                self.call
                    .send_batch(encoded.iter().map(Vec::as_slice))
                    .await
                    .map_err(Stop::gone)?;
                return self.scripted();
            }
            Script::Silent => {
                self.record.outcome = "silent".into();
                return Ok(End::HoldOpen(HoldOpen::Forever));
            }
            Script::ResourceExhausted(message) => {
                return Err(refused("resource-exhausted", message));
            }
            Script::FaultBeforeFirstFrame(fault) => {
                return Err(Stop {
                    outcome: format!("fault: {fault:?}"),
                    end: End::Fault(*fault),
                });
            }
            Script::FramesThenFault(frames, fault) => {
                for frame in frames {
                    self.send_bytes(&frame.encode_to_vec()).await?;
                }
                self.read_frames_sent().await?;
                return Err(Stop {
                    outcome: format!("fault: {fault:?}"),
                    end: End::Fault(*fault),
                });
            }
            Script::Exhausted(Exhaustion::ContextOverflow) => {
                // The backend reads the whole prompt before it finds it too long.
                self.read_root_prompt(&state, &request).await?;
                return Err(refused(
                    "resource-exhausted",
                    &Exhaustion::ContextOverflow.message(&self.record.model),
                ));
            }
            Script::LoseState(loss) => return Err(lost(*loss)),
            Script::Exhausted(meaning) => {
                return Err(refused(
                    "resource-exhausted",
                    &meaning.message(&self.record.model),
                ));
            }
            Script::Model
            | Script::InteractionQuery(_)
            | Script::ToolNaming(_)
            | Script::Unauthenticated
            | Script::BlobMiss
            | Script::StaleAfterTools
            // Unwrapped above: a delay nested in a delay only waits once.
            | Script::Delayed(..) => {}
        }

        let mut stored = self.replica.conversation(&conversation_id);
        let expired = |c: &StoredConversation| {
            let ttl = self.replica.checkpoint_ttl();
            c.checkpointed_at
                .zip(ttl)
                .is_some_and(|(at, ttl)| at.elapsed() > ttl)
        };
        if !state.turns.is_empty()
            && let Some(loss) = stored.as_ref().and_then(|c| {
                c.lost
                    .or_else(|| expired(c).then_some(StateLoss::ConversationData))
            })
        {
            self.record.label = RunLabel::Resume.as_str().into();
            self.replica.forget(&conversation_id);
            return Err(lost(loss));
        }
        stored = stored.filter(|c| c.lost.is_none());
        if stored.as_ref().is_some_and(|c| c.owes_tool_result) {
            // The live backend neither answers nor fails such a Run (docs/PROTOCOL-AGENT.md §12.5).
            self.record.outcome = "stalled: the conversation owes a tool result".into();
            return Ok(End::HoldOpen(HoldOpen::Forever));
        }
        let resumed = match (&stored, state.turns.is_empty()) {
            (_, true) => None,
            (Some(stored), false) if stored.journal() == state.turns => Some(stored.clone()),
            // A new conversation id starting from a checkpoint this backend sent (a branch of
            // another conversation, docs/PROTOCOL-AGENT.md §10.1): the conversation state is
            // the client's, so the new id starts from it, without the other id's tool
            // registration. An expired one is lost state (§13.3).
            (None, false) => match self.replica.issued_at(&state.turns) {
                Some(at)
                    if self
                        .replica
                        .checkpoint_ttl()
                        .is_some_and(|ttl| at.elapsed() > ttl) =>
                {
                    self.record.label = RunLabel::Resume.as_str().into();
                    return Err(lost(StateLoss::ConversationData));
                }
                Some(_) => Some(StoredConversation::from_journal(&state.turns)),
                None => return Err(not_found()),
            },
            // A journal this backend never wrote, or an outdated one of this id: the
            // conversation is gone.
            _ => return Err(not_found()),
        };
        let advertised = request.mcp_tools.as_ref().map(|t| t.mcp_tools.as_slice());
        self.provider = advertised
            .and_then(|tools| tools.first())
            .map(|tool| tool.provider_identifier.clone())
            .or_else(|| resumed.as_ref().map(|stored| stored.provider.clone()))
            .unwrap_or_default();
        self.tools = match advertised {
            Some(tools) => tools.iter().map(|t| t.name.clone()).collect(),
            None => resumed
                .as_ref()
                .map(|s| s.tools.clone())
                .unwrap_or_default(),
        };
        let label = match resumed {
            Some(_) => RunLabel::Resume,
            None => RunLabel::Rebuild,
        };
        self.record.label = label.as_str().into();
        let mut conversation = resumed.unwrap_or_default();
        if self.replica.check_image_ids() && !conversation.check_images(&request) {
            // The backend keeps the poisoned conversation: every later Run of it fails so.
            conversation.poisoned = true;
            self.replica.store(&conversation_id, conversation);
            return Err(image_not_found());
        }
        conversation.provider = self.provider.clone();
        conversation.tools = self.tools.clone();
        self.conversation = Some((conversation_id.clone(), conversation.clone()));
        if script == Script::BlobMiss {
            self.fetch_blob(&[0xee; 32]).await?;
            return Err(Stop::reject("a blob nobody stored was answered"));
        }
        let root_texts = self.read_root_prompt(&state, &request).await?;
        // A stateless Run carrying too much structured history is reset (§13.4).
        if label == RunLabel::Rebuild
            && let Some(limit) = self.replica.structured_history_limit()
            && self.record.structured_history_bytes > limit
        {
            return Err(Stop {
                outcome: format!(
                    "reset: structured history of {} bytes over {limit}",
                    self.record.structured_history_bytes
                ),
                end: End::Fault(Fault::ResetStream),
            });
        }

        // The backend asks its queries while the model works (§13.6).
        let probe = self.replica.interaction_probe();
        if let Script::InteractionQuery(arm) = &script {
            self.interaction_query(*arm, probe.unwrap_or(Duration::from_secs(1)))
                .await?;
        }
        if let Some(idle) = probe {
            for arm in 2..=9 {
                self.interaction_query(arm, idle).await?;
            }
        }

        // What the model sees: the root prompt's history (a rebuilt conversation keeps it in
        // its checkpoint), then the turns this backend journaled.
        let mut earlier = root_texts;
        earlier.extend(conversation.turns.iter().map(|t| t.user.clone()));
        let user_text = self.record.user_text.clone();
        let answer = match model::intent(&user_text, &earlier) {
            Intent::Answer(answer) => answer,
            Intent::Shell(command) if self.shell_allowed() => self.shell(&command, &state).await?,
            Intent::Shell(command) => self.command_through_mcp(&command).await?,
            Intent::Tools(calls) => {
                let names: Vec<&str> = calls.iter().map(|c| c.name.as_str()).collect();
                if self.replica.mcp_state_requests().asks(&self.record.model)
                    && !self.mcp_state_lists(&names).await?
                {
                    // What a model without tools does: it narrates instead of calling.
                    let names = names.join(" and ");
                    format!("I would call {names}, but no MCP tools are available to me.")
                } else {
                    self.tools(&calls).await?
                }
            }
            Intent::Natives => self.natives(&state).await?,
        };
        if script == Script::StaleAfterTools {
            self.replica.forget(&conversation_id);
            return Err(not_found());
        }
        for delta in model::deltas(&answer) {
            self.update(Update::TextDelta(wire::TextDeltaUpdate { text: delta }))
                .await?;
            self.update(Update::TokenDelta(wire::TokenDeltaUpdate { tokens: 1 }))
                .await?;
        }
        self.record.answer = answer.clone();

        conversation.turns.push(Turn {
            user: user_text,
            assistant: answer.clone(),
        });
        let checkpoint = conversation.checkpoint(&state);
        self.replica
            .issue(&conversation_id, &conversation.journal());
        conversation.checkpointed_at = Some(std::time::Instant::now());
        self.replica.store(&conversation_id, conversation);
        self.send(Server::ConversationCheckpointUpdate(checkpoint))
            .await?;
        let output = i64::try_from(model::deltas(&answer).len()).unwrap_or(i64::MAX);
        self.update(Update::TurnEnded(wire::TurnEndedUpdate {
            output_tokens: Some(output),
            ..Default::default()
        }))
        .await?;
        Ok(match self.replica.hold_open() {
            HoldOpen::Close => End::Ok,
            hold => End::HoldOpen(hold),
        })
    }

    /// Whether the model may use the native shell: the client's allowed-tools header lists
    /// it, or there is no header, or this replica ignores the header.
    fn shell_allowed(&self) -> bool {
        match (&self.record.allowed_tools, self.replica.allowed_tools()) {
            (None, _) | (_, AllowedTools::Ignore) => true,
            (Some(allowed), AllowedTools::Honour) => allowed
                .split(',')
                .any(|tool| tool.trim() == "shell_tool_call"),
        }
    }

    fn scripted(&mut self) -> Result<End, Stop> {
        self.record.outcome = "scripted".into();
        Ok(End::Ok)
    }

    /// Reads and checks the run request, filling the record's request fields.
    async fn run_request(&mut self) -> Result<AgentRunRequest, Stop> {
        let Some(Client::RunRequest(request)) = self.next().await? else {
            return Err(Stop::reject("the first frame is not a run request"));
        };
        let Some(wire::conversation_action::Action::UserMessageAction(action)) =
            request.action.as_ref().and_then(|a| a.action.as_ref())
        else {
            return Err(Stop::reject("the run request carries no user message"));
        };
        let user = action.user_message.clone().unwrap_or_default();
        self.record.conversation_id = request.conversation_id.clone().unwrap_or_default();
        self.record.model = request
            .requested_model
            .as_ref()
            .map(|m| m.model_id.clone())
            .unwrap_or_default();
        self.record.images = user
            .selected_context
            .iter()
            .flat_map(|c| &c.selected_images)
            .map(|image| image.uuid.clone())
            .collect();
        self.record.user_text = user.text;
        self.record.mcp_tools_sent = request.mcp_tools.is_some();
        self.record.request_bytes += prost::Message::encoded_len(&request);
        if self.record.conversation_id.is_empty() {
            return Err(Stop::reject("the run request has no conversation id"));
        }
        Ok(request)
    }

    /// Fetches every root-prompt blob and the selected-context blob over KV, checks them, and
    /// returns the user texts the root prompt carries.
    async fn read_root_prompt(
        &mut self,
        state: &ConversationStateStructure,
        request: &AgentRunRequest,
    ) -> Result<Vec<String>, Stop> {
        let mut texts = Vec::new();
        for id in &state.root_prompt_messages_json {
            let blob = self.fetch_blob(id).await?;
            self.record.blobs_fetched += 1;
            let message: Value = serde_json::from_slice(&blob)
                .map_err(|e| Stop::reject(format!("a root prompt blob is not JSON: {e}")))?;
            if self.read_prompt_message(&message, &mut texts) {
                self.record.structured_history_bytes += blob.len();
            }
        }
        self.record.root_prompt_user_texts = texts.clone();
        let context_id = match request.action.as_ref().and_then(|a| a.action.as_ref()) {
            Some(wire::conversation_action::Action::UserMessageAction(action)) => action
                .user_message
                .as_ref()
                .map(|m| m.selected_context_blob.clone())
                .unwrap_or_default(),
            _ => Vec::new(),
        };
        if !context_id.is_empty() {
            let blob = self.fetch_blob(&context_id).await?;
            let context = SelectedContextBlob::decode(&blob)
                .map_err(|e| Stop::reject(format!("selected context blob: {e}")))?;
            if context.root_prompt_blob_ids != state.root_prompt_messages_json {
                return Err(Stop::reject(
                    "the selected context blob names other root prompt blobs",
                ));
            }
        }
        Ok(texts)
    }

    /// Reads one root prompt message; true when it is structured history (neither the rules
    /// nor the archive).
    fn read_prompt_message(&mut self, message: &Value, texts: &mut Vec<String>) -> bool {
        let role = message.get("role").and_then(Value::as_str).unwrap_or("");
        let parts = message.get("content").and_then(Value::as_array);
        let text = parts
            .into_iter()
            .flatten()
            .filter(|p| p.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n");
        if role == "user" && text.starts_with("<rules>") {
            return false;
        }
        self.record.history_replayed = true;
        if role == "user" && text.starts_with("<conversation_archive>") {
            // The model reads the archived turns' queries like replayed ones.
            texts.extend(tagged(&text, "<user_query>\n", "\n</user_query>").map(str::to_owned));
            return false;
        }
        if role == "tool" {
            let results = parts
                .into_iter()
                .flatten()
                .filter(|p| p.get("type").and_then(Value::as_str) == Some("tool-result"))
                .filter_map(|p| p.get("result").and_then(Value::as_str));
            self.record
                .root_prompt_tool_results
                .extend(results.map(str::to_owned));
        }
        if role == "user" {
            let inner = text
                .strip_prefix("<user_query>\n")
                .and_then(|t| t.strip_suffix("\n</user_query>"))
                .unwrap_or(&text);
            texts.push(inner.to_owned());
        }
        true
    }

    /// Sends an `InteractionQuery` with an empty payload in arm `arm` (encoded by hand, so an
    /// arm this crate does not know can be sent too) and waits `idle` for its answer, which
    /// must come in the same arm; unanswered, the stream is reset.
    async fn interaction_query(&mut self, arm: u32, idle: Duration) -> Result<(), Stop> {
        use prost::encoding::{WireType, encode_key, encode_varint};
        let id = self.next_id();
        let mut query = Vec::new();
        prost::encoding::uint32::encode(1, &id, &mut query);
        encode_key(arm, WireType::LengthDelimited, &mut query);
        encode_varint(0, &mut query);
        let mut frame = Vec::new();
        // AgentServerMessage.interaction_query = 7
        prost::encoding::bytes::encode(7, &query, &mut frame);
        self.send_bytes(&frame).await?;
        let answer = match tokio::time::timeout(idle, self.next()).await {
            Err(_) => {
                return Err(Stop {
                    outcome: format!("reset: interaction query {arm} unanswered for {idle:?}"),
                    end: End::Fault(Fault::ResetStream),
                });
            }
            Ok(Ok(Some(Client::InteractionResponse(response)))) if response.id == id => {
                response.result
            }
            Ok(Ok(_)) => return Err(Stop::reject("expected the answer to an interaction query")),
            Ok(Err(stop)) => return Err(stop),
        };
        let Some((answered, word)) = answer.as_ref().map(interaction_answer) else {
            return Err(Stop::reject(
                "an interaction query was answered with no result",
            ));
        };
        if answered != arm {
            return Err(Stop::reject(format!(
                "interaction query {arm} answered in arm {answered}"
            )));
        }
        self.record.interactions.push(format!("{arm} {word}"));
        Ok(())
    }

    /// Asks for one blob; the client must answer it with data.
    async fn fetch_blob(&mut self, blob_id: &[u8]) -> Result<Vec<u8>, Stop> {
        let id = self.next_id();
        self.send(Server::KvServerMessage(wire::KvServerMessage {
            id,
            message: Some(wire::kv_server_message::Message::GetBlobArgs(
                wire::GetBlobArgs {
                    blob_id: blob_id.to_vec(),
                },
            )),
        }))
        .await?;
        match self.next().await {
            Ok(Some(Client::KvClientMessage(wire::KvClientMessage {
                id: answered,
                message: Some(KvReply::GetBlobResult(result)),
            }))) if answered == id => {
                let data = result
                    .blob_data
                    .ok_or_else(|| Stop::reject("a blob was answered without data"))?;
                self.record.request_bytes += data.len();
                Ok(data)
            }
            Ok(_) => Err(Stop::reject("expected the answer to a blob request")),
            // A client that lacks the blob fails closed and leaves: that is the miss.
            Err(_) => Err(Stop {
                outcome: "blob-miss".into(),
                end: End::Abandon,
            }),
        }
    }

    /// The next client frame that is not a keep-alive (sending heartbeats meanwhile, when the
    /// replica is told to).
    async fn next(&mut self) -> Result<Option<Client>, Stop> {
        loop {
            let restarted = self.replica.restarted();
            let notified = restarted.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            // A restart drops the tool session of a Run waiting for tool results.
            let awaiting = self.awaiting_exec;
            if awaiting && self.replica.generation() != self.generation {
                return Err(lost(StateLoss::ToolSession));
            }
            let every = self.replica.idle_heartbeat();
            let wait = async {
                match every {
                    None => Some(self.call.recv().await),
                    Some(every) => tokio::time::timeout(every, self.call.recv()).await.ok(),
                }
            };
            let received = tokio::select! {
                received = wait => received,
                () = &mut notified, if awaiting => return Err(lost(StateLoss::ToolSession)),
            };
            let Some(received) = received else {
                self.update(Update::Heartbeat(wire::HeartbeatUpdate::default()))
                    .await?;
                continue;
            };
            let bytes = match received {
                Ok(Some(bytes)) => bytes,
                Ok(None) => return Err(Stop::gone("half-closed")),
                Err(error) => return Err(Stop::gone(error)),
            };
            let frame = AgentClientMessage::decode(bytes)
                .map_err(|e| Stop::reject(format!("undecodable client frame: {e}")))?;
            match frame.message {
                Some(Client::ClientHeartbeat(_)) => {}
                Some(Client::ExecClientControlMessage(wire::ExecClientControlMessage {
                    message: Some(Control::Heartbeat(_)),
                })) => {}
                other => return Ok(other),
            }
        }
    }

    async fn update(&mut self, update: Update) -> Result<(), Stop> {
        self.send(Server::InteractionUpdate(wire::InteractionUpdate {
            message: Some(update),
            ..Default::default()
        }))
        .await
    }

    async fn send(&mut self, message: Server) -> Result<(), Stop> {
        let frame = AgentServerMessage {
            message: Some(message),
            ..Default::default()
        };
        self.send_bytes(&frame.encode_to_vec()).await
    }

    async fn send_bytes(&mut self, bytes: &[u8]) -> Result<(), Stop> {
        self.call.send(bytes).await.map_err(Stop::gone)
    }

    fn next_id(&mut self) -> u32 {
        let id = self.next_id;
        self.next_id += 1;
        id
    }
}

/// The arm of an interaction answer and what it says.
fn interaction_answer(answer: &wire::interaction_response::Result) -> (u32, &'static str) {
    use wire::interaction_response::Result as Answer;
    let approval = |response: &wire::ApprovalResponse| match response.result {
        Some(wire::approval_response::Result::Approved(_)) => "approved",
        Some(wire::approval_response::Result::Rejected(_)) => "rejected",
        None => "empty",
    };
    match answer {
        Answer::WebSearchRequestResponse(r) => (2, approval(r)),
        Answer::AskQuestionInteractionResponse(r) => {
            (3, if r.result.is_some() { "error" } else { "empty" })
        }
        Answer::SwitchModeRequestResponse(r) => (4, approval(r)),
        Answer::ExaSearchRequestResponse(r) => (5, approval(r)),
        Answer::ExaFetchRequestResponse(r) => (6, approval(r)),
        Answer::CreatePlanRequestResponse(r) => {
            (7, if r.result.is_some() { "error" } else { "empty" })
        }
        Answer::SetupVmEnvironmentResult(r) => (
            8,
            if r.result.is_some() {
                "success"
            } else {
                "empty"
            },
        ),
        Answer::WebFetchRequestResponse(r) => (9, approval(r)),
    }
}

/// Every text between `open` and `close` in `text`, in order.
fn tagged<'t>(text: &'t str, open: &'t str, close: &'t str) -> impl Iterator<Item = &'t str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        let start = rest.find(open)? + open.len();
        let len = rest[start..].find(close)?;
        let found = &rest[start..start + len];
        rest = &rest[start + len + close.len()..];
        Some(found)
    })
}

/// A refusal the way Cursor sends rate limits, quotas and version floors: HTTP 200, then an
/// end-of-stream `resource_exhausted` (docs/PROTOCOL-AGENT.md §12.4, §12.5).
fn refused(outcome: &str, message: &str) -> Stop {
    Stop {
        outcome: outcome.into(),
        end: End::Error(ConnectError::new(Code::ResourceExhausted, message)),
    }
}

/// A Run failed the way the backend reports lost state (PROTOCOL-AGENT §13.3).
fn lost(loss: StateLoss) -> Stop {
    Stop {
        outcome: format!("state-lost: {loss:?}"),
        end: End::Error(loss.error()),
    }
}

/// The backend does not serve `model` in this id form (PROTOCOL-AGENT §13.7).
fn model_not_found(model: &str) -> Stop {
    Stop {
        outcome: "model-not-found".into(),
        end: End::Error(ConnectError::new(
            Code::NotFound,
            format!("model {model} not found"),
        )),
    }
}

/// What the backend answers an image it cannot match to what it was sent (§13.5).
fn image_not_found() -> Stop {
    Stop {
        outcome: "image-not-found".into(),
        end: End::Error(ConnectError::new(
            Code::Internal,
            "Image not found [internal]",
        )),
    }
}

fn not_found() -> Stop {
    Stop {
        outcome: "not-found".into(),
        end: End::Error(ConnectError::new(Code::NotFound, "conversation not found")),
    }
}
