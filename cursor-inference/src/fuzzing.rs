//! Entry points of the fuzz targets, public so the corpus can be replayed in ordinary tests.
//! Not part of the stable API.

use std::time::{Duration, Instant};

use cursor_proto::aiserver::v1::run_inference_client_message::Message as Client;
use cursor_proto::ir::{Conversation, Event, Message};
use cursor_transport::CursorError;

use crate::{InferenceConfig, InferenceRun};

/// Fuzz target `inference_run`: plays `data` as a script of server frames, clock steps,
/// stream ends, transport errors and cancels against a turn. Must never panic, and the turn
/// must keep its contract: `run_request` first, `invoke_model` at most once and only after
/// it, exactly one terminal event (done, error or aborted) and nothing after it, no deadline
/// once finished, and `finish_run` as the last frame of a finished turn.
pub fn inference_run(data: &[u8]) {
    let start = Instant::now();
    let conversation = Conversation::new("fuzz").with_message(Message::user_text("go"));
    let config = InferenceConfig::with_ids("m", "conv", "inv-1");
    let mut run = InferenceRun::open(config, &conversation, start);
    let mut check = Contract::default();
    let mut now = start;
    check.drain(&mut run);
    let mut input = data;
    while let Some((&op, rest)) = input.split_first() {
        input = rest;
        match op % 6 {
            0 | 1 => {
                let (frame, rest) = take_frame(input);
                input = rest;
                run.handle_server_bytes(frame, now);
            }
            2 => {
                let step = input.first().copied().unwrap_or(0);
                input = input.get(1..).unwrap_or_default();
                now += Duration::from_millis(u64::from(step) * 500 + 1);
                run.handle_timeout(now);
            }
            3 => run.handle_end_of_stream(now),
            4 => run.handle_transport_error(CursorError::network_msg("reset")),
            _ => run.cancel(),
        }
        check.drain(&mut run);
    }
}

#[derive(Default)]
struct Contract {
    frames: usize,
    invoked: bool,
    terminal: bool,
    last_was_finish: bool,
}

impl Contract {
    fn drain(&mut self, run: &mut InferenceRun) {
        while let Some(frame) = run.poll_transmit() {
            let message = frame.message.expect("every frame has an arm");
            match message {
                Client::RunRequest(_) => assert_eq!(self.frames, 0, "run_request not first"),
                Client::InvokeModel(_) => {
                    assert!(
                        self.frames > 0 && !self.invoked,
                        "invoke_model early or twice"
                    );
                    self.invoked = true;
                }
                _ => assert!(self.frames > 0, "a frame before run_request"),
            }
            self.last_was_finish = matches!(message, Client::FinishRun(_));
            self.frames += 1;
        }
        while let Some(event) = run.poll_event() {
            assert!(!self.terminal, "an event after the turn ended: {event:?}");
            self.terminal = matches!(event, Event::Done { .. } | Event::Error(_) | Event::Aborted);
        }
        assert_eq!(
            run.is_finished(),
            self.terminal,
            "finished without its last event"
        );
        if run.is_finished() {
            assert!(run.poll_timeout().is_none(), "a deadline after the end");
            assert!(
                self.last_was_finish,
                "a finished turn did not send finish_run last"
            );
        }
    }
}

/// A length-prefixed frame (two length bytes, little-endian), clamped to the input.
fn take_frame(input: &[u8]) -> (&[u8], &[u8]) {
    let len = match input {
        [a, b, ..] => usize::from(u16::from_le_bytes([*a, *b])),
        _ => 0,
    };
    let body = input.get(2..).unwrap_or_default();
    body.split_at(len.min(body.len()))
}
