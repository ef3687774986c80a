use cursor_proto::agent::v1::{
    AgentServerMessage, HeartbeatUpdate, InteractionUpdate, TextDeltaUpdate, ThinkingDeltaUpdate,
    TokenDeltaUpdate, agent_server_message::Message as Server,
    interaction_update::Message as Update,
};
use proptest::collection::vec;
use proptest::prelude::*;
use prost::Message as _;

use super::*;

/// The contract: a frame the hot path decodes, prost decodes to the same message.
fn assert_agrees(frame: &[u8]) -> Result<(), TestCaseError> {
    if let Some(expected) = decode(frame) {
        match AgentServerMessage::decode(frame) {
            Ok(decoded) => prop_assert_eq!(decoded, expected),
            Err(error) => prop_assert!(false, "hot path accepted what prost refuses: {error}"),
        }
    }
    Ok(())
}

fn varint(mut value: u64, out: &mut Vec<u8>) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

fn key(field: u32, wire: u8, out: &mut Vec<u8>) {
    varint(u64::from(field) << 3 | u64::from(wire), out);
}

fn len_field(field: u32, body: &[u8], out: &mut Vec<u8>) {
    key(field, LEN, out);
    varint(body.len() as u64, out);
    out.extend_from_slice(body);
}

/// One field no message here declares (numbers above 25), of any wire type, sometimes one
/// prost refuses (groups, wire types 6 and 7) or truncated.
fn noise() -> BoxedStrategy<Vec<u8>> {
    (
        prop_oneof![26u32..=40, Just(1000), Just(536_870_911)],
        0u8..8,
        any::<u64>(),
        vec(any::<u8>(), 0..12),
    )
        .prop_map(|(field, wire, value, bytes)| {
            let mut out = Vec::new();
            key(field, wire, &mut out);
            match wire {
                VARINT => varint(value, &mut out),
                FIXED64 => out.extend_from_slice(&value.to_le_bytes()),
                FIXED32 => out.extend_from_slice(&value.to_le_bytes()[..4]),
                LEN => {
                    varint(bytes.len() as u64, &mut out);
                    out.extend_from_slice(&bytes);
                }
                _ => out.extend_from_slice(&bytes),
            }
            out
        })
        .boxed()
}

fn noises() -> BoxedStrategy<Vec<u8>> {
    prop_oneof![3 => Just(Vec::new()), 1 => vec(noise(), 1..3).prop_map(|n| n.concat())].boxed()
}

/// Text bytes: ASCII, multi-byte, or (rarely) not UTF-8 at all.
fn text_bytes() -> BoxedStrategy<Vec<u8>> {
    prop_oneof![
        4 => "[a-z ]{0,12}".prop_map(String::into_bytes),
        2 => "[a-zé—你🙂]{0,8}".prop_map(String::into_bytes),
        1 => vec(any::<u8>(), 0..8),
    ]
    .boxed()
}

/// A body holding one scalar or bytes field `field`, with noise around it and sometimes twice.
fn body(field: u32, values: BoxedStrategy<Vec<u8>>) -> BoxedStrategy<Vec<u8>> {
    (
        noises(),
        values.clone(),
        noises(),
        prop::option::weighted(0.2, values),
    )
        .prop_map(move |(before, value, after, again)| {
            let mut out = before;
            if field != 0 {
                out.extend(value);
            }
            out.extend(after);
            if let Some(again) = again.filter(|_| field != 0) {
                out.extend(again);
            }
            out
        })
        .boxed()
}

fn len_value(field: u32, values: BoxedStrategy<Vec<u8>>) -> BoxedStrategy<Vec<u8>> {
    values
        .prop_map(move |v| {
            let mut out = Vec::new();
            len_field(field, &v, &mut out);
            out
        })
        .boxed()
}

fn varint_value(field: u32) -> BoxedStrategy<Vec<u8>> {
    (any::<u64>(), prop::bool::weighted(0.1))
        .prop_map(move |(value, wrong_wire)| {
            let mut out = Vec::new();
            if wrong_wire {
                len_field(field, &value.to_le_bytes(), &mut out);
            } else {
                key(field, VARINT, &mut out);
                varint(value, &mut out);
            }
            out
        })
        .boxed()
}

