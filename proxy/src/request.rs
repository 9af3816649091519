//! The request types shared by the fronts and the engine: a validated [`FrontRequest`], who sent
//! it ([`Principal`]), and where its answer goes ([`ResponseSink`], [`Outgoing`]); the engine plugs
//! into the fronts through [`Handler`].
//!
//! These live apart from `front/` so that the engine, the requestState code and the pause store
//! depend on them without depending on a transport.
//!
//! The engine writes what the client must see to a request's [`ResponseSink`]: zero or more
//! request-scoped notifications, then exactly one final response. On HTTP the first item decides
//! the response mode: a final response alone is sent as `application/json` (with its HTTP
//! status), a notification first opens an SSE stream — after which no HTTP status can change any
//! more ([`ResponseSink::started`]). Dropping the receiving end (client disconnect on HTTP,
//! `notifications/cancelled` on stdio) makes [`ResponseSink::closed`] resolve.

use futures_util::future::BoxFuture;
use serde_json::Value;

use crate::jsonrpc::{codes, ErrorObject, Message, Reply};
use crate::response_channel::OutgoingSender;

/// The engine as the fronts see it.
pub trait Handler: Send + Sync + 'static {
    /// Serves one validated request: zero or more notifications, then one final response, all
    /// through `sink`. Dropping the sink without a final response makes the front answer
    /// `-32603`. The HTTP front polls the future in its connection's task until the response
    /// starts, then hands it to a task of its own; the stdio front gives each request a task.
    fn handle(&self, request: FrontRequest, sink: ResponseSink) -> BoxFuture<'static, ()>;

    /// Opens a request another instance passed on ([`crate::cluster`]): the envelope's bytes
    /// as they came. By default forwarding is not served.
    fn open_forwarded(&self, envelope: &[u8]) -> Result<FrontRequest, ErrorObject> {
        let _ = envelope;
        Err(ErrorObject::new(
            codes::INVALID_REQUEST,
            "this server takes no forwarded requests",
        ))
    }

    /// Serves a request another instance passed on (opened by
    /// [`open_forwarded`](Self::open_forwarded)): like [`handle`](Self::handle), except that it
    /// is never passed on again.
    fn handle_forwarded(
        &self,
        request: FrontRequest,
        sink: ResponseSink,
    ) -> BoxFuture<'static, ()> {
        self.handle(request, sink)
    }

    /// Whether the engine can serve requests (`GET /healthz` answers 200 or 503).
    fn is_ready(&self) -> bool;

    /// The readiness checks of `GET /readyz`, each `(name, passed)`: the front answers 200 when
    /// all pass, else 503 naming the failed ones. By default only `backend` ([`Handler::is_ready`]).
    fn readiness(&self) -> Vec<(&'static str, bool)> {
        vec![("backend", self.is_ready())]
    }
}

/// Who is calling: derived from the `Authorization` header (HTTP; by default its digest, under
/// `--principal jwt` the verified token's issuer and subject) so that a `requestState` minted
/// for one caller is refused for another. It is a digest, never the credential itself.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Principal(pub [u8; 32]);

impl Principal {
    /// The principal of requests without credentials (and of the stdio front); hashed once.
    pub fn anonymous() -> Self {
        static ANONYMOUS: std::sync::OnceLock<Principal> = std::sync::OnceLock::new();
        ANONYMOUS
            .get_or_init(|| Principal::from_credential(b""))
            .clone()
    }

    /// SHA-256 over a domain-separation prefix and the raw `Authorization` header value.
    pub fn from_credential(credential: &[u8]) -> Self {
        use sha2::Digest;
        let mut hasher = sha2::Sha256::new();
        hasher.update(b"mcp-mrtr-proxy principal v1\0");
        hasher.update(credential);
        Principal(hasher.finalize().into())
    }

