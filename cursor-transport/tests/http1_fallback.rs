//! The agent Run over HTTP/1.1 (RunSSE plus BidiAppend) when HTTP/2 is refused
//! (docs/PROTOCOL-AGENT.md §13.8), against the loopback test server.

use std::time::Duration;

use cursor_proto::aiserver::v1::{BidiAppendRequest, BidiRequestId};
use cursor_transport::client::{AGENT_RUN_PATH, AGENT_RUN_SSE_PATH, BIDI_APPEND_PATH};
use cursor_transport::envelope::{Compression, Encoder};
use cursor_transport::testing::{H2Refusal, TestServer};
use cursor_transport::{Client, ClientConfig, CursorError, RequestHeaders};
use prost::Message as _;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

async fn within<F: Future>(future: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(10), future)
        .await
        .expect("test step timed out")
}

/// One Run through a server that refuses HTTP/2 with `refusal`: two client messages and a
/// server reply, end to end.
async fn run_once(client: &Client, server: &mut TestServer) -> bool {
    let mut call = within(client.bidi(&server.origin(), AGENT_RUN_PATH, RequestHeaders::new()))
        .await
        .expect("open");
    call.send(b"first").await.expect("send first");
    call.send(b"second").await.expect("send second");
    let serve = async {
        let mut incoming = server.accept().await.expect("a call");
        assert!(incoming.is_http1());
        assert_eq!(incoming.path(), AGENT_RUN_SSE_PATH);
        assert_eq!(
            incoming.recv().await.unwrap().as_deref(),
            Some(&b"first"[..])
        );
        assert_eq!(
            incoming.recv().await.unwrap().as_deref(),
            Some(&b"second"[..])
        );
        incoming.send(b"reply").await.unwrap();
        incoming.finish_ok().await.unwrap();
    };
    let receive = async {
        let reply = call.recv().await.expect("reply");
        assert_eq!(reply.as_deref(), Some(&b"reply"[..]));
        assert_eq!(call.recv().await.expect("end"), None);
    };
    within(async { tokio::join!(serve, receive) }).await;
    call.is_http1()
}

#[tokio::test]
async fn each_refusal_moves_the_run_to_run_sse_and_bidi_append() {
    for refusal in [
        H2Refusal::Status421,
        H2Refusal::Status464,
        H2Refusal::Http11Required,
        H2Refusal::GoawayHttp11Required,
    ] {
        let mut server = TestServer::builder()
            .refuse_h2(refusal)
            .start()
            .await
            .unwrap();
        let client = Client::new().unwrap();
        assert!(run_once(&client, &mut server).await, "{refusal:?}");
        assert_eq!(server.refused_h2(), 1, "{refusal:?}");
    }
}

#[tokio::test]
async fn a_refused_origin_gets_its_later_runs_over_http1_directly() {
    let mut server = TestServer::builder()
        .refuse_h2(H2Refusal::Status421)
        .start()
        .await
        .unwrap();
    let client = Client::new().unwrap();
    assert!(run_once(&client, &mut server).await);
    assert!(run_once(&client, &mut server).await);
    assert_eq!(server.refused_h2(), 1, "the second Run never tried HTTP/2");
}

#[tokio::test]
async fn without_the_fallback_a_refusal_is_the_runs_error() {
    let mut server = TestServer::builder()
        .refuse_h2(H2Refusal::Status421)
        .start()
        .await
        .unwrap();
    let mut config = ClientConfig::default();
    config.http1_fallback = false;
    let client = Client::with_config(config).unwrap();
    let mut call = within(client.bidi(&server.origin(), AGENT_RUN_PATH, RequestHeaders::new()))
        .await
        .unwrap();
    call.send(b"first").await.unwrap();
    let error = within(call.recv()).await.expect_err("421 is an error");
    assert!(!call.is_http1());
    assert!(error.to_string().contains("421"), "{error}");
    // Nothing reached the server as a call.
    assert!(
        tokio::time::timeout(Duration::from_millis(100), server.accept())
            .await
            .is_err()
    );
}

#[tokio::test]
async fn other_paths_never_fall_back() {
    let server = TestServer::builder()
        .refuse_h2(H2Refusal::Status421)
        .start()
        .await
        .unwrap();
    let client = Client::new().unwrap();
    let mut call = within(client.bidi(
        &server.origin(),
        "/echo.v1.Echo/Chat",
        RequestHeaders::new(),
    ))
    .await
    .unwrap();
    call.send(b"ping").await.unwrap();
    assert!(within(call.recv()).await.is_err());
    assert!(!call.is_http1());
}