/// An `InteractionUpdate` arm body: hot arms mostly, some cold ones, with noise.
fn update_arm() -> BoxedStrategy<(u32, Vec<u8>)> {
    prop_oneof![
        4 => body(1, len_value(1, text_bytes().boxed())).prop_map(|b| (1, b)),
        2 => body(1, len_value(1, text_bytes().boxed())).prop_map(|b| (4, b)),
        1 => body(1, varint_value(1)).prop_map(|b| (8, b)),
        1 => body(0, Just(Vec::new()).boxed()).prop_map(|b| (13, b)),
        1 => (1u32..=5).prop_flat_map(|f| body(f, varint_value(f))).prop_map(|b| (14, b)),
        1 => (2u32..=22, vec(any::<u8>(), 0..6)).prop_map(|(f, b)| (f, b)),
    ]
    .boxed()
}

fn interaction_update() -> BoxedStrategy<Vec<u8>> {
    (
        noises(),
        prop::option::weighted(0.5, varint_value(25)),
        update_arm(),
        prop::bool::weighted(0.05),
        noises(),
        prop::option::weighted(0.1, update_arm()),
    )
        .prop_map(
            |(before, started, (field, arm), wrong_wire, after, again)| {
                let mut out = before;
                out.extend(started.unwrap_or_default());
                if wrong_wire {
                    key(field, VARINT, &mut out);
                    varint(arm.len() as u64, &mut out);
                } else {
                    len_field(field, &arm, &mut out);
                }
                out.extend(after);
                if let Some((field, arm)) = again {
                    len_field(field, &arm, &mut out);
                }
                out
            },
        )
        .boxed()
}

fn blob_args() -> BoxedStrategy<(u32, Vec<u8>)> {
    let bytes = || len_value(1, vec(any::<u8>(), 0..40).boxed());
    prop_oneof![
        body(1, bytes()).prop_map(|b| (2, b)),
        (
            body(1, bytes()),
            prop::option::of(len_value(2, vec(any::<u8>(), 0..40).boxed()))
        )
            .prop_map(|(mut b, data)| {
                b.extend(data.unwrap_or_default());
                (3, b)
            }),
    ]
    .boxed()
}

fn kv_message() -> BoxedStrategy<Vec<u8>> {
    (
        noises(),
        prop::option::of(varint_value(1)),
        blob_args(),
        noises(),
        prop::option::weighted(0.1, blob_args()),
    )
        .prop_map(|(before, id, (field, args), after, again)| {
            let mut out = before;
            out.extend(id.unwrap_or_default());
            len_field(field, &args, &mut out);
            out.extend(after);
            if let Some((field, args)) = again {
                len_field(field, &args, &mut out);
            }
            out
        })
        .boxed()
}

