//! HTTPS to the proxy's TLS front (`--tls-cert`, `--tls-key`): a certificate authority made for
//! one test ([`TestCa`], rcgen) that issues server certificates for `127.0.0.1` and `localhost`,
//! and a client that trusts it alone ([`HttpsClient`]: hyper HTTP/1.1 over tokio-rustls with the
//! `ring` provider, ALPN `http/1.1`). Each connection reports the certificate it was served, so
//! a test sees which one the proxy used.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
use rustls::pki_types::{CertificateDer, ServerName};
use tempfile::TempDir;
use tokio_rustls::TlsConnector;

use super::raw::{RawRequest, RawResponse};

/// A certificate authority for one test, its files in a temporary directory.
pub struct TestCa {
    issuer: CertifiedIssuer<'static, KeyPair>,
    dir: TempDir,
    issued: AtomicUsize,
}

impl std::fmt::Debug for TestCa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestCa")
            .field("dir", &self.dir.path())
            .finish_non_exhaustive()
    }
}

/// A server certificate and its key, as PEM files (`--tls-cert`, `--tls-key`).
#[derive(Debug, Clone)]
pub struct ServerCert {
    pub cert: PathBuf,
    pub key: PathBuf,
    /// The certificate (DER), to compare with what a connection was served.
    pub der: Vec<u8>,
}

impl Default for TestCa {
    fn default() -> Self {
        Self::new()
    }
}

impl TestCa {
    /// A new authority; its certificate is written to [`TestCa::ca_file`].
    pub fn new() -> TestCa {
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA parameters");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "mcp-migrate test CA");
        let key = KeyPair::generate().expect("CA key");
        let issuer = CertifiedIssuer::self_signed(params, key).expect("CA certificate");
        let dir = tempfile::tempdir().expect("temporary directory");
        std::fs::write(dir.path().join("ca.pem"), issuer.pem()).expect("write the CA file");
        TestCa {
            issuer,
            dir,
            issued: AtomicUsize::new(0),
        }
    }

    /// The authority's certificate (PEM), for clients told to trust it (`NODE_EXTRA_CA_CERTS`).
    pub fn ca_file(&self) -> PathBuf {
        self.dir.path().join("ca.pem")
    }

    /// A new server certificate for `127.0.0.1` and `localhost`, written to fresh files.
    pub fn issue(&self) -> ServerCert {
        let n = self.issued.fetch_add(1, Ordering::Relaxed);
        let mut params =
            CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()])
                .expect("server certificate parameters");
        params.distinguished_name.push(
            rcgen::DnType::CommonName,
            format!("mcp-mrtr-proxy test {n}"),
        );
        let key = KeyPair::generate().expect("server key");
        let cert = params
            .signed_by(&key, &self.issuer)
            .expect("server certificate");
        let paths = self.write(&format!("server-{n}"), &cert.pem(), &key.serialize_pem());
        ServerCert {
            cert: paths.0,
            key: paths.1,
            der: cert.der().to_vec(),
        }
    }

    /// Writes `NAME.crt` and `NAME.key` in the authority's directory.
    pub fn write(&self, name: &str, cert_pem: &str, key_pem: &str) -> (PathBuf, PathBuf) {
        let cert = self.dir.path().join(format!("{name}.crt"));
        let key = self.dir.path().join(format!("{name}.key"));
        std::fs::write(&cert, cert_pem).expect("write the certificate");
        std::fs::write(&key, key_pem).expect("write the key");
        (cert, key)
    }

    /// The directory holding the files.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// A client that trusts this authority alone.
    pub fn client(&self) -> HttpsClient {
        let mut roots = rustls::RootCertStore::empty();
        roots
            .add(CertificateDer::from(self.issuer.der().to_vec()))
            .expect("the CA certificate is a trust anchor");
        let mut config = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .expect("TLS versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        HttpsClient {
            connector: TlsConnector::from(Arc::new(config)),
        }
    }
}

/// An HTTPS client trusting one [`TestCa`].
#[derive(Clone)]
pub struct HttpsClient {
    connector: TlsConnector,
}

impl std::fmt::Debug for HttpsClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpsClient").finish_non_exhaustive()
    }
}

/// `(host:port, authority)` of an `https://` URL.
fn address_of(url: &str) -> String {
    let rest = url
        .strip_prefix("https://")
        .unwrap_or_else(|| panic!("not an https:// URL: {url}"));
    rest.split('/').next().unwrap_or(rest).to_owned()
}

