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
//! ("unattributed", translation T7 of docs/proxy/how-it-works.md, logged at `warn`): `roots/list` from `--root`, else the error
//! -32603 (never an empty list); elicitation declined; sampling refused with -32603; anything else
//! -32601. `ping` is answered `{}` always, leased or not, and never surfaces as an event.
//! Notifications on an unleased lane go to the proxy's log (`notifications/message` at `info`).
//!
//! Progress: [`Lane::request_with_progress`] registers a progress token with the call; progress
//! carrying it goes to that call's own channel, leased lane or not (so pass-through requests on
//! shared lanes get their progress too). Progress with any other token follows the general rule
//! (to the lease's events while leased, else the log).
//!
//! Lane creation fails with [`BackendError::Unavailable`] (spawn failure, connection refused,
//! no/failed `initialize`). A call in flight fails with [`BackendError::Crashed`] when the child
//! exits, the HTTP server goes away, or the legacy session expires (HTTP 404: the lane then
//! re-initializes itself with a new session and stays usable).

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::sync::{broadcast, mpsc, oneshot, Notify};

use crate::capabilities::CapabilityProfile;
use crate::jsonrpc::{ErrorObject, Message, Reply};
use mcp_migrate_rules::RuleId;

use self::attribution::{Attribution, Placement};
use self::lane_core::{CallTag, LaneCore};

pub mod child_guard;
pub use self::attribution::CallSessions;

pub mod attribution;
mod call_driver;
pub use call_driver::CallDriver;
pub(crate) mod call_http;
pub mod http;
pub(crate) mod http_client;
pub(crate) mod lane_core;
mod lease;
mod pool;
mod principal_pools;
mod session_lane;
pub(crate) mod sse;
mod sse_lane;
pub use lease::Lease;
pub use pool::LanePool;
pub use principal_pools::{ForwardCredentials, PrincipalPools, DEFAULT_MAX_CREDENTIAL_POOLS};
pub use session_lane::SessionLane;
pub mod stdio;

/// Which HTTP transport the legacy server speaks (`--upstream-transport`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UpstreamTransport {
    /// Streamable HTTP (2025-03-26 and later) if `initialize` is accepted; if it is answered
    /// 400, 404 or 405, the HTTP+SSE transport of 2024-11-05 (the specification's fallback).
    /// Decided by the first lane, then kept.
    #[default]
    Auto,
    StreamableHttp,
    /// HTTP+SSE (2024-11-05): `GET` the SSE endpoint, POST to the URL of its `endpoint` event.
    Sse,
}

/// How to reach the legacy server.
#[derive(Debug, Clone)]
pub enum BackendSpec {
    /// `--upstream http://HOST:PORT/PATH`: a legacy HTTP server (Streamable HTTP, or the
    /// HTTP+SSE transport of 2024-11-05).
    Http {
        url: String,
        transport: UpstreamTransport,
    },
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
    /// Whether correlatable calls may share a legacy Streamable HTTP session
    /// (`--call-sessions`; stdio and HTTP+SSE lanes are always exclusive).
    pub call_sessions: CallSessions,
    /// A lane with nothing to do for this long is closed (`--lane-idle-timeout`; the pool keeps
    /// its spare lanes).
    pub lane_idle_timeout: Duration,
    /// Sent with every HTTP request of the pool's lanes: the credentials of the one caller the
    /// pool serves ([`PrincipalPools`]), its newest ones; none for the anonymous pool and stdio.
    pub credentials: crate::credentials::CurrentCredentials,
    /// Set when a lane's `initialize` was answered 401/403: the legacy server is up and wants
    /// credentials (shared by every pool of the upstream, for `/readyz`).
    pub credentials_wanted: Arc<std::sync::atomic::AtomicBool>,
    /// stdio: the most paused calls one child holds while other calls run on it
    /// (`--max-paused-per-lane`; 0: a paused call keeps its child to itself).
    pub paused_per_lane: usize,
    /// Started, idle lanes the pool keeps ready while it is below `max_lanes`
    /// (`--spare-lanes`), so a new call does not wait for a process or session to start.
    pub spare_lanes: usize,
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

/// The sending end of a lease's events (see [`event_channel`]).
#[derive(Debug, Clone)]
pub(crate) struct EventSender(mpsc::Sender<Box<BackendEvent>>);

/// The receiving end of a lease's events (see [`event_channel`]).
#[derive(Debug)]
pub struct EventReceiver(Option<mpsc::Receiver<Box<BackendEvent>>>);

/// A bounded channel of lane events. The events travel boxed: a tokio channel allocates its
/// first block of 32 slots when it is created, so every call, paused ones included, pays 32
/// slots whether or not an event ever comes (an unboxed event is about 100 bytes: 3.2 KiB a call;
/// boxed, 8 bytes a slot).
pub(crate) fn event_channel(capacity: usize) -> (EventSender, EventReceiver) {
    let (sender, receiver) = mpsc::channel(capacity);
    (EventSender(sender), EventReceiver(Some(receiver)))
}

impl EventSender {
    pub(crate) fn try_send(
        &self,
        event: BackendEvent,
    ) -> Result<(), mpsc::error::TrySendError<BackendEvent>> {
        use mpsc::error::TrySendError;
        self.0
            .try_send(Box::new(event))
            .map_err(|error| match error {
                TrySendError::Full(event) => TrySendError::Full(*event),
                TrySendError::Closed(event) => TrySendError::Closed(*event),
            })
    }

