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
pub(crate) mod call_http;
pub mod http;
pub(crate) mod http_client;
pub(crate) mod lane_core;
mod session_lane;
pub(crate) mod sse;
mod sse_lane;
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
    /// at least one lane).
    pub lane_idle_timeout: Duration,
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
pub struct EventReceiver(mpsc::Receiver<Box<BackendEvent>>);

/// A bounded channel of lane events. The events travel boxed: a tokio channel allocates its
/// first block of 32 slots when it is created, so every call, paused ones included, pays 32
/// slots whether or not an event ever comes (an unboxed event is about 100 bytes: 3.2 KiB a call;
/// boxed, 8 bytes a slot).
pub(crate) fn event_channel(capacity: usize) -> (EventSender, EventReceiver) {
    let (sender, receiver) = mpsc::channel(capacity);
    (EventSender(sender), EventReceiver(receiver))
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

impl EventReceiver {
    /// The next event; `None` once every sender is gone. Cancel-safe, as tokio's `recv`.
    pub async fn recv(&mut self) -> Option<BackendEvent> {
        self.0.recv().await.map(|event| *event)
    }

    pub fn try_recv(&mut self) -> Result<BackendEvent, mpsc::error::TryRecvError> {
        self.0.try_recv().map(|event| *event)
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
    /// Every lane the call could use is held by a call waiting for its client, the pool is at
    /// its limit, and none freed up within the wait: a retryable refusal of the *new* call.
    #[error(
        "no legacy session is free: all {lanes} (--pool-size) are held by paused calls; retry later"
    )]
    Exhausted { lanes: usize },
}

/// A request sent on a lane, waiting for its response.
#[derive(Debug)]
pub struct PendingCall {
    /// The id the proxy gave the request on the legacy side (fresh for every forwarded request).
    pub legacy_id: Value,
    /// The legacy response; `Err(BackendError::Crashed)` if the lane died first.
    pub response: oneshot::Receiver<Result<Result<Reply, ErrorObject>, BackendError>>,
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
    pub async fn request(&self, method: &str, params: Value) -> Result<PendingCall, BackendError> {
        self.request_tagged(method, params, CallTag::None).await
    }

