//! The OAuth discovery documents of a protected legacy server, relayed on the front: `GET
//! /.well-known/oauth-protected-resource[/PATH]` (RFC 9728) and
//! `/.well-known/oauth-authorization-server[/PATH]` (RFC 8414) are fetched from the legacy
//! server's origin, same path and query, and answered with its status, `Content-Type`, `Cache-Control`
//! and body; with `--public-url`, the legacy server's own origin in the body (and in a
//! `Location`) becomes the address clients use ([`OriginRewrite`]). A client that got the legacy
//! server's `401` through the proxy follows its `resource_metadata` URL here.

use std::time::Duration;

use bytes::Bytes;
use http::header::{CACHE_CONTROL, CONTENT_TYPE, HOST, LOCATION};
use http::{HeaderValue, Method, Request, Response, StatusCode};
use http_body_util::{BodyExt as _, Full, Limited};

use super::http::ResponseBody;
use crate::backend::http_client::{LaneConnections, Upstream};
use crate::credentials::OriginRewrite;

/// The paths relayed (a path suffix after either is relayed too).
const PREFIXES: &[&str] = &[
    "/.well-known/oauth-protected-resource",
    "/.well-known/oauth-authorization-server",
];
/// Largest discovery document relayed.
const MAX_DOCUMENT: usize = 256 * 1024;
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);

/// Whether `path` is one of the relayed discovery documents.
pub(crate) fn is_discovery_path(path: &str) -> bool {
    PREFIXES.iter().any(|prefix| {
        path.strip_prefix(prefix)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
    })
}

/// Fetches the legacy server's discovery documents.
pub struct DiscoveryRelay {
    connections: LaneConnections,
    host: HeaderValue,
    /// `scheme://authority` of the legacy server, for messages.
    origin: String,
    rewrite: Option<OriginRewrite>,
}

impl std::fmt::Debug for DiscoveryRelay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DiscoveryRelay")
            .field("origin", &self.origin)
            .field("rewrite", &self.rewrite)
            .finish_non_exhaustive()
    }
}

impl DiscoveryRelay {
    /// For the legacy server at `upstream` (an `http://` URL); `None` if it is not one.
    pub fn new(upstream: &str, rewrite: Option<OriginRewrite>) -> Option<Self> {
        let Upstream { uri, host, .. } = Upstream::parse(upstream).ok()?;
        let origin = format!("http://{}", uri.authority()?.as_str());
        Some(DiscoveryRelay {
            connections: LaneConnections::new(
                uri,
                CONNECT_TIMEOUT,
                Duration::from_secs(30),
                tracing::Span::current(),
            ),
            host,
            origin,
            rewrite,
        })
    }

    /// Relays one `GET`/`HEAD` of a discovery document (`path_and_query` as the client sent it).
    pub(crate) async fn relay(
        &self,
        method: &Method,
        path_and_query: &str,
    ) -> Response<ResponseBody> {
        match tokio::time::timeout(FETCH_TIMEOUT, self.fetch(method, path_and_query)).await {
            Ok(Ok(response)) => response,
            Ok(Err(why)) => {
                tracing::warn!(origin = %self.origin, %why, "relaying a discovery document failed");
                plain(
                    StatusCode::BAD_GATEWAY,
                    "the legacy server's discovery document could not be fetched\n",
                )
            }
            Err(_) => plain(
                StatusCode::GATEWAY_TIMEOUT,
                "the legacy server did not answer for its discovery document\n",
            ),
        }
    }

    async fn fetch(
        &self,
        method: &Method,
        path_and_query: &str,
    ) -> Result<Response<ResponseBody>, String> {
        let request = Request::builder()
            .method(method.clone())
            .uri(path_and_query)
            .header(HOST, self.host.clone())
            .header(http::header::ACCEPT, "application/json")
            .body(Full::new(Bytes::new()))
            .map_err(|error| error.to_string())?;
        let response = self
            .connections
            .request(request)
            .await
            .map_err(|error| error.to_string())?;
        let (parts, body) = response.into_parts();
        let body = Limited::new(body, MAX_DOCUMENT)
            .collect()
            .await
            .map_err(|error| format!("reading the document: {error}"))?
            .to_bytes();
        let body = match (&self.rewrite, std::str::from_utf8(&body)) {
            (Some(rewrite), Ok(text)) => Bytes::from(rewrite.apply(text)),
            _ => body,
        };
        let mut relayed = Response::new(
            Full::new(body)
                .map_err(|never| match never {})
                .boxed_unsync(),
        );
        *relayed.status_mut() = parts.status;
        for name in [CONTENT_TYPE, CACHE_CONTROL] {
            if let Some(value) = parts.headers.get(&name) {
                relayed.headers_mut().insert(name, value.clone());
            }
        }
        if let Some(location) = parts
            .headers
            .get(LOCATION)
            .and_then(|value| value.to_str().ok())
        {
            let location = match &self.rewrite {
                Some(rewrite) => rewrite.apply(location),
                None => location.to_owned(),
            };
            if let Ok(value) = HeaderValue::from_str(&location) {
                relayed.headers_mut().insert(LOCATION, value);
            }
        }
        Ok(relayed)
    }
}

fn plain(status: StatusCode, text: &'static str) -> Response<ResponseBody> {
    let mut response = Response::new(
        Full::new(Bytes::from_static(text.as_bytes()))
            .map_err(|never| match never {})
            .boxed_unsync(),
    );
    *response.status_mut() = status;
    response.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn discovery_paths_with_and_without_a_suffix() {
        assert!(is_discovery_path("/.well-known/oauth-protected-resource"));
        assert!(is_discovery_path(
            "/.well-known/oauth-protected-resource/mcp"
        ));
        assert!(is_discovery_path("/.well-known/oauth-authorization-server"));
        assert!(!is_discovery_path("/.well-known/oauth-protected-resourcex"));
        assert!(!is_discovery_path("/.well-known/openid-configuration"));
        assert!(!is_discovery_path("/mcp"));
    }
}
