//! TLS on the HTTP front (`--tls-cert`, `--tls-key`): rustls with the `ring` provider, ALPN
//! `http/1.1`, the certificate re-read on SIGHUP.
//!
//! [`TlsFront`] holds the server configuration in use. Each connection takes the configuration
//! current when it is accepted and keeps it: a reload changes what *new* connections are served,
//! never a connection in flight. A reload whose files cannot be read or parsed keeps the
//! configuration in use ([`TlsFront::reload`] returns why).
//!
//! A client that speaks plain HTTP to the TLS port gets `400` and a sentence saying to use
//! `https://` (the first byte of a TLS connection is a handshake record, `0x16`; an HTTP request
//! starts with a method name), then the connection is closed.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::ServerConfig;
use tokio::io::AsyncWriteExt as _;
use tokio::net::TcpStream;
use tokio_rustls::server::TlsStream;
use tokio_rustls::TlsAcceptor;

/// The ALPN protocol the front serves.
const ALPN_HTTP11: &[u8] = b"http/1.1";

/// The first byte of a TLS record carrying a handshake message (RFC 8446, 5.1).
const TLS_HANDSHAKE_RECORD: u8 = 0x16;

/// What a plain HTTP request to the TLS port is answered.
const PLAIN_HTTP_ANSWER: &[u8] = b"HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 62\r\nConnection: close\r\n\r\nthis port serves HTTPS: send the request again with https://\r\n";

/// Why the certificate or key could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("could not read {what} {path}: {source}")]
    Read {
        what: &'static str,
        path: PathBuf,
        source: io::Error,
    },
    #[error("--tls-cert {path}: no PEM certificate (`-----BEGIN CERTIFICATE-----`) in it")]
    NoCertificate { path: PathBuf },
    #[error("--tls-cert {path}: not a valid PEM certificate chain: {reason}")]
    BadCertificate { path: PathBuf, reason: String },
    #[error("--tls-key {path}: no PEM private key (PKCS#8, PKCS#1 or SEC1) in it: {reason}")]
    BadKey { path: PathBuf, reason: String },
    #[error("--tls-cert {cert} and --tls-key {key} do not make a usable pair: {reason}")]
    Pair {
        cert: PathBuf,
        key: PathBuf,
        reason: String,
    },
}

/// The certificate chain and private key files.
#[derive(Debug, Clone)]
pub struct TlsFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
}

impl TlsFiles {
    /// Reads and checks both files into a server configuration.
    pub fn load(&self) -> Result<Arc<ServerConfig>, TlsError> {
        let certs = read_certificates(&self.cert)?;
        let key = read_key(&self.key)?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let pair_error = |reason: String| TlsError::Pair {
            cert: self.cert.clone(),
            key: self.key.clone(),
            reason,
        };
        let mut config = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|error| pair_error(error.to_string()))?
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .map_err(|error| pair_error(error.to_string()))?;
        config.alpn_protocols = vec![ALPN_HTTP11.to_vec()];
        Ok(Arc::new(config))
    }
}

fn read_file(what: &'static str, path: &Path) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|source| TlsError::Read {
        what,
        path: path.to_owned(),
        source,
    })
}

fn read_certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let pem = read_file("--tls-cert", path)?;
    let certs = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|error| TlsError::BadCertificate {
            path: path.to_owned(),
            reason: error.to_string(),
        })?;
    if certs.is_empty() {
        return Err(TlsError::NoCertificate {
            path: path.to_owned(),
        });
    }
    Ok(certs)
}

fn read_key(path: &Path) -> Result<PrivateKeyDer<'static>, TlsError> {
    let pem = read_file("--tls-key", path)?;
    PrivateKeyDer::from_pem_slice(&pem).map_err(|error| TlsError::BadKey {
        path: path.to_owned(),
        reason: error.to_string(),
    })
}

/// The TLS configuration of the HTTP front, swapped on reload.
#[derive(Debug)]
pub struct TlsFront {
    files: TlsFiles,
    current: RwLock<Arc<ServerConfig>>,
}

impl TlsFront {
    /// Loads the files (startup: an error here stops the proxy with its sentence).
    pub fn load(files: TlsFiles) -> Result<TlsFront, TlsError> {
        let config = files.load()?;
        Ok(TlsFront {
            files,
            current: RwLock::new(config),
        })
    }

    /// The files it reads.
    pub fn files(&self) -> &TlsFiles {
        &self.files
    }

