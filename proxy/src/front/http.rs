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

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{header, HeaderMap, HeaderValue, Method, Request, Response, StatusCode};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Empty, Full, LengthLimitError, Limited};
use hyper::body::{Body, Frame, Incoming, SizeHint};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use serde_json::Value;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, OwnedSemaphorePermit};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::Instrument as _;

use super::callers::{Caller, CallerAuth};
use super::validate::{self, error_response, Rejection, Validated};
use super::SINK_CAPACITY;
use crate::credentials::{Credentials, OriginRewrite};
use crate::jsonrpc::{codes, ErrorObject, Message};
use crate::legacy_session::{Era, LegacySessions};
use crate::limits::{self, RequestGate};
use crate::request::{FrontRequest, Handler, Outgoing, ResponseSink};

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

/// Serves the front on `listener` until `shutdown` is cancelled: one task per connection
/// (HTTP/1.1), one task per request for the handler. On shutdown it stops accepting, lets open
/// responses finish for up to [`HttpFrontConfig::shutdown_grace`], then returns.
pub async fn serve(
    listener: TcpListener,
    config: HttpFrontConfig,
    handler: Arc<dyn Handler>,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    let gate = RequestGate::new(config.max_concurrent_requests);
    let callers = CallerAuth {
        forward: config.forward_headers.clone(),
        jwt: config.jwt.clone(),
        require: config.resource_server.clone(),
    };
    let front = Arc::new(Front {
        callers,
        config,
        handler,
        gate,
    });
    let connections = TaskTracker::new();
    loop {
        let accepted = tokio::select! {
            biased;
            () = shutdown.cancelled() => break,
            accepted = listener.accept() => accepted,
        };
        let (stream, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(error) => {
                // Out of file descriptors and the like: back off instead of spinning.
                tracing::warn!(%error, "accepting a connection failed");
                tokio::select! {
                    () = shutdown.cancelled() => break,
                    () = tokio::time::sleep(Duration::from_millis(50)) => continue,
                }
            }
        };
        let _ = stream.set_nodelay(true);
        let span = tracing::debug_span!("connection", %peer);
        connections.spawn(
            front
                .clone()
                .serve_connection(stream, shutdown.clone())
                .instrument(span),
        );
    }
    // Stop accepting: new connections are refused from here on, not left in the backlog.
    drop(listener);
    connections.close();
    connections.wait().await;
    Ok(())
}

struct Front {
    config: HttpFrontConfig,
    callers: CallerAuth,
    handler: Arc<dyn Handler>,
    gate: RequestGate,
}

impl Front {
    async fn serve_connection(self: Arc<Self>, stream: TcpStream, shutdown: CancellationToken) {
        let Some(tls) = &self.config.tls else {
            return self.serve_http(stream, shutdown).await;
        };
        // The certificate in use now is this connection's, whatever a reload does meanwhile.
        let acceptor = tls.acceptor();
        let handshake = tokio::time::timeout(
            self.config.header_read_timeout,
            super::tls::accept(acceptor, stream),
        );
        let stream = tokio::select! {
            () = shutdown.cancelled() => return,
            outcome = handshake => match outcome {
                Ok(Ok(stream)) => stream,
                Ok(Err(error)) => {
                    crate::metrics::global().rejection(match error {
                        super::tls::AcceptError::PlainHttp => "plain_http_on_tls",
                        super::tls::AcceptError::Handshake(_) => "tls_handshake",
                    });
                    tracing::debug!(%error, "connection not served");
                    return;
                }
                Err(_) => {
                    tracing::debug!("TLS handshake not finished within the header read timeout");
                    return;
                }
            },
        };
        self.serve_http(stream, shutdown).await;
    }