/// A whole frame: the hot arms and the cold ones, `ttft_breakdown` beside the oneof, repeated
/// arms, noise, and sometimes a cut at a random byte.
fn frame() -> BoxedStrategy<Vec<u8>> {
    let arm = prop_oneof![
        6 => interaction_update().prop_map(|b| (1u32, b)),
        2 => kv_message().prop_map(|b| (4u32, b)),
        1 => (prop_oneof![Just(2u32), Just(3), Just(5), Just(7)], vec(any::<u8>(), 0..8)),
    ];
    (
        noises(),
        arm,
        prop::option::weighted(0.1, vec(any::<u8>(), 0..16)),
        noises(),
        prop::option::weighted(0.05, interaction_update()),
        prop::option::weighted(0.1, any::<prop::sample::Index>()),
    )
        .prop_map(|(before, (field, arm), ttft, after, again, cut)| {
            let mut out = before;
            len_field(field, &arm, &mut out);
            if let Some(ttft) = ttft {
                len_field(8, &ttft, &mut out);
            }
            out.extend(after);
            if let Some(again) = again {
                len_field(1, &again, &mut out);
            }
            if let Some(cut) = cut {
                out.truncate(cut.index(out.len() + 1));
            }
            out
        })
        .boxed()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4096))]

    #[test]
    fn structured_frames_decode_the_same_both_ways(frame in frame()) {
        assert_agrees(&frame)?;
    }

    #[test]
    fn arbitrary_bytes_decode_the_same_both_ways(frame in vec(any::<u8>(), 0..64)) {
        assert_agrees(&frame)?;
    }

    /// The hot path is taken (not just safe): every well-formed hot frame, drift field included.
    #[test]
    fn well_formed_hot_frames_take_the_hot_path(
        text in "[a-zé—你🙂 ]{0,20}",
        pick in 0u8..6,
        number in any::<i32>(),
        started in prop::option::of(any::<u64>()),
        unknown in prop::option::of((26u32..2000, any::<u64>())),
    ) {
        let update = match pick {
            0 => Update::TextDelta(TextDeltaUpdate { text }),
            1 => Update::ThinkingDelta(ThinkingDeltaUpdate { text }),
            2 => Update::TokenDelta(TokenDeltaUpdate { tokens: number }),
            3 => Update::Heartbeat(HeartbeatUpdate {}),
            4 => Update::TurnEnded(TurnEndedUpdate {
                input_tokens: Some(i64::from(number)),
                reasoning_tokens: Some(-1),
                ..TurnEndedUpdate::default()
            }),
            _ => Update::TextDelta(TextDeltaUpdate::default()),
        };
        let message = AgentServerMessage {
            message: Some(Server::InteractionUpdate(InteractionUpdate {
                message_started_at_ms: started,
                message: Some(update),
            })),
            ttft_breakdown: None,
        };
        let mut frame = message.encode_to_vec();
        if let Some((field, value)) = unknown {
            key(field, VARINT, &mut frame);
            varint(value, &mut frame);
        }
        prop_assert_eq!(decode(&frame), Some(message));
    }
}

#[test]
fn kv_requests_take_the_hot_path() {
    let message = AgentServerMessage {
        message: Some(Server::KvServerMessage(KvServerMessage {
            id: 7,
            message: Some(Kv::SetBlobArgs(SetBlobArgs {
                blob_id: vec![1; 32],
                blob_data: Some(b"data".to_vec()),
            })),
        })),
        ttft_breakdown: None,
    };
    assert_eq!(decode(&message.encode_to_vec()), Some(message));
    let get = Server::KvServerMessage(KvServerMessage {
        id: 8,
        message: Some(Kv::GetBlobArgs(GetBlobArgs {
            blob_id: vec![2; 32],
        })),
    });
    let message = AgentServerMessage {
        message: Some(get),
        ttft_breakdown: None,
    };
    assert_eq!(decode(&message.encode_to_vec()), Some(message));
}

#[test]
fn cold_and_odd_frames_fall_back_to_prost() {
    // ttft_breakdown beside the oneof, an exec request, a repeated arm, invalid UTF-8, a group.
    let text = [0x0a, 0x05, 0x0a, 0x03, 0x0a, 0x01, b'a'];
    let with_ttft = [&text[..], &[0x42, 0x00]].concat();
    let exec = [0x12, 0x00];
    let twice = [&text[..], &text[..]].concat();
    let bad_utf8 = [0x0a, 0x05, 0x0a, 0x03, 0x0a, 0x01, 0xff];
    let group = [&text[..], &[0xdb, 0x01, 0xdc, 0x01]].concat();
    for frame in [&with_ttft[..], &exec, &twice, &bad_utf8, &group, &[]] {
        assert_eq!(decode(frame), None, "{frame:?}");
    }
    assert!(decode(&text).is_some());
}