    pub(crate) async fn send(
        &self,
        event: BackendEvent,
    ) -> Result<(), mpsc::error::SendError<BackendEvent>> {
        self.0
            .send(Box::new(event))
            .await
            .map_err(|error| mpsc::error::SendError(*error.0))
    }
}

impl EventSender {
    /// Whether this is the channel's only sender (no clone waits to send on it).
    pub(crate) fn is_sole(&self) -> bool {
        self.0.strong_count() == 1
    }
}

impl EventReceiver {
    /// Drops every event queued now.
    pub(crate) fn drain(&mut self) {
        if let Some(receiver) = &mut self.0 {
            while receiver.try_recv().is_ok() {}
        }
    }

    /// The receiver, moved out; this one reads as closed from now on.
    pub(crate) fn take(&mut self) -> EventReceiver {
        EventReceiver(self.0.take())
    }

    /// The next event; `None` once every sender is gone. Cancel-safe, as tokio's `recv`.
    pub async fn recv(&mut self) -> Option<BackendEvent> {
        match &mut self.0 {
            Some(receiver) => receiver.recv().await.map(|event| *event),
            None => None,
        }
    }

    pub fn try_recv(&mut self) -> Result<BackendEvent, mpsc::error::TryRecvError> {
        match &mut self.0 {
            Some(receiver) => receiver.try_recv().map(|event| *event),
            None => Err(mpsc::error::TryRecvError::Disconnected),
        }
    }
}

/// The legacy notifications that announce a change rather than belong to a call; what
/// `subscriptions/listen` streams carry (T16).
pub const CHANGE_NOTIFICATIONS: [&str; 4] = [
    "notifications/tools/list_changed",
    "notifications/prompts/list_changed",
    "notifications/resources/list_changed",
    "notifications/resources/updated",
];

/// How many change notifications a slow listener may fall behind before it misses some (it is
/// then told about everything it listens to: see `subscriptions`).
const CHANGE_FEED_CAPACITY: usize = 256;

/// One change notification of the legacy server.
#[derive(Debug, Clone, PartialEq)]
pub struct ChangeNotice {
    /// The lane it arrived on.
    pub lane: u64,
    pub method: String,
    pub params: Value,
}

/// The legacy server's change notifications from every lane of a pool, to whoever listens.
#[derive(Debug)]
pub struct ChangeFeed {
    sender: broadcast::Sender<ChangeNotice>,
    /// `notifications/tools/list_changed` received so far.
    tools_changed: AtomicU64,
}

impl Default for ChangeFeed {
    fn default() -> Self {
        ChangeFeed {
            sender: broadcast::channel(CHANGE_FEED_CAPACITY).0,
            tools_changed: AtomicU64::new(0),
        }
    }
}

impl ChangeFeed {
    pub(crate) fn publish(&self, lane: u64, method: String, params: Value) {
        if method == "notifications/tools/list_changed" {
            self.tools_changed.fetch_add(1, Ordering::SeqCst);
        }
        // No receiver: nobody listens, nothing to do.
        let _ = self.sender.send(ChangeNotice {
            lane,
            method,
            params,
        });
    }

    pub fn subscribe(&self) -> broadcast::Receiver<ChangeNotice> {
        self.sender.subscribe()
    }