    /// Serves HTTP/1.1 on `stream` (a TCP connection, or TLS over one).
    async fn serve_http<S>(self: Arc<Self>, stream: S, shutdown: CancellationToken)
    where
        S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        let front = self.clone();
        let service = service_fn(move |request| {
            let front = front.clone();
            async move { Ok::<_, Infallible>(front.route(request).await) }
        });
        let mut builder = http1::Builder::new();
        builder
            .timer(TokioTimer::new())
            .header_read_timeout(self.config.header_read_timeout)
            .max_buf_size(self.config.max_header_bytes.max(8192))
            .max_headers(self.config.max_headers);
        let connection = builder.serve_connection(TokioIo::new(stream), service);
        tokio::pin!(connection);
        let result = tokio::select! {
            result = connection.as_mut() => result,
            () = shutdown.cancelled() => {
                connection.as_mut().graceful_shutdown();
                match tokio::time::timeout(self.config.shutdown_grace, connection.as_mut()).await {
                    Ok(result) => result,
                    Err(_) => {
                        tracing::debug!("connection still busy after the shutdown grace period");
                        Ok(())
                    }
                }
            }
        };
        if let Err(error) = result {
            tracing::debug!(%error, "connection ended with an error");
        }
    }

    async fn route(&self, request: Request<Incoming>) -> Response<ResponseBody> {
        if let Err(origin) = self.check_origin(request.headers()) {
            crate::metrics::global().rejection("origin");
            tracing::warn!(origin = %origin.escape_debug(), "refused a request from a foreign origin");
            return json_response(
                StatusCode::FORBIDDEN,
                &error_response(
                    None,
                    &ErrorObject::new(codes::INVALID_REQUEST, "origin not allowed"),
                ),
            );
        }
        let host = request
            .headers()
            .get(header::HOST)
            .map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned());
        if !limits::host_allowed(
            host.as_deref(),
            self.config.listen,
            &self.config.allowed_hosts,
        ) {
            crate::metrics::global().rejection("host");
            tracing::warn!(host = %host.unwrap_or_default().escape_debug(), "refused a request for a foreign Host (DNS rebinding?)");
            return json_response(
                StatusCode::FORBIDDEN,
                &error_response(
                    None,
                    &ErrorObject::new(codes::INVALID_REQUEST, "host not allowed"),
                ),
            );
        }
        let path = request.uri().path();
        if path == self.config.path {
            let caller = match self.callers.identify(request.headers()).await {
                Ok(caller) => caller,
                Err(refused) => return refused,
            };
            if let Some(legacy) = self.legacy_session_route(&request) {
                return super::http_legacy::session_route(
                    legacy,
                    request,
                    self.config.sse_keep_alive,
                    self.callers(caller),
                )
                .await;
            }
            if request.method() == Method::POST {
                self.post(request, caller).await
            } else {
                method_not_allowed("POST")
            }
        } else if path == crate::cluster::FORWARD_PATH {
            if request.method() == Method::POST {
                self.forwarded(request).await
            } else {
                method_not_allowed("POST")
            }
        } else if path == HEALTH_PATH || path == READY_PATH || path == METRICS_PATH {
            if request.method() != Method::GET && request.method() != Method::HEAD {
                method_not_allowed("GET, HEAD")
            } else if path == HEALTH_PATH {
                self.health()
            } else if path == READY_PATH {
                self.ready()
            } else {
                metrics_response()
            }
        } else if let Some(server) = self
            .config
            .resource_server
            .as_ref()
            .filter(|server| server.serves(path))
        {
            if request.method() != Method::GET && request.method() != Method::HEAD {
                return method_not_allowed("GET, HEAD");
            }
            server.metadata_response()
        } else if let Some(discovery) = self
            .config
            .discovery
            .as_ref()
            .filter(|_| super::well_known::is_discovery_path(path))
        {
            if request.method() != Method::GET && request.method() != Method::HEAD {
                return method_not_allowed("GET, HEAD");
            }
            let target = request
                .uri()
                .path_and_query()
                .map_or(path, |target| target.as_str());
            discovery.relay(request.method(), target).await
        } else {
            text_response(StatusCode::NOT_FOUND, "not found\n")
        }
    }

    /// The legacy sessions, when `request` is a GET or DELETE of a legacy session (one with an
    /// `Mcp-Session-Id`) and legacy clients are served.
    fn legacy_session_route(&self, request: &Request<Incoming>) -> Option<&Arc<LegacySessions>> {
        let legacy = self
            .config
            .legacy
            .as_ref()
            .filter(|legacy| legacy.policy().serves_legacy())?;
        let session_scoped = request.method() == Method::GET || request.method() == Method::DELETE;
        (session_scoped
            && request
                .headers()
                .contains_key(crate::legacy_session::SESSION_HEADER))
        .then_some(legacy)
    }

    fn callers(&self, caller: Caller) -> super::http_legacy::Callers<'_> {
        super::http_legacy::Callers {
            caller,
            rewrite: self.config.origin_rewrite.as_ref(),
        }
    }

    /// DNS-rebinding protection: every `Origin` value present must be loopback or allowed.
    fn check_origin(&self, headers: &HeaderMap) -> Result<(), String> {
        for value in headers.get_all(header::ORIGIN) {
            let origin = value
                .to_str()
                .map_err(|_| String::from_utf8_lossy(value.as_bytes()).into_owned())?
                .trim();
            if !origin_allowed(origin, &self.config.allowed_origins) {
                return Err(origin.to_owned());
            }
        }
        Ok(())
    }

    fn health(&self) -> Response<ResponseBody> {
        if self.handler.is_ready() {
            text_response(StatusCode::OK, "ok\n")
        } else {
            text_response(StatusCode::SERVICE_UNAVAILABLE, "not ready\n")
        }
    }

    fn ready(&self) -> Response<ResponseBody> {
        let checks = self.handler.readiness();
        let failed: Vec<&str> = checks
            .iter()
            .filter(|(_, passed)| !passed)
            .map(|(name, _)| *name)
            .collect();
        let body = serde_json::json!({
            "ready": failed.is_empty(),
            "checks": checks.iter().map(|(name, passed)| ((*name).to_owned(), Value::Bool(*passed))).collect::<serde_json::Map<_, _>>(),
            "failed": failed,
        });
        let status = if failed.is_empty() {
            StatusCode::OK
        } else {
            StatusCode::SERVICE_UNAVAILABLE
        };
        json_response(status, &body)
    }

    /// A retry another instance passed on ([`crate::cluster`]): a sealed envelope, opened by the
    /// handler; answered like `/mcp` (JSON, or SSE once a notification comes first).
    async fn forwarded(&self, request: Request<Incoming>) -> Response<ResponseBody> {
        let (parts, body) = request.into_parts();
        let bytes = match self.read_body(&parts.headers, body).await {
            Ok(bytes) => bytes,
            Err(response) => return response,
        };
        let request = match self.handler.open_forwarded(&bytes) {
            Ok(request) => request,
            Err(error) => {
                crate::metrics::global().rejection("forward_refused");
                tracing::warn!(message = %error.message, "refused a forwarded request");
                return json_response(StatusCode::FORBIDDEN, &error_response(None, &error));
            }
        };
        let Some(permit) = self.gate.try_enter() else {
            crate::metrics::global().rejection("limit_concurrent_requests");
            return overloaded(&request.id, &self.gate);
        };
        self.dispatch(request, true, permit, true).await
    }

    /// Reads a request body within the size limit and the read timeout.
    async fn read_body(
        &self,
        headers: &HeaderMap,
        body: Incoming,
    ) -> Result<Bytes, Response<ResponseBody>> {
        let limit = self.config.max_body_bytes;
        let declared = headers
            .get(header::CONTENT_LENGTH)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.trim().parse::<u64>().ok());
        if declared.is_some_and(|length| length > limit as u64) {
            crate::metrics::global().rejection("body_too_large");
            return Err(too_large(limit));
        }
        let read = tokio::time::timeout(
            self.config.body_read_timeout,
            Limited::new(body, limit).collect(),
        );
        match read.await {
            Err(_) => {
                crate::metrics::global().rejection("body_read_timeout");
                Err(body_timeout(self.config.body_read_timeout))
            }
            Ok(Ok(collected)) => Ok(collected.to_bytes()),
            Ok(Err(error)) if error.downcast_ref::<LengthLimitError>().is_some() => {
                crate::metrics::global().rejection("body_too_large");
                Err(too_large(limit))
            }
            Ok(Err(error)) => {
                tracing::debug!(%error, "reading the request body failed");
                Err(rejection_response(&Rejection::new(
                    None,
                    ErrorObject::new(codes::INVALID_REQUEST, "could not read the request body"),
                    400,
                )))
            }
        }
    }

    async fn post(&self, request: Request<Incoming>, caller: Caller) -> Response<ResponseBody> {
        let (parts, body) = request.into_parts();
        let bytes = match self.read_body(&parts.headers, body).await {
            Ok(bytes) => bytes,
            Err(response) => return response,
        };
        if let Some(legacy) = &self.config.legacy {
            let era = if legacy.policy().serves_legacy() {
                crate::legacy_session::era::http_post_era(&parts.headers, &bytes)
            } else {
                Era::Modern
            };
            if era == Era::Legacy {
                return super::http_legacy::post(
                    legacy,
                    &parts.headers,
                    &bytes,
                    &self.gate,
                    self.config.sse_keep_alive,
                    self.callers(caller),
                )
                .await;
            }
            if !legacy.policy().serves_modern() {
                return super::http_legacy::refuse_modern(&bytes);
            }
        }
        match decide_post_as(&parts.headers, &bytes, caller) {
            PostDecision::Reject(rejection) => {
                crate::metrics::global()
                    .rejection(crate::metrics::validation_reason(rejection.error.code));
                tracing::debug!(
                    code = rejection.error.code,
                    message = %rejection.error.message,
                    "rejected a request"
                );
                rejection_response(&rejection)
            }
            // On HTTP, closing the response stream is the cancellation; a notification POST has
            // nothing else to do.
            PostDecision::Accepted => empty_response(StatusCode::ACCEPTED),
            PostDecision::Dispatch {
                request,
                sse_allowed,
            } => {
                // Decided before the handler runs, so before any SSE byte.
                let Some(permit) = self.gate.try_enter() else {
                    crate::metrics::global().rejection("limit_concurrent_requests");
                    tracing::warn!(
                        max = self.gate.max(),
                        "refused a request: too many requests in flight"
                    );
                    return overloaded(&request.id, &self.gate);
                };
                self.dispatch(request, sse_allowed, permit, false).await
            }
        }
    }

    /// Runs the handler for one request and turns what it sends into a JSON or SSE response.
    async fn dispatch(
        &self,
        request: FrontRequest,
        sse_allowed: bool,
        permit: OwnedSemaphorePermit,
        forwarded: bool,
    ) -> Response<ResponseBody> {
        let id = request.id.clone();
        let span = crate::telemetry::request_span(&request, "http");
        let (tx, rx) = mpsc::channel(SINK_CAPACITY);
        let sink = ResponseSink::new(tx).observed(&request.method);
        start_handler(self.handler.as_ref(), request, sink, span, forwarded);
        respond_from(
            rx,
            id,
            sse_allowed,
            permit,
            self.config.sse_keep_alive,
            self.config.origin_rewrite.as_ref(),
        )
        .await
    }
}

