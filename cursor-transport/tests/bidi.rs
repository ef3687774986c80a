//! T-TRANS: bidi calls against the scripted loopback server.

use cursor_proto::ir::Classify as _;
use std::time::Duration;

use bytes::Bytes;
use cursor_proto::ir::ErrorKind;
use cursor_transport::{
    AccessToken, BidiCall, CallKind, CliIdentity, Client, ClientConfig, CursorError,
    RequestHeaders, RequestId,
    client::AGENT_RUN_PATH,
    envelope::{Code, Compression, ConnectError},
    testing::{REASON_CANCEL, ServerCall, TestServer},
};

const PATH: &str = "/test.v1.Echo/Chat";

async fn within<T>(future: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(20), future)
        .await
        .expect("test step timed out")
}

fn cli_headers() -> RequestHeaders {
    RequestHeaders::cli(
        &AccessToken::new("token-for-tests"),
        &CliIdentity::new("cli-test"),
        CallKind::Stream,
        &RequestId::generate().unwrap(),
    )
    .unwrap()
}

/// A call from a fresh client to a fresh loopback server (both returned to keep them alive).
async fn fresh_call() -> (TestServer, Client, BidiCall) {
    let server = TestServer::start().await.unwrap();
    let client = Client::new().unwrap();
    let call = client
        .bidi(&server.origin(), PATH, cli_headers())
        .await
        .unwrap();
    (server, client, call)
}

#[tokio::test]
async fn normal_bidi_exchange_carries_messages_headers_and_trailers() {
    let (mut server, _client, mut call) = fresh_call().await;
    // 200 kB exceeds the peer's 64 KiB stream window: sending waits for the server to read.
    let sender = tokio::spawn(async move {
        call.send(b"one").await.unwrap();
        call.send(b"").await.unwrap();
        call.send(&vec![7u8; 200_000]).await.unwrap();
        call.close_send().unwrap();
        call
    });

    let mut incoming = within(server.accept()).await.unwrap();
    assert_eq!(incoming.path(), PATH);
    assert_eq!(incoming.method(), "POST");
    assert_eq!(
        incoming.header("content-type"),
        Some("application/connect+proto")
    );
    assert_eq!(incoming.header("connect-protocol-version"), Some("1"));
    assert_eq!(incoming.header("te"), Some("trailers"));
    assert_eq!(incoming.header("x-cursor-client-type"), Some("cli"));
    assert_eq!(
        incoming.header("authorization"),
        Some("Bearer token-for-tests")
    );
    assert_eq!(
        within(incoming.recv()).await.unwrap().as_deref(),
        Some(b"one".as_slice())
    );
    assert_eq!(
        within(incoming.recv()).await.unwrap().as_deref(),
        Some(b"".as_slice())
    );
    assert_eq!(
        within(incoming.recv()).await.unwrap().map(|b| b.len()),
        Some(200_000)
    );
    assert_eq!(
        within(incoming.recv()).await.unwrap(),
        None,
        "client half-closed"
    );
    let mut call = within(sender).await.unwrap();

    incoming.send(b"reply-1").await.unwrap();
    incoming.send(&vec![1u8; 300_000]).await.unwrap();
    let mut end = cursor_transport::envelope::EndStream::ok();
    end.metadata.insert("x-trailer".into(), vec!["t1".into()]);
    incoming.finish(end).await.unwrap();

    assert_eq!(
        within(call.recv()).await.unwrap().as_deref(),
        Some(b"reply-1".as_slice())
    );
    assert_eq!(
        within(call.recv()).await.unwrap().map(|b| b.len()),
        Some(300_000)
    );
    assert_eq!(within(call.recv()).await.unwrap(), None);
    assert_eq!(call.end_stream().unwrap().metadata["x-trailer"], vec!["t1"]);
    assert_eq!(
        call.response_headers().await.unwrap()["content-type"],
        "application/connect+proto"
    );
    // Reading past the end stays at the end.
    assert_eq!(call.recv().await.unwrap(), None);
}

#[tokio::test]
async fn prost_messages_round_trip() {
    let mut server = TestServer::start().await.unwrap();
    let client = Client::new().unwrap();
    let mut call = client
        .bidi(&server.origin(), PATH, RequestHeaders::new())
        .await
        .unwrap();
    call.send_message(&"hello".to_owned()).await.unwrap();
    let mut incoming = within(server.accept()).await.unwrap();
    let got: Option<String> = within(incoming.recv_message()).await.unwrap();
    assert_eq!(got.as_deref(), Some("hello"));
    incoming.send_message(&42u64).await.unwrap();
    incoming.finish_ok().await.unwrap();
    assert_eq!(within(call.recv_message::<u64>()).await.unwrap(), Some(42));
    assert_eq!(within(call.recv_message::<u64>()).await.unwrap(), None);
}