    /// The caller a verified access token names (`--principal jwt`): its issuer and subject,
    /// whatever token of theirs it is. Never equal to a [`from_credential`](Self::from_credential)
    /// principal (a header value holds no NUL).
    pub fn from_identity(issuer: &str, subject: &str) -> Self {
        let mut credential = b"jwt\0".to_vec();
        credential.extend_from_slice(issuer.as_bytes());
        credential.push(0);
        credential.extend_from_slice(subject.as_bytes());
        Principal::from_credential(&credential)
    }

    /// A short, non-reversible label for logs.
    pub fn label(&self) -> String {
        self.display_label().to_string()
    }

    /// [`Principal::label`] without allocating (for log fields).
    pub fn display_label(&self) -> impl std::fmt::Display + '_ {
        PrincipalLabel(self)
    }
}

struct PrincipalLabel<'a>(&'a Principal);

impl std::fmt::Display for PrincipalLabel<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let [a, b, c, d, ..] = self.0 .0;
        write!(f, "{a:02x}{b:02x}{c:02x}{d:02x}")
    }
}

/// A client request that passed validation.
#[derive(Debug, Clone)]
pub struct FrontRequest {
    pub id: Value,
    pub method: String,
    /// The request's `params` object, `_meta` included (the client's text on the fronts' fast
    /// path, [`crate::params`]).
    pub params: crate::params::Params,
    /// `_meta["io.modelcontextprotocol/clientCapabilities"]`: its profile, and where the object
    /// is ([`FrontRequest::client_capabilities_value`]).
    pub client_capabilities: crate::capabilities::ClientCapabilities,
    /// `_meta["io.modelcontextprotocol/clientInfo"]`, when sent.
    pub client_info: Option<Value>,
    /// `_meta["io.modelcontextprotocol/logLevel"]`, when sent.
    pub log_level: Option<String>,
    /// `_meta.progressToken`, when sent.
    pub progress_token: Option<Value>,
    pub principal: Principal,
    /// The headers sent on to the legacy server for this caller (`Authorization`,
    /// `--forward-header`); none on stdio and for a retry another instance passed on. Never
    /// logged, stored or sealed ([`crate::credentials`]).
    pub credentials: crate::credentials::Credentials,
    /// The `Mcp-Param-*` headers of a `tools/call` over Streamable HTTP (possibly none); `None`
    /// for other methods and on stdio, where nothing is mirrored. The engine checks them against
    /// `arguments` ([`crate::param_headers`]).
    pub param_headers: Option<Box<::http::HeaderMap>>,
}

impl FrontRequest {
    /// `_meta["io.modelcontextprotocol/clientCapabilities"]` (`null` when unknown).
    pub fn client_capabilities_value(&self) -> &Value {
        static NULL: Value = Value::Null;
        match self.client_capabilities.value() {
            Some(value) => value,
            None => self
                .params
                .tree()
                .get("_meta")
                .and_then(|meta| meta.get(crate::front::validate::meta_keys::CLIENT_CAPABILITIES))
                .unwrap_or(&NULL),
        }
    }
}

/// What the engine sends back for one request.
#[derive(Debug)]
pub enum Outgoing {
    /// A request-scoped notification (`notifications/progress`, `notifications/message`).
    Notification(Message),
    /// The final response. `http_status` applies only if nothing was sent before it.
    Final { message: Message, http_status: u16 },
}

/// The engine's handle on one request's response channel.
#[derive(Debug)]
pub struct ResponseSink {
    tx: OutgoingSender,
    started: bool,
    /// `(method, start)` when the request is counted in the metrics ([`ResponseSink::observed`]).
    observed: Option<(std::borrow::Cow<'static, str>, std::time::Instant)>,
}

impl ResponseSink {
    pub fn new(tx: OutgoingSender) -> Self {
        ResponseSink {
            tx,
            started: false,
            observed: None,
        }
    }

