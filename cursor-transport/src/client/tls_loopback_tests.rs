//! The TLS path on loopback: a rustls + h2 server with a self-signed `localhost` certificate
//! (`testdata/`, valid until 2126), reached through an origin only tests can build.

use cursor_proto::ir::Classify as _;
use std::sync::Arc;

use bytes::Bytes;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

use super::{Client, ClientConfig, connection::Pool, tls::ALPN_H2};
use crate::{headers::RequestHeaders, origin::Origin};
use cursor_proto::ir::ErrorKind;

const CERT: &[u8] = include_bytes!("testdata/localhost.cert.der");
const KEY: &[u8] = include_bytes!("testdata/localhost.key.der");

fn server_config(alpn: &[u8]) -> Arc<rustls::ServerConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(KEY.to_vec()));
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![CertificateDer::from(CERT.to_vec())], key)
        .unwrap();
    config.alpn_protocols = vec![alpn.to_vec()];
    Arc::new(config)
}

/// The production client configuration with the test certificate as its only root.
fn client_trusting_test_cert() -> Client {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(CertificateDer::from(CERT.to_vec())).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let mut tls_http1 = tls.clone();
    tls.alpn_protocols = vec![ALPN_H2.to_vec()];
    tls_http1.alpn_protocols = vec![b"http/1.1".to_vec()];
    Client {
        pool: Arc::new(Pool::new(
            ClientConfig::default(),
            Arc::new(tls),
            Arc::new(tls_http1),
        )),
    }
}

/// Serves one TLS connection; answers every request with a unary `ok`.
async fn serve_once(alpn: &'static [u8]) -> u16 {
    let listener = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let acceptor = TlsAcceptor::from(server_config(alpn));
    tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.unwrap();
        let Ok(tls) = acceptor.accept(tcp).await else {
            return;
        };
        let Ok(mut conn) = h2::server::handshake(tls).await else {
            return;
        };
        while let Some(Ok((_request, mut respond))) = conn.accept().await {
            let head = http::Response::builder()
                .status(200)
                .header("content-type", "application/proto")
                .body(())
                .unwrap();
            let mut send = respond.send_response(head, false).unwrap();
            send.send_data(Bytes::from_static(b"ok"), true).unwrap();
        }
    });
    port
}

#[tokio::test]
async fn unary_call_over_tls_with_alpn_h2() {
    let port = serve_once(b"h2").await;
    let client = client_trusting_test_cert();
    let origin = Origin::https_for_tests("localhost", port);
    let body = client
        .unary(&origin, "/x.v1.S/M", RequestHeaders::new(), Bytes::new())
        .await
        .unwrap();
    assert_eq!(body, Bytes::from_static(b"ok"));
}

#[tokio::test]
async fn a_server_without_h2_is_refused() {
    let port = serve_once(b"http/1.1").await;
    let client = client_trusting_test_cert();
    let origin = Origin::https_for_tests("localhost", port);
    let err = client
        .unary(&origin, "/x.v1.S/M", RequestHeaders::new(), Bytes::new())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Network, "{err}");
}

#[tokio::test]
async fn an_untrusted_certificate_is_a_network_error() {
    let port = serve_once(b"h2").await;
    // The production configuration trusts only the webpki roots.
    let client = Client::new().unwrap();
    let origin = Origin::https_for_tests("localhost", port);
    let err = client
        .unary(&origin, "/x.v1.S/M", RequestHeaders::new(), Bytes::new())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Network, "{err}");
    assert!(err.to_string().contains("TLS"), "{err}");
}