#[tokio::test]
async fn severed_connection_mid_stream_is_a_network_error() {
    let mut server = TestServer::start().await.unwrap();
    let client = Client::new().unwrap();
    let mut call = client
        .bidi(&server.origin(), PATH, RequestHeaders::new())
        .await
        .unwrap();
    let mut incoming = within(server.accept()).await.unwrap();
    incoming.send(b"partial answer").await.unwrap();
    assert!(within(call.recv()).await.unwrap().is_some());
    incoming.sever();
    let err = within(call.recv()).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Network, "{err}");
    // What the host shows names the kind once, not once per layer.
    let shown = cursor_proto::ir::ErrorInfo::from(&err).to_string();
    assert!(shown.starts_with("network error: "), "{shown}");
    assert!(!shown.contains("network failure"), "{shown}");
}

#[tokio::test]
async fn reset_by_the_server_is_a_network_error() {
    let mut server = TestServer::start().await.unwrap();
    let client = Client::new().unwrap();
    let mut call = client
        .bidi(&server.origin(), PATH, RequestHeaders::new())
        .await
        .unwrap();
    let mut incoming = within(server.accept()).await.unwrap();
    incoming.send_headers().unwrap();
    incoming.reset(cursor_transport::testing::REASON_INTERNAL_ERROR);
    let err = within(call.recv()).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Network, "{err}");
    assert!(err.to_string().contains("reset"), "{err}");
}

#[tokio::test]
async fn status_401_on_open_is_an_auth_error_and_never_parsed_as_frames() {
    let (mut server, _client, mut call) = fresh_call().await;
    let incoming = within(server.accept()).await.unwrap();
    // A body that would be an oversize frame header if it were fed to the frame parser.
    incoming
        .respond(
            401,
            "text/plain",
            Bytes::from_static(b"\xff\xff\xff\xff\xffnope"),
        )
        .await
        .unwrap();
    let err = within(call.recv()).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Auth, "{err}");
    assert_eq!(err.http_status(), Some(401));
    assert_eq!(err.code(), Some(Code::Unauthenticated));
    assert_eq!(err.next_step(), cursor_proto::ir::NextStep::Login);
}

#[tokio::test]
async fn non_200_json_body_keeps_the_connect_code() {
    let mut server = TestServer::start().await.unwrap();
    let client = Client::new().unwrap();
    let mut call = client
        .bidi(&server.origin(), PATH, RequestHeaders::new())
        .await
        .unwrap();
    let incoming = within(server.accept()).await.unwrap();
    let error = ConnectError::new(
        Code::ResourceExhausted,
        "Please update to the latest version of Cursor",
    );
    incoming
        .respond(429, "application/json", error.to_unary_json())
        .await
        .unwrap();
    let err = within(call.recv()).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::RemoteRefusal);
    assert_eq!(
        err.refusal(),
        Some(cursor_transport::Refusal::ClientVersionFloor)
    );
    assert_eq!(err.http_status(), Some(429));
}

#[tokio::test]
async fn malformed_frame_is_drift_and_the_connection_stays_usable() {
    let mut server = TestServer::start().await.unwrap();
    let client = Client::new().unwrap();
    let mut call = client
        .bidi(&server.origin(), PATH, RequestHeaders::new())
        .await
        .unwrap();
    let mut incoming = within(server.accept()).await.unwrap();
    incoming
        .send_raw(Bytes::from_static(&[0x40, 0, 0, 0, 1, 0]))
        .await
        .unwrap();
    let err = within(call.recv()).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ProtocolDrift, "{err}");
    // The client resets the broken stream...
    assert_eq!(within(incoming.wait_for_reset()).await, Some(REASON_CANCEL));

    // ...and the next call reuses the same connection.
    let mut call = client
        .bidi(&server.origin(), PATH, RequestHeaders::new())
        .await
        .unwrap();
    let mut incoming = within(server.accept()).await.unwrap();
    incoming.send(b"fine").await.unwrap();
    incoming.finish_ok().await.unwrap();
    assert_eq!(
        within(call.recv()).await.unwrap().as_deref(),
        Some(b"fine".as_slice())
    );
    assert_eq!(within(call.recv()).await.unwrap(), None);
    assert_eq!(server.connections(), 1);
}

