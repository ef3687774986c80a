//! The mixed Run stream of the `mixed_stream` benches, generated deterministically (seeded):
//! 100 000 frames of ~16 bytes, 75 % text deltas, 20 % thinking deltas, 4 % token deltas, 1 %
//! heartbeats, a few KV blob requests and one `turn_ended`, ~6 % multi-byte characters, cut
//! into 16 KiB chunks as h2 DATA frames arrive; and the loops that push it through a Run.

use std::hint::black_box;
use std::time::Instant;

use bytes::{Bytes, BytesMut};
use cursor_agent::{AgentRun, RunConfig};
use cursor_proto::agent::v1::{
    AgentServerMessage, HeartbeatUpdate, InteractionUpdate, KvServerMessage, SetBlobArgs,
    TextDeltaUpdate, ThinkingDeltaUpdate, TokenDeltaUpdate, TurnEndedUpdate, agent_server_message,
    interaction_update, kv_server_message,
};
use cursor_proto::ir::{Conversation, Message};
use cursor_transport::envelope::{Compression, Decoder, Encoder, Frame, FrameRef};
use prost::Message as _;

/// The seed every bench uses.
pub(crate) const SEED: u64 = 0x5eed_cafe_f00d_0001;

pub(crate) const FRAMES: usize = 100_000;
/// h2's default max frame size: DATA frames arrive in chunks of this size.
const CHUNK: usize = 16 * 1024;
/// KV blob round trips (a set, then a get of the same blob) spread over the stream.
const KV_ROUNDS: usize = 5;

/// xorshift64*: deterministic and dependency free.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const ASCII: &[u8] = b"abcdefghijklmnopqrstuvwxyz      etaoinshr.,";
const MULTI: [char; 6] = ['é', 'ü', '—', '→', '你', '🙂'];

/// A delta of 4 to 14 characters, ~6 % of them multi-byte.
fn text(rng: &mut Rng) -> String {
    let chars = 4 + rng.below(11);
    let mut out = String::new();
    for _ in 0..chars {
        if rng.below(100) < 6 {
            out.push(MULTI[rng.below(MULTI.len() as u64) as usize]);
        } else {
            out.push(char::from(ASCII[rng.below(ASCII.len() as u64) as usize]));
        }
    }
    out
}

fn update(message: interaction_update::Message) -> AgentServerMessage {
    AgentServerMessage {
        message: Some(agent_server_message::Message::InteractionUpdate(
            InteractionUpdate {
                message: Some(message),
                ..Default::default()
            },
        )),
        ..Default::default()
    }
}

fn kv(id: u32, message: kv_server_message::Message) -> AgentServerMessage {
    AgentServerMessage {
        message: Some(agent_server_message::Message::KvServerMessage(
            KvServerMessage {
                id,
                message: Some(message),
            },
        )),
        ..Default::default()
    }
}

/// The stream's protobuf payloads, in order.
pub(crate) fn messages(seed: u64) -> Vec<Vec<u8>> {
    use interaction_update::Message as U;
    let mut rng = Rng(seed);
    let kv_every = FRAMES / (KV_ROUNDS + 1);
    let mut out = Vec::with_capacity(FRAMES);
    for i in 0..FRAMES - 1 {
        if i > 0 && i % kv_every == 0 && i / kv_every <= KV_ROUNDS {
            let round = (i / kv_every) as u32;
            let data = format!("blob {round}").into_bytes();
            let id = cursor_agent::BlobId::of(&data).as_bytes().to_vec();
            out.push(
                kv(
                    2 * round,
                    kv_server_message::Message::SetBlobArgs(SetBlobArgs {
                        blob_id: id.clone(),
                        blob_data: Some(data),
                    }),
                )
                .encode_to_vec(),
            );
            out.push(
                kv(
                    2 * round + 1,
                    kv_server_message::Message::GetBlobArgs(cursor_proto::agent::v1::GetBlobArgs {
                        blob_id: id,
                    }),
                )
                .encode_to_vec(),
            );
            continue;
        }
        let roll = rng.below(100);
        let message = match roll {
            0..75 => U::TextDelta(TextDeltaUpdate {
                text: text(&mut rng),
            }),
            75..95 => U::ThinkingDelta(ThinkingDeltaUpdate {
                text: text(&mut rng),
            }),
            95..99 => U::TokenDelta(TokenDeltaUpdate {
                tokens: 1 + rng.below(8) as i32,
            }),
            _ => U::Heartbeat(HeartbeatUpdate {}),
        };
        out.push(update(message).encode_to_vec());
    }
    out.truncate(FRAMES - 1);
    out.push(
        update(U::TurnEnded(TurnEndedUpdate {
            input_tokens: Some(1200),
            output_tokens: Some(40_000),
            ..Default::default()
        }))
        .encode_to_vec(),
    );
    out
}

