//! A caller's credentials: the request headers the proxy sends on to the legacy server for that
//! caller (`Authorization`, and each header named by `--forward-header`), the principal they
//! make, and the legacy server's refusal of them (`401`/`403` with `WWW-Authenticate`) on its
//! way back to the client.
//!
//! Credentials live only in memory, in the request and in the lanes opened with them: they are
//! never logged (the `Debug` form names the headers, never their values; the values are marked
//! sensitive for `http`), never written to the pause store, never sealed into `requestState`.
//! What is kept of a caller anywhere else is its [`Principal`], a digest.

use std::sync::Arc;

use http::header::{HeaderMap, HeaderName, HeaderValue, AUTHORIZATION};
use serde_json::{json, Value};

use crate::jsonrpc::{codes, ErrorObject};
use crate::request::Principal;

/// The headers sent with every request made to the legacy server for one caller (`initialize`,
/// POSTs, the GET stream, the DELETE). Cheap to clone.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Credentials(Option<Arc<Vec<(HeaderName, HeaderValue)>>>);

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self
            .headers()
            .iter()
            .map(|(name, _)| name.as_str())
            .collect();
        write!(f, "Credentials({names:?}, values redacted)")
    }
}

impl Credentials {
    /// No credentials (stdio, a request without `Authorization`).
    pub fn none() -> Self {
        Credentials(None)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_none()
    }

    /// The headers, in the order they are sent.
    pub fn headers(&self) -> &[(HeaderName, HeaderValue)] {
        self.0.as_deref().map_or(&[], Vec::as_slice)
    }

    /// The caller's credentials out of its request headers: every `Authorization` value, then
    /// every value of each `forward` header, in order; and the principal they make.
    ///
    /// With `Authorization` alone the principal is the digest of its value (as it always was:
    /// [`Principal::from_credential`]); forwarded headers take part in it too, so two callers
    /// that differ only by an API-key header never share a legacy session or a paused call.
    pub fn from_request(headers: &HeaderMap, forward: &[HeaderName]) -> (Credentials, Principal) {
        let mut kept: Vec<(HeaderName, HeaderValue)> = Vec::new();
        for name in std::iter::once(&AUTHORIZATION).chain(forward.iter()) {
            if kept.iter().any(|(seen, _)| seen == name) {
                continue;
            }
            for value in headers.get_all(name) {
                let mut value = value.clone();
                value.set_sensitive(true);
                kept.push((name.clone(), value));
            }
        }
        if kept.is_empty() {
            return (Credentials::none(), Principal::anonymous());
        }
        let principal = principal_of(&kept);
        (Credentials(Some(Arc::new(kept))), principal)
    }

    /// Adds the credentials to a request being built.
    pub fn apply(&self, mut request: http::request::Builder) -> http::request::Builder {
        for (name, value) in self.headers() {
            request = request.header(name, value);
        }
        request
    }
}

/// The credentials a pool's lanes send ([`crate::backend::PrincipalPools`]): those of the one
/// caller the pool serves, replaced by the caller's newest ones when they change. Under
/// `--principal digest` a caller's credentials never change (they are what names it); under
/// `--principal jwt` a caller (issuer and subject) refreshes its token, and each request made
/// for it after that carries the refreshed one, on the legacy sessions it already has.
#[derive(Clone, Default)]
pub struct CurrentCredentials(Arc<std::sync::RwLock<Credentials>>);

impl std::fmt::Debug for CurrentCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.get().fmt(f)
    }
}

impl PartialEq<Credentials> for CurrentCredentials {
    fn eq(&self, other: &Credentials) -> bool {
        self.get() == *other
    }
}

impl CurrentCredentials {
    pub fn new(credentials: Credentials) -> Self {
        CurrentCredentials(Arc::new(std::sync::RwLock::new(credentials)))
    }