#[tokio::test]
async fn malformed_end_stream_json_is_drift() {
    let mut server = TestServer::start().await.unwrap();
    let client = Client::new().unwrap();
    let mut call = client
        .bidi(&server.origin(), PATH, RequestHeaders::new())
        .await
        .unwrap();
    let mut incoming = within(server.accept()).await.unwrap();
    incoming
        .send_raw(Bytes::from_static(&[0x02, 0, 0, 0, 3, b'{', b'{', b'}']))
        .await
        .unwrap();
    let err = within(call.recv()).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ProtocolDrift, "{err}");
}

#[tokio::test]
async fn oversize_frame_header_is_refused_before_the_body_arrives() {
    let mut server = TestServer::start().await.unwrap();
    let client = Client::new().unwrap();
    let mut call = client
        .bidi(&server.origin(), PATH, RequestHeaders::new())
        .await
        .unwrap();
    let mut incoming = within(server.accept()).await.unwrap();
    // 16 MiB + 1 declared; no body follows, so only the header can trigger the refusal.
    incoming.send_frame_header(0, (16 << 20) + 1).await.unwrap();
    let err = within(call.recv()).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ProtocolDrift, "{err}");
    assert!(err.to_string().contains("16777217"), "{err}");
}

#[tokio::test]
async fn configured_max_message_size_applies_to_responses() {
    let mut server = TestServer::start().await.unwrap();
    let mut config = ClientConfig::default();
    config.max_message_size = 1000;
    let client = Client::with_config(config).unwrap();
    let mut call = client
        .bidi(&server.origin(), PATH, RequestHeaders::new())
        .await
        .unwrap();
    let mut incoming = within(server.accept()).await.unwrap();
    incoming.send(&[0u8; 1001]).await.unwrap();
    let err = within(call.recv()).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ProtocolDrift, "{err}");
    // Sending is bounded too; an oversize message is the caller's, not drift.
    let mut call = client
        .bidi(&server.origin(), PATH, RequestHeaders::new())
        .await
        .unwrap();
    assert_eq!(
        call.send(&[0u8; 1001]).await.unwrap_err().kind(),
        ErrorKind::Local
    );
}

#[tokio::test]
async fn compressed_frame_without_negotiation_is_drift() {
    let mut server = TestServer::start().await.unwrap();
    let client = Client::new().unwrap();
    let mut call = client
        .bidi(&server.origin(), PATH, RequestHeaders::new())
        .await
        .unwrap();
    let mut incoming = within(server.accept()).await.unwrap();
    let gz = cursor_transport::envelope::Encoder::new(Compression::Gzip)
        .encode_to_bytes(&[5u8; 4096])
        .unwrap();
    assert_eq!(gz[0], 0x01);
    incoming.send_raw(gz).await.unwrap();
    let err = within(call.recv()).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ProtocolDrift, "{err}");
    assert!(matches!(
        err,
        CursorError::Envelope(cursor_transport::envelope::EnvelopeError::UnexpectedCompression)
    ));
}

#[tokio::test]
async fn gzip_is_used_both_ways_when_negotiated() {
    let mut server = TestServer::start().await.unwrap();
    let client = Client::new().unwrap();
    let mut headers = RequestHeaders::new();
    headers.insert("connect-content-encoding", "gzip").unwrap();
    headers.insert("connect-accept-encoding", "gzip").unwrap();
    let mut call = client
        .bidi(
            &server.origin(),
            "/aiserver.v1.InferenceService/RunInference",
            headers,
        )
        .await
        .unwrap();
    let big = vec![3u8; 8192];
    call.send(&big).await.unwrap();
    call.send(b"small").await.unwrap();
    call.close_send().unwrap();
    let mut incoming = within(server.accept()).await.unwrap();
    assert_eq!(incoming.header("connect-content-encoding"), Some("gzip"));
    assert_eq!(
        within(incoming.recv()).await.unwrap().as_deref(),
        Some(big.as_slice())
    );
    assert_eq!(
        within(incoming.recv()).await.unwrap().as_deref(),
        Some(b"small".as_slice())
    );
    incoming.set_compression(Compression::Gzip);
    incoming.send(&big).await.unwrap();
    incoming.finish_ok().await.unwrap();
    assert_eq!(
        within(call.recv()).await.unwrap().as_deref(),
        Some(big.as_slice())
    );
    assert_eq!(within(call.recv()).await.unwrap(), None);
}

