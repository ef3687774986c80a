//! T-TRANS: unary Connect calls and plain HTTP requests.

use cursor_proto::ir::Classify as _;
use std::time::Duration;

use bytes::Bytes;
use cursor_proto::ir::ErrorKind;
use cursor_transport::{
    Client, RequestHeaders,
    envelope::{Code, ConnectError},
    testing::TestServer,
};

async fn within<T>(future: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(20), future)
        .await
        .expect("test step timed out")
}

#[tokio::test]
async fn unary_call_sends_bare_proto_and_returns_the_body() {
    let mut server = TestServer::start().await.unwrap();
    let client = Client::new().unwrap();
    let origin = server.origin();
    let call = tokio::spawn(async move {
        client
            .unary_message::<String, String>(
                &origin,
                "/aiserver.v1.AiService/AvailableModels",
                RequestHeaders::new(),
                &"q".to_owned(),
            )
            .await
    });
    let mut incoming = within(server.accept()).await.unwrap();
    assert_eq!(incoming.header("content-type"), Some("application/proto"));
    assert_eq!(incoming.header("connect-protocol-version"), Some("1"));
    let body = within(incoming.read_body()).await.unwrap();
    assert_eq!(
        body,
        Bytes::from(prost::Message::encode_to_vec(&"q".to_owned()))
    );
    incoming
        .respond_unary(prost::Message::encode_to_vec(&"answer".to_owned()))
        .await
        .unwrap();
    assert_eq!(within(call).await.unwrap().unwrap(), "answer");
}

#[tokio::test]
async fn unary_error_body_is_classified() {
    let cases = [
        (
            403,
            ConnectError::new(Code::PermissionDenied, "token revoked"),
            ErrorKind::Auth,
        ),
        (
            429,
            ConnectError::new(Code::ResourceExhausted, "quota exceeded"),
            ErrorKind::RemoteRefusal,
        ),
        (
            503,
            ConnectError::new(Code::Unavailable, "try elsewhere"),
            ErrorKind::Network,
        ),
    ];
    let mut server = TestServer::start().await.unwrap();
    let client = Client::new().unwrap();
    for (status, error, kind) in cases {
        let origin = server.origin();
        let client = client.clone();
        let call = tokio::spawn(async move {
            client
                .unary(&origin, "/x.v1.S/M", RequestHeaders::new(), Bytes::new())
                .await
        });
        let incoming = within(server.accept()).await.unwrap();
        incoming.respond_unary_error(status, &error).await.unwrap();
        let err = within(call).await.unwrap().unwrap_err();
        assert_eq!(err.kind(), kind, "{err}");
        assert_eq!(err.http_status(), Some(status));
        assert_eq!(err.code(), Some(error.code));
    }
}

#[tokio::test]
async fn send_http_goes_through_the_handler() {
    let server = TestServer::builder()
        .handler(|request| {
            let body = format!(
                "{} {} {}",
                request.method(),
                request.uri().path(),
                String::from_utf8_lossy(request.body())
            );
            http::Response::builder()
                .status(202)
                .header("content-type", "text/plain")
                .body(Bytes::from(body))
                .unwrap()
        })
        .start()
        .await
        .unwrap();
    let client = Client::new().unwrap();
    let request = http::Request::builder()
        .method("POST")
        .uri(format!("{}/auth/poll?uuid=1", server.origin()))
        .header("content-type", "application/json")
        .body(Bytes::from_static(b"{}"))
        .unwrap();
    let response = within(client.send_http(request)).await.unwrap();
    assert_eq!(response.status(), 202);
    assert_eq!(response.body(), &Bytes::from_static(b"POST /auth/poll {}"));
}

#[tokio::test]
async fn send_http_returns_error_statuses_as_responses() {
    let server = TestServer::builder()
        .handler(|_| {
            http::Response::builder()
                .status(401)
                .body(Bytes::from_static(b"no"))
                .unwrap()
        })
        .start()
        .await
        .unwrap();
    let client = Client::new().unwrap();
    let request = http::Request::get(format!("{}/auth/me", server.origin()))
        .body(Bytes::new())
        .unwrap();
    let response = within(client.send_http(request)).await.unwrap();
    assert_eq!(response.status(), 401);
}