    /// `notifications/tools/list_changed` received so far.
    pub fn tools_generation(&self) -> u64 {
        self.tools_changed.load(Ordering::SeqCst)
    }
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
    /// `initialize` was answered 400, 404 or 405: not a Streamable HTTP endpoint (maybe an
    /// HTTP+SSE server, see [`UpstreamTransport::Auto`]).
    #[error("the legacy server does not speak Streamable HTTP there: {0}")]
    NotStreamableHttp(String),
    /// The legacy server refused the caller's credentials (HTTP 401 or 403): the client gets
    /// that status and the server's `WWW-Authenticate` challenge.
    #[error("the legacy server refused the credentials (HTTP {status})")]
    Unauthorized {
        status: u16,
        challenge: Option<String>,
    },
    /// `--max-credential-pools` callers each have calls on lanes of their own: a retryable
    /// refusal of a new caller.
    #[error(
        "too many callers with credentials at once ({max}, --max-credential-pools); retry later"
    )]
    CallerCapacity { max: usize },
    /// Every lane the call could use is held by calls waiting for their clients (on stdio: as
    /// many as `--max-paused-per-lane` on each child), the pool is at its limit, and none freed
    /// up within the wait: a retryable refusal of the *new* call.
    #[error(
        "no legacy lane is free: all {lanes} (--pool-size) are held by paused calls; retry later"
    )]
    Exhausted {
        lanes: usize,
        /// The paused calls each lane holds at most (0: one, which keeps the lane to itself).
        paused_per_lane: usize,
    },
}

/// A request sent on a lane, waiting for its response.
#[derive(Debug)]
pub struct PendingCall {
    /// The id the proxy gave the request on the legacy side (fresh for every forwarded request).
    pub legacy_id: Value,
    /// The legacy response; `Err(BackendError::Crashed)` if the lane died first.
    pub response: oneshot::Receiver<Result<Result<Reply, ErrorObject>, BackendError>>,
    /// The call's transport when its caller asked to run it ([`Lease::request_driven`]): to be
    /// polled with the response, or detached. Idle otherwise (the lane runs it).
    pub driver: CallDriver,
}

/// The protocol version lanes ask for in `initialize` (the newest legacy revision).
pub(crate) const LATEST_LEGACY_VERSION: &str = "2025-11-25";
/// The versions a lane accepts in the server's `InitializeResult`.
pub(crate) const KNOWN_LEGACY_VERSIONS: &[&str] =
    &["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// The longest `initialize` exchange (bounded by [`PoolSettings::request_timeout`] too).
const MAX_INIT_TIMEOUT: Duration = Duration::from_secs(30);
/// First delay between lane creation attempts after a failure; doubles up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(100);
const MAX_BACKOFF: Duration = Duration::from_secs(5);
/// A lane that dies sooner than this after it started counts as a failed start (backoff).
const QUICK_DEATH: Duration = Duration::from_secs(1);
/// Waiters re-check the pool at least this often (busy lanes become recyclable without a wake-up).
const RESCAN: Duration = Duration::from_millis(100);
/// How long a new call waits, while every lane it could use is held by a call waiting for its
/// client and no lane is starting, before it is refused with [`BackendError::Exhausted`]. Time
/// spent while a lane starts (a cold legacy process) or while a running call holds a lane does
/// not count: those free up on their own.
pub const LANE_WAIT: Duration = Duration::from_secs(2);

/// Waits for the `initialize` response; every failure is `Unavailable`.
pub(crate) async fn await_initialize(
    call: PendingCall,
    timeout: Duration,
) -> Result<Value, BackendError> {
    match tokio::time::timeout(timeout, call.response).await {
        Err(_) => Err(BackendError::Unavailable(format!(
            "no answer to initialize within {timeout:?}"
        ))),
        Ok(Err(_)) | Ok(Ok(Err(BackendError::Crashed))) => Err(BackendError::Unavailable(
            "the legacy server went away during initialize".into(),
        )),
        Ok(Ok(Err(BackendError::Unavailable(why)))) => Err(BackendError::Unavailable(why)),
        Ok(Ok(Err(other))) => Err(BackendError::Unavailable(other.to_string())),
        Ok(Ok(Ok(Err(error)))) => Err(BackendError::Unavailable(format!(
            "initialize was refused: {} ({})",
            error.message, error.code
        ))),
        Ok(Ok(Ok(Ok(result)))) => result
            .into_value()
            .map_err(|error| BackendError::Unavailable(error.message)),
    }
}

/// The `initialize` / `notifications/initialized` handshake (translation T1 of docs/proxy/how-it-works.md) of a lane whose
/// messages go through a writer (stdio, HTTP+SSE): `send` hands a message to it.
pub(crate) async fn handshake(
    core: &LaneCore,
    client_info: &Value,
    timeout: Duration,
    send: impl Fn(Message) -> Result<(), BackendError>,
) -> Result<Initialized, BackendError> {
    let params = core.initialize_params(client_info);
    let (message, call, _) = core.start_request("initialize", params, 0, None)?;
    send(message)?;
    let initialized = check_initialize(await_initialize(call, timeout).await?)?;
    send(Message::notification(
        "notifications/initialized",
        Value::Null,
    ))?;
    Ok(initialized)
}

/// Aborts a lane's tasks when dropped.
pub(crate) struct AbortOnDrop(pub Vec<tokio::task::JoinHandle<()>>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        for task in &self.0 {
            task.abort();
        }
    }
}

