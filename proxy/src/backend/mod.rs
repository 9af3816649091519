//! The legacy side: sessions ("lanes") with an unmodified legacy MCP server, over stdio (a child
//! process per lane) or legacy Streamable HTTP (an `Mcp-Session-Id` session per lane).
//!
//! A lane is initialized once with one client-capability profile (legacy servers adapt to the
//! capabilities they see at `initialize`). A correlatable call (`tools/call`, `resources/read`,
//! `prompts/get`) *leases* a lane exclusively: while leased, every server request and notification
//! the lane receives belongs to that call (legacy stdio carries no link between a server request and
//! the call that caused it, and rmcp 2.x over HTTP sends them on the session's GET stream). Pass-
//! through requests (`tools/list`, ...) share lanes and run concurrently, matched by legacy id.
//!
//! Server requests that arrive on a lane nobody leases are answered by the lane itself
//! ([`Unattributed`]): `roots/list` from `--root`, else an error; elicitation declined; sampling
//! refused; `ping` answered `{}` (always, leased or not).

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use crate::capabilities::CapabilityProfile;
use crate::jsonrpc::ErrorObject;

pub mod http;
pub mod stdio;

/// How to reach the legacy server.
#[derive(Debug, Clone)]
pub enum BackendSpec {
    /// `--upstream http://HOST:PORT/PATH`: legacy Streamable HTTP.
    Http { url: String },
    /// `-- COMMAND [ARGS]...`: a legacy stdio server, spawned and supervised per lane.
    Stdio { program: String, args: Vec<String> },
}

/// Settings of the lane pool.
#[derive(Debug, Clone)]
pub struct PoolSettings {
    /// stdio: the most child processes alive at once (1 = one process; correlatable calls queue).
    /// HTTP: the most legacy sessions at once.
    pub max_lanes: usize,
    /// Roots to answer unattributed `roots/list` with (`--root URI`).
    pub roots: Vec<String>,
    /// The proxy's identity in `initialize.clientInfo`.
    pub client_info: Value,
    /// How long to wait for a legacy response before giving up on a pass-through request.
    pub request_timeout: Duration,
}

/// What a legacy server sent on a lane, other than a response to our own requests.
#[derive(Debug, Clone, PartialEq)]
pub enum BackendEvent {
    /// A request to the client: `elicitation/create`, `sampling/createMessage`, `roots/list`, ...
    /// (`ping` never appears: lanes answer it themselves). Answer with [`Lane::respond`].
    ServerRequest {
        id: Value,
        method: String,
        params: Value,
    },
    /// A notification: `notifications/progress`, `notifications/message`,
    /// `notifications/cancelled` (the server withdrawing one of its requests),
    /// `notifications/elicitation/complete`, list changes, ...
    Notification { method: String, params: Value },
}

/// The legacy `InitializeResult` of a lane, with the version it negotiated.
#[derive(Debug, Clone, PartialEq)]
pub struct Initialized {
    /// The protocol version the server answered with (apply that revision's shapes).
    pub protocol_version: String,
    /// The whole `InitializeResult` (`capabilities`, `serverInfo`, `instructions`, ...).
    pub result: Value,
}

/// Why the legacy side failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum BackendError {
    #[error("the legacy server is not available: {0}")]
    Unavailable(String),
    #[error("the legacy server exited or dropped the connection while the request was in flight")]
    Crashed,
    #[error("the legacy server did not answer within {0:?}")]
    Timeout(Duration),
    #[error("the legacy server sent something unreadable: {0}")]
    Protocol(String),
}

/// A request sent on a lane, waiting for its response.
#[derive(Debug)]
pub struct PendingCall {
    /// The id the proxy gave the request on the legacy side (fresh for every forwarded request).
    pub legacy_id: Value,
    /// The legacy response; `Err(BackendError::Crashed)` if the lane died first.
    pub response: oneshot::Receiver<Result<Result<Value, ErrorObject>, BackendError>>,
}

/// One legacy session or child process.
#[derive(Debug)]
pub struct Lane {
    // Filled in by the implementation (see `stdio.rs` / `http.rs`).
    inner: LaneInner,
}