/// Turns what a request's handler sends into its HTTP response: a final response first is a JSON
/// response with its status; a notification first (when the client takes `text/event-stream`)
/// opens an SSE stream that ends with the final response and holds `permit` until then.
/// Dropping this future (client gone before the first item) drops `rx`: the sender sees it.
pub(crate) async fn respond_from(
    mut rx: mpsc::Receiver<Outgoing>,
    id: Value,
    sse_allowed: bool,
    permit: OwnedSemaphorePermit,
    keep_alive: Option<Duration>,
    rewrite: Option<&OriginRewrite>,
) -> Response<ResponseBody> {
    loop {
        match rx.recv().await {
            Some(Outgoing::Final {
                message,
                http_status,
            }) => {
                let status = StatusCode::from_u16(http_status)
                    .ok()
                    .filter(|status| !status.is_informational())
                    .unwrap_or(StatusCode::OK);
                let mut response = challenge_response(status, &message, rewrite)
                    .unwrap_or_else(|| message_response(status, &message));
                if status == StatusCode::SERVICE_UNAVAILABLE {
                    response.headers_mut().insert(
                        header::RETRY_AFTER,
                        HeaderValue::from(limits::RETRY_AFTER_SECS),
                    );
                }
                return response;
            }
            Some(Outgoing::Notification(message)) if sse_allowed => {
                let body = SseBody::new(sse_event(&message), rx, id, keep_alive, permit);
                return sse_response(body);
            }
            // The client accepts only `application/json`: notifications cannot be delivered.
            Some(Outgoing::Notification(_)) => continue,
            None => {
                let error = handler_gone();
                return json_response(
                    StatusCode::from_u16(validate::http_status(error.code))
                        .unwrap_or(StatusCode::OK),
                    &error_response(Some(&id), &error),
                );
            }
        }
    }
}

