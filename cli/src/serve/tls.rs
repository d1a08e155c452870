//! TLS with rustls (`--tls-cert`, `--tls-key`). Each connection's handshake runs in its own task (`conn.rs`),
//! bounded by the header timeout, so a slow or silent client holds up no one else.

use std::path::Path;
use std::sync::Arc;
use tokio_rustls::TlsAcceptor;

/// The server's TLS settings from a PEM certificate chain and a PEM private key.
pub fn acceptor(cert: &Path, key: &Path) -> Result<TlsAcceptor, String> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let chain = CertificateDer::pem_file_iter(cert)
        .and_then(|it| it.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("cannot read the certificate {}: {e}", cert.display()))?;
    if chain.is_empty() {
        return Err(format!("no certificate in {}", cert.display()));
    }
    let key = PrivateKeyDer::from_pem_file(key)
        .map_err(|e| format!("cannot read the private key {}: {e}", key.display()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| format!("the certificate and key do not make a TLS identity: {e}"))?;
    Ok(TlsAcceptor::from(Arc::new(config)))
}