    /// The credentials sent now.
    pub fn get(&self) -> Credentials {
        self.0
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    pub fn is_empty(&self) -> bool {
        self.get().is_empty()
    }

    /// Sends `newer` from now on (none given: nothing changes). Whether they differ.
    pub fn replace(&self, newer: &Credentials) -> bool {
        if newer.is_empty() || self.get() == *newer {
            return false;
        }
        *self
            .0
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = newer.clone();
        true
    }

    /// Adds the current credentials to a request being built.
    pub fn apply(&self, request: http::request::Builder) -> http::request::Builder {
        self.get().apply(request)
    }

    /// `f` of the current credentials' headers (in the order they are sent), read in place.
    pub fn with_headers<R>(&self, f: impl FnOnce(&[(HeaderName, HeaderValue)]) -> R) -> R {
        let current = self
            .0
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        f(current.headers())
    }
}

/// `Authorization` values alone: the digest of the values joined as HTTP combines them (the
/// principal of requests without forwarded headers is unchanged); anything else: each
/// `name: value` line in the digest.
fn principal_of(kept: &[(HeaderName, HeaderValue)]) -> Principal {
    if kept.iter().all(|(name, _)| name == AUTHORIZATION) {
        let mut credential = Vec::new();
        for (at, (_, value)) in kept.iter().enumerate() {
            if at > 0 {
                credential.extend_from_slice(b", ");
            }
            credential.extend_from_slice(value.as_bytes());
        }
        return Principal::from_credential(&credential);
    }
    let mut credential = b"headers\0".to_vec();
    for (name, value) in kept {
        credential.extend_from_slice(name.as_str().as_bytes());
        credential.push(0);
        credential.extend_from_slice(value.as_bytes());
        credential.push(0);
    }
    Principal::from_credential(&credential)
}

/// Parses the `--forward-header` names (`Authorization` is always forwarded).
pub fn parse_forward_header(name: &str) -> Result<HeaderName, String> {
    let parsed = HeaderName::from_bytes(name.trim().as_bytes())
        .map_err(|_| format!("`{name}` is not an HTTP header name"))?;
    const HOP: &[&str] = &[
        "host",
        "content-length",
        "content-type",
        "accept",
        "connection",
        "transfer-encoding",
        "mcp-session-id",
        "mcp-protocol-version",
        "last-event-id",
    ];
    if HOP.contains(&parsed.as_str()) {
        return Err(format!(
            "`{name}` is set by the proxy itself and cannot be forwarded"
        ));
    }
    Ok(parsed)
}

/// The JSON-RPC error code of a request the legacy server refused for its credentials (sent
/// with HTTP 401 or 403 and the server's `WWW-Authenticate`).
pub const UNAUTHORIZED: i64 = codes::INTERNAL_ERROR;

/// Where [`refusal`] keeps the HTTP status and challenge in the error's `data`, for the front
/// (which answers with them and drops the `data`). A legacy server that wrote this key into an
/// error of its own would get no more than it gets by answering 401 itself.
const REFUSAL_KEY: &str = "io.github.mcp-migrate/credentialsRefused";

/// The error a client gets when the legacy server refused its credentials: the HTTP status and
/// challenge travel in `data` ([`REFUSAL_KEY`]) for the front, which answers with that status
/// and header.
pub fn refusal(status: u16, challenge: Option<&str>) -> ErrorObject {
    let message = match status {
        403 => "Forbidden: the legacy server refused these credentials (HTTP 403)",
        _ => "Unauthorized: the legacy server wants credentials (HTTP 401); see WWW-Authenticate",
    };
    refusal_saying(status, challenge, message)
}

/// [`refusal`] of a paused call's retry: the legacy server refused the credentials its legacy
/// session was sent at the retry (the caller's current ones: an expired token, or a refreshed
/// one the server does not take on the session the call was started on). The call is lost;
/// the caller hears why, with the legacy server's status and challenge.
pub fn refusal_at_resume(status: u16, challenge: Option<&str>) -> ErrorObject {
    let message = format!(
        "{}: the legacy server refused these credentials when the paused call resumed (HTTP \
         {status}), and the call is lost; authorize again if asked (WWW-Authenticate), then send \
         the original request again",
        if status == 403 {
            "Forbidden"
        } else {
            "Unauthorized"
        }
    );
    refusal_saying(status, challenge, &message)
}

fn refusal_saying(status: u16, challenge: Option<&str>, message: &str) -> ErrorObject {
    let mut refused = json!({ "httpStatus": status });
    if let Some(challenge) = challenge {
        refused["wwwAuthenticate"] = Value::from(challenge);
    }
    ErrorObject::new(UNAUTHORIZED, message.to_owned()).with_data(json!({ REFUSAL_KEY: refused }))
}

/// `(status, challenge)` of an error made by [`refusal`].
pub fn refused(error: &ErrorObject) -> Option<(u16, Option<&str>)> {
    if error.code != UNAUTHORIZED {
        return None;
    }
    let data = error.data.as_ref()?.get(REFUSAL_KEY)?;
    let status = data.get("httpStatus")?.as_u64()?;
    let status = u16::try_from(status)
        .ok()
        .filter(|s| *s == 401 || *s == 403)?;
    Some((status, data.get("wwwAuthenticate").and_then(Value::as_str)))
}

/// Replaces the legacy server's own origin (`http://10.0.0.7:8000`) with the one clients use
/// (`--public-url`) in a discovery document or a `WWW-Authenticate` value. `None` when there is
/// nothing to rewrite.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OriginRewrite {
    /// The legacy server's origin, as it writes it (`scheme://host[:port]`, no slash).
    pub internal: String,
    /// The origin clients use.
    pub public: String,
}

impl OriginRewrite {
    /// From the upstream URL and `--public-url` (either may carry a path: only the origin
    /// counts). `None` when they share an origin or one is not an absolute http(s) URL.
    pub fn new(upstream: &str, public: &str) -> Option<Self> {
        let internal = origin(upstream)?;
        let public = origin(public)?;
        (internal != public).then_some(OriginRewrite { internal, public })
    }