/// The `401`/`403` answer for the legacy server's refusal of the caller's credentials: the
/// JSON-RPC error without its internal `data`, and the legacy server's `WWW-Authenticate`
/// challenge (its origin rewritten to `--public-url`), so that the client can start its
/// authorization flow. `None` for any other answer.
pub(crate) fn challenge_response(
    status: StatusCode,
    message: &Message,
    rewrite: Option<&OriginRewrite>,
) -> Option<Response<ResponseBody>> {
    if status != StatusCode::UNAUTHORIZED && status != StatusCode::FORBIDDEN {
        return None;
    }
    let Message::Response {
        id,
        outcome: Err(error),
    } = message
    else {
        return None;
    };
    let (_, challenge) = crate::credentials::refused(error)?;
    let plain = ErrorObject::new(error.code, error.message.clone());
    let mut response = message_response(status, &Message::response(id.clone(), Err(plain)));
    let challenge = challenge.map(|challenge| match rewrite {
        Some(rewrite) => rewrite.apply(challenge),
        None => challenge.to_owned(),
    });
    if let Some(value) = challenge.and_then(|challenge| HeaderValue::from_str(&challenge).ok()) {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, value);
    }
    Some(response)
}

/// What the front does with a POST once its body is read.
#[derive(Debug)]
pub enum PostDecision {
    /// Answer with this error as a plain JSON response (its status, no SSE).
    Reject(Rejection),
    /// A notification: `202 Accepted`, nothing else.
    Accepted,
    /// Hand the request to the handler; `sse_allowed` when the client takes
    /// `text/event-stream`.
    Dispatch {
        request: FrontRequest,
        sse_allowed: bool,
    },
}