/// The enveloped stream cut into 16 KiB chunks.
pub(crate) fn chunks(messages: &[Vec<u8>]) -> Vec<Bytes> {
    let encoder = Encoder::new(Compression::Identity);
    let mut wire = BytesMut::new();
    for message in messages {
        encoder.encode(message, &mut wire).expect("small frame");
    }
    let wire = wire.freeze();
    (0..wire.len())
        .step_by(CHUNK)
        .map(|at| wire.slice(at..wire.len().min(at + CHUNK)))
        .collect()
}

/// How a frame's protobuf bytes reach the Run.
#[derive(Clone, Copy)]
pub(crate) enum Path {
    /// `handle_server_bytes`: the hot-path decoder, prost for the rest.
    Bytes,
    /// prost's full decode, then `handle_server_message` (the decode before the hot path).
    Prost,
}

/// When the loop hands the Run's events to the host.
#[derive(Clone, Copy)]
pub(crate) enum Drain {
    /// After every frame: each delta is its own event (the latency discipline).
    EveryFrame,
    /// After every pushed 16 KiB chunk: deltas that arrived together merge (the throughput
    /// discipline of a host that reads events when it gets to them).
    EveryChunk,
}

/// One whole stream through a fresh Run, as a driver would run it. Returns the events seen.
pub(crate) fn run_stream(
    conversation: &Conversation,
    chunks: &[Bytes],
    path: Path,
    drain: Drain,
) -> usize {
    let now = Instant::now();
    let mut run = open_run(conversation, now);
    let mut decoder = Decoder::new(Compression::Identity);
    let mut events = 0;
    for chunk in chunks {
        decoder.push_bytes(chunk.clone());
        while let Some(frame) = decoder.next_frame_ref().expect("valid stream") {
            let FrameRef::Message(bytes) = frame else {
                break;
            };
            match path {
                Path::Bytes => run.handle_server_bytes(bytes, now),
                Path::Prost => run.handle_server_message(
                    AgentServerMessage::decode(bytes).expect("valid frame"),
                    now,
                ),
            }
            if let Drain::EveryFrame = drain {
                events += drained(&mut run);
            }
        }
        events += drained(&mut run);
    }
    finished(&run);
    events
}

/// One whole stream through a fresh Run fed body bytes (`handle_server_data`: the Run frames
/// the envelopes and validates each chunk's text once), events drained after every chunk.
/// Returns the events seen.
pub(crate) fn run_stream_data(conversation: &Conversation, chunks: &[Bytes]) -> usize {
    let now = Instant::now();
    let mut run = open_run(conversation, now);
    let mut events = 0;
    for chunk in chunks {
        run.handle_server_data(chunk.clone(), now);
        events += drained(&mut run);
    }
    finished(&run);
    events
}

/// A Run of `conversation` with its run request already written.
fn open_run(conversation: &Conversation, now: Instant) -> AgentRun {
    let config = RunConfig::new("m", "file:///w", cursor_agent::IdSeed::fixed([1; 16]));
    let mut run = AgentRun::new(config, conversation, now).expect("run opens");
    while run.poll_transmit().is_some() {}
    run
}

/// Hands every queued event to the "host" and writes every queued frame; the events it saw.
fn drained(run: &mut AgentRun) -> usize {
    let mut events = 0;
    while let Some(event) = run.poll_event() {
        black_box(&event);
        events += 1;
    }
    while let Some(frame) = run.poll_transmit() {
        black_box(frame);
    }
    events
}

fn finished(run: &AgentRun) {
    assert!(
        run.is_finished() && run.failure().is_none(),
        "stream ends cleanly"
    );
}

/// Envelope framing alone over the same chunks, payloads lent (`next_frame_ref`).
pub(crate) fn frame_only(chunks: &[Bytes]) -> usize {
    let mut decoder = Decoder::new(Compression::Identity);
    let mut bytes = 0;
    for chunk in chunks {
        decoder.push_bytes(chunk.clone());
        while let Some(FrameRef::Message(payload)) = decoder.next_frame_ref().expect("valid stream")
        {
            bytes += black_box(payload).len();
        }
    }
    bytes
}

/// Envelope framing alone, each payload an owned `Bytes` (`next_frame`).
pub(crate) fn frame_only_owned(chunks: &[Bytes]) -> usize {
    let mut decoder = Decoder::new(Compression::Identity);
    let mut bytes = 0;
    for chunk in chunks {
        decoder.push_bytes(chunk.clone());
        while let Some(Frame::Message(payload)) = decoder.next_frame().expect("valid stream") {
            bytes += black_box(payload).len();
        }
    }
    bytes
}

/// The conversation every bench Run opens with.
pub(crate) fn conversation() -> Conversation {
    Conversation::new("bench").with_message(Message::user_text("go"))
}
