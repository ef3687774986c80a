//! T-TRANS: connection sharing, GOAWAY, keepalive, dialing failures.

use cursor_proto::ir::Classify as _;
use std::time::Duration;

use cursor_proto::ir::ErrorKind;
use cursor_transport::{
    BidiCall, Client, ClientConfig, Origin, RequestHeaders,
    testing::{ServerCall, TestServer},
};

const PATH: &str = "/test.v1.Echo/Chat";

async fn within<T>(future: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(30), future)
        .await
        .expect("test step timed out")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_concurrent_streams_share_one_connection() {
    let mut server = TestServer::start().await.unwrap();
    let client = Client::new().unwrap();
    let origin = server.origin();
    let mut calls = Vec::new();
    for i in 0..200u32 {
        let mut call = client
            .bidi(&origin, PATH, RequestHeaders::new())
            .await
            .unwrap();
        call.send(&i.to_be_bytes()).await.unwrap();
        call.close_send().unwrap();
        calls.push(call);
    }
    // Every stream is open at once before any is answered.
    let mut incoming = Vec::new();
    for _ in 0..200 {
        incoming.push(within(server.accept()).await.unwrap());
    }
    let servers = tokio::spawn(async move {
        for mut call in incoming {
            let msg = call.recv().await.unwrap().unwrap();
            call.send(&msg).await.unwrap();
            call.finish_ok().await.unwrap();
        }
    });
    let clients: Vec<_> = calls
        .into_iter()
        .enumerate()
        .map(|(i, mut call)| {
            tokio::spawn(async move {
                let got = call.recv().await.unwrap().unwrap();
                assert_eq!(got.as_ref(), &u32::try_from(i).unwrap().to_be_bytes());
                assert_eq!(call.recv().await.unwrap(), None);
            })
        })
        .collect();
    for handle in clients {
        within(handle).await.unwrap();
    }
    within(servers).await.unwrap();
    assert_eq!(server.connections(), 1);
    assert_eq!(server.requests(), 200);
}

#[tokio::test]
async fn goaway_moves_new_streams_to_a_new_connection_without_replaying_in_flight_ones() {
    let mut server = TestServer::start().await.unwrap();
    let client = Client::new().unwrap();
    let mut first = client
        .bidi(&server.origin(), PATH, RequestHeaders::new())
        .await
        .unwrap();
    first.send(b"in flight").await.unwrap();
    let mut first_incoming = within(server.accept()).await.unwrap();
    assert_eq!(
        within(first_incoming.recv()).await.unwrap().as_deref(),
        Some(b"in flight".as_slice())
    );

    first_incoming.goaway().await;
    // Frames are ordered: once this arrives, the client has seen the GOAWAY.
    first_incoming.send(b"after goaway").await.unwrap();
    assert_eq!(
        within(first.recv()).await.unwrap().as_deref(),
        Some(b"after goaway".as_slice())
    );

    let mut second = client
        .bidi(&server.origin(), PATH, RequestHeaders::new())
        .await
        .unwrap();
    second.send(b"new").await.unwrap();
    let mut second_incoming = within(server.accept()).await.unwrap();
    assert_eq!(
        within(second_incoming.recv()).await.unwrap().as_deref(),
        Some(b"new".as_slice())
    );
    assert_eq!(
        server.connections(),
        2,
        "the new stream went to a new connection"
    );

    // The in-flight stream finishes on the old connection and was never sent again.
    first.send(b"still here").await.unwrap();
    assert_eq!(
        within(first_incoming.recv()).await.unwrap().as_deref(),
        Some(b"still here".as_slice())
    );
    first_incoming.finish_ok().await.unwrap();
    assert_eq!(within(first.recv()).await.unwrap(), None);
    second_incoming.finish_ok().await.unwrap();
    assert_eq!(within(second.recv()).await.unwrap(), None);
    assert_eq!(server.requests(), 2, "no request was replayed");
}