#[derive(Debug)]
#[allow(dead_code)] // constructed by the pool once the transports are built
enum LaneInner {
    Stdio(stdio::StdioLane),
    Http(http::HttpLane),
}

impl Lane {
    /// The lane's `initialize` outcome.
    pub fn initialized(&self) -> &Initialized {
        match &self.inner {
            LaneInner::Stdio(lane) => lane.initialized(),
            LaneInner::Http(lane) => lane.initialized(),
        }
    }

    /// Sends a request with a fresh legacy id. `params` is forwarded as given.
    pub async fn request(&self, method: &str, params: Value) -> Result<PendingCall, BackendError> {
        match &self.inner {
            LaneInner::Stdio(lane) => lane.request(method, params).await,
            LaneInner::Http(lane) => lane.request(method, params).await,
        }
    }

    /// Answers a server request (`id` as the server sent it).
    pub async fn respond(
        &self,
        id: Value,
        outcome: Result<Value, ErrorObject>,
    ) -> Result<(), BackendError> {
        match &self.inner {
            LaneInner::Stdio(lane) => lane.respond(id, outcome).await,
            LaneInner::Http(lane) => lane.respond(id, outcome).await,
        }
    }

    /// Sends a notification (`notifications/cancelled`, `notifications/initialized`, ...).
    pub async fn notify(&self, method: &str, params: Value) -> Result<(), BackendError> {
        match &self.inner {
            LaneInner::Stdio(lane) => lane.notify(method, params).await,
            LaneInner::Http(lane) => lane.notify(method, params).await,
        }
    }

    /// Whether the lane is still usable (the child runs / the session is valid).
    pub fn is_alive(&self) -> bool {
        match &self.inner {
            LaneInner::Stdio(lane) => lane.is_alive(),
            LaneInner::Http(lane) => lane.is_alive(),
        }
    }
}

/// An exclusive hold on a lane for one correlatable call. Every [`BackendEvent`] of the lane goes
/// to `events` while the lease lives; dropping the lease returns the lane to the pool.
#[derive(Debug)]
pub struct Lease {
    pub lane: Arc<Lane>,
    pub events: mpsc::Receiver<BackendEvent>,
    // The implementation adds what it needs to return the lane on drop.
    _return: Option<oneshot::Sender<()>>,
}

/// The lanes, keyed by capability profile, bounded by [`PoolSettings::max_lanes`].
#[derive(Debug)]
pub struct LanePool {
    _spec: BackendSpec,
    _settings: PoolSettings,
}

impl LanePool {
    pub fn new(spec: BackendSpec, settings: PoolSettings) -> Arc<Self> {
        Arc::new(LanePool {
            _spec: spec,
            _settings: settings,
        })
    }

    /// Leases a lane initialized with `profile` for one correlatable call, creating one (or
    /// recycling an idle lane of another profile) when needed; waits while the pool is exhausted.
    pub async fn lease(&self, profile: &CapabilityProfile) -> Result<Lease, BackendError> {
        let _ = profile;
        Err(BackendError::Unavailable(
            "the lane pool is not built yet".into(),
        ))
    }

    /// A lane initialized with `profile` for pass-through requests (shared, concurrent).
    pub async fn shared(&self, profile: &CapabilityProfile) -> Result<Arc<Lane>, BackendError> {
        let _ = profile;
        Err(BackendError::Unavailable(
            "the lane pool is not built yet".into(),
        ))
    }

    /// The `initialize` outcome of the legacy server (from any lane; connects one if none is up).
    pub async fn initialized(&self) -> Result<Initialized, BackendError> {
        Err(BackendError::Unavailable(
            "the lane pool is not built yet".into(),
        ))
    }

    /// Whether at least one lane has initialized successfully (for `/healthz`).
    pub fn is_ready(&self) -> bool {
        false
    }

    /// Stops every lane: children get stdin closed, then SIGTERM; HTTP sessions get DELETE.
    pub async fn shutdown(&self) {}
}