    async fn request_tagged(
        &self,
        method: &str,
        params: Value,
        tag: CallTag,
    ) -> Result<PendingCall, BackendError> {
        let (call, _) = match &self.inner {
            LaneInner::Stdio(lane) => lane.send_request(method, params, None).await?,
            LaneInner::Http(lane) => lane.send_request(method, params, None, tag).await?,
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
            LaneInner::Stdio(lane) => lane.send_request(method, params, Some(token)).await?,
            LaneInner::Http(lane) => {
                lane.send_request(method, params, Some(token), CallTag::None)
                    .await?
            }
            LaneInner::Sse(lane) => lane.send_request(method, params, Some(token)).await?,
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

/// A lane for one correlatable call: send the call with [`Lease::request`], read what the
/// legacy server sends for it from `events`.
///
/// - **Exclusive** (stdio, HTTP+SSE, Streamable HTTP servers that send mid-call requests on the
///   session's GET stream): every [`BackendEvent`] of the lane goes to `events` while the lease
///   lives; dropping the lease returns the lane to the pool, or retires it when the call was
///   cancelled or is still running (its late output must not reach the next call).
/// - **Shared** (Streamable HTTP servers that send them on the call's own POST response stream,
///   see [`attribution`]): the lane carries other calls too; `events` gets what arrives on this
///   call's own response stream.
///
/// Keep the whole `Lease` alive for the call (moving `events` out is fine). `events` closes when
/// the lane dies. Server requests that were delivered to `events` and not answered with
/// [`Lane::respond`] by the time the lease is dropped are answered locally (as unattributed ones),
/// so the legacy server never waits forever.
#[derive(Debug)]
pub struct Lease {
    pub lane: Arc<Lane>,
    pub events: EventReceiver,
    mode: LeaseMode,
    _return: Option<LeaseReturn>,
}

#[derive(Debug)]
enum LeaseMode {
    Exclusive,
    Shared {
        events: EventSender,
        kind: Arc<str>,
        /// Legacy ids of the calls sent, whose routes end with the lease.
        calls: Vec<u64>,
    },
}

impl Lease {
    /// Sends the call (or, after a -32042 round, the call again) with a fresh legacy id.
    pub async fn request(
        &mut self,
        method: &str,
        params: Value,
    ) -> Result<PendingCall, BackendError> {
        let tag = match &self.mode {
            LeaseMode::Exclusive => CallTag::Leased,
            LeaseMode::Shared { events, kind, .. } => CallTag::Routed {
                events: events.clone(),
                kind: Arc::clone(kind),
            },
        };
        let call = self.lane.request_tagged(method, params, tag).await?;
        if let (LeaseMode::Shared { calls, .. }, Some(id)) =
            (&mut self.mode, call.legacy_id.as_u64())
        {
            calls.push(id);
        }
        Ok(call)
    }

    /// Whether the call shares its legacy session with other calls.
    pub fn is_shared(&self) -> bool {
        matches!(self.mode, LeaseMode::Shared { .. })
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        if let LeaseMode::Shared { calls, .. } = &self.mode {
            self.lane.core().detach_calls(calls);
        }
    }
}

/// Returns a leased lane to the pool when dropped.
struct LeaseReturn {
    pool: Arc<PoolShared>,
    lane: Arc<Lane>,
    generation: u64,
    /// The lane's cancelled-request count when the lease began.
    cancelled_before: u64,
    /// The kind this lease probes for [`Attribution`], if it is a probe.
    probe: Option<Arc<str>>,
}

impl std::fmt::Debug for LeaseReturn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaseReturn")
            .field("lane", &self.lane.id())
            .field("generation", &self.generation)
            .finish()
    }
}

impl Drop for LeaseReturn {
    fn drop(&mut self) {
        let core = self.lane.core();
        let (asked, waiting) = core.lease_report(self.generation).unwrap_or((false, false));
        // A call cancelled or still running may still send output (its response, a late
        // request): the lane goes, rather than to the next call.
        let tainted = waiting || core.cancelled_count() != self.cancelled_before;
        if let Some(kind) = &self.probe {
            self.pool
                .attribution
                .probe_ended(kind, !asked && !waiting && !tainted);
        }
        let only_cancels_open = tainted && !waiting && self.lane.is_alive();
        if only_cancels_open && core.cancels_open() == 0 {
            // The cancelled calls already finished on the legacy side: nothing more will come.
            core.detach_lease(self.generation);
            self.pool.release(&self.lane);
            return;
        }
        if only_cancels_open {
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                // Still leased (no new call gets it) while the legacy server finishes the
                // cancelled calls; a server that never answers a cancelled request (the
                // TypeScript SDK) loses the lane after the grace.
                let (pool, lane, generation) = (
                    Arc::clone(&self.pool),
                    Arc::clone(&self.lane),
                    self.generation,
                );
                runtime.spawn(async move {
                    let deadline = Instant::now() + CANCEL_GRACE;
                    while lane.core().cancels_open() > 0 && Instant::now() < deadline {
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                    lane.core().detach_lease(generation);
                    if lane.core().cancels_open() == 0 && lane.is_alive() {
                        pool.release(&lane);
                    } else if lane.is_alive() {
                        pool.retire(&lane);
                    } else {
                        pool.release(&lane);
                    }
                });
                return;
            }
        }
        // Detach first: from here on the lane answers server requests itself.
        core.detach_lease(self.generation);
        if tainted && self.lane.is_alive() {
            self.pool.retire(&self.lane);
        } else {
            self.pool.release(&self.lane);
        }
    }
}

/// How long a retired lane keeps serving the requests already in flight on it (pass-through
/// requests that borrowed it) before it is shut down.
const RETIRE_DRAIN: Duration = Duration::from_secs(10);

/// How long a lane whose call was cancelled stays out of the pool waiting for the legacy server
/// to finish that call (its response to the cancelled request) before it is retired instead.
const CANCEL_GRACE: Duration = Duration::from_millis(300);

/// The lanes, keyed by capability profile, bounded by [`PoolSettings::max_lanes`].
///
/// Policies:
/// - **lease(profile)**: an idle (unleased) live lane of the profile; else a new lane if the pool
///   is under `max_lanes`; else an idle lane of another profile with no request in flight is
///   shut down and replaced by one of this profile; else wait for a lease to return (or a busy
///   idle lane to become recyclable).
/// - **shared(profile)**: an unleased live lane of the profile (the one with the fewest calls in
///   flight); else, if the profile has no lane, wait for one being started for it, or start one
///   if the pool is under the limit (so concurrent first requests share one new lane); else
///   any live lane of the profile, leased or not (pass-through responses are matched by id; a
///   server request during pass-through on a leased lane would reach the lease); else, at the
///   limit with no lane of the profile, any live lane of another profile (unleased first) rather
///   than killing a lane or waiting behind a call that may be paused for a long time:
///   pass-through results rarely depend on client capabilities. It waits only while the needed
///   lanes are still starting.
/// - Dead lanes are removed whenever the pool is used (leased ones when their lease returns) and
///   replaced on demand. Starting a lane after a failed start (or after a lane died within a
///   second of starting) waits 100 ms, doubling up to 5 s, so a server that crashes at startup
///   is not respawned in a hot loop; a successful start resets the delay.
#[derive(Debug)]
pub struct LanePool {
    shared: Arc<PoolShared>,
}

struct Slot {
    lane: Arc<Lane>,
    leased: bool,
}

#[derive(Default)]
struct PoolState {
    slots: Vec<Slot>,
    /// Profiles of the lanes being created (they count toward the limit).
    starting: Vec<CapabilityProfile>,
    /// Failed starts in a row (for the backoff).
    failures: u32,
    /// No lane is started before this instant.
    retry_at: Option<Instant>,
    shut_down: bool,
}

struct PoolShared {
    spec: BackendSpec,
    settings: PoolSettings,
    /// Where the legacy server sends mid-call requests, per call kind.
    attribution: Arc<Attribution>,
    state: Mutex<PoolState>,
    changed: Notify,
    next_lane: AtomicU64,
    /// The legacy server's change notifications, from every lane.
    changes: Arc<ChangeFeed>,
    /// The HTTP transport the legacy server turned out to speak (`--upstream-transport auto`).
    detected: Mutex<UpstreamTransport>,
    /// stdio: a spawned, not yet initialized child for the next new lane (see `spawn_child`).
    spare: Mutex<Option<stdio::Spawned>>,
}

impl std::fmt::Debug for PoolShared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.state();
        f.debug_struct("PoolShared")
            .field("spec", &self.spec)
            .field("max_lanes", &self.settings.max_lanes)
            .field("lanes", &state.slots.len())
            .field("starting", &state.starting.len())
            .finish_non_exhaustive()
    }
}