/// Everything [`serve`] decides about a POST from its headers and body bytes alone (after the
/// `Origin` check and the body size limit): parse one JSON-RPC message (no batches), derive the
/// principal from `Authorization`, validate ([`validate::validate`]), and pick the response mode.
/// Pure and synchronous; the fuzz target `front_request` drives it.
pub fn decide_post(headers: &HeaderMap, body: &[u8]) -> PostDecision {
    decide_post_forwarding(headers, body, &[])
}

/// [`decide_post`] with the `--forward-header` names: those headers (and `Authorization`) go
/// with the request as its [`Credentials`] and make its principal.
pub fn decide_post_forwarding(
    headers: &HeaderMap,
    body: &[u8],
    forward: &[http::HeaderName],
) -> PostDecision {
    let (credentials, principal) = Credentials::from_request(headers, forward);
    decide_post_as(
        headers,
        body,
        Caller {
            credentials,
            principal,
            verified: false,
        },
    )
}

/// [`decide_post`] for a caller the front identified already ([`CallerAuth::identify`]).
pub fn decide_post_as(headers: &HeaderMap, body: &[u8], caller: Caller) -> PostDecision {
    let Caller {
        credentials,
        principal,
        ..
    } = caller;
    let message = match Message::parse(body) {
        Ok(message) => message,
        Err(error) => return PostDecision::Reject(Rejection::unreadable(&error)),
    };
    match validate::validate_owned(message, Some(headers), principal) {
        Err(rejection) => PostDecision::Reject(rejection),
        Ok(Validated::Cancelled { .. } | Validated::OtherNotification { .. }) => {
            PostDecision::Accepted
        }
        Ok(Validated::Request(mut request)) => {
            request.credentials = credentials;
            let sse_allowed = accepts_event_stream(headers);
            if request.method == "subscriptions/listen" && !sse_allowed {
                // A listen stream is nothing but notifications.
                return PostDecision::Reject(Rejection::new(
                    Some(request.id),
                    ErrorObject::new(
                        codes::INVALID_REQUEST,
                        "`subscriptions/listen` answers with an event stream: send \
                         `Accept: application/json, text/event-stream`",
                    ),
                    406,
                ));
            }
            PostDecision::Dispatch {
                request,
                sse_allowed,
            }
        }
    }
}

