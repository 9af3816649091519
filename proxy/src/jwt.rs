//! Verifying the callers' access tokens (`--principal jwt`): a bearer token is a JWT signed by a
//! key of the authorization server's JWKS (`--jwks FILE|URL`), issued by `--issuer` for
//! `--audience`, not expired; the caller it names is its issuer and subject
//! ([`Principal::from_identity`]), so a refreshed token of the same user is the same caller.
//!
//! Keys: the JWKS is read at startup (a file must load; an unreachable URL is logged and tried
//! again at the first token), kept in memory, and read again when a token names a key id the
//! set does not hold (a rotation at the authorization server) — at most once per
//! `--jwks-refetch-interval` — and after [`MAX_KEYS_AGE`] (a key removed from the set stops
//! being trusted). A URL is fetched with a bounded time ([`FETCH_TIMEOUT`]); a failed fetch
//! keeps the keys already held. Only asymmetric algorithms are accepted (RS*, PS*, ES*, EdDSA),
//! each with a key of its own family; a token's `alg` must match its key's `alg` when the JWKS
//! names one.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::header::{ACCEPT, HOST};
use http::{Method, Request, StatusCode};
use http_body_util::{BodyExt as _, Full, Limited};
use jsonwebtoken::jwk::{Jwk, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;
use tokio::sync::Mutex as AsyncMutex;

use crate::backend::http_client::{LaneConnections, Upstream};
use crate::request::Principal;

/// How long fetching the JWKS from its URL may take.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(10);
/// The keys are read again when older than this, whatever the tokens name.
pub const MAX_KEYS_AGE: Duration = Duration::from_secs(3600);
/// Largest JWKS document read.
const MAX_JWKS_BYTES: usize = 1024 * 1024;
/// Clock skew tolerated on `exp` and `nbf`.
const LEEWAY_SECS: u64 = 60;

/// `--principal`: what names a caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum PrincipalMode {
    /// The digest of its credentials (`Authorization` and `--forward-header` values): a new
    /// token is a new caller.
    #[default]
    Digest,
    /// The verified access token's issuer and subject (`--jwks`, `--issuer`, `--audience`).
    Jwt,
}

/// The settings of [`JwtVerifier`].
#[derive(Debug, Clone)]
pub struct JwtSettings {
    /// `--jwks`: a file path or an `http://` URL.
    pub jwks: String,
    /// `--issuer`: the `iss` every token must carry.
    pub issuer: String,
    /// `--audience`: the `aud` every token must include.
    pub audience: String,
    /// `--jwks-refetch-interval`: the least time between two reads of the JWKS.
    pub refetch_interval: Duration,
}

/// Who a verified token names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub issuer: String,
    pub subject: String,
    /// The token's scopes (`scope`, space-separated, or `scp`, an array).
    pub scopes: Vec<String>,
}

impl Identity {
    pub fn principal(&self) -> Principal {
        Principal::from_identity(&self.issuer, &self.subject)
    }
}

/// Where the JWKS comes from.
enum Source {
    File(PathBuf),
    Url {
        url: String,
        connections: Box<LaneConnections>,
        host: http::HeaderValue,
        path: http::Uri,
    },
}

impl Source {
    fn describe(&self) -> String {
        match self {
            Source::File(path) => path.display().to_string(),
            Source::Url { url, .. } => url.clone(),
        }
    }

    async fn read(&self) -> Result<Vec<u8>, String> {
        match self {
            Source::File(path) => tokio::fs::read(path)
                .await
                .map_err(|error| format!("cannot read {}: {error}", path.display())),
            Source::Url {
                url,
                connections,
                host,
                path,
            } => tokio::time::timeout(FETCH_TIMEOUT, fetch(connections, host, path))
                .await
                .unwrap_or_else(|_| Err(format!("no answer within {FETCH_TIMEOUT:?}")))
                .map_err(|why| format!("cannot fetch {url}: {why}")),
        }
    }
}

async fn fetch(
    connections: &LaneConnections,
    host: &http::HeaderValue,
    path: &http::Uri,
) -> Result<Vec<u8>, String> {
    let request = Request::builder()
        .method(Method::GET)
        .uri(path.clone())
        .header(HOST, host.clone())
        .header(ACCEPT, "application/json")
        .body(Full::new(Bytes::new()))
        .map_err(|error| error.to_string())?;
    let response = connections
        .request(request)
        .await
        .map_err(|error| error.to_string())?;
    let status = response.status();
    let body = Limited::new(response.into_body(), MAX_JWKS_BYTES)
        .collect()
        .await
        .map_err(|error| format!("reading the document: {error}"))?
        .to_bytes();
    if status != StatusCode::OK {
        return Err(format!("answered HTTP {status}"));
    }
    Ok(body.to_vec())
}

