//! The Streamable HTTP front (2026-07-28): POST `/mcp`, JSON or per-request SSE responses.
//!
//! Routes (after the `Origin` check, which comes first for every route):
//! - `POST {path}`: one JSON-RPC message per POST. Requests are validated
//!   ([`super::validate::validate`]), then handed to the [`Handler`] in their own task; the first
//!   thing the handler sends decides the response mode: a final response first is sent as
//!   `application/json` with its HTTP status, a notification first opens a `text/event-stream`
//!   that ends with the final response. Notifications get `202 Accepted`.
//! - `GET`/`DELETE`/other methods on `{path}`: 405 with `Allow: POST` (2026-07-28 has no GET
//!   stream and no sessions).
//! - `GET /healthz`: liveness: 200 `ok` when the handler is ready (backend initialized), else 503.
//! - `GET /readyz`: readiness: 200 `{"ready":true,...}` when every [`Handler::readiness`] check
//!   passes (backend initialized, store writable, not draining), else 503 naming the failed ones.
//! - `GET /metrics`: the Prometheus/OpenMetrics exposition of [`crate::metrics::global`].
//! - `GET /.well-known/oauth-protected-resource[/PATH]`, `/.well-known/oauth-authorization-server
//!   [/PATH]`: the HTTP legacy server's OAuth discovery documents, relayed
//!   ([`super::well_known`]); with `--require-auth`, the proxy's own protected-resource
//!   metadata instead ([`super::protected_resource`]).
//! - Every request to `{path}` first names its caller ([`super::callers`]): a bearer token that
//!   does not verify under `--principal jwt`, or none under `--require-auth`, gets `401`.
//! - `POST /mrtr/forward`: a retry another instance passed on ([`crate::cluster`]), a sealed
//!   envelope the handler opens ([`Handler::open_forwarded`]); answered like `POST {path}`.
//! - anything else: 404.
//!
//! `Mcp-Session-Id` and `Last-Event-ID` are ignored; no session id is ever minted or echoed.
//! A client that closes the connection drops the response (and with it the request's receiver),
//! which is how the engine's [`crate::request::ResponseSink::closed`] learns about the cancellation.
//!
//! Here: the settings ([`HttpFrontConfig`]) and the route names. The parts, one concern each:
//! `serve.rs` (the listener and each connection: TLS, HTTP/1.1, shutdown grace), `routes.rs`
//! (the `Origin`/`Host` checks and the route by path and method), `post.rs` (a POST from its
//! body to its JSON or SSE response, the handler's task), `decide.rs` (the pure decision about a
//! POST: [`decide_post`]), `responses.rs` (the responses built, the relayed challenges),
//! `sse_body.rs` (the SSE body and its keep-alive).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::combinators::UnsyncBoxBody;

use crate::credentials::OriginRewrite;
use crate::legacy_session::LegacySessions;
use crate::limits;
#[cfg(doc)]
use crate::request::Handler;

mod decide;
mod post;
mod responses;
mod routes;
mod serve;
mod sse_body;
mod stop;
#[cfg(test)]
mod tests;

pub use decide::{
    accepts_event_stream, decide_post, decide_post_as, decide_post_forwarding, PostDecision,
};
pub(crate) use post::{handler_gone, respond_from, start_handler, InlineHandler};
pub(crate) use responses::{
    challenge_response, empty_response, json_response, message_response, overloaded, sse_event,
    sse_response,
};
pub use routes::origin_allowed;
pub use serve::serve;
pub(crate) use sse_body::KeepAlive;

/// The default request body limit.
pub const DEFAULT_MAX_BODY_BYTES: usize = limits::DEFAULT_MAX_BODY_BYTES;

/// The health (liveness) route.
pub const HEALTH_PATH: &str = "/healthz";

/// The readiness route.
pub const READY_PATH: &str = "/readyz";

/// The metrics route.
pub const METRICS_PATH: &str = "/metrics";

/// The body of every response the front sends.
pub type ResponseBody = UnsyncBoxBody<Bytes, Infallible>;