#[tokio::test]
async fn agent_run_is_never_compressed_even_if_asked() {
    let mut server = TestServer::start().await.unwrap();
    let client = Client::new().unwrap();
    let mut headers = cli_headers();
    headers.insert("connect-content-encoding", "gzip").unwrap();
    let mut call = client
        .bidi(&server.origin(), AGENT_RUN_PATH, headers)
        .await
        .unwrap();
    call.send(&[9u8; 5000]).await.unwrap();
    call.close_send().unwrap();
    let mut incoming = within(server.accept()).await.unwrap();
    assert_eq!(incoming.header("connect-content-encoding"), None);
    // The server decodes with identity: a compressed frame would fail here.
    assert_eq!(
        within(incoming.recv()).await.unwrap().map(|b| b.len()),
        Some(5000)
    );
}

#[tokio::test]
async fn trailing_partial_frame_is_drift() {
    let mut server = TestServer::start().await.unwrap();
    let client = Client::new().unwrap();
    let mut call = client
        .bidi(&server.origin(), PATH, RequestHeaders::new())
        .await
        .unwrap();
    let mut incoming = within(server.accept()).await.unwrap();
    incoming
        .send_raw(Bytes::from_static(&[0, 0, 0, 0, 10, 1, 2, 3]))
        .await
        .unwrap();
    incoming.end_body().unwrap();
    let err = within(call.recv()).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ProtocolDrift, "{err}");
    assert!(err.to_string().contains("inside a frame"), "{err}");
}

#[tokio::test]
async fn stream_ending_without_end_stream_frame_is_drift() {
    let mut server = TestServer::start().await.unwrap();
    let client = Client::new().unwrap();
    let mut call = client
        .bidi(&server.origin(), PATH, RequestHeaders::new())
        .await
        .unwrap();
    let incoming = within(server.accept()).await.unwrap();
    // A wrong agent host answers 200 and closes at once.
    incoming.end_body().unwrap();
    let err = within(call.recv()).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ProtocolDrift, "{err}");
}

#[tokio::test]
async fn wrong_content_type_on_200_is_drift() {
    let mut server = TestServer::start().await.unwrap();
    let client = Client::new().unwrap();
    let mut call = client
        .bidi(&server.origin(), PATH, RequestHeaders::new())
        .await
        .unwrap();
    let incoming = within(server.accept()).await.unwrap();
    incoming.respond(200, "text/html", "<html>").await.unwrap();
    let err = within(call.recv()).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ProtocolDrift, "{err}");
}

#[tokio::test]
async fn end_stream_error_maps_every_connect_code() {
    let expected = [
        (Code::Canceled, ErrorKind::Network),
        (Code::Unknown, ErrorKind::RemoteRefusal),
        (Code::InvalidArgument, ErrorKind::RemoteRefusal),
        (Code::DeadlineExceeded, ErrorKind::Network),
        (Code::NotFound, ErrorKind::RemoteRefusal),
        (Code::AlreadyExists, ErrorKind::RemoteRefusal),
        (Code::PermissionDenied, ErrorKind::Auth),
        (Code::ResourceExhausted, ErrorKind::RemoteRefusal),
        (Code::FailedPrecondition, ErrorKind::RemoteRefusal),
        (Code::Aborted, ErrorKind::RemoteRefusal),
        (Code::OutOfRange, ErrorKind::RemoteRefusal),
        (Code::Unimplemented, ErrorKind::ProtocolDrift),
        (Code::Internal, ErrorKind::RemoteRefusal),
        (Code::Unavailable, ErrorKind::Network),
        (Code::DataLoss, ErrorKind::RemoteRefusal),
        (Code::Unauthenticated, ErrorKind::Auth),
    ];
    assert_eq!(expected.len(), Code::ALL.len());
    let mut server = TestServer::start().await.unwrap();
    let client = Client::new().unwrap();
    for (code, kind) in expected {
        let mut call = client
            .bidi(&server.origin(), PATH, RequestHeaders::new())
            .await
            .unwrap();
        let mut incoming = within(server.accept()).await.unwrap();
        incoming.send(b"before the error").await.unwrap();
        incoming
            .finish_error(ConnectError::new(code, format!("{code} happened")))
            .await
            .unwrap();
        assert!(within(call.recv()).await.unwrap().is_some());
        let err = within(call.recv()).await.unwrap_err();
        assert_eq!(err.code(), Some(code));
        assert_eq!(err.kind(), kind, "{code}");
        assert_eq!(err.http_status(), None);
        assert_eq!(
            err.connect_error().unwrap().message,
            format!("{code} happened")
        );
        assert!(call.end_stream().unwrap().error.is_some());
        // The failure is final: it is not reported as a clean end afterwards.
        assert_eq!(call.recv().await.unwrap_err().kind(), ErrorKind::Local);
    }
    assert_eq!(server.connections(), 1);
}

