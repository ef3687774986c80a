//! The host side of the session tests: a whole turn run the way a host runs it, and readers of
//! the events it produced.
#![allow(dead_code, unreachable_pub)]

use std::time::Duration;

use cursor_agent::AgentEvent;
use cursor_agent::session::{AgentSession, ModelChoice};
use cursor_proto::ir::{Conversation, ErrorInfo, Event, Message, StopReason, ToolCall, ToolResult};

/// How long one event may take before the test calls the turn stalled.
pub const WAIT: Duration = Duration::from_secs(20);

/// Runs a whole turn: every leg that ends with `ToolUse` is answered by `answer` and the
/// transcript grows with the calls and results. Returns every event of every leg.
pub async fn whole_turn(
    session: &AgentSession,
    mut conversation: Conversation,
    model: &ModelChoice,
    answer: impl Fn(&ToolCall) -> ToolResult,
) -> Vec<AgentEvent> {
    let mut all = Vec::new();
    for _ in 0..32 {
        let mut turn = session.turn(&conversation, model);
        let mut calls = Vec::new();
        let mut done = None;
        while let Some(event) = tokio::time::timeout(WAIT, turn.next())
            .await
            .expect("the turn does not stall")
        {
            match &event {
                AgentEvent::Ir(Event::ToolCall(call)) => calls.push(call.clone()),
                AgentEvent::Ir(Event::Done { reason }) => done = Some(*reason),
                _ => {}
            }
            all.push(event);
        }
        if done != Some(StopReason::ToolUse) {
            return all;
        }
        let results: Vec<Message> = calls
            .iter()
            .map(|call| Message::ToolResult(answer(call)))
            .collect();
        conversation = conversation.with_message(Message::assistant_tool_calls(calls));
        for result in results {
            conversation = conversation.with_message(result);
        }
    }
    panic!("more than 32 legs")
}

/// The answer text the turn streamed.
pub fn text(events: &[AgentEvent]) -> String {
    events
        .iter()
        .filter_map(|event| match event {
            AgentEvent::Ir(Event::TextDelta { text }) => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

/// The turn ended with the model's answer (not a tool round, an error or an abort).
pub fn ended_normally(events: &[AgentEvent]) -> bool {
    matches!(
        events.last(),
        Some(AgentEvent::Ir(Event::Done {
            reason: StopReason::Stop
        }))
    )
}

/// The error the turn ended with.
pub fn error_of(events: &[AgentEvent]) -> ErrorInfo {
    match events.last() {
        Some(AgentEvent::Ir(Event::Error(info))) => info.clone(),
        other => panic!("the turn did not fail: {other:?}"),
    }
}

/// The names of the host tools the turn called, in order.
pub fn host_calls(events: &[AgentEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|event| match event {
            AgentEvent::Ir(Event::ToolCall(call)) => Some(call.name.clone()),
            _ => None,
        })
        .collect()
}