/// What a pool operation decided under the lock.
enum Plan {
    Take(Arc<Lane>),
    Create { recycle: Option<Arc<Lane>> },
    Wait,
}

/// Holds a "starting" place in the pool; gives it back when dropped (also on cancellation).
struct Starting<'a>(&'a PoolShared, &'a CapabilityProfile);

impl Drop for Starting<'_> {
    fn drop(&mut self) {
        {
            let mut state = self.0.state();
            if let Some(at) = state.starting.iter().position(|p| p == self.1) {
                state.starting.swap_remove(at);
            }
        }
        self.0.changed.notify_waiters();
    }
}

fn backoff(failures: u32) -> Duration {
    let doublings = failures.saturating_sub(1).min(16);
    (FIRST_BACKOFF * 2u32.pow(doublings)).min(MAX_BACKOFF)
}

impl PoolShared {
    fn state(&self) -> std::sync::MutexGuard<'_, PoolState> {
        self.state
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }

    fn max_lanes(&self) -> usize {
        self.settings.max_lanes.max(1)
    }

    /// Removes dead unleased lanes; a quick death counts as a failed start.
    fn prune(&self, state: &mut PoolState) -> bool {
        let before = state.slots.len();
        let mut quick_deaths = 0;
        state.slots.retain(|slot| {
            let keep = slot.leased || slot.lane.is_alive();
            if !keep {
                crate::metrics::global().lane_failed();
                tracing::info!(lane = slot.lane.id(), "removing a dead lane from the pool");
                if slot.lane.core().created.elapsed() < QUICK_DEATH {
                    quick_deaths += 1;
                }
            }
            keep
        });
        if quick_deaths > 0 {
            state.failures += quick_deaths;
            state.retry_at = Some(Instant::now() + backoff(state.failures));
        }
        state.slots.len() != before
    }

    /// Takes a lane out of the pool and ends its legacy session (in the background).
    fn retire(&self, lane: &Arc<Lane>) {
        {
            let mut state = self.state();
            state.slots.retain(|slot| !Arc::ptr_eq(&slot.lane, lane));
        }
        self.changed.notify_waiters();
        lane.core().span.in_scope(|| {
            tracing::info!("retiring a lane whose call was cancelled or did not finish")
        });
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let lane = Arc::clone(lane);
            runtime.spawn(async move {
                // Pass-through requests may still borrow the lane: let them finish first.
                let deadline = Instant::now() + RETIRE_DRAIN;
                while lane.core().pending_count() > 0 && Instant::now() < deadline {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                lane.shutdown().await
            });
        }
    }

    /// Whether a waiter must keep waiting without its patience running out: a lane is starting,
    /// or a lane is held by a call that runs (rather than waits for its client).
    fn relief_coming(&self) -> bool {
        let state = self.state();
        !state.starting.is_empty()
            || state
                .slots
                .iter()
                .any(|slot| slot.leased && !slot.lane.core().awaits_client())
    }

    fn release(&self, lane: &Arc<Lane>) {
        {
            let mut state = self.state();
            if let Some(slot) = state
                .slots
                .iter_mut()
                .find(|slot| Arc::ptr_eq(&slot.lane, lane))
            {
                slot.leased = false;
            }
            self.prune(&mut state);
        }
        self.changed.notify_waiters();
    }

    /// Starts a lane with `profile` (after the backoff, if a start failed recently).
    async fn create(&self, profile: &CapabilityProfile) -> Result<Arc<Lane>, BackendError> {
        let wait = self
            .state()
            .retry_at
            .map(|at| at.saturating_duration_since(Instant::now()));
        if let Some(wait) = wait.filter(|wait| !wait.is_zero()) {
            tracing::debug!(?wait, "waiting before starting a lane (backoff)");
            tokio::time::sleep(wait).await;
        }
        let (started, core) = self
            .start_lane(&|transport| self.new_core(profile, transport))
            .await;
        let mut state = self.state();
        match started {
            Ok(inner) => {
                crate::metrics::global().lane_started();
                state.failures = 0;
                state.retry_at = None;
                Ok(Arc::new(Lane { inner }))
            }
            Err(error) => {
                state.failures += 1;
                let delay = backoff(state.failures);
                state.retry_at = Some(Instant::now() + delay);
                core.span.in_scope(
                    || tracing::warn!(%error, next_attempt_in = ?delay, "starting a lane failed"),
                );
                Err(error)
            }
        }
    }

    /// Starts one lane over the configured transport, its core made by `new_core(transport)`
    /// (`--upstream-transport auto`: Streamable HTTP, else HTTP+SSE). No pool bookkeeping.
    async fn start_lane(
        &self,
        new_core: &(dyn Fn(&'static str) -> Arc<LaneCore> + Sync),
    ) -> (Result<LaneInner, BackendError>, Arc<LaneCore>) {
        let init_timeout = self.settings.request_timeout.min(MAX_INIT_TIMEOUT);
        let client_info = &self.settings.client_info;
        let (started, core) = match &self.spec {
            BackendSpec::Stdio { program, args } => {
                let core = new_core("stdio");
                let started = match self.spawn_child(program, args) {
                    Ok(spawned) => {
                        stdio::StdioLane::start(
                            Arc::clone(&core),
                            spawned,
                            client_info,
                            init_timeout,
                        )
                        .await
                    }
                    Err(error) => Err(error),
                };
                (started.map(LaneInner::Stdio), core)
            }
            BackendSpec::Http { url, transport } => {
                let transport = match transport {
                    UpstreamTransport::Auto => self.detected_transport(),
                    chosen => *chosen,
                };
                let start_sse = || async {
                    let core = new_core("sse");
                    let started =
                        sse_lane::SseLane::start(Arc::clone(&core), url, client_info, init_timeout)
                            .await
                            .map(LaneInner::Sse);
                    (started, core)
                };
                match transport {
                    UpstreamTransport::Sse => start_sse().await,
                    UpstreamTransport::StreamableHttp | UpstreamTransport::Auto => {
                        let core = new_core("http");
                        let started = http::HttpLane::start(
                            Arc::clone(&core),
                            url,
                            client_info,
                            init_timeout,
                        )
                        .await
                        .map(LaneInner::Http);
                        match started {
                            Err(BackendError::NotStreamableHttp(why))
                                if transport == UpstreamTransport::Auto =>
                            {
                                // The specification's fallback: an HTTP+SSE server (2024-11-05).
                                let (started, core) = start_sse().await;
                                let started = started.map_err(|error| {
                                    BackendError::Unavailable(format!(
                                        "{url} is neither a Streamable HTTP endpoint ({why}) nor an \
                                         HTTP+SSE one ({error})"
                                    ))
                                });
                                (started, core)
                            }
                            started => (started, core),
                        }
                    }
                }
            }
        };
        if let Ok(inner) = &started {
            self.remember_transport(inner);
        }
        (started, core)
    }

    /// A legacy stdio child for a new lane: the warm spare if it is still running, else a fresh
    /// one. Then, while the pool has room for one more lane, a new spare is spawned to replace
    /// it, so the next new lane finds its server already started (it counts toward
    /// `--pool-size`: no more children run than the pool allows).
    fn spawn_child(&self, program: &str, args: &[String]) -> Result<stdio::Spawned, BackendError> {
        let mut spare = self
            .spare
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        let taken = spare
            .take()
            .and_then(|mut child| child.is_running().then_some(child));
        let spawned = match taken {
            Some(spawned) => spawned,
            None => stdio::Spawned::spawn(program, args)?,
        };
        let room = {
            let state = self.state();
            // `starting` holds this lane's place already.
            !state.shut_down && state.slots.len() + state.starting.len() < self.max_lanes()
        };
        if room {
            match stdio::Spawned::spawn(program, args) {
                Ok(next) => *spare = Some(next),
                Err(error) => tracing::debug!(%error, "no warm spare: spawning it failed"),
            }
        }
        Ok(spawned)
    }

    fn new_core(&self, profile: &CapabilityProfile, transport: &'static str) -> Arc<LaneCore> {
        let core = LaneCore::new(
            self.next_lane.fetch_add(1, Ordering::Relaxed),
            profile.clone(),
            transport,
            self.settings.roots.clone(),
            Arc::clone(&self.changes),
        );
        core.set_attribution(Arc::clone(&self.attribution));
        core
    }

    /// Whether calls may share sessions: Streamable HTTP lanes only.
    fn may_share(&self) -> bool {
        match &self.spec {
            BackendSpec::Stdio { .. } => false,
            BackendSpec::Http { transport, .. } => match transport {
                UpstreamTransport::StreamableHttp => true,
                UpstreamTransport::Sse => false,
                UpstreamTransport::Auto => {
                    self.detected_transport() == UpstreamTransport::StreamableHttp
                }
            },
        }
    }

    /// What `--upstream-transport auto` found (`Auto` until a lane started).
    fn detected_transport(&self) -> UpstreamTransport {
        *self
            .detected
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }

    /// Remembers the transport the first lane spoke; the first HTTP+SSE lane warns under the
    /// linter's rule name (the transport is deprecated).
    fn remember_transport(&self, inner: &LaneInner) {
        let found = match inner {
            LaneInner::Http(_) => UpstreamTransport::StreamableHttp,
            LaneInner::Sse(_) => UpstreamTransport::Sse,
            LaneInner::Stdio(_) => return,
        };
        let previous = std::mem::replace(
            &mut *self
                .detected
                .lock()
                .unwrap_or_else(|poison| poison.into_inner()),
            found,
        );
        if previous != found && found == UpstreamTransport::Sse {
            let rule = RuleId::LegacySseTransport.rule();
            crate::metrics::global().deprecation_warning(rule.name);
            tracing::warn!(
                rule = rule.name,
                code = rule.code,
                client = "legacy-server",
                "the legacy server speaks the HTTP+SSE transport of 2024-11-05: {} (see `cargo mcp-lint --explain {}`)",
                rule.summary,
                rule.name
            );
        }
    }

    /// Runs a plan that needs a new lane: recycles the victim, creates, registers.
    async fn create_slot(
        &self,
        profile: &CapabilityProfile,
        recycle: Option<Arc<Lane>>,
        leased: bool,
    ) -> Result<Arc<Lane>, BackendError> {
        let _starting = Starting(self, profile);
        if let Some(victim) = recycle {
            tracing::info!(
                lane = victim.id(),
                from = %victim.profile().label(),
                to = %profile.label(),
                "recycling an idle lane for another capability profile"
            );
            victim.shutdown().await;
        }
        let lane = self.create(profile).await?;
        let registered = {
            let mut state = self.state();
            if !state.shut_down {
                state.slots.push(Slot {
                    lane: Arc::clone(&lane),
                    leased,
                });
            }
            !state.shut_down
        };
        if !registered {
            lane.shutdown().await;
            return Err(BackendError::Unavailable(
                "the proxy is shutting down".into(),
            ));
        }
        Ok(lane)
    }

    fn plan_lease(&self, profile: &CapabilityProfile) -> Result<Plan, BackendError> {
        let mut state = self.state();
        if state.shut_down {
            return Err(BackendError::Unavailable(
                "the proxy is shutting down".into(),
            ));
        }
        self.prune(&mut state);
        // A lane carrying shared calls is not leased: what arrives on its GET stream would
        // then be taken for the lease holder's.
        let unshared = |slot: &Slot| slot.lane.core().routed_calls() == 0;
        if let Some(slot) = state.slots.iter_mut().find(|slot| {
            !slot.leased && slot.lane.is_alive() && slot.lane.profile() == profile && unshared(slot)
        }) {
            slot.leased = true;
            return Ok(Plan::Take(Arc::clone(&slot.lane)));
        }
        if state.slots.len() + state.starting.len() < self.max_lanes() {
            state.starting.push(profile.clone());
            return Ok(Plan::Create { recycle: None });
        }
        if let Some(at) = state
            .slots
            .iter()
            .position(|slot| !slot.leased && slot.lane.pending_calls() == 0 && unshared(slot))
        {
            let victim = state.slots.remove(at);
            state.starting.push(profile.clone());
            return Ok(Plan::Create {
                recycle: Some(victim.lane),
            });
        }
        Ok(Plan::Wait)
    }

    fn plan_shared(&self, profile: &CapabilityProfile) -> Result<Plan, BackendError> {
        let mut state = self.state();
        if state.shut_down {
            return Err(BackendError::Unavailable(
                "the proxy is shutting down".into(),
            ));
        }
        self.prune(&mut state);
        let live = |slot: &&Slot| slot.lane.is_alive();
        let mine = |slot: &&Slot| slot.lane.profile() == profile;
        if let Some(slot) = state
            .slots
            .iter()
            .filter(live)
            .filter(mine)
            .filter(|slot| !slot.leased)
            .min_by_key(|slot| slot.lane.pending_calls())
        {
            return Ok(Plan::Take(Arc::clone(&slot.lane)));
        }
        let has_profile = state.slots.iter().filter(live).any(|slot| mine(&slot));
        if !has_profile && state.starting.contains(profile) {
            // A lane of the profile is on its way: use it rather than starting another.
            return Ok(Plan::Wait);
        }
        if !has_profile && state.slots.len() + state.starting.len() < self.max_lanes() {
            state.starting.push(profile.clone());
            return Ok(Plan::Create { recycle: None });
        }
        if let Some(slot) = state
            .slots
            .iter()
            .filter(live)
            .filter(mine)
            .min_by_key(|slot| slot.lane.pending_calls())
        {
            return Ok(Plan::Take(Arc::clone(&slot.lane)));
        }
        if let Some(slot) = state
            .slots
            .iter()
            .filter(live)
            .min_by_key(|slot| (slot.leased, slot.lane.pending_calls()))
        {
            tracing::debug!(
                lane = slot.lane.id(),
                wanted = %profile.label(),
                got = %slot.lane.profile().label(),
                "pool full: pass-through on a lane of another profile"
            );
            return Ok(Plan::Take(Arc::clone(&slot.lane)));
        }
        Ok(Plan::Wait)
    }

    /// A lane for calls on a shared session: an unleased live lane of the profile (the one with
    /// the fewest calls in flight); else one being started for the profile; else a new one; else
    /// an idle lane of another profile recycled; else wait.
    fn plan_call_shared(&self, profile: &CapabilityProfile) -> Result<Plan, BackendError> {
        let mut state = self.state();
        if state.shut_down {
            return Err(BackendError::Unavailable(
                "the proxy is shutting down".into(),
            ));
        }
        self.prune(&mut state);
        if let Some(slot) = state
            .slots
            .iter()
            .filter(|slot| !slot.leased && slot.lane.is_alive() && slot.lane.profile() == profile)
            .min_by_key(|slot| slot.lane.pending_calls())
        {
            return Ok(Plan::Take(Arc::clone(&slot.lane)));
        }
        if state.starting.contains(profile) {
            return Ok(Plan::Wait);
        }
        if state.slots.len() + state.starting.len() < self.max_lanes() {
            state.starting.push(profile.clone());
            return Ok(Plan::Create { recycle: None });
        }
        if let Some(at) = state.slots.iter().position(|slot| {
            !slot.leased && slot.lane.pending_calls() == 0 && slot.lane.core().routed_calls() == 0
        }) {
            let victim = state.slots.remove(at);
            state.starting.push(profile.clone());
            return Ok(Plan::Create {
                recycle: Some(victim.lane),
            });
        }
        Ok(Plan::Wait)
    }

    fn lease_of(self: &Arc<Self>, lane: Arc<Lane>, kind: Option<Arc<str>>, probe: bool) -> Lease {
        let cancelled_before = lane.core().cancelled_count();
        let (generation, events) = lane.core().attach_lease(kind.clone());
        Lease {
            lane: Arc::clone(&lane),
            events,
            mode: LeaseMode::Exclusive,
            _return: Some(LeaseReturn {
                pool: Arc::clone(self),
                lane,
                generation,
                cancelled_before,
                probe: kind.filter(|_| probe),
            }),
        }
    }

    fn shared_call_of(lane: Arc<Lane>, kind: Arc<str>) -> Lease {
        let (events, receiver) = event_channel(lane_core::LEASE_EVENTS);
        Lease {
            lane,
            events: receiver,
            mode: LeaseMode::Shared {
                events,
                kind,
                calls: Vec::new(),
            },
            _return: None,
        }
    }

    /// Runs `plan` until it yields a lane. While it says wait, the wait counts toward
    /// [`LANE_WAIT`] only when no relief is coming (see [`PoolShared::relief_coming`]); past it,
    /// [`BackendError::Exhausted`].
    async fn acquire(
        &self,
        profile: &CapabilityProfile,
        leased: bool,
        plan: impl Fn(&Self) -> Result<Plan, BackendError>,
    ) -> Result<Arc<Lane>, BackendError> {
        let mut since = Instant::now();
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            match plan(self)? {
                Plan::Take(lane) => return Ok(lane),
                Plan::Create { recycle } => {
                    return self.create_slot(profile, recycle, leased).await;
                }
                Plan::Wait => {
                    if self.relief_coming() {
                        since = Instant::now();
                    } else if since.elapsed() >= LANE_WAIT {
                        crate::metrics::global().rejection("lane_capacity");
                        return Err(BackendError::Exhausted {
                            lanes: self.max_lanes(),
                        });
                    }
                    let _ = tokio::time::timeout(RESCAN, changed).await;
                }
            }
        }
    }
}