impl HttpsClient {
    /// Opens a connection to `url`'s host (TLS handshake done), or says why it failed.
    pub async fn try_connect(&self, url: &str) -> Result<HttpsConnection, String> {
        let address = address_of(url);
        let host = address
            .rsplit_once(':')
            .map_or(address.as_str(), |(h, _)| h);
        let name = ServerName::try_from(host.trim_matches(['[', ']']).to_owned())
            .map_err(|e| format!("server name {host}: {e}"))?;
        let tcp = tokio::net::TcpStream::connect(&address)
            .await
            .map_err(|e| format!("connect {address}: {e}"))?;
        let _ = tcp.set_nodelay(true);
        let tls = self
            .connector
            .connect(name, tcp)
            .await
            .map_err(|e| format!("TLS handshake with {address}: {e}"))?;
        let (_, session) = tls.get_ref();
        let peer_certificate = session
            .peer_certificates()
            .and_then(|chain| chain.first())
            .map(|cert| cert.to_vec())
            .unwrap_or_default();
        let alpn = session.alpn_protocol().map(<[u8]>::to_vec);
        let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
            .await
            .map_err(|e| format!("HTTP/1.1 over TLS with {address}: {e}"))?;
        tokio::spawn(connection);
        Ok(HttpsConnection {
            sender,
            authority: address,
            peer_certificate,
            alpn,
        })
    }

    /// Opens a connection to `url`'s host; panics if it fails.
    pub async fn connect(&self, url: &str) -> HttpsConnection {
        self.try_connect(url)
            .await
            .unwrap_or_else(|e| panic!("HTTPS connection to {url}: {e}"))
    }

    /// `GET url` on a new connection: status and body.
    pub async fn get(&self, url: &str) -> (u16, String) {
        self.connect(url).await.get(url).await
    }

    /// POSTs `request` to `url` on a new connection and reads the whole response.
    pub async fn send(&self, url: &str, request: &RawRequest) -> RawResponse {
        self.connect(url).await.send(url, request).await
    }
}

/// One HTTP/1.1 connection over TLS; requests on it go one at a time.
pub struct HttpsConnection {
    sender: SendRequest<Full<Bytes>>,
    authority: String,
    /// The leaf certificate the server presented (DER).
    pub peer_certificate: Vec<u8>,
    /// The negotiated ALPN protocol.
    pub alpn: Option<Vec<u8>>,
}

impl std::fmt::Debug for HttpsConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpsConnection")
            .field("authority", &self.authority)
            .finish_non_exhaustive()
    }
}

impl HttpsConnection {
    async fn exchange(
        &mut self,
        request: http::Request<Full<Bytes>>,
    ) -> (u16, http::HeaderMap, String) {
        self.sender
            .ready()
            .await
            .unwrap_or_else(|e| panic!("the connection to {} closed: {e}", self.authority));
        let response = self
            .sender
            .send_request(request)
            .await
            .unwrap_or_else(|e| panic!("request to {} failed: {e}", self.authority));
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let body = response
            .into_body()
            .collect()
            .await
            .unwrap_or_else(|e| panic!("reading the response from {} failed: {e}", self.authority))
            .to_bytes();
        (status, headers, String::from_utf8_lossy(&body).into_owned())
    }

    fn path_of(url: &str) -> String {
        let rest = url.strip_prefix("https://").unwrap_or(url);
        rest.find('/')
            .map_or("/".to_owned(), |at| rest[at..].to_owned())
    }

    /// `GET url`: status and body.
    pub async fn get(&mut self, url: &str) -> (u16, String) {
        let request = http::Request::get(Self::path_of(url))
            .header(http::header::HOST, &self.authority)
            .body(Full::new(Bytes::new()))
            .expect("a GET request");
        let (status, _, body) = self.exchange(request).await;
        (status, body)
    }

    /// POSTs `request` (its headers in order, its body as JSON) and reads the whole response.
    pub async fn send(&mut self, url: &str, request: &RawRequest) -> RawResponse {
        let mut builder =
            http::Request::post(Self::path_of(url)).header(http::header::HOST, &self.authority);
        for (name, value) in &request.headers {
            builder = builder.header(name, value);
        }
        let body = serde_json::to_vec(&request.body).expect("serializable request");
        let request = builder
            .body(Full::new(Bytes::from(body)))
            .expect("a POST request");
        let (status, headers, body) = self.exchange(request).await;
        RawResponse::from_parts(status, &headers, body)
    }
}
