//! A tool round: the leg ends with `ToolUse`, and the host's results go back on the same
//! stream, encoded per request (MCP result or the native result shape).

use super::*;

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
        if self.phase == Phase::Finished {
            let info = self
                .parked_failure
                .take()
                .ok_or(AgentError::NotAwaitingTools)?;
            self.events.push(AgentEvent::Ir(Event::Error(info)));
            return Ok(());
        }
        if self.phase != Phase::AwaitingTools {
            return Err(AgentError::NotAwaitingTools);
        }
        for result in &results {
            let issued = self
                .pending
                .iter()
                .any(|p| p.yielded && p.tool_call_id == result.tool_call_id)
                || self.aborted.contains(&result.tool_call_id);
            if !issued {
                return Err(AgentError::UnknownToolResult {
                    tool_call_id: result.tool_call_id.clone(),
                });
            }
        }
        let (answered, still_pending): (Vec<PendingCall>, Vec<PendingCall>) =
            std::mem::take(&mut self.pending)
                .into_iter()
                .partition(|p| p.yielded);
        self.pending = still_pending;
        let root = translate::workspace_root(&self.config.workspace_uris);
        for call in answered {
            let result = results.iter().find(|r| r.tool_call_id == call.tool_call_id);
            call.span.record("answered", result.is_some());
            if let Some(translation) = &call.translation {
                let replies = match result {
                    Some(result) => {
                        self.input_estimate += usage::estimate_result(result);
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
                    self.input_estimate += usage::estimate_result(result);
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
        self.aborted.clear();
        if !self.pending.iter().any(|p| p.translation.is_some()) {
            self.exec_heartbeat_at = None;
        }
        self.phase = Phase::Streaming;
        self.output_tokens = 0;
        self.server_usage = None;
        self.work_deadline = Some(WorkDeadline {
            since: now,
            first_frame: true,
        });
        for event in self.deferred.drain(..) {
            self.events.push(AgentEvent::Ir(event));
        }
        if !self.pending.is_empty() {
            self.debounce_at = Some(now + self.config.timers.tool_call_debounce);
        } else if std::mem::take(&mut self.ended_while_parked) {
            self.finish(StopReason::Stop);
        }
        self.ended_while_parked = false;
        Ok(())
    }

    pub(super) fn yield_tool_use(&mut self) {
        self.debounce_at = None;
        for call in &mut self.pending {
            call.yielded = true;
        }
        self.push_usage();
        self.events.push(AgentEvent::Ir(Event::Done {
            reason: StopReason::ToolUse,
        }));
        self.phase = Phase::AwaitingTools;
        // The host may take as long as it needs; heartbeats keep the stream warm meanwhile.
        self.work_deadline = None;
    }
}
