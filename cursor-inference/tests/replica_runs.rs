//! Several invocations on one RunInference run, and `cancel_invocation`, against the replica
//! driven frame by frame (docs/PROTOCOL.md §6.1: a run carries up to 64 invocations).

mod common;

use common::{ide_headers, within};
use cursor_inference::InferenceConfig;
use cursor_inference::driver::RUN_INFERENCE_PATH;
use cursor_inference::request;
use cursor_inference::testing::{Replica, ReplicaServer, Script};
use cursor_proto::aiserver::v1::{
    RunInferenceCancelInvocation, RunInferenceClientMessage, RunInferenceFinishRun,
    RunInferenceInvocationEnd, RunInferenceRunReady, RunInferenceServerMessage,
    inference_stream_response::Response, run_inference_client_message::Message as Client,
    run_inference_server_message::Message as Server,
};
use cursor_proto::ir::{Conversation, Message};
use cursor_transport::{BidiCall, Client as Http};

/// One run, driven by hand.
struct Run {
    call: BidiCall,
}

impl Run {
    /// Opens a run and waits for `run_ready`.
    async fn open(server: &ReplicaServer) -> (Self, RunInferenceRunReady) {
        let call = Http::new()
            .unwrap()
            .bidi(&server.origin(), RUN_INFERENCE_PATH, ide_headers())
            .await
            .unwrap();
        let mut run = Self { call };
        let conversation = Conversation::new("").with_message(Message::user_text("ping"));
        let config = InferenceConfig::with_ids("composer-2.5", "conv-1", "unused");
        run.send(request::run_request(&config, &conversation)).await;
        match run.next().await {
            Server::RunReady(ready) => (run, ready),
            other => panic!("run_ready first, not {other:?}"),
        }
    }

    async fn send(&mut self, message: RunInferenceClientMessage) {
        within(self.call.send_message(&message)).await.unwrap();
    }

    /// Invokes the model on `text` as invocation `id`.
    async fn invoke(&mut self, id: &str, text: &str) {
        let conversation = Conversation::new("").with_message(Message::user_text(text));
        let config = InferenceConfig::with_ids("composer-2.5", "conv-1", id);
        self.send(request::invoke_model(&config, &conversation))
            .await;
    }

    async fn cancel(&mut self, id: &str) {
        let cancel = RunInferenceCancelInvocation {
            invocation_id: id.into(),
        };
        self.send(RunInferenceClientMessage {
            message: Some(Client::CancelInvocation(cancel)),
        })
        .await;
    }

    async fn next(&mut self) -> Server {
        within(self.call.recv_message::<RunInferenceServerMessage>())
            .await
            .unwrap()
            .and_then(|message| message.message)
            .expect("a server frame")
    }

    /// Frames up to the next `invocation_end`: the text of each invocation id seen, in order,
    /// and the end.
    async fn until_end(&mut self) -> (Vec<(String, String)>, RunInferenceInvocationEnd) {
        let mut texts: Vec<(String, String)> = Vec::new();
        loop {
            match self.next().await {
                Server::InvocationResponse(response) => {
                    let id = response.invocation_id;
                    let text = match response.response.and_then(|r| r.response) {
                        Some(Response::TextPart(part)) => part.text,
                        _ => String::new(),
                    };
                    match texts.last_mut() {
                        Some((last, joined)) if *last == id => joined.push_str(&text),
                        _ => texts.push((id, text)),
                    }
                }
                Server::InvocationEnd(end) => return (texts, end),
                other => panic!("an invocation frame, not {other:?}"),
            }
        }
    }

    /// `finish_run`, a half-close, and the server's clean end of the stream.
    async fn finish(mut self) {
        self.send(RunInferenceClientMessage {
            message: Some(Client::FinishRun(RunInferenceFinishRun {})),
        })
        .await;
        self.call.close_send().unwrap();
        let rest = within(self.call.recv()).await.unwrap();
        assert!(rest.is_none(), "the stream ends after finish_run: {rest:?}");
    }
}

#[tokio::test]
async fn two_invocations_on_one_run_are_answered_in_order_under_their_own_ids() {
    let server = Replica::start().await.unwrap();
    let (mut run, _) = Run::open(&server).await;
    // Both are sent before the first answer is read.
    run.invoke("inv-1", "ping").await;
    run.invoke("inv-2", "hello").await;
    let (first, end) = run.until_end().await;
    assert_eq!(first, [("inv-1".to_owned(), "pong".to_owned())]);
    assert_eq!(end.invocation_id, "inv-1");
    assert_eq!(end.error, None);
    let (second, end) = run.until_end().await;
    assert_eq!(second, [("inv-2".to_owned(), "echo: hello".to_owned())]);
    assert_eq!(end.invocation_id, "inv-2");
    assert_eq!(end.error, None);
    // A third, after the others ended, on the same run.
    run.invoke("inv-3", "ping").await;
    let (third, _) = run.until_end().await;
    assert_eq!(third, [("inv-3".to_owned(), "pong".to_owned())]);
    run.finish().await;
    assert_eq!(server.replica().requests().len(), 3);
}

#[tokio::test]
async fn cancel_invocation_ends_a_silent_invocation_and_drops_a_queued_one() {
    let server = Replica::start().await.unwrap();
    server.replica().script(Script::Silent);
    let (mut run, _) = Run::open(&server).await;
    run.invoke("inv-1", "ping").await;
    run.invoke("inv-2", "never answered").await;
    run.invoke("inv-3", "ping").await;
    // inv-2 waits behind the silent inv-1: canceled before it starts, it never runs.
    run.cancel("inv-2").await;
    run.cancel("inv-1").await;
    let (texts, end) = run.until_end().await;
    assert!(texts.is_empty(), "{texts:?}");
    assert_eq!(end.invocation_id, "inv-1");
    let error = end.error.expect("a canceled invocation ends with an error");
    assert_eq!(error.code, 1, "cancelled: {error:?}");
    let (texts, end) = run.until_end().await;
    assert_eq!(texts, [("inv-3".to_owned(), "pong".to_owned())]);
    assert_eq!(end.error, None);
    run.finish().await;
    assert_eq!(server.replica().canceled(), ["inv-1"]);
    // inv-2 never reached the model.
    assert_eq!(server.replica().requests().len(), 2);
}

#[tokio::test]
async fn a_run_carries_64_invocations_and_refuses_the_65th() {
    let server = Replica::start().await.unwrap();
    let (mut run, _) = Run::open(&server).await;
    for n in 1..=64 {
        let id = format!("inv-{n}");
        run.invoke(&id, "ping").await;
        let (texts, end) = run.until_end().await;
        assert_eq!(texts, [(id.clone(), "pong".to_owned())]);
        assert_eq!(end.error, None, "{id}");
    }
    run.invoke("inv-65", "ping").await;
    let (texts, end) = run.until_end().await;
    assert!(texts.is_empty());
    assert_eq!(end.invocation_id, "inv-65");
    assert_eq!(end.error.map(|error| error.code), Some(8));
    run.finish().await;
}
