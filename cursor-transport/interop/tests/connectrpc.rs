//! cursor-transport's client against connectrpc's server.

use cursor_proto::ir::Classify as _;
use std::time::Duration;

use cursor_proto::ir::ErrorKind;
use cursor_transport::{Client, Origin, RequestHeaders, envelope::Code};
use cursor_transport_interop::{CHAT_PATH, PING_PATH, RunningServer};

/// The wire shape of `interop.v1.EchoRequest` / `EchoResponse`, on the prost side.
#[derive(Clone, PartialEq, prost::Message)]
struct Echo {
    #[prost(string, tag = "1")]
    text: String,
    #[prost(int32, tag = "2")]
    n: i32,
}

fn echo(text: &str, n: i32) -> Echo {
    Echo {
        text: text.to_owned(),
        n,
    }
}

async fn within<T>(future: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(20), future)
        .await
        .expect("test step timed out")
}

#[tokio::test]
async fn bidi_echo_round_trips_and_ends_ok() {
    let server = RunningServer::start().await.unwrap();
    let client = Client::new().unwrap();
    let origin = Origin::loopback(server.port());
    let mut call = within(client.bidi(&origin, CHAT_PATH, RequestHeaders::new()))
        .await
        .unwrap();
    for (i, text) in ["a", "b", "c"].into_iter().enumerate() {
        call.send_message(&echo(text, i32::try_from(i).unwrap()))
            .await
            .unwrap();
    }
    call.close_send().unwrap();
    for (i, text) in ["a", "b", "c"].into_iter().enumerate() {
        let reply: Echo = within(call.recv_message()).await.unwrap().unwrap();
        assert_eq!(
            reply,
            echo(&format!("echo:{text}"), i32::try_from(i).unwrap())
        );
    }
    assert_eq!(within(call.recv_message::<Echo>()).await.unwrap(), None);
    assert!(call.end_stream().unwrap().error.is_none());
}

#[tokio::test]
async fn bidi_error_arrives_classified() {
    let server = RunningServer::start().await.unwrap();
    let client = Client::new().unwrap();
    let origin = Origin::loopback(server.port());
    let mut call = within(client.bidi(&origin, CHAT_PATH, RequestHeaders::new()))
        .await
        .unwrap();
    call.send_message(&echo("x", 0)).await.unwrap();
    call.send_message(&echo("fail", 1)).await.unwrap();
    call.close_send().unwrap();
    let first: Echo = within(call.recv_message()).await.unwrap().unwrap();
    assert_eq!(first.text, "echo:x");
    let err = within(call.recv_message::<Echo>()).await.unwrap_err();
    assert_eq!(err.code(), Some(Code::FailedPrecondition));
    assert_eq!(err.connect_error().unwrap().message, "boom");
    assert_eq!(err.kind(), ErrorKind::RemoteRefusal);
}

#[tokio::test]
async fn unary_call_round_trips() {
    let server = RunningServer::start().await.unwrap();
    let client = Client::new().unwrap();
    let origin = Origin::loopback(server.port());
    let reply: Echo =
        within(client.unary_message(&origin, PING_PATH, RequestHeaders::new(), &echo("hi", 41)))
            .await
            .unwrap();
    assert_eq!(reply, echo("pong:hi", 42));
}

#[tokio::test]
async fn unary_error_arrives_classified() {
    let server = RunningServer::start().await.unwrap();
    let client = Client::new().unwrap();
    let origin = Origin::loopback(server.port());
    let err = within(client.unary_message::<Echo, Echo>(
        &origin,
        PING_PATH,
        RequestHeaders::new(),
        &echo("deny", 0),
    ))
    .await
    .unwrap_err();
    assert_eq!(err.code(), Some(Code::Unauthenticated));
    assert_eq!(err.http_status(), Some(401));
    assert_eq!(err.kind(), ErrorKind::Auth);
}

#[tokio::test]
async fn unknown_method_is_drift() {
    let server = RunningServer::start().await.unwrap();
    let client = Client::new().unwrap();
    let origin = Origin::loopback(server.port());
    let err = within(client.unary(
        &origin,
        "/interop.v1.EchoService/Missing",
        RequestHeaders::new(),
        bytes::Bytes::new(),
    ))
    .await
    .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ProtocolDrift, "{err}");
}

#[tokio::test]
async fn gzip_negotiated_both_ways_interoperates() {
    let server = RunningServer::start().await.unwrap();
    let client = Client::new().unwrap();
    let origin = Origin::loopback(server.port());
    let mut headers = RequestHeaders::new();
    headers.insert("connect-content-encoding", "gzip").unwrap();
    headers.insert("connect-accept-encoding", "gzip").unwrap();
    let mut call = within(client.bidi(&origin, CHAT_PATH, headers))
        .await
        .unwrap();
    // Large enough that our encoder compresses it (≥ 1 KiB) and so does the server's reply.
    let text = "z".repeat(8192);
    call.send_message(&echo(&text, 7)).await.unwrap();
    call.close_send().unwrap();
    let reply: Echo = within(call.recv_message()).await.unwrap().unwrap();
    assert_eq!(reply, echo(&format!("echo:{text}"), 7));
    assert_eq!(within(call.recv_message::<Echo>()).await.unwrap(), None);
    let encoding = call
        .response_headers()
        .await
        .unwrap()
        .get("connect-content-encoding")
        .cloned();
    assert_eq!(
        encoding.as_ref().and_then(|v| v.to_str().ok()),
        Some("gzip")
    );
}