/// Spawns `handler.handle` in its own task. A handler that panics (while building its future or
/// while running it) drops the sink, which the front answers with `-32603`.
pub(crate) fn start_handler(
    handler: &dyn Handler,
    request: FrontRequest,
    sink: ResponseSink,
    span: tracing::Span,
    forwarded: bool,
) {
    let future = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        if forwarded {
            handler.handle_forwarded(request, sink)
        } else {
            handler.handle(request, sink)
        }
    }));
    match future {
        Ok(future) => {
            tokio::spawn(future.instrument(span));
        }
        Err(_) => {
            tracing::error!(parent: &span, "the handler panicked");
        }
    }
}

/// The error sent when the handler dropped its sink without a final response.
pub(crate) fn handler_gone() -> ErrorObject {
    ErrorObject::new(
        codes::INTERNAL_ERROR,
        "internal error: the request ended without a response",
    )
}

/// Whether the client takes `text/event-stream` (no `Accept` header: yes).
pub fn accepts_event_stream(headers: &HeaderMap) -> bool {
    let mut values = headers.get_all(header::ACCEPT).iter().peekable();
    if values.peek().is_none() {
        return true;
    }
    values.any(|value| {
        value.as_bytes().split(|&byte| byte == b',').any(|item| {
            let media = item.split(|&byte| byte == b';').next().unwrap_or_default();
            let media = media.trim_ascii();
            [&b"text/event-stream"[..], b"text/*", b"*/*"]
                .iter()
                .any(|accepted| media.eq_ignore_ascii_case(accepted))
        })
    })
}

/// Whether an `Origin` value may talk to the front: loopback hosts on any port, or a configured
/// origin or host.
pub fn origin_allowed(origin: &str, allowed: &[String]) -> bool {
    if allowed
        .iter()
        .any(|entry| entry == "*" || entry.eq_ignore_ascii_case(origin))
    {
        return true;
    }
    let Some(host) = origin_host(origin) else {
        return false;
    };
    matches!(host.as_str(), "localhost" | "127.0.0.1" | "[::1]")
        || allowed
            .iter()
            .any(|entry| entry.eq_ignore_ascii_case(&host))
}

/// The lowercase host of `scheme://host[:port]` (IPv6 keeps its brackets).
fn origin_host(origin: &str) -> Option<String> {
    let (_scheme, rest) = origin.split_once("://")?;
    let authority = rest.split(['/', '?', '#']).next()?;
    let authority = authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host);
    let host = if authority.starts_with('[') {
        &authority[..=authority.find(']')?]
    } else {
        authority.split(':').next()?
    };
    (!host.is_empty()).then(|| host.to_ascii_lowercase())
}

pub(crate) fn sse_event(message: &Message) -> Bytes {
    Bytes::from(format!("event: message\ndata: {}\n\n", message.to_line()))
}

pub(crate) fn json_response(status: StatusCode, value: &Value) -> Response<ResponseBody> {
    let mut response = Response::new(Full::new(Bytes::from(value.to_string())).boxed_unsync());
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

fn metrics_response() -> Response<ResponseBody> {
    let mut response =
        Response::new(Full::new(Bytes::from(crate::metrics::global().render())).boxed_unsync());
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(crate::metrics::CONTENT_TYPE),
    );
    response
}