/// One usable key of the set.
struct Key {
    kid: Option<String>,
    /// The JWK's `alg`, when it names one.
    alg: Option<Algorithm>,
    family: Family,
    decoding: DecodingKey,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Family {
    Rsa,
    Ec,
    Ed,
}

fn family_of(alg: Algorithm) -> Option<Family> {
    use Algorithm::*;
    match alg {
        RS256 | RS384 | RS512 | PS256 | PS384 | PS512 => Some(Family::Rsa),
        ES256 | ES384 => Some(Family::Ec),
        EdDSA => Some(Family::Ed),
        // Shared secrets: never (a JWKS publishes public keys).
        HS256 | HS384 | HS512 => None,
    }
}

#[derive(Clone)]
struct Keys {
    keys: Arc<Vec<Key>>,
    /// When the set was last read (successfully or not); `None`: never tried.
    read_at: Option<Instant>,
}

/// Verifies access tokens against the authorization server's keys (see the module
/// documentation).
pub struct JwtVerifier {
    settings: JwtSettings,
    source: Source,
    keys: std::sync::RwLock<Keys>,
    /// Serialises reads of the set (one fetch at a time).
    reading: AsyncMutex<()>,
}

impl std::fmt::Debug for JwtVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JwtVerifier")
            .field("jwks", &self.source.describe())
            .field("issuer", &self.settings.issuer)
            .field("audience", &self.settings.audience)
            .finish_non_exhaustive()
    }
}

/// Why a token was not accepted (the `error_description` of the 401).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InvalidToken(pub String);

#[derive(Deserialize)]
struct Claims {
    iss: String,
    sub: String,
    #[serde(default)]
    scope: Option<String>,
    #[serde(default)]
    scp: Option<Vec<String>>,
}

impl JwtVerifier {
    /// Reads the JWKS once. A file that cannot be read or holds no usable key is an error; a
    /// URL that cannot be fetched now is logged and fetched again at the first token.
    pub async fn start(settings: JwtSettings) -> Result<Arc<Self>, String> {
        if settings.issuer.trim().is_empty() || settings.audience.trim().is_empty() {
            return Err("--principal jwt needs --issuer and --audience".into());
        }
        let source = if settings.jwks.contains("://") {
            if !settings.jwks.starts_with("http://") {
                return Err(format!(
                    "--jwks {}: only http:// URLs are fetched (the proxy has no TLS client); \
                     keep the set in a file (it is read again on an unknown key id) or serve it \
                     on a trusted network",
                    settings.jwks
                ));
            }
            let Upstream { uri, host, path } =
                Upstream::parse(&settings.jwks).map_err(|error| format!("--jwks: {error}"))?;
            Source::Url {
                url: settings.jwks.clone(),
                connections: Box::new(LaneConnections::new(
                    uri,
                    Duration::from_secs(5),
                    Duration::from_secs(30),
                    tracing::Span::none(),
                )),
                host,
                path,
            }
        } else {
            Source::File(PathBuf::from(&settings.jwks))
        };
        let file = matches!(source, Source::File(_));
        let verifier = Arc::new(JwtVerifier {
            settings,
            source,
            keys: std::sync::RwLock::new(Keys {
                keys: Arc::default(),
                read_at: None,
            }),
            reading: AsyncMutex::new(()),
        });
        match verifier.read_keys().await {
            Ok(count) => {
                tracing::info!(jwks = %verifier.source.describe(), keys = count, "loaded the JWKS")
            }
            Err(why) if file => return Err(format!("--jwks: {why}")),
            Err(why) => {
                tracing::warn!(%why, "the JWKS could not be loaded now; trying again at the first token")
            }
        }
        Ok(verifier)
    }