#[test]
fn overlong_varints_match_prost() {
    // Token delta 3 written in ten bytes (legal), then an eleven-byte one (refused).
    let mut ten = vec![0x83];
    ten.extend([0x80; 8]);
    ten.push(0x00);
    let frame = |tokens: &[u8]| {
        let inner = [&[0x08][..], tokens].concat();
        let update = [&[0x42, inner.len() as u8][..], &inner].concat();
        [&[0x0a, update.len() as u8][..], &update].concat()
    };
    let legal = frame(&ten);
    assert_eq!(
        decode(&legal),
        Some(AgentServerMessage {
            message: Some(Server::InteractionUpdate(InteractionUpdate {
                message: Some(Update::TokenDelta(TokenDeltaUpdate { tokens: 3 })),
                message_started_at_ms: None,
            })),
            ttft_breakdown: None,
        })
    );
    assert!(AgentServerMessage::decode(&legal[..]).is_ok());
    let mut eleven = ten.clone();
    eleven[9] = 0x80;
    eleven.push(0x00);
    assert_eq!(decode(&frame(&eleven)), None);
    assert!(AgentServerMessage::decode(&frame(&eleven)[..]).is_err());
}

/// Everything a Run made observable: events and transmits in order, then its failure.
fn drained(run: &mut crate::AgentRun) -> (Vec<crate::AgentEvent>, Vec<Vec<u8>>, Option<String>) {
    let events = std::iter::from_fn(|| run.poll_event()).collect();
    let transmits = std::iter::from_fn(|| run.poll_transmit().map(|b| b.to_vec())).collect();
    (events, transmits, run.failure().map(ToString::to_string))
}

fn opened_run(now: std::time::Instant) -> crate::AgentRun {
    use cursor_proto::ir::{Conversation, Message};
    let config = crate::RunConfig::new("m", "file:///w", crate::IdSeed::fixed([3; 16]));
    let conversation = Conversation::new("hot").with_message(Message::user_text("go"));
    let mut run = crate::AgentRun::new(config, &conversation, now).expect("run opens");
    drained(&mut run);
    run
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// `handle_server_bytes` (hot view where it applies) and `handle_server_message` (prost)
    /// leave a Run in the same observable state after every frame of a random stream.
    #[test]
    fn a_run_fed_bytes_behaves_as_a_run_fed_prost_messages(frames in vec(frame(), 1..24)) {
        let now = std::time::Instant::now();
        let (mut by_bytes, mut by_message) = (opened_run(now), opened_run(now));
        // A bare `turn_ended` last, so usage (token deltas included) always shows.
        let turn_ended = vec![0x0a, 0x02, 0x72, 0x00];
        for frame in frames.iter().chain([&turn_ended]) {
            by_bytes.handle_server_bytes(frame, now);
            match AgentServerMessage::decode(&frame[..]) {
                Ok(message) => by_message.handle_server_message(message, now),
                // Undecodable frames fail both (the bytes path reports the same decode error).
                Err(_) => by_message.handle_server_bytes(frame, now),
            }
            prop_assert_eq!(drained(&mut by_bytes), drained(&mut by_message));
            prop_assert_eq!(by_bytes.poll_timeout(), by_message.poll_timeout());
        }
    }
}

/// A bare text or thinking delta: `handle_server_data`'s fast case (its text sometimes not
/// UTF-8, so the window must decline it).
fn bare_frame() -> BoxedStrategy<Vec<u8>> {
    (any::<bool>(), text_bytes())
        .prop_map(|(thinking, text)| {
            let (mut delta, mut update, mut frame) = (Vec::new(), Vec::new(), Vec::new());
            len_field(1, &text, &mut delta);
            len_field(if thinking { 4 } else { 1 }, &delta, &mut update);
            len_field(1, &update, &mut frame);
            frame
        })
        .boxed()
}

