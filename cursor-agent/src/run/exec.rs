//! Exec requests: each is answered by the policy's decision (refused, thrown, reported),
//! lifted to a host tool call (MCP), or translated into one (native requests); never run.

use std::time::Instant;

use cursor_proto::agent::v1::{self as wire, McpArgs, exec_client_message::Message as Reply};
use cursor_proto::ir::{Event, Tool, ToolCall};

use super::AgentRun;
use super::calls::PendingCall;
use super::timers::Timer;
use crate::event::{ExecAudit, ExecOutcome};
use crate::intent::Intent;
use crate::policy::{Decision, ExecArm, Refusal, decide};
use crate::redirect::Redirector;
use crate::translate::{self, Translation};
use crate::{AgentError, AgentEvent, frames, mcp, ranking, trace};

impl AgentRun {
    pub(super) fn on_exec(
        &mut self,
        exec: wire::ExecServerMessage,
        now: Instant,
    ) -> Result<(), AgentError> {
        let id = exec.id;
        if self.phase.calls().is_some_and(|calls| calls.holds_exec(id)) {
            return Err(AgentError::drift(format!(
                "exec id {id} reused while pending"
            )));
        }
        let (arm, decision) = decide(exec.message);
        let exec_id = exec.exec_id;
        match decision {
            // Native translation: a host tool call when a host tool can serve the request,
            // the typed refusal otherwise (§5.1).
            Decision::Translate { native, refusal } => {
                match translate::plan(&native, &self.live_tools) {
                    Some(translation) => self.translate(id, exec_id, arm, translation, now),
                    None => self.refuse(id, &exec_id, arm, refusal, &native.intent()),
                }
            }
            Decision::Refuse { refusal, intent } => {
                self.refuse(id, &exec_id, arm, refusal, &intent)
            }
            Decision::Throw { intent } => self.throw(id, arm, &intent),
            Decision::ReportContext => {
                self.transmits.push_back(frames::exec_reply(
                    id,
                    &exec_id,
                    Reply::RequestContextResult(self.request_context()),
                ));
                self.transmits.push_back(frames::stream_close(id));
                self.audit(id, arm, ExecOutcome::ContextReported);
                Ok(())
            }
            Decision::ReportMcpState(args) => {
                let (result, servers, tools) =
                    mcp::state(&args, &self.config.profile, &self.definitions);
                self.transmits.push_back(frames::exec_reply(
                    id,
                    &exec_id,
                    Reply::McpStateExecResult(result),
                ));
                self.transmits.push_back(frames::stream_close(id));
                self.audit(id, arm, ExecOutcome::McpStateReported { servers, tools });
                Ok(())
            }
            Decision::Lift(args) => self.lift(id, exec_id, &args, now),
        }
    }

    pub(super) fn refuse(
        &mut self,
        id: u32,
        exec_id: &str,
        arm: ExecArm,
        refusal: Refusal,
        intent: &Intent,
    ) -> Result<(), AgentError> {
        let hardened = self.miss()?;
        let reason = self.redirector().text(arm.native_name(), intent, hardened);
        self.transmits
            .push_back(frames::exec_reply(id, exec_id, refusal.reply(reason)));
        self.transmits.push_back(frames::stream_close(id));
        self.audit(id, arm, ExecOutcome::Refused);
        Ok(())
    }

    pub(super) fn throw(
        &mut self,
        id: u32,
        arm: ExecArm,
        intent: &Intent,
    ) -> Result<(), AgentError> {
        let hardened = self.miss()?;
        let reason = self.redirector().text(arm.native_name(), intent, hardened);
        self.transmits.push_back(frames::throw(id, reason));
        self.transmits.push_back(frames::stream_close(id));
        self.audit(id, arm, ExecOutcome::Thrown);
        Ok(())
    }

    pub(super) fn lift(
        &mut self,
        id: u32,
        exec_id: String,
        args: &McpArgs,
        now: Instant,
    ) -> Result<(), AgentError> {
        let provider = &self.config.profile.provider_identifier;
        let raw = mcp::raw_name(args);
        let registered = |tools: &[Tool], name: &str| tools.iter().any(|tool| tool.name == name);
        let resolved = mcp::resolve(raw, provider, |name| {
            registered(&self.catalog, name) || registered(&self.live_tools, name)
        })
        .filter(|_| !mcp::foreign_provider(args, provider))
        .map(str::to_owned);
        let Some(name) = resolved else {
            let name = mcp::unresolved_name(raw, provider).to_owned();
            self.miss()?;
            let available = ranking::rank_by_shared_words(&self.live_tools, &name);
            self.transmits.push_back(frames::exec_reply(
                id,
                &exec_id,
                Reply::McpResult(mcp::not_found(&name, available)),
            ));
            self.transmits.push_back(frames::stream_close(id));
            self.audit(id, ExecArm::Mcp, ExecOutcome::ToolNotFound { name });
            return Ok(());
        };
        let call = mcp::tool_call(args, &name, format!("exec-{id}"));
        self.hand_to_host(id, exec_id, ExecArm::Mcp, call, None, now)
    }

