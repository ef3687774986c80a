//! The drain contract's ordering rules are enforced: a host that feeds one Run both body
//! bytes and decoded frames, or the response head after body bytes, gets a host-bug error
//! instead of a silently mis-framed stream.

use std::time::Instant;

use cursor_agent::{AgentError, AgentEvent, AgentRun, Bytes, Compression, IdSeed, RunConfig};
use cursor_proto::ir::{Classify as _, Conversation, ErrorKind, Event, Message};

fn run() -> (AgentRun, Instant) {
    let now = Instant::now();
    let config = RunConfig::new("composer-2.5", "file:///work", IdSeed::fixed([3; 16]));
    let conversation = Conversation::new("").with_message(Message::user_text("ping"));
    (AgentRun::new(config, &conversation, now).unwrap(), now)
}

fn misuse(run: &mut AgentRun) -> String {
    let errors: Vec<_> = std::iter::from_fn(|| run.poll_event())
        .filter_map(|event| match event {
            AgentEvent::Ir(Event::Error(info)) => Some(info),
            _ => None,
        })
        .collect();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0].kind, ErrorKind::Local);
    assert!(run.is_finished());
    errors[0].message.clone()
}

#[test]
fn frames_after_body_bytes_fail_the_run_as_host_misuse() {
    let (mut run, now) = run();
    run.handle_server_data(Bytes::new(), now);
    run.handle_server_bytes(&[], now);
    assert!(misuse(&mut run).contains("frames after body bytes"));
}

#[test]
fn body_bytes_after_frames_fail_the_run_as_host_misuse() {
    let (mut run, now) = run();
    // interaction_update.text_delta "hi"
    run.handle_server_bytes(&[0x0a, 6, 0x0a, 4, 0x0a, 2, b'h', b'i'], now);
    while run.poll_event().is_some() {}
    assert!(!run.is_finished());
    run.handle_server_data(Bytes::new(), now);
    assert!(misuse(&mut run).contains("body bytes after frames"));
}

#[test]
fn the_response_head_after_body_bytes_fails_the_run_as_host_misuse() {
    let (mut run, now) = run();
    run.handle_server_data(Bytes::new(), now);
    run.handle_response_head(Compression::Gzip, 1 << 20);
    assert!(misuse(&mut run).contains("response head after body bytes"));
}

#[test]
fn host_misuse_is_a_local_error_pointing_at_the_host() {
    let error = AgentError::HostMisuse("x");
    assert_eq!(error.kind(), ErrorKind::Local);
}