/// A final response, serialised straight from the message.
pub(crate) fn message_response(status: StatusCode, message: &Message) -> Response<ResponseBody> {
    let mut response = Response::new(Full::new(Bytes::from(message.to_vec())).boxed_unsync());
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

fn rejection_response(rejection: &Rejection) -> Response<ResponseBody> {
    let status = StatusCode::from_u16(rejection.http_status).unwrap_or(StatusCode::BAD_REQUEST);
    json_response(status, &rejection.to_value())
}

/// 503 with `Retry-After` and a JSON-RPC error: too many requests in flight.
pub(crate) fn overloaded(id: &Value, gate: &RequestGate) -> Response<ResponseBody> {
    let mut response = json_response(
        StatusCode::SERVICE_UNAVAILABLE,
        &error_response(Some(id), &gate.overload_error()),
    );
    response.headers_mut().insert(
        header::RETRY_AFTER,
        HeaderValue::from(limits::RETRY_AFTER_SECS),
    );
    response
}

/// 408: the client did not send its body within the body read timeout.
fn body_timeout(limit: Duration) -> Response<ResponseBody> {
    let mut response = json_response(
        StatusCode::REQUEST_TIMEOUT,
        &error_response(
            None,
            &ErrorObject::new(
                codes::INVALID_REQUEST,
                format!(
                    "the request body did not arrive within {} (--body-read-timeout)",
                    humantime::format_duration(limit)
                ),
            ),
        ),
    );
    response
        .headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

fn too_large(limit: usize) -> Response<ResponseBody> {
    let mut response = json_response(
        StatusCode::PAYLOAD_TOO_LARGE,
        &error_response(
            None,
            &ErrorObject::new(
                codes::INVALID_REQUEST,
                format!("request body larger than {limit} bytes"),
            ),
        ),
    );
    // The rest of the body is not read: the connection cannot be reused.
    response
        .headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

fn text_response(status: StatusCode, text: &'static str) -> Response<ResponseBody> {
    let mut response = Response::new(Full::new(Bytes::from_static(text.as_bytes())).boxed_unsync());
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

pub(crate) fn empty_response(status: StatusCode) -> Response<ResponseBody> {
    let mut response = Response::new(Empty::new().boxed_unsync());
    *response.status_mut() = status;
    response
}

fn method_not_allowed(allow: &'static str) -> Response<ResponseBody> {
    let mut response = empty_response(StatusCode::METHOD_NOT_ALLOWED);
    response
        .headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static(allow));
    response
}

pub(crate) fn sse_response(
    body: impl Body<Data = Bytes, Error = Infallible> + Send + 'static,
) -> Response<ResponseBody> {
    let mut response = Response::new(body.boxed_unsync());
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

/// The SSE comment (`:`) sent after a period of silence on a stream (`None`: never).
pub(crate) struct KeepAlive(Option<(Duration, Pin<Box<tokio::time::Sleep>>)>);

impl KeepAlive {
    pub(crate) fn new(period: Option<Duration>) -> Self {
        KeepAlive(period.map(|period| (period, Box::pin(tokio::time::sleep(period)))))
    }

    /// Something was sent: the silence starts again.
    pub(crate) fn reset(&mut self) {
        if let Some((period, sleep)) = &mut self.0 {
            sleep.as_mut().reset(tokio::time::Instant::now() + *period);
        }
    }

    /// The comment frame when the silence lasted a period (registers the waker otherwise).
    pub(crate) fn poll_comment(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if let Some((_, sleep)) = &mut self.0 {
            if sleep.as_mut().poll(cx).is_ready() {
                self.reset();
                return Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(b":\n\n")))));
            }
        }
        Poll::Pending
    }
}