    /// `text` with every occurrence of the internal origin (followed by `/`, `"`, whitespace,
    /// or the end) replaced by the public one.
    pub fn apply(&self, text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(at) = rest.find(&self.internal) {
            let after = &rest[at + self.internal.len()..];
            let boundary = after
                .chars()
                .next()
                .is_none_or(|next| !(next.is_ascii_alphanumeric() || next == '.' || next == ':'));
            out.push_str(&rest[..at]);
            out.push_str(if boundary {
                &self.public
            } else {
                &self.internal
            });
            rest = after;
        }
        out.push_str(rest);
        out
    }
}

/// `scheme://authority` of an absolute http(s) URL, lowercased scheme and host.
fn origin(url: &str) -> Option<String> {
    let uri: http::Uri = url.trim().parse().ok()?;
    let scheme = uri.scheme_str()?.to_ascii_lowercase();
    if scheme != "http" && scheme != "https" {
        return None;
    }
    let authority = uri.authority()?.as_str();
    let authority = authority.rsplit('@').next()?.to_ascii_lowercase();
    Some(format!("{scheme}://{authority}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn authorization_alone_keeps_the_principal_it_always_had() {
        let mut headers = HeaderMap::new();
        let (credentials, principal) = Credentials::from_request(&headers, &[]);
        assert!(credentials.is_empty());
        assert_eq!(principal, Principal::anonymous());
        headers.insert(AUTHORIZATION, HeaderValue::from_static("Bearer a"));
        headers.append(AUTHORIZATION, HeaderValue::from_static("Bearer b"));
        let (credentials, principal) = Credentials::from_request(&headers, &[]);
        assert_eq!(principal, Principal::from_credential(b"Bearer a, Bearer b"));
        assert_eq!(credentials.headers().len(), 2);
        assert!(credentials.headers()[0].1.is_sensitive());
    }

    #[test]
    fn forwarded_headers_travel_and_tell_callers_apart() {
        let key = HeaderName::from_static("x-api-key");
        let mut one = HeaderMap::new();
        one.insert(&key, HeaderValue::from_static("k1"));
        let mut two = HeaderMap::new();
        two.insert(&key, HeaderValue::from_static("k2"));
        let (credentials, first) = Credentials::from_request(&one, std::slice::from_ref(&key));
        let (_, second) = Credentials::from_request(&two, std::slice::from_ref(&key));
        assert_ne!(first, second);
        assert_ne!(first, Principal::anonymous());
        assert_eq!(
            credentials.headers(),
            &[(key.clone(), HeaderValue::from_static("k1"))]
        );
        // Not named: not forwarded, not part of the principal.
        let (credentials, principal) = Credentials::from_request(&one, &[]);
        assert!(credentials.is_empty());
        assert_eq!(principal, Principal::anonymous());
    }

    #[test]
    fn debug_never_shows_a_value() {
        let mut headers = HeaderMap::new();
        headers.insert(
            AUTHORIZATION,
            HeaderValue::from_static("Bearer secret-token"),
        );
        let (credentials, _) = Credentials::from_request(&headers, &[]);
        let shown = format!("{credentials:?}");
        assert!(!shown.contains("secret-token"), "{shown}");
        assert!(shown.contains("authorization"), "{shown}");
    }

    #[test]
    fn forward_header_names_are_checked() {
        assert_eq!(
            parse_forward_header("X-Api-Key").unwrap(),
            HeaderName::from_static("x-api-key")
        );
        assert!(parse_forward_header("bad header").is_err());
        assert!(parse_forward_header("Mcp-Session-Id").is_err());
    }

    #[test]
    fn refusals_round_trip() {
        let error = refusal(401, Some("Bearer resource_metadata=\"x\""));
        assert_eq!(
            refused(&error),
            Some((401, Some("Bearer resource_metadata=\"x\"")))
        );
        assert_eq!(refused(&refusal(403, None)), Some((403, None)));
        assert_eq!(refused(&ErrorObject::new(codes::INTERNAL_ERROR, "x")), None);
    }

    #[test]
    fn origins_are_rewritten_at_their_boundaries_only() {
        let rewrite =
            OriginRewrite::new("http://10.0.0.7:8000/mcp", "https://mcp.example.com/mcp").unwrap();
        assert_eq!(
            rewrite
                .apply(r#"{"resource":"http://10.0.0.7:8000/mcp","x":"http://10.0.0.7:80001/"}"#),
            r#"{"resource":"https://mcp.example.com/mcp","x":"http://10.0.0.7:80001/"}"#
        );
        assert_eq!(
            rewrite.apply(
                r#"Bearer resource_metadata="http://10.0.0.7:8000/.well-known/oauth-protected-resource/mcp""#
            ),
            r#"Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp""#
        );
        assert_eq!(
            rewrite.apply("http://10.0.0.7:8000"),
            "https://mcp.example.com"
        );
        assert!(OriginRewrite::new("http://a:1/mcp", "http://a:1/other").is_none());
        assert!(OriginRewrite::new("http://a:1/mcp", "not a url").is_none());
    }
}