/// Streamable HTTP front settings.
#[derive(Debug, Clone)]
pub struct HttpFrontConfig {
    /// Where the binary binds its listener ([`serve`] takes the bound listener).
    pub listen: SocketAddr,
    /// The MCP endpoint path.
    pub path: String,
    /// Larger request bodies get 413 with a JSON-RPC error.
    pub max_body_bytes: usize,
    /// Origins accepted besides loopback ones (`localhost`, `127.0.0.1`, `[::1]`, any port).
    /// An entry matches either the whole `Origin` value (`https://app.example.com:8443`,
    /// ASCII case-insensitive) or its host alone (`app.example.com`, any scheme and port); `*`
    /// accepts every origin.
    pub allowed_origins: Vec<String>,
    /// An SSE comment (`:`) is sent after this much silence on an SSE response, so that idle
    /// intermediaries keep long streams (`subscriptions/listen`) open. `None`: never.
    pub sse_keep_alive: Option<Duration>,
    /// `Host` values accepted besides loopback ones (see [`limits::host_allowed`]).
    pub allowed_hosts: Vec<String>,
    /// How long a client may take to send the request head.
    pub header_read_timeout: Duration,
    /// How long a client may take to send the request body (then 408).
    pub body_read_timeout: Duration,
    /// Largest request head (hyper's read buffer; at least 8192): bigger gets 431.
    pub max_header_bytes: usize,
    /// Most header fields per request: more gets 431.
    pub max_headers: usize,
    /// Most POST requests served at once: more get 503 with `Retry-After`.
    pub max_concurrent_requests: usize,
    /// After shutdown, how long open responses may still run before their connections are closed.
    pub shutdown_grace: Duration,
    /// Legacy (`initialize`) client sessions on the same endpoint ([`super::http_legacy`]);
    /// `None`: 2026-07-28 clients only.
    pub legacy: Option<Arc<LegacySessions>>,
    /// Request headers sent on to the legacy server besides `Authorization` (`--forward-header`).
    pub forward_headers: Vec<http::HeaderName>,
    /// `--principal jwt`: callers are named by their verified access tokens
    /// ([`super::callers`]); `None`: by the digest of their credentials.
    pub jwt: Option<Arc<crate::jwt::JwtVerifier>>,
    /// `--require-auth`: the proxy is the resource server: a token is required, and it serves
    /// its own RFC 9728 metadata ([`super::protected_resource`]).
    pub resource_server: Option<Arc<super::protected_resource::ResourceServer>>,
    /// The legacy server's origin → `--public-url`, in the challenges and discovery documents
    /// relayed to clients.
    pub origin_rewrite: Option<OriginRewrite>,
    /// The legacy server's OAuth discovery documents, relayed (an HTTP upstream).
    pub discovery: Option<Arc<super::well_known::DiscoveryRelay>>,
    /// TLS on every connection (`--tls-cert`, `--tls-key`; [`super::tls`]); `None`: plain HTTP.
    pub tls: Option<Arc<super::tls::TlsFront>>,
}

impl Default for HttpFrontConfig {
    fn default() -> Self {
        HttpFrontConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            path: "/mcp".into(),
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            allowed_origins: Vec::new(),
            sse_keep_alive: Some(Duration::from_secs(15)),
            allowed_hosts: Vec::new(),
            header_read_timeout: limits::DEFAULT_HEADER_READ_TIMEOUT,
            body_read_timeout: limits::DEFAULT_BODY_READ_TIMEOUT,
            max_header_bytes: limits::DEFAULT_MAX_HEADER_BYTES,
            max_headers: limits::DEFAULT_MAX_HEADERS,
            max_concurrent_requests: limits::DEFAULT_MAX_CONCURRENT_REQUESTS,
            shutdown_grace: limits::DEFAULT_SHUTDOWN_GRACE,
            legacy: None,
            forward_headers: Vec::new(),
            jwt: None,
            resource_server: None,
            origin_rewrite: None,
            discovery: None,
            tls: None,
        }
    }
}