#[tokio::test]
async fn explicit_cancel_resets_the_stream_and_frees_its_slot() {
    let mut server = TestServer::builder()
        .max_concurrent_streams(1)
        .start()
        .await
        .unwrap();
    let client = Client::new().unwrap();
    let mut call = client
        .bidi(&server.origin(), PATH, RequestHeaders::new())
        .await
        .unwrap();
    let mut incoming = within(server.accept()).await.unwrap();
    incoming.send(b"x").await.unwrap();
    assert!(within(call.recv()).await.unwrap().is_some());
    call.cancel();
    assert_eq!(within(incoming.wait_for_reset()).await, Some(REASON_CANCEL));
    assert!(matches!(call.recv().await, Err(CursorError::Canceled)));

    // With one stream allowed, this only opens because the canceled one was freed.
    let mut next = within(client.bidi(&server.origin(), PATH, RequestHeaders::new()))
        .await
        .unwrap();
    let incoming = within(server.accept()).await.unwrap();
    incoming.finish_ok().await.unwrap();
    assert_eq!(within(next.recv()).await.unwrap(), None);
}

#[tokio::test]
async fn dropping_a_call_cancels_it() {
    let mut server = TestServer::builder()
        .max_concurrent_streams(1)
        .start()
        .await
        .unwrap();
    let client = Client::new().unwrap();
    let call = client
        .bidi(&server.origin(), PATH, RequestHeaders::new())
        .await
        .unwrap();
    let mut incoming = within(server.accept()).await.unwrap();
    incoming.send_headers().unwrap();
    drop(call);
    assert_eq!(within(incoming.wait_for_reset()).await, Some(REASON_CANCEL));
    let mut next = within(client.bidi(&server.origin(), PATH, RequestHeaders::new()))
        .await
        .unwrap();
    within(server.accept())
        .await
        .unwrap()
        .finish_ok()
        .await
        .unwrap();
    assert_eq!(within(next.recv()).await.unwrap(), None);
}

#[tokio::test]
async fn a_send_cut_short_by_a_401_reports_the_401() {
    let (mut server, _client, mut call) = fresh_call().await;
    let incoming = within(server.accept()).await.unwrap();
    // The server refuses without reading the body; h2 then resets the request stream.
    incoming
        .respond(
            401,
            "application/json",
            r#"{"code":"unauthenticated","message":"expired"}"#,
        )
        .await
        .unwrap();
    // Far more than the stream window, so the send must wait on the refused stream.
    let err = within(call.send(&vec![0u8; 1 << 20])).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Auth, "{err}");
    assert_eq!(err.http_status(), Some(401));
}

/// A call to a fresh loopback server with its first message sent, and the server's side of it
/// (server and client are returned to keep them alive).
async fn started_call() -> (TestServer, Client, BidiCall, ServerCall) {
    let (mut server, client, mut call) = fresh_call().await;
    call.send(b"go").await.unwrap();
    let incoming = within(server.accept()).await.unwrap();
    (server, client, call, incoming)
}

/// A burst of small DATA frames the application has not read yet (a server faster than its
/// reader, or a network stall delivering everything at once) stays buffered: the client does
/// not close its own connection with `ENHANCE_YOUR_CALM`, as h2's default small-frame budget
/// (half the connection window: about 8 900 frames of 20 bytes) would.
#[tokio::test]
async fn twenty_thousand_unread_small_frames_are_all_received() {
    const FRAMES: usize = 20_000;
    let (_server, _client, mut call, mut incoming) = started_call().await;
    let sent = tokio::spawn(async move {
        for i in 0..FRAMES {
            incoming
                .send(format!("delta {i}").as_bytes())
                .await
                .unwrap();
        }
        incoming
            .finish(cursor_transport::envelope::EndStream::ok())
            .await
            .unwrap();
    });
    // Nothing is read until the server has written every frame.
    within(sent).await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    for i in 0..FRAMES {
        let message = within(call.recv()).await.unwrap();
        assert_eq!(message.as_deref(), Some(format!("delta {i}").as_bytes()));
    }
    assert_eq!(within(call.recv()).await.unwrap(), None);
}

