//! `AgentRun::handle_server_bytes_ref` hands a streamed delta back lent from the frame only
//! when nothing is queued before it: whatever the frames and however often the host polls,
//! the host sees the same text, in the same order among the other events, as through
//! `handle_server_bytes` and `poll_event`.

use std::time::Instant;

use cursor_agent::{AgentEvent, AgentRun, EventRef, IdSeed, RunConfig};
use cursor_proto::agent::v1::{
    AgentServerMessage, HeartbeatUpdate, InteractionUpdate, TextDeltaUpdate, ThinkingDeltaUpdate,
    agent_server_message::Message as Server, interaction_update::Message as Update,
};
use cursor_proto::ir::{Conversation, Event, Message};
use proptest::prelude::*;
use prost::Message as _;

fn run() -> (AgentRun, Instant) {
    let now = Instant::now();
    let config = RunConfig::new("composer-2.5", "file:///work", IdSeed::fixed([5; 16]));
    let conversation = Conversation::new("").with_message(Message::user_text("ping"));
    let mut run = AgentRun::new(config, &conversation, now).unwrap();
    while run.poll_transmit().is_some() {}
    (run, now)
}

/// A server frame of the stream.
#[derive(Clone, Debug)]
enum Frame {
    Text(String),
    Thinking(String),
    Heartbeat,
    Checkpoint(Vec<u8>),
}

impl Frame {
    fn encode(&self) -> Vec<u8> {
        let update = |message| {
            Server::InteractionUpdate(InteractionUpdate {
                message: Some(message),
                ..Default::default()
            })
        };
        let message = match self {
            Self::Text(text) => update(Update::TextDelta(TextDeltaUpdate { text: text.clone() })),
            Self::Thinking(text) => update(Update::ThinkingDelta(ThinkingDeltaUpdate {
                text: text.clone(),
            })),
            Self::Heartbeat => update(Update::Heartbeat(HeartbeatUpdate::default())),
            Self::Checkpoint(bytes) => Server::ConversationCheckpointUpdate(bytes.clone()),
        };
        AgentServerMessage {
            message: Some(message),
            ..Default::default()
        }
        .encode_to_vec()
    }
}

/// What the host saw, adjacent deltas of one kind joined (how often it polls decides only
/// where one delta ends and the next begins).
#[derive(Debug, Default, PartialEq)]
struct Seen(Vec<String>);

impl Seen {
    fn delta(&mut self, tag: char, text: &str) {
        match self.0.last_mut() {
            Some(last) if last.starts_with(tag) && last.as_bytes().get(1) == Some(&b':') => {
                last.push_str(text);
            }
            _ => self.0.push(format!("{tag}:{text}")),
        }
    }

    fn event_ref(&mut self, event: EventRef<'_>) {
        match event {
            EventRef::TextDelta(text) => self.delta('t', &text),
            EventRef::ThinkingDelta(text) => self.delta('k', &text),
            EventRef::Other(other) => self.0.push(format!("{other:?}")),
            other => panic!("an event this test does not know: {other:?}"),
        }
    }

    fn event(&mut self, event: AgentEvent) {
        match event {
            AgentEvent::Ir(Event::TextDelta { text }) => self.delta('t', &text),
            AgentEvent::Ir(Event::ThinkingDelta { text }) => self.delta('k', &text),
            other => self.0.push(format!("{other:?}")),
        }
    }
}

/// The stream through `handle_server_bytes` and `poll_event`, polled after every frame.
fn queued(frames: &[Frame]) -> Seen {
    let (mut run, now) = run();
    let mut seen = Seen::default();
    for frame in frames {
        run.handle_server_bytes(&frame.encode(), now);
        while let Some(event) = run.poll_event() {
            seen.event(event);
        }
    }
    seen
}

/// The stream through `handle_server_bytes_ref`, polled after the frames `polls` picks.
fn lent(frames: &[Frame], polls: &[bool]) -> (Seen, usize) {
    let (mut run, now) = run();
    let mut seen = Seen::default();
    let mut returned = 0;
    for (frame, &poll) in frames
        .iter()
        .zip(polls.iter().chain(std::iter::repeat(&true)))
    {
        let bytes = frame.encode();
        if let Some(event) = run.handle_server_bytes_ref(&bytes, now) {
            assert!(
                matches!(&event, EventRef::TextDelta(text) | EventRef::ThinkingDelta(text)
                    if matches!(text, std::borrow::Cow::Borrowed(_))),
                "only a delta comes back, lent: {event:?}"
            );
            returned += 1;
            seen.event_ref(event);
        }
        if poll {
            while let Some(event) = run.poll_event_ref() {
                seen.event_ref(event);
            }
        }
    }
    while let Some(event) = run.poll_event_ref() {
        seen.event_ref(event);
    }
    (seen, returned)
}

fn text() -> impl Strategy<Value = String> {
    // Up to 200 characters: deltas past the one-byte lengths take the general path.
    prop_oneof!["[a-z é你🙂]{1,12}", "[a-z]{120,200}",]
}

fn frame() -> impl Strategy<Value = Frame> {
    prop_oneof![
        6 => text().prop_map(Frame::Text),
        3 => text().prop_map(Frame::Thinking),
        1 => Just(Frame::Heartbeat),
        1 => proptest::collection::vec(any::<u8>(), 0..8).prop_map(Frame::Checkpoint),
    ]
}

proptest! {
    #[test]
    fn lent_deltas_give_the_host_what_polled_deltas_give(
        frames in proptest::collection::vec(frame(), 1..40),
        polls in proptest::collection::vec(any::<bool>(), 0..40),
    ) {
        let (seen, _) = lent(&frames, &polls);
        prop_assert_eq!(seen, queued(&frames));
    }
}

#[test]
fn a_delta_with_nothing_queued_comes_back_lent_and_leaves_nothing_to_poll() {
    let frames = [
        Frame::Text("hello".into()),
        Frame::Text(" world".into()),
        Frame::Thinking("hm".into()),
    ];
    let (seen, returned) = lent(&frames, &[true; 3]);
    assert_eq!(returned, 3);
    assert_eq!(seen.0, ["t:hello world", "k:hm"]);
}

#[test]
fn a_delta_behind_a_queued_event_keeps_its_place() {
    let (mut run, now) = run();
    run.handle_server_bytes(&Frame::Checkpoint(vec![1]).encode(), now);
    // The checkpoint event is not polled yet: the delta must queue behind it.
    let bytes = Frame::Text("after".into()).encode();
    assert!(run.handle_server_bytes_ref(&bytes, now).is_none());
    let mut seen = Seen::default();
    while let Some(event) = run.poll_event_ref() {
        seen.event_ref(event);
    }
    assert_eq!(seen.0, ["Checkpoint([1])", "t:after"]);
}

#[test]
fn lent_frames_after_body_bytes_fail_the_run_as_host_misuse() {
    let (mut run, now) = run();
    run.handle_server_data(cursor_agent::Bytes::new(), now);
    let bytes = Frame::Text("late".into()).encode();
    assert!(run.handle_server_bytes_ref(&bytes, now).is_none());
    assert!(run.is_finished());
    let error = std::iter::from_fn(|| run.poll_event()).find_map(|event| match event {
        AgentEvent::Ir(Event::Error(info)) => Some(info.message),
        _ => None,
    });
    assert!(error.is_some_and(|message| message.contains("frames after body bytes")));
}