impl LanePool {
    pub fn new(spec: BackendSpec, settings: PoolSettings) -> Arc<Self> {
        let settings_mode = settings.call_sessions;
        Arc::new(LanePool {
            shared: Arc::new(PoolShared {
                spec,
                settings,
                state: Mutex::new(PoolState::default()),
                changed: Notify::new(),
                next_lane: AtomicU64::new(1),
                changes: Arc::default(),
                detected: Mutex::new(UpstreamTransport::Auto),
                spare: Mutex::new(None),
                attribution: Arc::new(Attribution::new(settings_mode)),
            }),
        })
    }

    /// Leases a lane initialized with `profile` for one correlatable call, creating one (or
    /// recycling an idle lane of another profile) when needed; waits while the pool is exhausted
    /// (see [`LANE_WAIT`], then [`BackendError::Exhausted`]).
    pub async fn lease(&self, profile: &CapabilityProfile) -> Result<Lease, BackendError> {
        self.exclusive(profile, None, false).await
    }

    async fn exclusive(
        &self,
        profile: &CapabilityProfile,
        kind: Option<Arc<str>>,
        probe: bool,
    ) -> Result<Lease, BackendError> {
        let acquired = self
            .shared
            .acquire(profile, true, |pool| pool.plan_lease(profile))
            .await;
        match acquired {
            Ok(lane) => Ok(self.shared.lease_of(lane, kind, probe)),
            Err(error) => {
                if let Some(kind) = kind.filter(|_| probe) {
                    self.shared.attribution.probe_ended(&kind, false);
                }
                Err(error)
            }
        }
    }