/// How the end-of-stream frame `json` ends a Run fed frames (what `handle_server_data` does).
fn end_outcome(json: &str) -> crate::StreamOutcome {
    use cursor_transport::envelope::EndStream;
    match EndStream::parse(json.as_bytes())
        .expect("valid end frame")
        .error
    {
        None => crate::StreamOutcome::Ok,
        Some(error) => {
            crate::error::outcome_of(&cursor_transport::CursorError::connect(error, None))
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// `handle_server_data` over the enveloped stream cut at random points, and
    /// `handle_server_bytes` over its frames, leave a Run in the same observable state after
    /// every chunk: the same events (deltas merged, since one drains per chunk), transmits,
    /// failure and next deadline.
    #[test]
    fn a_run_fed_body_data_behaves_as_a_run_fed_its_frames(
        frames in vec(prop_oneof![frame(), bare_frame()], 1..40),
        ended in any::<bool>(),
        end in prop_oneof![
            Just(None),
            Just(Some("{}")),
            Just(Some(r#"{"error":{"code":"not_found","message":"gone"}}"#)),
            Just(Some(r#"{"error":{"code":"internal","message":"boom"}}"#)),
        ],
        cuts in vec(any::<prop::sample::Index>(), 0..8),
    ) {
        use cursor_transport::envelope::{Compression, Encoder};
        let now = std::time::Instant::now();
        let (mut by_data, mut by_frames) = (opened_run(now), opened_run(now));
        let mut frames = frames;
        if ended {
            frames.push(vec![0x0a, 0x02, 0x72, 0x00]);
        }
        let encoder = Encoder::new(Compression::Identity);
        let mut wire = bytes::BytesMut::new();
        let mut ends = Vec::new();
        for frame in &frames {
            encoder.encode(frame, &mut wire).expect("small frame");
            ends.push(wire.len());
        }
        if let Some(json) = end {
            let end = cursor_transport::envelope::EndStream::parse(json.as_bytes()).expect("valid");
            encoder.encode_end_stream(&end, &mut wire).expect("small frame");
        }
        let wire = wire.freeze();
        let mut at: Vec<usize> = cuts.iter().map(|cut| cut.index(wire.len() + 1)).collect();
        at.push(wire.len());
        at.sort_unstable();
        at.dedup();
        let (mut from, mut fed) = (0, 0);
        let (mut seen_data, mut seen_frames) = (Vec::new(), Vec::new());
        for to in at {
            by_data.handle_server_data(wire.slice(from..to), now);
            while fed < frames.len() && ends[fed] <= to {
                by_frames.handle_server_bytes(&frames[fed], now);
                fed += 1;
            }
            if let (Some(json), true) = (end, to == wire.len()) {
                by_frames.handle_end_of_stream(end_outcome(json), now);
            }
            from = to;
            let (events, transmits, failure) = drained(&mut by_data);
            seen_data.extend(events);
            let (frame_events, frame_transmits, frame_failure) = drained(&mut by_frames);
            seen_frames.extend(frame_events);
            prop_assert_eq!(crate::event_queue::merged_deltas(&seen_data), crate::event_queue::merged_deltas(&seen_frames));
            prop_assert_eq!(transmits, frame_transmits);
            prop_assert_eq!(failure, frame_failure);
            prop_assert_eq!(by_data.poll_timeout(), by_frames.poll_timeout());
        }
    }
}

#[test]
fn bare_deltas_of_every_one_byte_length_match_prost_and_longer_ones_still_do() {
    for len in 0..200 {
        let text: String = "é".repeat(len / 2) + &"a".repeat(len % 2);
        for thinking in [false, true] {
            let update = if thinking {
                Update::ThinkingDelta(ThinkingDeltaUpdate { text: text.clone() })
            } else {
                Update::TextDelta(TextDeltaUpdate { text: text.clone() })
            };
            let message = AgentServerMessage {
                message: Some(Server::InteractionUpdate(InteractionUpdate {
                    message: Some(update),
                    message_started_at_ms: None,
                })),
                ttft_breakdown: None,
            };
            let frame = message.encode_to_vec();
            // proto3 leaves an empty text out, so that frame has another shape.
            let bare = !text.is_empty() && text.len() + 4 < 0x80;
            assert_eq!(bare_delta(&frame).is_some(), bare, "{len}");
            assert_eq!(decode(&frame), Some(message), "{len} {thinking}");
        }
    }
    // Same shape, broken text or lengths: the fast path declines and the answer is prost's.
    for frame in [
        &[0x0a, 0x05, 0x0a, 0x03, 0x0a, 0x01, 0xff][..],
        &[0x0a, 0x05, 0x0a, 0x03, 0x0a, 0x02, b'a'],
        &[0x0a, 0x06, 0x0a, 0x03, 0x0a, 0x01, b'a'],
    ] {
        assert_eq!(bare_delta(frame), None);
        assert_eq!(decode(frame), None, "{frame:?}");
    }
}