/// Reads the negotiated version out of an `InitializeResult`.
pub(crate) fn check_initialize(result: Value) -> Result<Initialized, BackendError> {
    let version = result
        .get("protocolVersion")
        .and_then(Value::as_str)
        .ok_or_else(|| {
            BackendError::Unavailable("the InitializeResult has no protocolVersion".into())
        })?;
    if !KNOWN_LEGACY_VERSIONS.contains(&version) {
        return Err(BackendError::Unavailable(format!(
            "the legacy server answered initialize with unsupported protocol version {version}"
        )));
    }
    Ok(Initialized {
        protocol_version: version.to_owned(),
        result,
    })
}

/// One legacy session or child process.
#[derive(Debug)]
pub struct Lane {
    inner: LaneInner,
}

#[derive(Debug)]
enum LaneInner {
    Stdio(stdio::StdioLane),
    Http(http::HttpLane),
    Sse(sse_lane::SseLane),
}

impl Lane {
    fn core(&self) -> &Arc<LaneCore> {
        match &self.inner {
            LaneInner::Stdio(lane) => lane.core(),
            LaneInner::Http(lane) => lane.core(),
            LaneInner::Sse(lane) => lane.core(),
        }
    }

    /// The lane's `initialize` outcome.
    pub fn initialized(&self) -> &Initialized {
        match &self.inner {
            LaneInner::Stdio(lane) => lane.initialized(),
            LaneInner::Http(lane) => lane.initialized(),
            LaneInner::Sse(lane) => lane.initialized(),
        }
    }

    /// Sends a request with a fresh legacy id. `params` is forwarded as given.
    pub async fn request(
        &self,
        method: &str,
        params: impl Into<crate::params::OutParams>,
    ) -> Result<PendingCall, BackendError> {
        self.request_tagged(method, params.into(), CallTag::None, false)
            .await
    }

    /// `driven`: the caller runs the call's transport ([`PendingCall::driver`]) where the lane
    /// has one of its own per call (HTTP); elsewhere the lane runs it either way.
    async fn request_tagged(
        &self,
        method: &str,
        params: crate::params::OutParams,
        tag: CallTag,
        driven: bool,
    ) -> Result<PendingCall, BackendError> {
        let (call, _) = match &self.inner {
            LaneInner::Stdio(lane) => lane.send_request(method, params, None).await?,
            LaneInner::Http(lane) => lane.send_request(method, params, None, tag, driven).await?,
            LaneInner::Sse(lane) => lane.send_request(method, params, None).await?,
        };
        Ok(call)
    }

    /// Like [`Lane::request`], with progress routed by token (usable on shared lanes, where
    /// nothing else would attribute progress to a call).
    ///
    /// Sets `params._meta.progressToken = token` (creating `_meta`; `params` must be an object or
    /// null) and delivers the `params` of every `notifications/progress` carrying that token to the
    /// returned receiver, whether or not the lane is leased: such progress never appears as a
    /// [`BackendEvent`]. The receiver closes once the response arrived (after all progress sent
    /// before it) or the lane died. The channel is bounded; progress beyond it is dropped, never
    /// waited for. `token` must be unique on the lane while the call runs: use
    /// [`Lane::mint_progress_token`].
    pub async fn request_with_progress(
        &self,
        method: &str,
        params: Value,
        token: Value,
    ) -> Result<(PendingCall, mpsc::Receiver<Value>), BackendError> {
        let (call, progress) = match &self.inner {
            LaneInner::Stdio(lane) => {
                lane.send_request(method, params.into(), Some(token))
                    .await?
            }
            LaneInner::Http(lane) => {
                lane.send_request(method, params.into(), Some(token), CallTag::None, false)
                    .await?
            }
            LaneInner::Sse(lane) => {
                lane.send_request(method, params.into(), Some(token))
                    .await?
            }
        };
        let progress = progress
            .ok_or_else(|| BackendError::Protocol("no progress route was registered".into()))?;
        Ok((call, progress))
    }