#[tokio::test]
async fn an_unanswered_http2_open_times_out_without_a_second_run() {
    let mut server = TestServer::start().await.unwrap();
    let client = Client::new().unwrap();
    let mut call = within(client.bidi(&server.origin(), AGENT_RUN_PATH, RequestHeaders::new()))
        .await
        .unwrap();
    call.send(b"first").await.unwrap();
    let incoming = within(server.accept()).await.expect("the HTTP/2 Run");
    // The server never answers: the caller's deadline ends the wait.
    let waited = tokio::time::timeout(Duration::from_millis(200), call.recv()).await;
    assert!(waited.is_err(), "no head arrived");
    call.cancel();
    assert!(!call.is_http1());
    assert!(matches!(call.recv().await, Err(CursorError::Canceled)));
    drop(incoming);
    assert!(
        tokio::time::timeout(Duration::from_millis(200), server.accept())
            .await
            .is_err(),
        "no RunSSE followed"
    );
    assert_eq!(server.requests(), 1);
}

fn http1_request(path: &str, content_type: &str, body: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "POST {path} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: {content_type}\r\n\
         connect-protocol-version: 1\r\ncontent-length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(body);
    out
}

fn append(id: &str, seqno: i64, message: &[u8]) -> Vec<u8> {
    BidiAppendRequest {
        data: message.iter().map(|b| format!("{b:02x}")).collect(),
        request_id: Some(BidiRequestId {
            request_id: id.to_owned(),
        }),
        append_seqno: seqno,
        data_binary: Vec::new(),
    }
    .encode_to_vec()
}

#[tokio::test]
async fn raw_run_sse_and_bidi_appends_reach_the_call_in_sequence_order() {
    let mut server = TestServer::start().await.unwrap();
    let mut sse = tokio::net::TcpStream::connect(server.addr()).await.unwrap();
    let id = BidiRequestId {
        request_id: "call-1".to_owned(),
    }
    .encode_to_vec();
    let body = Encoder::new(Compression::Identity)
        .encode_to_bytes(&id)
        .unwrap();
    sse.write_all(&http1_request(
        AGENT_RUN_SSE_PATH,
        "application/connect+proto",
        &body,
    ))
    .await
    .unwrap();
    // Appends out of order, on one keep-alive connection.
    let mut appends = tokio::net::TcpStream::connect(server.addr()).await.unwrap();
    for (seqno, message) in [(1, &b"two"[..]), (0, &b"one"[..])] {
        appends
            .write_all(&http1_request(
                BIDI_APPEND_PATH,
                "application/proto",
                &append("call-1", seqno, message),
            ))
            .await
            .unwrap();
    }
    let mut incoming = within(server.accept()).await.unwrap();
    assert!(incoming.is_http1());
    assert_eq!(
        within(incoming.recv()).await.unwrap().as_deref(),
        Some(&b"one"[..])
    );
    assert_eq!(
        within(incoming.recv()).await.unwrap().as_deref(),
        Some(&b"two"[..])
    );
    incoming.send(b"hi").await.unwrap();
    incoming.finish_ok().await.unwrap();
    let mut response = Vec::new();
    within(sse.read_to_end(&mut response)).await.unwrap();
    let text = String::from_utf8_lossy(&response);
    assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text}");
    assert!(text.contains("transfer-encoding: chunked"), "{text}");
    // The message frame (flags 0, length 2, "hi") as one chunk, then the end frame, then 0.
    assert!(text.contains("7\r\n\0\0\0\0\u{2}hi\r\n"), "{text:?}");
    assert!(text.ends_with("0\r\n\r\n"), "{text:?}");
    let mut answers = vec![0_u8; 4096];
    let n = within(appends.read(&mut answers)).await.unwrap();
    assert!(String::from_utf8_lossy(&answers[..n]).starts_with("HTTP/1.1 200"));
}

#[tokio::test]
async fn closing_the_run_sse_connection_is_the_clients_cancel() {
    let mut server = TestServer::builder()
        .refuse_h2(H2Refusal::Status421)
        .start()
        .await
        .unwrap();
    let client = Client::new().unwrap();
    let mut call = within(client.bidi(&server.origin(), AGENT_RUN_PATH, RequestHeaders::new()))
        .await
        .unwrap();
    call.send(b"first").await.unwrap();
    // Receiving drives the move to HTTP/1.1 while the server takes the call.
    let mut incoming = within(async {
        tokio::select! {
            _ = call.recv() => panic!("no reply was sent"),
            incoming = async {
                let mut incoming = server.accept().await.expect("a call");
                let first = incoming.recv().await.unwrap();
                assert_eq!(first.as_deref(), Some(&b"first"[..]));
                incoming
            } => incoming,
        }
    })
    .await;
    assert!(call.is_http1());
    call.cancel();
    assert_eq!(within(incoming.wait_for_reset()).await, Some(0x8));
}