    fn current(&self) -> Keys {
        self.keys.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Reads the set and replaces the keys (a failed read keeps them). How many keys it holds.
    async fn read_keys(&self) -> Result<usize, String> {
        let result = self
            .source
            .read()
            .await
            .and_then(|bytes| parse_jwks(&bytes));
        let mut keys = self.keys.write().unwrap_or_else(|e| e.into_inner());
        keys.read_at = Some(Instant::now());
        let parsed = result?;
        let count = parsed.len();
        keys.keys = Arc::new(parsed);
        Ok(count)
    }

    /// Reads the set again if the last read is older than `--jwks-refetch-interval` (or
    /// [`MAX_KEYS_AGE`] when `stale_only`). Whether it did.
    async fn refresh(&self, stale_only: bool) -> bool {
        let due = |keys: &Keys| {
            let wait = if stale_only {
                MAX_KEYS_AGE
            } else {
                self.settings.refetch_interval
            };
            keys.read_at.is_none_or(|at| at.elapsed() >= wait)
        };
        if !due(&self.current()) {
            return false;
        }
        let _reading = self.reading.lock().await;
        // Another task may have read it while this one waited.
        if !due(&self.current()) {
            return true;
        }
        if let Err(why) = self.read_keys().await {
            tracing::warn!(jwks = %self.source.describe(), %why, "reading the JWKS failed; keeping the keys held");
        }
        true
    }

    /// Verifies `token` (the bearer token, without `Bearer `): who it names, or why not.
    pub async fn verify(&self, token: &str) -> Result<Identity, InvalidToken> {
        let header = jsonwebtoken::decode_header(token)
            .map_err(|_| InvalidToken("the bearer token is not a JWT".into()))?;
        let family = family_of(header.alg).ok_or_else(|| {
            InvalidToken(format!(
                "tokens signed with {:?} are not accepted (asymmetric algorithms only)",
                header.alg
            ))
        })?;
        self.refresh(true).await;
        let mut tried_again = false;
        loop {
            let keys = self.current();
            let candidates: Vec<&Key> = keys
                .keys
                .iter()
                .filter(|key| key.family == family)
                .filter(|key| key.alg.is_none_or(|alg| alg == header.alg))
                .filter(|key| match (&header.kid, &key.kid) {
                    (Some(wanted), Some(kid)) => wanted == kid,
                    (Some(_), None) => false,
                    (None, _) => true,
                })
                .collect();
            if candidates.is_empty() {
                // A key the set does not hold (yet): read it again, at most once per interval.
                if !tried_again && self.refresh(false).await {
                    tried_again = true;
                    continue;
                }
                return Err(InvalidToken(match &header.kid {
                    Some(kid) => {
                        format!("no key `{kid}` for {:?} in the issuer's JWKS", header.alg)
                    }
                    None => format!("no key for {:?} in the issuer's JWKS", header.alg),
                }));
            }
            let mut last = InvalidToken("the token's signature does not verify".into());
            for key in candidates {
                match self.check(token, header.alg, &key.decoding) {
                    Ok(identity) => return Ok(identity),
                    Err(why) => last = why,
                }
            }
            return Err(last);
        }
    }

    fn check(
        &self,
        token: &str,
        alg: Algorithm,
        key: &DecodingKey,
    ) -> Result<Identity, InvalidToken> {
        let mut validation = Validation::new(alg);
        validation.set_issuer(&[&self.settings.issuer]);
        validation.set_audience(&[&self.settings.audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        validation.leeway = LEEWAY_SECS;
        validation.validate_nbf = true;
        let data = jsonwebtoken::decode::<Claims>(token, key, &validation).map_err(|error| {
            use jsonwebtoken::errors::ErrorKind;
            InvalidToken(
                match error.kind() {
                    ErrorKind::ExpiredSignature => "the token expired",
                    ErrorKind::ImmatureSignature => "the token is not valid yet (nbf)",
                    ErrorKind::InvalidIssuer => "the token was issued by another issuer",
                    ErrorKind::InvalidAudience => "the token is for another audience",
                    ErrorKind::InvalidSignature => "the token's signature does not verify",
                    ErrorKind::MissingRequiredClaim(_) | ErrorKind::Json(_) => {
                        "the token lacks a required claim (exp, iss, aud, sub) or has a malformed one"
                    }
                    _ => "the token could not be verified",
                }
                .to_owned(),
            )
        })?;
        if data.claims.sub.is_empty() {
            return Err(InvalidToken("the token's subject is empty".into()));
        }
        let scopes = match (data.claims.scope, data.claims.scp) {
            (Some(scope), _) => scope.split_whitespace().map(str::to_owned).collect(),
            (None, Some(scp)) => scp,
            (None, None) => Vec::new(),
        };
        Ok(Identity {
            issuer: data.claims.iss,
            subject: data.claims.sub,
            scopes,
        })
    }
}

/// The usable signing keys of a JWKS document; keys of other kinds or uses are skipped.
fn parse_jwks(bytes: &[u8]) -> Result<Vec<Key>, String> {
    #[derive(Deserialize)]
    struct Document {
        keys: Vec<serde_json::Value>,
    }
    let document: Document = serde_json::from_slice(bytes)
        .map_err(|error| format!("not a JWKS document (`{{\"keys\": [...]}}`): {error}"))?;
    let mut keys = Vec::new();
    for value in document.keys {
        let Ok(jwk) = serde_json::from_value::<Jwk>(value) else {
            continue;
        };
        if matches!(
            jwk.common.public_key_use,
            Some(PublicKeyUse::Encryption | PublicKeyUse::Other(_))
        ) {
            continue;
        }
        use jsonwebtoken::jwk::AlgorithmParameters;
        let family = match &jwk.algorithm {
            AlgorithmParameters::RSA(_) => Family::Rsa,
            AlgorithmParameters::EllipticCurve(_) => Family::Ec,
            AlgorithmParameters::OctetKeyPair(_) => Family::Ed,
            AlgorithmParameters::OctetKey(_) => continue,
        };
        // A key for another purpose (an encryption algorithm) or of another family: skipped.
        let alg = match jwk.common.key_algorithm {
            None => None,
            Some(alg) => match alg.to_string().parse::<Algorithm>() {
                Ok(alg) if family_of(alg) == Some(family) => Some(alg),
                _ => continue,
            },
        };
        let Ok(decoding) = DecodingKey::from_jwk(&jwk) else {
            continue;
        };
        keys.push(Key {
            kid: jwk.common.key_id.clone(),
            alg,
            family,
            decoding,
        });
    }
    if keys.is_empty() {
        return Err("the JWKS holds no usable signing key (RSA, EC P-256/P-384 or Ed25519)".into());
    }
    Ok(keys)
}

/// The bearer token of an `Authorization` value (`Bearer TOKEN`, the scheme in any case).
pub fn bearer_token(value: &str) -> Option<&str> {
    let (scheme, token) = value.trim().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty() && !token.contains(' '))
        .then_some(token)
}

#[cfg(test)]
mod tests {
    use jsonwebtoken::jwk::JwkSet;
    use jsonwebtoken::{EncodingKey, Header};
    use serde_json::json;

    use super::*;

    const ISSUER: &str = "https://auth.example.com";
    const AUDIENCE: &str = "https://mcp.example.com/mcp";

    /// An Ed25519 key (PKCS#8 v1 DER of a random seed) and its JWK with key id `kid`.
    fn key(kid: &str) -> (EncodingKey, Jwk) {
        let mut der = vec![
            0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22,
            0x04, 0x20,
        ];
        der.extend_from_slice(&rand::random::<[u8; 32]>());

        let seed: [u8; 32] = der[16..].try_into().unwrap();
        let public = ed25519_dalek::SigningKey::from_bytes(&seed).verifying_key();
        use base64::Engine as _;
        let x = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(public.to_bytes());
        let jwk = serde_json::from_value(json!({
            "kty": "OKP", "crv": "Ed25519", "x": x, "kid": kid, "alg": "EdDSA", "use": "sig",
        }))
        .unwrap();
        (EncodingKey::from_ed_der(&der), jwk)
    }

    fn token(key: &EncodingKey, kid: &str, claims: serde_json::Value) -> String {
        let mut header = Header::new(Algorithm::EdDSA);
        header.kid = Some(kid.to_owned());
        jsonwebtoken::encode(&header, &claims, key).unwrap()
    }

    fn claims(sub: &str, expires_in: i64) -> serde_json::Value {
        let now = jsonwebtoken::get_current_timestamp() as i64;
        json!({"iss": ISSUER, "aud": AUDIENCE, "sub": sub, "iat": now, "exp": now + expires_in})
    }

    fn write_jwks(path: &std::path::Path, keys: &[&Jwk]) {
        let set = JwkSet {
            keys: keys.iter().map(|jwk| (*jwk).clone()).collect(),
        };
        std::fs::write(path, serde_json::to_vec(&set).unwrap()).unwrap();
    }

    async fn verifier(path: &std::path::Path, refetch: Duration) -> Arc<JwtVerifier> {
        JwtVerifier::start(JwtSettings {
            jwks: path.display().to_string(),
            issuer: ISSUER.into(),
            audience: AUDIENCE.into(),
            refetch_interval: refetch,
        })
        .await
        .unwrap()
    }

    #[tokio::test]
    async fn a_token_names_its_issuer_and_subject_and_bad_ones_say_why() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("jwks.json");
        let (signing, jwk) = key("k1");
        let (other, _) = key("k1");
        write_jwks(&path, &[&jwk]);
        let verifier = verifier(&path, Duration::from_secs(60)).await;

        let first = verifier
            .verify(&token(&signing, "k1", claims("alice", 300)))
            .await
            .unwrap();
        let refreshed = verifier
            .verify(&token(&signing, "k1", claims("alice", 900)))
            .await
            .unwrap();
        assert_eq!(first.principal(), refreshed.principal());
        assert_eq!(first.subject, "alice");
        let bob = verifier
            .verify(&token(&signing, "k1", claims("bob", 300)))
            .await
            .unwrap();
        assert_ne!(bob.principal(), first.principal());
        assert_ne!(
            first.principal(),
            Principal::from_credential(b"Bearer alice"),
            "a JWT principal is never a digest principal"
        );

        let refused = |claims: serde_json::Value, key: &EncodingKey| token(key, "k1", claims);
        for (bad, why) in [
            (refused(claims("alice", -300), &signing), "expired"),
            (refused(claims("alice", 300), &other), "signature"),
            (
                refused(
                    {
                        let mut c = claims("alice", 300);
                        c["aud"] = json!("https://elsewhere.example.com");
                        c
                    },
                    &signing,
                ),
                "audience",
            ),
            (
                refused(
                    {
                        let mut c = claims("alice", 300);
                        c["iss"] = json!("https://evil.example.com");
                        c
                    },
                    &signing,
                ),
                "issuer",
            ),
            (
                refused(
                    {
                        let mut c = claims("alice", 300);
                        c.as_object_mut().unwrap().remove("sub");
                        c
                    },
                    &signing,
                ),
                "claim",
            ),
            ("not-a-jwt".to_owned(), "not a JWT"),
        ] {
            let error = verifier.verify(&bad).await.unwrap_err();
            assert!(error.0.contains(why), "{why}: {error}");
        }
        // A shared-secret token is never accepted, whatever the set holds.
        let hs = jsonwebtoken::encode(
            &Header::new(Algorithm::HS256),
            &claims("alice", 300),
            &EncodingKey::from_secret(b"secret"),
        )
        .unwrap();
        assert!(verifier.verify(&hs).await.unwrap_err().0.contains("HS256"));
    }

    #[tokio::test]
    async fn an_unknown_key_id_reads_the_set_again_at_most_once_per_interval() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("jwks.json");
        let (old, old_jwk) = key("old");
        let (new, new_jwk) = key("new");
        write_jwks(&path, &[&old_jwk]);
        let eager = verifier(&path, Duration::ZERO).await;
        let patient = verifier(&path, Duration::from_secs(3600)).await;
        let rotated = token(&new, "new", claims("alice", 300));
        // The set is rotated at the authorization server after both read it.
        write_jwks(&path, &[&old_jwk, &new_jwk]);
        assert_eq!(eager.verify(&rotated).await.unwrap().subject, "alice");
        let error = patient.verify(&rotated).await.unwrap_err();
        assert!(error.0.contains("no key `new`"), "{error}");
        assert!(patient
            .verify(&token(&old, "old", claims("bob", 300)))
            .await
            .is_ok());
    }

