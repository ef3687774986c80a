//! The TLS configuration: rustls with ring, TLS 1.2 and 1.3, webpki roots, ALPN `h2` only.

use std::sync::Arc;

use rustls::{ClientConfig, RootCertStore};

use crate::error::CursorError;

/// ALPN protocol id of HTTP/2.
pub(crate) const ALPN_H2: &[u8] = b"h2";

/// Builds the client TLS configuration. The provider is named explicitly so a second
/// crypto provider elsewhere in the process cannot make the builder ambiguous.
pub(crate) fn client_config() -> Result<Arc<ClientConfig>, CursorError> {
    with_alpn(ALPN_H2)
}

/// The same configuration offering only ALPN `http/1.1`, for the Run's HTTP/1.1 fallback
/// (docs/PROTOCOL-AGENT.md §13.8).
pub(crate) fn client_config_http1() -> Result<Arc<ClientConfig>, CursorError> {
    with_alpn(b"http/1.1")
}

fn with_alpn(alpn: &[u8]) -> Result<Arc<ClientConfig>, CursorError> {
    let roots = RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
        .map_err(|err| CursorError::invalid(format!("TLS configuration: {err}")))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![alpn.to_vec()];
    Ok(Arc::new(config))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_offers_only_h2_and_trusts_webpki_roots() {
        let config = client_config().unwrap();
        assert_eq!(config.alpn_protocols, vec![b"h2".to_vec()]);
    }
}