#[tokio::test]
async fn goaway_with_error_fails_the_in_flight_stream_as_network() {
    let mut server = TestServer::start().await.unwrap();
    let client = Client::new().unwrap();
    let mut call = client
        .bidi(&server.origin(), PATH, RequestHeaders::new())
        .await
        .unwrap();
    let incoming = within(server.accept()).await.unwrap();
    incoming.goaway_with_error();
    let err = within(call.recv()).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Network, "{err}");
    // A later call dials again.
    let mut again = client
        .bidi(&server.origin(), PATH, RequestHeaders::new())
        .await
        .unwrap();
    within(server.accept())
        .await
        .unwrap()
        .finish_ok()
        .await
        .unwrap();
    assert_eq!(within(again.recv()).await.unwrap(), None);
    assert_eq!(server.connections(), 2);
}

#[tokio::test]
async fn a_peer_that_stops_answering_pings_is_a_network_error() {
    let mut server = TestServer::start().await.unwrap();
    let mut config = ClientConfig::default();
    config.ping_interval = Duration::from_millis(100);
    config.ping_timeout = Duration::from_millis(300);
    let client = Client::with_config(config).unwrap();
    let mut call = client
        .bidi(&server.origin(), PATH, RequestHeaders::new())
        .await
        .unwrap();
    let mut incoming = within(server.accept()).await.unwrap();
    incoming.send(b"alive").await.unwrap();
    assert!(within(call.recv()).await.unwrap().is_some());
    // Pings are answered while the peer is alive: past the PONG timeout, the call still works.
    tokio::time::sleep(Duration::from_millis(500)).await;
    incoming.send(b"still alive").await.unwrap();
    assert_eq!(
        within(call.recv()).await.unwrap().as_deref(),
        Some(&b"still alive"[..])
    );
    incoming.stall_connection();
    let err = within(call.recv()).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Network, "{err}");
    assert!(err.to_string().contains("PONG"), "{err}");
}

#[tokio::test]
async fn a_healthy_idle_stream_survives_many_ping_rounds() {
    let mut server = TestServer::start().await.unwrap();
    let mut config = ClientConfig::default();
    config.ping_interval = Duration::from_millis(50);
    // Generous: a loaded CI box must not turn a slow PONG into a false failure.
    config.ping_timeout = Duration::from_secs(5);
    let client = Client::with_config(config).unwrap();
    let mut call = client
        .bidi(&server.origin(), PATH, RequestHeaders::new())
        .await
        .unwrap();
    let incoming = within(server.accept()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(600)).await;
    incoming.finish_ok().await.unwrap();
    assert_eq!(within(call.recv()).await.unwrap(), None);
}

#[tokio::test]
async fn connection_refused_is_a_network_error() {
    // Bind and drop to find a port nobody listens on.
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let client = Client::new().unwrap();
    let err = client
        .bidi(&Origin::loopback(port), PATH, RequestHeaders::new())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Network, "{err}");
}

#[tokio::test]
async fn refused_origins_never_reach_a_socket() {
    let client = Client::new().unwrap();
    let request = http::Request::builder()
        .method("POST")
        .uri("https://cursor.com/auth/poll")
        .body(bytes::Bytes::new())
        .unwrap();
    let err = client.send_http(request).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Local, "{err}");
    assert!(matches!(
        err,
        cursor_transport::CursorError::OriginRefused { .. }
    ));
}

/// Guards a step that must not wait for a stream slot: generous, only so a hang fails the test.
async fn promptly<T>(future: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(5), future)
        .await
        .expect("the step waited instead of answering")
}

/// Opens a stream and waits until the server answered on it, so the client has seen the
/// server's SETTINGS and the stream is live on both ends.
async fn live_stream(client: &Client, server: &mut TestServer) -> (BidiCall, ServerCall) {
    let mut call = within(client.bidi(&server.origin(), PATH, RequestHeaders::new()))
        .await
        .unwrap();
    let mut incoming = within(server.accept()).await.unwrap();
    incoming.send(b"open").await.unwrap();
    assert_eq!(
        within(call.recv()).await.unwrap().as_deref(),
        Some(b"open".as_slice())
    );
    (call, incoming)
}