    /// Counts this request in [`crate::metrics`]: in flight now, then by outcome and latency
    /// when it finishes (or `cancelled` when the sink is dropped without a final response).
    pub fn observed(mut self, method: &str) -> Self {
        crate::metrics::global().request_started();
        self.observed = Some((
            crate::metrics::method_label(method),
            std::time::Instant::now(),
        ));
        self
    }

    fn record(&mut self, outcome: crate::metrics::Outcome) {
        if let Some((method, start)) = self.observed.take() {
            crate::metrics::global().request_finished(method, outcome, start.elapsed());
        }
    }

    /// Whether a notification went out already (on HTTP: the SSE stream has started).
    pub fn started(&self) -> bool {
        self.started
    }

    /// Sends a notification; `false` when the client is gone.
    pub async fn notify(&mut self, message: Message) -> bool {
        self.started = true;
        self.tx.send(Outgoing::Notification(message)).await.is_ok()
    }

    /// Sends the final response (consumes the sink).
    pub async fn finish(self, id: Value, outcome: Result<Value, ErrorObject>) {
        self.finish_reply(id, outcome.map(Reply::Tree)).await;
    }

    /// [`ResponseSink::finish`] with a result that may be raw legacy text.
    pub async fn finish_reply(mut self, id: Value, outcome: Result<Reply, ErrorObject>) {
        let http_status = match &outcome {
            // A retryable refusal (the proxy at capacity): 503 with `Retry-After`.
            Err(error) if crate::limits::retry_after(error).is_some() => 503,
            // The legacy server refused the caller's credentials: its 401/403 (the front adds
            // the challenge).
            Err(error) if crate::credentials::refused(error).is_some() => {
                crate::credentials::refused(error).map_or(200, |(status, _)| status)
            }
            Err(error) => http_status(error.code),
            Ok(_) => 200,
        };
        self.record(match &outcome {
            Err(_) => crate::metrics::Outcome::Error,
            Ok(Reply::Tree(result))
                if result.get("resultType").and_then(Value::as_str) == Some("input_required") =>
            {
                crate::metrics::Outcome::InputRequired
            }
            Ok(_) => crate::metrics::Outcome::Ok,
        });
        let message = match outcome {
            Ok(Reply::Raw(result)) => Message::RawResponse { id, result },
            Ok(Reply::Tree(result)) => Message::response(id, Ok(result)),
            Err(error) => Message::response(id, Err(error)),
        };
        let _ = self
            .tx
            .send(Outgoing::Final {
                message,
                http_status,
            })
            .await;
    }

    /// Resolves when the client stopped listening (disconnect, or `notifications/cancelled`).
    pub async fn closed(&mut self) {
        self.tx.closed().await;
    }

    pub fn is_closed(&self) -> bool {
        self.tx.is_closed()
    }
}

impl Drop for ResponseSink {
    fn drop(&mut self) {
        self.record(crate::metrics::Outcome::Cancelled);
    }
}

/// The HTTP status of a JSON-RPC error sent as a plain JSON response.
///
/// `-32700`/`-32600` (unreadable message) and the three 2026-07-28 codes are 400, `-32601` is
/// 404. Everything else, `-32602` and `-32603` included, is 200 with the error in the body: the
/// spec fixes no status for them, and a dual-era client that sees a 4xx without one of the
/// recognised modern errors concludes the server is legacy and falls back to `initialize`.
/// The front's own `-32602` rejections (malformed `_meta`, missing `name`) are 400 through
/// `front::validate::Rejection::http_status`, as the spec requires for a missing `_meta` key.
pub fn http_status(code: i64) -> u16 {
    match code {
        codes::PARSE_ERROR | codes::INVALID_REQUEST => 400,
        codes::HEADER_MISMATCH
        | codes::MISSING_REQUIRED_CLIENT_CAPABILITY
        | codes::UNSUPPORTED_PROTOCOL_VERSION => 400,
        codes::METHOD_NOT_FOUND => 404,
        _ => 200,
    }
}