    /// A lane for the correlatable call `method` with `params`: a shared Streamable HTTP session
    /// when calls of its kind send their mid-call requests on their own response stream, an
    /// exclusive lane otherwise (see [`attribution`]).
    pub async fn call_lease(
        &self,
        profile: &CapabilityProfile,
        method: &str,
        params: &Value,
    ) -> Result<Lease, BackendError> {
        let attribution = &self.shared.attribution;
        if !self.shared.may_share() {
            return self.lease(profile).await;
        }
        let kind: Arc<str> = attribution.kind_of(method, params).into();
        let waiting = Instant::now();
        let placement = loop {
            let changed = attribution.changed();
            tokio::pin!(changed);
            changed.as_mut().enable();
            let waited = waiting.elapsed() >= attribution::PROBE_WAIT;
            if let Some(placement) = attribution.place(&kind, waited) {
                break placement;
            }
            let left = attribution::PROBE_WAIT.saturating_sub(waiting.elapsed());
            let _ = tokio::time::timeout(left, changed).await;
        };
        match placement {
            Placement::Exclusive { probe } => self.exclusive(profile, Some(kind), probe).await,
            Placement::Shared => {
                let lane = self
                    .shared
                    .acquire(profile, false, |pool| pool.plan_call_shared(profile))
                    .await?;
                Ok(PoolShared::shared_call_of(lane, kind))
            }
        }
    }

