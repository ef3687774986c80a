//! A tool round: the leg ends with `ToolUse`, and the host's results go back on the same
//! stream, encoded per request (MCP result or the native result shape).

use std::collections::VecDeque;
use std::time::Instant;

use cursor_proto::agent::v1::exec_client_message::Message as Reply;
use cursor_proto::ir::{Event, StopReason, ToolResult};

use super::phase::{Ending, Phase, ToolRound};
use super::timers::{Timer, Watchdog};
use super::{AgentRun, ToolCalls};
use crate::{AgentError, AgentEvent, frames, mcp, translate, usage};

impl AgentRun {
    /// The host's results for the tool calls of the leg that ended with `ToolUse`. Writes one
    /// `mcp_result` plus `stream_close` per call on the same stream (a call the host returned
    /// nothing for gets an error result), starts the next leg and re-arms the first-frame
    /// watchdog.
    ///
    /// Fails without changing anything when the run is not waiting for results or a result
    /// names a call it never issued. If the stream failed while the host ran its tools, that
    /// failure is reported now, as the new leg's end.
    pub fn submit_tool_results(
        &mut self,
        results: Vec<ToolResult>,
        now: Instant,
    ) -> Result<(), AgentError> {
        let round = match &mut self.phase {
            Phase::AwaitingTools(round) => round,
            Phase::Finished(Ending::FailedWhileParked(_)) => {
                if let Phase::Finished(Ending::FailedWhileParked(info)) =
                    self.phase.end(Ending::Failed)
                {
                    self.events.push(AgentEvent::Ir(Event::Error(info)));
                }
                return Ok(());
            }
            Phase::Streaming(_) | Phase::Finished(_) => return Err(AgentError::NotAwaitingTools),
        };
        if let Some(unknown) = results
            .iter()
            .find(|result| !round.calls.issued(&result.tool_call_id))
        {
            return Err(AgentError::UnknownToolResult {
                tool_call_id: unknown.tool_call_id.clone(),
            });
        }
        let answered = round.calls.take_answered();
        let root = translate::workspace_root(&self.config.workspace_uris);
        for call in answered {
            let result = results.iter().find(|r| r.tool_call_id == call.tool_call_id);
            call.span.record("answered", result.is_some());
            if let Some(translation) = &call.translation {
                let replies = match result {
                    Some(result) => {
                        self.tally.input_estimate += usage::estimate_result(result);
                        let elapsed = now.saturating_duration_since(call.issued_at);
                        let cap = mcp::TextCap::of(&self.config);
                        translation.encode(result, elapsed, &root, &cap)
                    }
                    None => translation.encode_missing(&root, &self.config.profile.display_name),
                };
                for reply in replies {
                    self.transmits
                        .push_back(frames::exec_reply(call.id, &call.exec_id, reply));
                }
                self.transmits.push_back(frames::stream_close(call.id));
                continue;
            }
            let encoded = match result {
                Some(result) => {
                    self.tally.input_estimate += usage::estimate_result(result);
                    mcp::success(
                        result,
                        &self.config.limits,
                        &self.config.profile.display_name,
                    )
                }
                None => mcp::missing_result(&self.config.profile.display_name),
            };
            self.transmits.push_back(frames::exec_reply(
                call.id,
                &call.exec_id,
                Reply::McpResult(encoded),
            ));
            self.transmits.push_back(frames::stream_close(call.id));
        }
        // The next leg starts with the calls issued meanwhile.
        let Phase::AwaitingTools(round) =
            std::mem::replace(&mut self.phase, Phase::Streaming(ToolCalls::default()))
        else {
            unreachable!("checked above");
        };
        let ToolRound {
            calls,
            deferred,
            turn_ended,
        } = round;
        if !calls.any_translated() {
            self.deadlines.stop(Timer::ExecHeartbeat);
        }
        let still_pending = !calls.is_empty();
        self.phase = Phase::Streaming(calls);
        self.tally.next_leg();
        self.deadlines.arm_watchdog(now, Watchdog::FirstFrame);
        for event in deferred {
            self.events.push(AgentEvent::Ir(event));
        }
        if still_pending {
            self.deadlines
                .set(Timer::Debounce, now + self.config.timers.tool_call_debounce);
        } else if turn_ended {
            self.finish(StopReason::Stop);
        }
        Ok(())
    }

    /// The debounce ran out with host tool calls pending: the leg ends with `ToolUse` and the
    /// tool round begins.
    pub(super) fn yield_tool_use(&mut self) {
        self.deadlines.stop(Timer::Debounce);
        let Phase::Streaming(calls) = &mut self.phase else {
            return;
        };
        let mut calls = std::mem::take(calls);
        calls.mark_yielded();
        self.push_usage();
        self.events.push(AgentEvent::Ir(Event::Done {
            reason: StopReason::ToolUse,
        }));
        self.phase = Phase::AwaitingTools(ToolRound {
            calls,
            deferred: VecDeque::new(),
            turn_ended: false,
        });
        // The host may take as long as it needs; heartbeats keep the stream warm meanwhile.
        self.deadlines.stop(Timer::Watchdog);
    }
}