    /// Re-reads the files; on success new connections get the new certificate, on error the
    /// one in use stays.
    pub fn reload(&self) -> Result<(), TlsError> {
        let config = self.files.load()?;
        *self
            .current
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = config;
        Ok(())
    }

    /// The acceptor for a connection accepted now.
    pub fn acceptor(&self) -> TlsAcceptor {
        let config = self
            .current
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        TlsAcceptor::from(config)
    }
}

/// Why a connection to the TLS port was not served.
#[derive(Debug, thiserror::Error)]
pub enum AcceptError {
    #[error("a plain HTTP request on the TLS port (answered 400)")]
    PlainHttp,
    #[error("TLS handshake failed: {0}")]
    Handshake(io::Error),
}

/// Runs the server side of the handshake on `stream` with `acceptor` (taken when the connection
/// was accepted). A client that starts with anything but a TLS handshake record gets
/// [`PLAIN_HTTP_ANSWER`] when it looks like HTTP, and is closed.
pub async fn accept(
    acceptor: TlsAcceptor,
    mut stream: TcpStream,
) -> Result<TlsStream<TcpStream>, AcceptError> {
    let mut first = [0u8; 1];
    let peeked = stream
        .peek(&mut first)
        .await
        .map_err(AcceptError::Handshake)?;
    if peeked == 1 && first[0] != TLS_HANDSHAKE_RECORD {
        if first[0].is_ascii_uppercase() {
            // Best effort: the client may already be gone.
            let _ = stream.write_all(PLAIN_HTTP_ANSWER).await;
            let _ = stream.shutdown().await;
            return Err(AcceptError::PlainHttp);
        }
        return Err(AcceptError::Handshake(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("not a TLS handshake (first byte {:#04x})", first[0]),
        )));
    }
    acceptor
        .accept(stream)
        .await
        .map_err(AcceptError::Handshake)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plain_http_answer_states_its_length() {
        let text = std::str::from_utf8(PLAIN_HTTP_ANSWER).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        assert!(head.contains(&format!("Content-Length: {}", body.len())));
    }

    fn files(dir: &tempfile::TempDir, cert: &str, key: &str) -> TlsFiles {
        let files = TlsFiles {
            cert: dir.path().join("cert.pem"),
            key: dir.path().join("key.pem"),
        };
        std::fs::write(&files.cert, cert).unwrap();
        std::fs::write(&files.key, key).unwrap();
        files
    }

    fn self_signed() -> (String, String) {
        let certified = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
        (certified.cert.pem(), certified.signing_key.serialize_pem())
    }

    #[test]
    fn a_certificate_and_its_key_load() {
        let dir = tempfile::tempdir().unwrap();
        let (cert, key) = self_signed();
        let front = TlsFront::load(files(&dir, &cert, &key)).unwrap();
        let config = front.acceptor().config().clone();
        assert_eq!(config.alpn_protocols, [b"http/1.1".to_vec()]);
    }

    #[test]
    fn bad_files_are_refused_with_their_reason() {
        let dir = tempfile::tempdir().unwrap();
        let (cert, key) = self_signed();
        let (_, other_key) = self_signed();
        let cases = [
            (String::new(), key.clone(), "no PEM certificate"),
            (key.clone(), key.clone(), "no PEM certificate"),
            (cert.clone(), cert.clone(), "no PEM private key"),
            (cert.clone(), String::new(), "no PEM private key"),
            (cert.clone(), other_key, "do not make a usable pair"),
        ];
        for (cert, key, expected) in cases {
            let error = TlsFront::load(files(&dir, &cert, &key)).unwrap_err();
            assert!(error.to_string().contains(expected), "{error}");
        }
        let missing = TlsFiles {
            cert: dir.path().join("absent.pem"),
            key: dir.path().join("key.pem"),
        };
        let error = TlsFront::load(missing).unwrap_err().to_string();
        assert!(error.starts_with("could not read --tls-cert"), "{error}");
        assert!(error.contains("absent.pem"), "{error}");
    }

    #[test]
    fn a_failed_reload_keeps_the_configuration_in_use() {
        let dir = tempfile::tempdir().unwrap();
        let (cert, key) = self_signed();
        let front = TlsFront::load(files(&dir, &cert, &key)).unwrap();
        let before = front.acceptor().config().clone();
        std::fs::write(&front.files().key, "not a key").unwrap();
        assert!(front.reload().is_err());
        assert!(Arc::ptr_eq(&before, front.acceptor().config()));
        let (cert, key) = self_signed();
        files(&dir, &cert, &key);
        front.reload().unwrap();
        assert!(!Arc::ptr_eq(&before, front.acceptor().config()));
    }
}