    /// How many call kinds are known to send mid-call requests on their own response stream
    /// (shared sessions) and on the GET stream (exclusive): for logs and the benchmark.
    pub fn attribution(&self) -> &Attribution {
        &self.shared.attribution
    }

    /// A lane initialized with `profile` for pass-through requests (shared, concurrent). See the
    /// type's documentation for the fallbacks when the pool is full.
    pub async fn shared(&self, profile: &CapabilityProfile) -> Result<Arc<Lane>, BackendError> {
        loop {
            let changed = self.shared.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            match self.shared.plan_shared(profile)? {
                Plan::Take(lane) => return Ok(lane),
                Plan::Create { recycle } => {
                    return self.shared.create_slot(profile, recycle, false).await;
                }
                Plan::Wait => {
                    let _ = tokio::time::timeout(RESCAN, changed).await;
                }
            }
        }
    }

    /// The `initialize` outcome of the legacy server (from any lane; connects one if none is up).
    pub async fn initialized(&self) -> Result<Initialized, BackendError> {
        let existing = {
            let mut state = self.shared.state();
            self.shared.prune(&mut state);
            state
                .slots
                .iter()
                .find(|slot| slot.lane.is_alive())
                .map(|slot| slot.lane.initialized().clone())
        };
        match existing {
            Some(initialized) => Ok(initialized),
            None => Ok(self
                .shared(&CapabilityProfile::default())
                .await?
                .initialized()
                .clone()),
        }
    }