    /// Server requests and notifications handed to the lane's lease so far.
    pub fn lease_events_sent(&self) -> u64 {
        self.core().lease_events_sent()
    }

    /// A progress token no other call on this lane uses (a string naming the proxy and lane).
    pub fn mint_progress_token(&self) -> Value {
        self.core().mint_progress_token()
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
            LaneInner::Sse(lane) => lane.respond(id, outcome).await,
        }
    }

    /// Cancels a request of ours: sends `notifications/cancelled` for `legacy_id` and stops
    /// waiting for its response. A legacy server does not answer a cancelled request, so
    /// without this its pending entry (and progress route) would stay on the lane for as long
    /// as the lane lives. Its [`PendingCall`] resolves with `Unavailable("cancelled ...")`.
    pub async fn cancel(&self, legacy_id: &Value, reason: &str) -> Result<(), BackendError> {
        let sent = self
            .notify(
                "notifications/cancelled",
                serde_json::json!({"requestId": legacy_id, "reason": reason}),
            )
            .await;
        self.core().note_cancelled(legacy_id);
        self.core().complete(
            legacy_id,
            Err(BackendError::Unavailable(format!(
                "cancelled by the proxy: {reason}"
            ))),
        );
        sent
    }

    /// Sends a notification (`notifications/cancelled`, `notifications/initialized`, ...).
    pub async fn notify(&self, method: &str, params: Value) -> Result<(), BackendError> {
        match &self.inner {
            LaneInner::Stdio(lane) => lane.notify(method, params).await,
            LaneInner::Http(lane) => lane.notify(method, params).await,
            LaneInner::Sse(lane) => lane.notify(method, params).await,
        }
    }

    /// Whether the lane is still usable (the child runs / the session is valid).
    pub fn is_alive(&self) -> bool {
        match &self.inner {
            LaneInner::Stdio(lane) => lane.is_alive(),
            LaneInner::Http(lane) => lane.is_alive(),
            LaneInner::Sse(lane) => lane.is_alive(),
        }
    }

    /// Which legacy session of the lane this is: bumped when an HTTP lane re-initializes after a
    /// 404 (a new session that remembers nothing of the old one). A stdio lane has one process
    /// for its whole life (0).
    pub fn session_epoch(&self) -> u64 {
        match &self.inner {
            LaneInner::Stdio(_) | LaneInner::Sse(_) => 0,
            LaneInner::Http(lane) => lane.session_epoch(),
        }
    }

    /// The pool-wide number of the lane (in logs as `lane`).
    pub fn id(&self) -> u64 {
        self.core().id
    }

    /// The capability profile the lane was initialized with.
    pub fn profile(&self) -> &CapabilityProfile {
        &self.core().profile
    }

    /// `"stdio"` or `"http"`.
    pub fn transport(&self) -> &'static str {
        self.core().transport
    }

    /// Whether a [`Lease`] holds the lane right now.
    pub fn is_leased(&self) -> bool {
        self.core().is_leased()
    }

    /// Requests of ours still waiting for their response.
    pub fn pending_calls(&self) -> usize {
        self.core().pending_count()
    }

    /// stdio: the child's process id.
    pub fn pid(&self) -> Option<u32> {
        match &self.inner {
            LaneInner::Stdio(lane) => lane.pid(),
            LaneInner::Http(_) | LaneInner::Sse(_) => None,
        }
    }

    /// HTTP: the current `Mcp-Session-Id` (a new one after a re-initialization).
    pub fn session_id(&self) -> Option<String> {
        match &self.inner {
            LaneInner::Stdio(_) | LaneInner::Sse(_) => None,
            LaneInner::Http(lane) => lane.session_id(),
        }
    }

    /// Ends the lane: stdio closes stdin, waits briefly, then kills; HTTP DELETEs the session.
    /// Pending calls fail with [`BackendError::Crashed`].
    pub async fn shutdown(&self) {
        match &self.inner {
            LaneInner::Stdio(lane) => lane.shutdown().await,
            LaneInner::Http(lane) => lane.shutdown().await,
            LaneInner::Sse(lane) => lane.shutdown().await,
        }
    }
}

/// Locks `mutex`, recovering the data of a poisoned lock (what these locks guard stays
/// consistent between statements: a panicked holder leaves nothing half-written).
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poison| poison.into_inner())
}