fn client_with_at_most(connections: usize) -> Client {
    let mut config = ClientConfig::default();
    config.max_connections_per_origin = connections;
    Client::with_config(config).unwrap()
}

#[tokio::test]
async fn a_stream_past_the_servers_limit_opens_on_a_second_connection() {
    let mut server = TestServer::builder()
        .max_concurrent_streams(2)
        .start()
        .await
        .unwrap();
    let client = Client::new().unwrap();
    let _first = live_stream(&client, &mut server).await;
    let _second = live_stream(&client, &mut server).await;
    let (mut third, incoming) = promptly(live_stream(&client, &mut server)).await;
    assert_eq!(server.connections(), 2);
    incoming.finish_ok().await.unwrap();
    assert_eq!(within(third.recv()).await.unwrap(), None);
}

#[tokio::test]
async fn with_every_allowed_connection_full_a_stream_fails_at_once_as_network() {
    let mut server = TestServer::builder()
        .max_concurrent_streams(2)
        .start()
        .await
        .unwrap();
    let client = client_with_at_most(1);
    let _first = live_stream(&client, &mut server).await;
    let _second = live_stream(&client, &mut server).await;
    let err = promptly(client.bidi(&server.origin(), PATH, RequestHeaders::new()))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Network, "{err}");
    assert!(err.to_string().contains("stream slots"), "{err}");
    assert_eq!(server.connections(), 1);
    assert_eq!(
        server.requests(),
        2,
        "the refused stream never reached the server"
    );
}

#[tokio::test]
async fn a_finished_stream_frees_its_slot_on_the_same_connection() {
    let mut server = TestServer::builder()
        .max_concurrent_streams(2)
        .start()
        .await
        .unwrap();
    let client = client_with_at_most(1);
    let _first = live_stream(&client, &mut server).await;
    let (mut second, incoming) = live_stream(&client, &mut server).await;
    incoming.finish_ok().await.unwrap();
    assert_eq!(within(second.recv()).await.unwrap(), None);
    drop(second);
    let _third = promptly(live_stream(&client, &mut server)).await;
    assert_eq!(server.connections(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_opens_fill_each_connection_before_dialing_the_next() {
    let mut server = TestServer::builder()
        .max_concurrent_streams(2)
        .start()
        .await
        .unwrap();
    let client = Client::new().unwrap();
    let origin = server.origin();
    let open = || client.bidi(&origin, PATH, RequestHeaders::new());
    let (a, b, c, d) = within(async { tokio::join!(open(), open(), open(), open()) }).await;
    let _calls = [a.unwrap(), b.unwrap(), c.unwrap(), d.unwrap()];
    // A stream h2 queued past a connection's limit would never arrive.
    for _ in 0..4 {
        promptly(server.accept()).await.unwrap();
    }
    assert_eq!(server.connections(), 2, "two connections, two streams each");
}

#[tokio::test]
async fn a_peer_that_never_sends_its_settings_fails_the_dial_as_network() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let origin = Origin::loopback(listener.local_addr().unwrap().port());
    // Accepts and keeps the socket open, silent: its stream limit stays unknown.
    let silent = tokio::spawn(async move {
        let (_tcp, _) = listener.accept().await.unwrap();
        std::future::pending::<()>().await;
    });
    let mut config = ClientConfig::default();
    config.connect_timeout = Duration::from_millis(200);
    let client = Client::with_config(config).unwrap();
    let err = within(client.bidi(&origin, PATH, RequestHeaders::new()))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Network, "{err}");
    assert!(err.to_string().contains("SETTINGS"), "{err}");
    silent.abort();
}