/// An SSE response body: it owns the request's receiver, so dropping the response (client gone)
/// closes the engine's sink. Ends after the final response; a handler that drops its sink
/// without one gets a `-32603` error event. Holds the request's concurrency permit.
struct SseBody {
    first: Option<Bytes>,
    rx: mpsc::Receiver<Outgoing>,
    id: Value,
    keep_alive: KeepAlive,
    done: bool,
    permit: Option<OwnedSemaphorePermit>,
}

impl SseBody {
    fn new(
        first: Bytes,
        rx: mpsc::Receiver<Outgoing>,
        id: Value,
        keep_alive: Option<Duration>,
        permit: OwnedSemaphorePermit,
    ) -> Self {
        SseBody {
            first: Some(first),
            rx,
            id,
            keep_alive: KeepAlive::new(keep_alive),
            done: false,
            permit: Some(permit),
        }
    }

    fn data(&mut self, bytes: Bytes) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.keep_alive.reset();
        Poll::Ready(Some(Ok(Frame::data(bytes))))
    }
}

impl Body for SseBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = self.get_mut();
        if let Some(first) = this.first.take() {
            return this.data(first);
        }
        if this.done {
            return Poll::Ready(None);
        }
        match this.rx.poll_recv(cx) {
            Poll::Ready(Some(Outgoing::Notification(message))) => this.data(sse_event(&message)),
            Poll::Ready(Some(Outgoing::Final { message, .. })) => {
                this.done = true;
                this.permit = None;
                this.data(sse_event(&message))
            }
            Poll::Ready(None) => {
                this.done = true;
                this.permit = None;
                let error = Message::response(this.id.clone(), Err(handler_gone()));
                this.data(sse_event(&error))
            }
            Poll::Pending => this.keep_alive.poll_comment(cx),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.done && self.first.is_none()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins() {
        let allowed = vec![
            "https://app.example.com".to_owned(),
            "tools.example.org".to_owned(),
        ];
        for origin in [
            "http://localhost",
            "http://localhost:3000",
            "https://LOCALHOST:1",
            "http://127.0.0.1:8080",
            "http://[::1]:9000",
            "http://[::1]",
            "https://app.example.com",
            "HTTPS://APP.EXAMPLE.COM",
            "http://tools.example.org:81",
        ] {
            assert!(origin_allowed(origin, &allowed), "{origin}");
        }
        for origin in [
            "null",
            "",
            "http://evil.example.com",
            "http://localhost.evil.com",
            "http://127.0.0.1.evil.com",
            "http://evil.com#@localhost",
            "https://app.example.com:8443",
            "http://[::2]",
            "localhost",
            "file://",
        ] {
            assert!(!origin_allowed(origin, &allowed), "{origin}");
        }
        assert!(origin_allowed("http://anything", &["*".to_owned()]));
    }

    #[test]
    fn accept_headers() {
        let headers = |values: &[&str]| {
            let mut map = HeaderMap::new();
            for value in values {
                map.append(header::ACCEPT, HeaderValue::from_str(value).unwrap());
            }
            map
        };
        assert!(accepts_event_stream(&headers(&[])));
        assert!(accepts_event_stream(&headers(&[
            "application/json, text/event-stream"
        ])));
        assert!(accepts_event_stream(&headers(&[
            "application/json",
            "*/*;q=0.1"
        ])));
        assert!(accepts_event_stream(&headers(&["Text/Event-Stream; q=1"])));
        assert!(!accepts_event_stream(&headers(&["application/json"])));
    }

    #[test]
    fn principals_follow_authorization() {
        use crate::request::Principal;
        let principal_of = |headers: &HeaderMap| Credentials::from_request(headers, &[]).1;
        let mut headers = HeaderMap::new();
        assert_eq!(principal_of(&headers), Principal::anonymous());
        headers.insert(header::AUTHORIZATION, HeaderValue::from_static("Bearer a"));
        assert_eq!(
            principal_of(&headers),
            Principal::from_credential(b"Bearer a")
        );
        headers.append(header::AUTHORIZATION, HeaderValue::from_static("Bearer b"));
        assert_ne!(
            principal_of(&headers),
            Principal::from_credential(b"Bearer a")
        );
    }
}