    /// How many `notifications/tools/list_changed` the legacy server sent so far (on any lane):
    /// what was learnt from its `tools/list` before is stale once this moves.
    pub fn tools_generation(&self) -> u64 {
        self.shared.changes.tools_generation()
    }

    /// The legacy server's change notifications (list changes, resource updates) from every
    /// lane, from now on.
    pub fn subscribe_changes(&self) -> broadcast::Receiver<ChangeNotice> {
        self.shared.changes.subscribe()
    }

    /// Whether a live, initialized lane exists right now (for `/healthz`).
    pub fn is_ready(&self) -> bool {
        self.shared
            .state()
            .slots
            .iter()
            .any(|slot| slot.lane.is_alive())
    }

    /// `(open, leased)`: live lanes in the pool, and those of them leased to a call (metrics).
    pub fn lane_stats(&self) -> (usize, usize) {
        let state = self.shared.state();
        let live = state.slots.iter().filter(|slot| slot.lane.is_alive());
        let (open, leased) = live.fold((0, 0), |(open, leased), slot| {
            (open + 1, leased + usize::from(slot.leased))
        });
        (open, leased)
    }

    /// Closes the lanes that had nothing to do for `--lane-idle-timeout` (unleased, no request
    /// in flight, held by nothing but the pool: not the subscription lane), the longest idle
    /// first, keeping at least one live lane. Returns how many it closed.
    pub fn close_idle_lanes(&self) -> usize {
        let timeout = self.shared.settings.lane_idle_timeout;
        let closing: Vec<Arc<Lane>> = {
            let mut state = self.shared.state();
            if state.shut_down {
                return 0;
            }
            self.shared.prune(&mut state);
            let live = state
                .slots
                .iter()
                .filter(|slot| slot.lane.is_alive())
                .count();
            let mut idle: Vec<(Duration, u64)> = state
                .slots
                .iter()
                .filter(|slot| {
                    !slot.leased && slot.lane.is_alive() && Arc::strong_count(&slot.lane) == 1
                })
                .filter_map(|slot| {
                    let idle = slot.lane.core().idle_for()?;
                    (idle >= timeout).then(|| (idle, slot.lane.id()))
                })
                .collect();
            idle.sort_unstable_by(|a, b| b.cmp(a));
            idle.truncate(live.saturating_sub(1));
            let ids: HashSet<u64> = idle.iter().map(|(_, id)| *id).collect();
            let mut closing = Vec::with_capacity(ids.len());
            state.slots.retain(|slot| {
                let close = ids.contains(&slot.lane.id());
                if close {
                    closing.push(Arc::clone(&slot.lane));
                }
                !close
            });
            closing
        };
        if closing.is_empty() {
            return 0;
        }
        self.shared.changed.notify_waiters();
        for lane in &closing {
            lane.core()
                .span
                .in_scope(|| tracing::info!(idle_timeout = ?timeout, "closing an idle lane"));
            let lane = Arc::clone(lane);
            tokio::spawn(async move { lane.shutdown().await });
        }
        closing.len()
    }

    /// Lanes in the pool (live, dead-but-leased) plus lanes being started.
    pub fn lane_count(&self) -> usize {
        let state = self.shared.state();
        state.slots.len() + state.starting.len()
    }

    /// Stops every lane: children get stdin closed, then are killed if they linger; HTTP sessions
    /// get DELETE. Later `lease`/`shared` calls fail with `Unavailable`.
    pub async fn shutdown(&self) {
        let lanes: Vec<Arc<Lane>> = {
            let mut state = self.shared.state();
            state.shut_down = true;
            state.slots.drain(..).map(|slot| slot.lane).collect()
        };
        self.shared.changed.notify_waiters();
        let spare = self
            .shared
            .spare
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
            .take();
        if let Some(spare) = spare {
            spare.stop().await;
        }
        futures_util::future::join_all(lanes.iter().map(|lane| lane.shutdown())).await;
    }
}