/// Sends `raw` on one HTTP/1.1 connection and reads until the server closes it.
async fn http1_exchange(server: &TestServer, raw: &str) -> String {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let mut tcp = tokio::net::TcpStream::connect(server.addr()).await.unwrap();
    tcp.write_all(raw.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    within(tcp.read_to_end(&mut answer)).await.unwrap();
    String::from_utf8(answer).unwrap()
}

#[tokio::test]
async fn the_handler_answers_http1_unary_requests_with_keep_alive() {
    let server = TestServer::builder()
        .handler(|request| {
            let body = format!(
                "{} {} {}",
                request.method(),
                request.uri().path(),
                String::from_utf8_lossy(request.body())
            );
            http::Response::builder()
                .status(200)
                .header("content-type", "application/proto")
                .body(Bytes::from(body))
                .unwrap()
        })
        .start()
        .await
        .unwrap();
    let answer = http1_exchange(
        &server,
        "POST /aiserver.v1.AiService/AvailableModels HTTP/1.1\r\nhost: x\r\n\
         content-type: application/proto\r\ncontent-length: 3\r\n\r\nabc\
         GET /auth/poll?uuid=1 HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n",
    )
    .await;
    let (first, second) = answer
        .split_once("HTTP/1.1 200 OK\r\n")
        .map(|(_, rest)| rest)
        .and_then(|rest| rest.split_once("HTTP/1.1 200 OK\r\n"))
        .expect("two responses on one connection");
    assert!(
        first.contains("content-type: application/proto\r\n"),
        "{answer}"
    );
    assert!(first.contains("content-length: 47\r\n"), "{answer}");
    assert!(
        first.ends_with("\r\n\r\nPOST /aiserver.v1.AiService/AvailableModels abc"),
        "{answer}"
    );
    assert!(second.contains("connection: close\r\n"), "{answer}");
    assert!(second.ends_with("\r\n\r\nGET /auth/poll "), "{answer}");
    assert_eq!(server.requests(), 2);
}

#[tokio::test]
async fn a_streaming_call_over_http1_is_refused_with_505_and_h2_still_works() {
    let server = TestServer::builder()
        .handler(|_| http::Response::new(Bytes::from_static(b"unary")))
        .start()
        .await
        .unwrap();
    let answer = http1_exchange(
        &server,
        "POST /agent.v1.AgentService/Run HTTP/1.1\r\nhost: x\r\n\
         content-type: application/connect+proto\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
    )
    .await;
    assert!(answer.starts_with("HTTP/1.1 505 "), "{answer}");
    // The same port still speaks HTTP/2 to the transport's client.
    let request = http::Request::builder()
        .method("POST")
        .uri(format!("{}/x", server.origin()))
        .body(Bytes::new())
        .unwrap();
    let response = within(Client::new().unwrap().send_http(request))
        .await
        .unwrap();
    assert_eq!(response.body(), &Bytes::from_static(b"unary"));
}

/// A server other processes must find listens where it is told (no TCP relay in front).
#[tokio::test]
async fn a_test_server_listens_on_the_address_it_is_given() {
    // A port that was free a moment ago (the OS does not hand it out again at once).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let server = TestServer::builder()
        .bind(std::net::SocketAddr::from(([127, 0, 0, 1], port)))
        .handler(|_| http::Response::new(Bytes::from_static(b"here")))
        .start()
        .await
        .unwrap();
    assert_eq!(server.addr().port(), port);
    assert_eq!(
        server.origin().to_string(),
        format!("http://127.0.0.1:{port}")
    );
    let request = http::Request::builder()
        .uri(format!("http://127.0.0.1:{port}/anything"))
        .body(Bytes::new())
        .unwrap();
    let response = within(Client::new().unwrap().send_http(request))
        .await
        .unwrap();
    assert_eq!(response.body(), &Bytes::from_static(b"here"));
}