/// `recv_data` hands over the body as it arrived: the chunks put together are the enveloped
/// messages and the end-of-stream frame, then `None`; the response's encoding and the message
/// limit are there for a caller that frames the body itself.
#[tokio::test]
async fn recv_data_yields_the_raw_body_then_none() {
    use cursor_transport::envelope::{Decoder, EndStream, Frame};
    let (_server, _client, mut call, mut incoming) = started_call().await;
    incoming.send(b"one").await.unwrap();
    incoming.send(&vec![2u8; 40_000]).await.unwrap();
    incoming.finish(EndStream::ok()).await.unwrap();
    let mut decoder = Decoder::new(Compression::Identity);
    let mut chunks = 0;
    while let Some(chunk) = within(call.recv_data()).await.unwrap() {
        decoder.push_bytes(chunk);
        chunks += 1;
    }
    assert!(chunks >= 2, "{chunks} chunks");
    assert_eq!(call.response_compression(), Some(Compression::Identity));
    assert_eq!(
        call.max_message_size(),
        ClientConfig::default().max_message_size
    );
    let frames: Vec<Frame> = std::iter::from_fn(|| decoder.next_frame().unwrap()).collect();
    assert_eq!(
        frames,
        [
            Frame::Message(Bytes::from_static(b"one")),
            Frame::Message(Bytes::from(vec![2u8; 40_000])),
            Frame::End(EndStream::ok()),
        ]
    );
    assert_eq!(
        within(call.recv_data()).await.unwrap(),
        None,
        "stays at the end"
    );
}

/// A first receive dropped while the response head is still on its way (a `select!` that
/// took another branch) loses nothing: the next receive gets the head and the message.
#[tokio::test]
async fn a_first_receive_dropped_before_the_head_arrived_loses_nothing() {
    let (mut server, _client, mut call) = fresh_call().await;
    let mut incoming = within(server.accept()).await.unwrap();
    // The server has sent nothing yet, so this wait cannot finish; it is dropped.
    let dropped = tokio::time::timeout(Duration::from_millis(50), call.recv()).await;
    assert!(dropped.is_err(), "no head was sent: {dropped:?}");
    incoming.send(b"hello").await.unwrap();
    incoming.finish_ok().await.unwrap();
    assert_eq!(
        within(call.recv()).await.unwrap().as_deref(),
        Some(&b"hello"[..])
    );
    assert_eq!(within(call.recv()).await.unwrap(), None);
}

/// The same for a refusal: a receive dropped while the error body is on its way still lets
/// the next receive report the server's words.
#[tokio::test]
async fn a_receive_dropped_while_waiting_for_a_refusal_still_reports_it() {
    let (mut server, _client, mut call) = fresh_call().await;
    let incoming = within(server.accept()).await.unwrap();
    let dropped = tokio::time::timeout(Duration::from_millis(50), call.recv()).await;
    assert!(dropped.is_err(), "nothing was sent: {dropped:?}");
    incoming
        .respond(
            429,
            "application/json",
            br#"{"code":"resource_exhausted","message":"slow down"}"#.to_vec(),
        )
        .await
        .unwrap();
    let error = within(call.recv()).await.unwrap_err();
    assert!(error.to_string().contains("slow down"), "{error}");
}

/// `recv` and `recv_data` split one body two ways: mixing them on one call is refused as the
/// caller's error instead of losing frames.
#[tokio::test]
async fn mixing_recv_and_recv_data_on_one_call_is_refused() {
    let (mut server, _client, mut call) = fresh_call().await;
    let mut incoming = within(server.accept()).await.unwrap();
    incoming.send(b"one").await.unwrap();
    assert!(within(call.recv_data()).await.unwrap().is_some());
    let mixed = within(call.recv()).await.unwrap_err();
    assert_eq!(mixed.kind(), ErrorKind::Local, "{mixed}");
    assert!(
        mixed.to_string().contains("recv after recv_data"),
        "{mixed}"
    );
    // The call still reads the way it started.
    incoming.finish_ok().await.unwrap();
    while within(call.recv_data()).await.unwrap().is_some() {}
}