    #[tokio::test]
    async fn a_bad_jwks_file_is_a_startup_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("jwks.json");
        std::fs::write(&path, br#"{"keys": [{"kty": "oct", "k": "c2VjcmV0"}]}"#).unwrap();
        let error = JwtVerifier::start(JwtSettings {
            jwks: path.display().to_string(),
            issuer: ISSUER.into(),
            audience: AUDIENCE.into(),
            refetch_interval: Duration::ZERO,
        })
        .await
        .unwrap_err();
        assert!(error.contains("no usable signing key"), "{error}");
        let error = JwtVerifier::start(JwtSettings {
            jwks: "https://auth.example.com/jwks".into(),
            issuer: ISSUER.into(),
            audience: AUDIENCE.into(),
            refetch_interval: Duration::ZERO,
        })
        .await
        .unwrap_err();
        assert!(error.contains("only http:// URLs"), "{error}");
    }

    #[test]
    fn bearer_tokens_are_read_in_any_case() {
        assert_eq!(bearer_token("Bearer abc"), Some("abc"));
        assert_eq!(bearer_token("bearer  abc "), Some("abc"));
        assert_eq!(bearer_token("Basic abc"), None);
        assert_eq!(bearer_token("Bearer"), None);
        assert_eq!(bearer_token("Bearer a b"), None);
    }
}