    /// Hands a translated native request to the host as an ordinary tool call; its result is
    /// encoded back into the native shape, and heartbeats keep the exec alive meanwhile.
    pub(super) fn translate(
        &mut self,
        id: u32,
        exec_id: String,
        arm: ExecArm,
        translation: Translation,
        now: Instant,
    ) -> Result<(), AgentError> {
        let call = ToolCall::new(
            format!("exec-{id}"),
            translation.tool.clone(),
            translation.arguments.clone(),
        );
        self.hand_to_host(id, exec_id, arm, call, Some(Box::new(translation)), now)
    }

    /// Parks exec `id` as a host tool call (an MCP lift, or a translated native request with
    /// the `translation` that encodes its result back) and hands `call` to the host; calls
    /// arriving within the debounce end the leg together.
    fn hand_to_host(
        &mut self,
        id: u32,
        exec_id: String,
        arm: ExecArm,
        call: ToolCall,
        translation: Option<Box<Translation>>,
        now: Instant,
    ) -> Result<(), AgentError> {
        let held = self.phase.calls().map_or(0, |calls| calls.len());
        if held >= self.config.limits.max_pending_tool_calls {
            return Err(AgentError::drift(
                "more concurrent tool calls than the run allows",
            ));
        }
        // The model called a real host tool: the loop guard starts over.
        self.misses = 0;
        let tool_call_id = call.id.clone();
        let outcome = match &translation {
            Some(translation) => {
                if !self.deadlines.is_armed(Timer::ExecHeartbeat) {
                    self.deadlines.set(
                        Timer::ExecHeartbeat,
                        now + self.config.timers.exec_heartbeat_interval,
                    );
                }
                ExecOutcome::Translated {
                    tool_call_id,
                    tool: translation.tool.clone(),
                }
            }
            None => ExecOutcome::HostToolCall { tool_call_id },
        };
        let span = self.audit(id, arm, outcome);
        if let Some(calls) = self.phase.calls_mut() {
            calls.push(PendingCall {
                id,
                exec_id,
                tool_call_id: call.id.clone(),
                yielded: false,
                translation,
                issued_at: now,
                span,
            });
        }
        self.emit(Event::ToolCall(call))?;
        if self.phase.is_streaming() {
            self.deadlines
                .set(Timer::Debounce, now + self.config.timers.tool_call_debounce);
        }
        Ok(())
    }

    pub(super) fn on_exec_control(
        &mut self,
        control: wire::ExecServerControlMessage,
    ) -> Result<(), AgentError> {
        match control.message {
            Some(wire::exec_server_control_message::Message::Abort(abort)) => {
                let cap = self.config.limits.max_pending_tool_calls;
                if let Some(calls) = self.phase.calls_mut()
                    && calls.abort(abort.id, cap)
                    && calls.is_empty()
                {
                    self.deadlines.stop(Timer::Debounce);
                }
                Ok(())
            }
            None => Err(AgentError::drift("unknown exec control arm")),
        }
    }

    pub(super) fn request_context(&self) -> wire::RequestContextResult {
        wire::RequestContextResult {
            result: Some(wire::request_context_result::Result::Success(
                wire::RequestContextSuccess {
                    request_context: Some(wire::RequestContext {
                        env: Some(wire::RequestContextEnv {
                            workspace_paths: self.config.workspace_uris.clone(),
                            ..wire::RequestContextEnv::default()
                        }),
                        tools: self.definitions.clone(),
                    }),
                },
            )),
        }
    }

    /// Counts one unproductive request. Returns whether texts must harden; at the budget the
    /// run fails closed.
    pub(super) fn miss(&mut self) -> Result<bool, AgentError> {
        self.misses = self.misses.saturating_add(1);
        let limits = &self.config.limits;
        if self.misses >= limits.miss_budget {
            return Err(AgentError::LoopGuard {
                misses: self.misses,
                suggested_tool: self.redirector().command_tool(),
            });
        }
        Ok(self.misses >= limits.escalate_after)
    }

    pub(super) fn redirector(&self) -> Redirector<'_> {
        Redirector {
            tools: &self.live_tools,
            prefix: &self.prefix,
            host: &self.config.profile.display_name,
        }
    }

    /// Queues the audit record of an answered exec and opens its span (closed when the
    /// returned span is dropped: at once, or when the host's result is sent).
    pub(super) fn audit(&mut self, id: u32, arm: ExecArm, outcome: ExecOutcome) -> tracing::Span {
        let span = trace::exec_span(&self.span, id, arm, &outcome);
        self.events
            .push(AgentEvent::Exec(ExecAudit { id, arm, outcome }));
        span
    }
}
