//! Timers with simulated time: heartbeats, the first-frame and idle watchdogs, the debounce.

mod common;

use std::time::Duration;

use common::{Harness, config, conversation, last_error};
use cursor_proto::agent::v1::{
    HeartbeatUpdate, agent_client_message::Message as Client, interaction_update::Message as Update,
};
use cursor_proto::ir::{ErrorKind, Event, StopReason, ToolResult};
use serde_json::json;

fn heartbeats(h: &mut Harness) -> usize {
    h.take_sent()
        .iter()
        .filter(|f| matches!(f.message, Some(Client::ClientHeartbeat(_))))
        .count()
}

#[test]
fn client_heartbeat_every_fifteen_seconds_while_open() {
    let mut h = Harness::new();
    h.text("streaming");
    assert_eq!(
        h.run.poll_timeout(),
        Some(h.start + Duration::from_secs(15))
    );
    h.advance(Duration::from_secs(14));
    assert_eq!(heartbeats(&mut h), 0);
    h.advance(Duration::from_secs(1));
    assert_eq!(heartbeats(&mut h), 1);
    h.text("more");
    h.advance(Duration::from_secs(15));
    assert_eq!(heartbeats(&mut h), 1);
}

#[test]
fn heartbeat_interval_is_configurable() {
    let mut config = config();
    config.timers.heartbeat_interval = Duration::from_secs(5);
    let mut h = Harness::with(config, conversation());
    h.text("x");
    h.advance(Duration::from_secs(5));
    assert_eq!(heartbeats(&mut h), 1);
}

#[test]
fn no_first_frame_within_thirty_seconds_is_a_network_error() {
    let mut h = Harness::new();
    h.advance(Duration::from_secs(15));
    h.advance(Duration::from_secs(14));
    assert!(!h.run.is_finished());
    h.advance(Duration::from_secs(1));
    let events = h.ir_events();
    let error = last_error(&events).expect("idle error");
    assert_eq!(error.kind, ErrorKind::Network);
    assert!(error.message.contains("first frame"), "{}", error.message);
    assert_eq!(error.next_step, cursor_proto::ir::NextStep::Retry);
    assert!(h.run.is_finished());
    assert_eq!(h.run.poll_timeout(), None);
}

#[test]
fn server_heartbeats_do_not_count_as_work() {
    let mut h = Harness::new();
    for _ in 0..6 {
        h.update(Update::Heartbeat(HeartbeatUpdate {}));
        h.advance(Duration::from_secs(5));
    }
    assert_eq!(
        last_error(&h.ir_events()).map(|e| e.kind),
        Some(ErrorKind::Network)
    );
}

#[test]
fn idle_between_work_frames_is_one_hundred_twenty_seconds() {
    let mut h = Harness::new();
    h.text("first");
    h.advance(Duration::from_secs(119));
    h.text("second");
    h.advance(Duration::from_secs(119));
    assert!(!h.run.is_finished());
    h.advance(Duration::from_secs(1));
    let events = h.ir_events();
    let error = last_error(&events).expect("idle error");
    assert_eq!(error.kind, ErrorKind::Network);
    assert!(error.message.contains("120s"), "{}", error.message);
}

#[test]
fn the_first_frame_watchdog_rearms_after_tool_results() {
    let mut h = Harness::new();
    h.mcp(1, "bash", "c1", json!({"command": "ls"}));
    h.advance(Duration::from_millis(150));
    h.run
        .submit_tool_results(vec![ToolResult::text("c1", "bash", "ok", false)], h.now)
        .unwrap();
    h.drain();
    h.take_events();
    h.advance(Duration::from_secs(29));
    assert!(!h.run.is_finished());
    h.advance(Duration::from_secs(1));
    let events = h.ir_events();
    assert!(last_error(&events).is_some_and(|e| e.message.contains("first frame")));
}

#[test]
fn a_server_that_keeps_the_stream_open_after_turn_ended_does_not_hold_the_turn() {
    let mut h = Harness::new();
    h.text("done");
    h.turn_ended();
    assert_eq!(
        h.ir_events().last(),
        Some(&Event::Done {
            reason: StopReason::Stop
        })
    );
    assert!(h.run.is_finished());
    assert_eq!(h.run.poll_timeout(), None);
    // Later frames and timeouts are ignored: no heartbeats, no errors.
    h.text("late");
    h.advance(Duration::from_secs(600));
    assert!(h.take_sent().is_empty());
    assert!(h.take_events().is_empty());
}

#[test]
fn debounce_restarts_with_every_call_of_a_burst() {
    let mut h = Harness::new();
    h.mcp(1, "bash", "c1", json!({}));
    h.advance(Duration::from_millis(149));
    h.mcp(2, "bash", "c2", json!({}));
    h.advance(Duration::from_millis(149));
    assert!(!h.run.is_awaiting_tool_results());
    h.advance(Duration::from_millis(1));
    assert!(h.run.is_awaiting_tool_results());
}

#[test]
fn spurious_timeouts_are_no_ops() {
    let mut h = Harness::new();
    h.advance(Duration::ZERO);
    h.advance(Duration::from_millis(1));
    assert!(h.take_sent().is_empty());
    assert!(h.take_events().is_empty());
}

#[test]
fn a_run_with_an_idle_timeout_shorter_than_its_heartbeat_is_refused_before_it_opens() {
    let mut config = config();
    config.timers.idle_timeout = Duration::from_secs(10);
    let error = cursor_agent::AgentRun::new(config, &conversation(), std::time::Instant::now())
        .expect_err("inverted timers");
    assert!(
        matches!(&error, cursor_agent::AgentError::Config(m) if m.contains("idle_timeout")),
        "{error:?}"
    );
    assert_eq!(cursor_proto::ir::Classify::kind(&error), ErrorKind::Local);
    let mut config = common::config();
    config.timers.first_frame_timeout = Duration::ZERO;
    assert!(
        cursor_agent::AgentRun::new(config, &conversation(), std::time::Instant::now()).is_err()
    );
}
