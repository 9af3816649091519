//! What every lane does whatever its transport: fresh legacy ids, the table of pending calls, and
//! the router for what the legacy server sends (responses, server requests, notifications).
//!
//! Routing rules:
//! - a response goes to the pending call with its id (unknown ids are logged and dropped);
//! - `ping` is answered `{}` right here, always;
//! - a `notifications/progress` whose token was registered with
//!   [`LaneCore::start_request`] goes to that call's progress channel, leased or not;
//! - a server request or notification read from the POST response stream of a call that
//!   registered a call route ([`CallTag::Routed`], shared sessions) goes to that call's channel;
//! - while the lane is leased, every other server request and notification goes to the lease's
//!   event channel;
//! - otherwise server requests are answered locally ([`LaneCore::local_answer`], translation T7 of docs/proxy/how-it-works.md)
//!   and notifications are logged.
//!
//! Where each server request arrived (a call's own POST stream or elsewhere) is reported to the
//! pool's [`Attribution`], which decides whether calls of that kind may share a session.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use serde_json::{json, Map, Value};
use tokio::sync::{mpsc, oneshot};
use tracing::Span;

use super::attribution::Attribution;
use super::{
    BackendError, BackendEvent, ChangeFeed, EventReceiver, EventSender, PendingCall,
    CHANGE_NOTIFICATIONS,
};
use crate::capabilities::CapabilityProfile;
use crate::jsonrpc::{codes, ErrorObject, Message, Reply};

/// What a pending call eventually receives.
pub(crate) type Outcome = Result<Result<Reply, ErrorObject>, BackendError>;

/// Capacity of a lease's event channel.
pub(crate) const LEASE_EVENTS: usize = 256;
/// Capacity of a call's progress channel (progress beyond it is dropped, never waited for).
pub(crate) const PROGRESS_EVENTS: usize = 64;

/// How a lane sends a message it does not wait on (local answers, `ping` replies).
pub(crate) trait Outbound: Send + Sync {
    fn send_detached(&self, message: Message);
}

struct PendingEntry {
    reply: oneshot::Sender<Outcome>,
    /// The transport's session epoch at send time (HTTP re-initialization fails older calls).
    epoch: u64,
    /// Key of the progress route registered with this call, removed when it completes.
    progress: Option<String>,
}

/// A server request delivered to a lease and not answered yet: what a local answer needs (its
/// params are not kept: the call that received them holds them, and local answers ignore them).
struct Delivered {
    id: Value,
    method: String,
}

struct LeaseRoute {
    generation: u64,
    events: EventSender,
    /// Keyed by the serialised request id.
    delivered: HashMap<String, Delivered>,
    /// The kind of the calls the lease holder runs (for [`Attribution`]).
    kind: Option<Arc<str>>,
    /// Legacy ids of the lease holder's calls ([`CallTag::Leased`]).
    calls: Vec<u64>,
    /// Whether a server request reached the lease.
    asked: bool,
}

/// Where what arrives on one call's own POST response stream goes (a call on a shared session).
struct CallRoute {
    events: EventSender,
    kind: Arc<str>,
    /// Server requests delivered and not answered yet, by serialised id.
    delivered: HashMap<String, Delivered>,
}

/// How a request of a correlatable call is registered on the lane.
#[derive(Debug, Clone)]
pub(crate) enum CallTag {
    /// Not a correlatable call (pass-through, `initialize`).
    None,
    /// The call of the lease holder (exclusive lane).
    Leased,
    /// A call on a shared session: what its own response stream carries goes to `events`.
    Routed { events: EventSender, kind: Arc<str> },
}

#[derive(Default)]
struct CoreState {
    pending: HashMap<u64, PendingEntry>,
    /// The route of the call that runs on the lane (exclusive leases): what the lane receives
    /// that names no call goes there.
    lease: Option<LeaseRoute>,
    /// Routes of paused calls that gave the lane up while they wait for their clients (a lane
    /// that holds many paused calls, see `pool.rs`), by lease generation: their handlers are
    /// blocked on the legacy side, so nothing unattributed is theirs; what names one of their
    /// server requests (a withdrawal) still reaches them, and their answers are noted.
    parked: HashMap<u64, LeaseRoute>,
    lease_generation: u64,
    progress: HashMap<String, mpsc::Sender<Value>>,
    /// Call routes by the call's legacy id.
    calls: HashMap<u64, CallRoute>,
    /// Server request id (serialised) -> the legacy id of the routed call it was delivered to.
    call_requests: HashMap<String, u64>,
    /// Requests of ours cancelled so far ([`LaneCore::note_cancelled`]).
    cancelled: u64,
    /// Cancelled requests (serialised ids) the legacy server has not finished yet: no response
    /// has come for them since (the Python SDK answers a cancelled request with an error; the
    /// TypeScript SDK sends nothing).
    cancels_open: HashSet<String>,
    /// When a request of ours last ended or a lease last went (none yet: the lane's creation).
    /// Only read while nothing is in flight or leased ([`LaneCore::idle_for`]), so the starts
    /// need no stamp.
    last_active: Option<Instant>,
}

/// The most cancelled-but-unanswered requests a lane remembers ([`LaneCore::cancels_open`]).
const MAX_CANCELS_OPEN: usize = 4096;

/// The transport-independent half of a lane.
pub(crate) struct LaneCore {
    pub id: u64,
    pub profile: CapabilityProfile,
    pub transport: &'static str,
    pub span: Span,
    pub created: Instant,
    roots: Vec<String>,
    /// Where the legacy server's change notifications go (the pool's, shared by every lane).
    changes: Arc<ChangeFeed>,
    next_id: AtomicU64,
    next_token: AtomicU64,
    state: Mutex<CoreState>,
    alive: AtomicBool,
    outbound: OnceLock<Box<dyn Outbound>>,
    /// A legacy client session's own `initialize` params (`legacy_session`): sent as they are
    /// instead of the profile's, and an expired HTTP session ends the lane instead of
    /// re-initializing it.
    session_init: OnceLock<Value>,
    /// Events handed to a lease so far (queued or on their way), for a holder that must know
    /// whether it has taken them all ([`LaneCore::lease_events_sent`]).
    lease_events: AtomicU64,
    /// The pool's knowledge of where server requests arrive (none in unit tests).
    attribution: OnceLock<Arc<Attribution>>,
}

impl fmt::Debug for LaneCore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LaneCore")
            .field("id", &self.id)
            .field("profile", &self.profile.label())
            .field("transport", &self.transport)
            .field("alive", &self.is_alive())
            .finish_non_exhaustive()
    }
}

/// The key under which a JSON-RPC id (or progress token) is tracked.
pub(crate) fn value_key(value: &Value) -> String {
    value.to_string()
}

/// Our own request ids are integers; accept them echoed back as strings too.
fn legacy_id_key(id: &Value) -> Option<u64> {
    match id {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
}

impl LaneCore {
    pub fn new(
        id: u64,
        profile: CapabilityProfile,
        transport: &'static str,
        roots: Vec<String>,
        changes: Arc<ChangeFeed>,
    ) -> Arc<Self> {
        // A root span: a lane outlives the request that started it, and a parent span stays open
        // as long as its children (its trace would never be exported).
        let span = tracing::info_span!(
            parent: None,
            "lane",
            lane = id,
            profile = %profile.label(),
            transport = transport
        );
        Arc::new(LaneCore {
            id,
            profile,
            transport,
            span,
            created: Instant::now(),
            roots,
            changes,
            next_id: AtomicU64::new(0),
            next_token: AtomicU64::new(0),
            state: Mutex::new(CoreState::default()),
            alive: AtomicBool::new(true),
            outbound: OnceLock::new(),
            session_init: OnceLock::new(),
            lease_events: AtomicU64::new(0),
            attribution: OnceLock::new(),
        })
    }

    /// Makes this the lane of one legacy client session: `initialize` sends `params` as they
    /// are (see [`LaneCore::initialize_params`]). Set before the lane starts.
    pub fn set_session_init(&self, params: Value) {
        let _ = self.session_init.set(params);
    }

    /// How many server requests and notifications were handed to a lease so far (counted before
    /// the response that follows them is routed).
    pub fn lease_events_sent(&self) -> u64 {
        self.lease_events.load(Ordering::SeqCst)
    }

    /// Whether the lane belongs to one legacy client session (it never re-initializes).
    pub fn is_session_lane(&self) -> bool {
        self.session_init.get().is_some()
    }

    /// The `initialize` params: a legacy client's own, or the newest legacy version with the
    /// profile's capabilities and the proxy's `client_info`.
    pub fn initialize_params(&self, client_info: &Value) -> Value {
        if let Some(params) = self.session_init.get() {
            return params.clone();
        }
        let version = super::LATEST_LEGACY_VERSION;
        json!({
            "protocolVersion": version,
            "capabilities": self.profile.legacy_capabilities(version),
            "clientInfo": client_info,
        })
    }

    pub fn set_attribution(&self, attribution: Arc<Attribution>) {
        let _ = self.attribution.set(attribution);
    }

    fn learn(&self, learn: impl FnOnce(&Attribution)) {
        if let Some(attribution) = self.attribution.get() {
            learn(attribution);
        }
    }

    pub fn set_outbound(&self, outbound: Box<dyn Outbound>) {
        let _ = self.outbound.set(outbound);
    }

    fn send_detached(&self, message: Message) {
        if let Some(outbound) = self.outbound.get() {
            outbound.send_detached(message);
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, CoreState> {
        // A panic while holding the lock cannot leave the maps half-updated in a harmful way.
        self.state
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }

    pub fn is_alive(&self) -> bool {
        self.alive.load(Ordering::SeqCst)
    }

    /// A progress token that no other call on this lane uses.
    pub fn mint_progress_token(&self) -> Value {
        let n = self.next_token.fetch_add(1, Ordering::Relaxed);
        Value::String(format!("mcp-mrtr-proxy/lane-{}/{n}", self.id))
    }

    /// Calls waiting for a response.
    pub fn pending_count(&self) -> usize {
        self.state().pending.len()
    }

    pub fn is_leased(&self) -> bool {
        self.state().lease.is_some()
    }

    /// How long the lane has had nothing to do: no request in flight, no lease, no routed call,
    /// no cancelled request still unanswered (`None` while it has any of these).
    pub fn idle_for(&self) -> Option<std::time::Duration> {
        let state = self.state();
        let busy = !state.pending.is_empty()
            || state.lease.is_some()
            || !state.parked.is_empty()
            || !state.calls.is_empty()
            || !state.cancels_open.is_empty();
        (!busy).then(|| state.last_active.unwrap_or(self.created).elapsed())
    }

    /// Calls on this lane with a call route (shared-session calls not finished with yet).
    pub fn routed_calls(&self) -> usize {
        self.state().calls.len()
    }

    /// Whether the lease holder's call waits for its client: a server request reached it and is
    /// not answered yet (a paused call).
    pub fn awaits_client(&self) -> bool {
        self.state()
            .lease
            .as_ref()
            .is_some_and(|route| !route.delivered.is_empty())
    }

    /// Notes that our request `id` was cancelled (its late output may still arrive, until its
    /// response does).
    pub fn note_cancelled(&self, id: &Value) {
        let mut state = self.state();
        state.cancelled += 1;
        if state.cancels_open.len() >= MAX_CANCELS_OPEN {
            // A server that never answers cancelled requests, on a long-lived shared lane:
            // forgetting them only makes a later grace end in a retirement, never a reuse.
            state.cancels_open.clear();
        }
        state.cancels_open.insert(value_key(id));
    }

    /// Cancelled requests of ours the legacy server has not answered yet.
    pub fn cancels_open(&self) -> usize {
        self.state().cancels_open.len()
    }

    /// A response that matched no pending request: if it answers a cancelled request, that
    /// request is finished on the legacy side. Returns whether it did.
    fn finish_cancelled(&self, id: &Value) -> bool {
        self.state().cancels_open.remove(&value_key(id))
    }

    fn unmatched_response(&self, id: &Value) {
        let _entered = self.span.enter();
        if self.finish_cancelled(id) {
            tracing::debug!(id = %id, "a cancelled request finished on the legacy side");
        } else {
            tracing::debug!(id = %id, "response to no pending request dropped");
        }
    }

    /// Requests of ours cancelled so far.
    pub fn cancelled_count(&self) -> u64 {
        self.state().cancelled
    }

    /// [`LaneCore::start_request`] for lanes that hand messages to a writer (stdio, HTTP+SSE):
    /// `write` sends the request; if it cannot, the call is completed with that error.
    pub(crate) fn send_request_with(
        &self,
        method: &str,
        params: Value,
        progress_token: Option<Value>,
        write: impl FnOnce(Message) -> Result<(), BackendError>,
    ) -> Result<(PendingCall, Option<mpsc::Receiver<Value>>), BackendError> {
        let (message, call, progress) = self.start_request(method, params, 0, progress_token)?;
        if let Err(error) = write(message) {
            self.complete(&call.legacy_id, Err(error.clone()));
            return Err(error);
        }
        Ok((call, progress))
    }

    /// Registers a request with a fresh legacy id; the caller sends the returned message.
    /// With `progress_token`, `_meta.progressToken` is set in `params` and the call's progress
    /// notifications go to the returned receiver until the response arrives.
    pub fn start_request(
        &self,
        method: &str,
        params: Value,
        epoch: u64,
        progress_token: Option<Value>,
    ) -> Result<(Message, PendingCall, Option<mpsc::Receiver<Value>>), BackendError> {
        self.start_tagged_request(method, params, epoch, progress_token, CallTag::None)
    }

    /// [`LaneCore::start_request`] for a correlatable call, registered by `tag` before the
    /// request can be sent (so nothing its response stream carries can arrive unrouted).
    pub fn start_tagged_request(
        &self,
        method: &str,
        params: Value,
        epoch: u64,
        progress_token: Option<Value>,
        tag: CallTag,
    ) -> Result<(Message, PendingCall, Option<mpsc::Receiver<Value>>), BackendError> {
        if !self.is_alive() {
            return Err(BackendError::Crashed);
        }
        let mut params = params;
        let mut progress = None;
        if let Some(token) = progress_token {
            if params.is_null() {
                params = Value::Object(Map::new());
            }
            let Some(object) = params.as_object_mut() else {
                return Err(BackendError::Protocol(
                    "progress needs object params".into(),
                ));
            };
            let meta = object
                .entry("_meta")
                .or_insert_with(|| Value::Object(Map::new()));
            if !meta.is_object() {
                *meta = Value::Object(Map::new());
            }
            meta["progressToken"] = token.clone();
            let (tx, rx) = mpsc::channel(PROGRESS_EVENTS);
            progress = Some((value_key(&token), tx, rx));
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (reply, response) = oneshot::channel();
        let receiver = {
            let mut state = self.state();
            let key = progress.map(|(key, tx, rx)| {
                state.progress.insert(key.clone(), tx);
                (key, rx)
            });
            let (progress_key, receiver) = match key {
                Some((key, rx)) => (Some(key), Some(rx)),
                None => (None, None),
            };
            state.pending.insert(
                id,
                PendingEntry {
                    reply,
                    epoch,
                    progress: progress_key,
                },
            );
            match tag {
                CallTag::None => {}
                CallTag::Leased => {
                    if let Some(route) = state.lease.as_mut() {
                        route.calls.push(id);
                    }
                }
                CallTag::Routed { events, kind } => {
                    state.calls.insert(
                        id,
                        CallRoute {
                            events,
                            kind,
                            delivered: HashMap::new(),
                        },
                    );
                }
            }
            receiver
        };
        let message = Message::Request {
            id: Value::from(id),
            method: method.to_owned(),
            params: if params.is_null() { None } else { Some(params) },
        };
        Ok((
            message,
            PendingCall {
                legacy_id: Value::from(id),
                response,
            },
            receiver,
        ))
    }

    /// Completes a pending call with `outcome` (if it is still pending).
    pub fn complete(&self, legacy_id: &Value, outcome: Outcome) -> bool {
        let Some(key) = legacy_id_key(legacy_id) else {
            return false;
        };
        let entry = {
            let mut state = self.state();
            let entry = state.pending.remove(&key);
            state.last_active = Some(Instant::now());
            if let Some(progress) = entry.as_ref().and_then(|e| e.progress.as_ref()) {
                state.progress.remove(progress);
            }
            entry
        };
        match entry {
            Some(entry) => {
                let _ = entry.reply.send(outcome);
                true
            }
            None => false,
        }
    }

    pub fn is_pending(&self, legacy_id: &Value) -> bool {
        legacy_id_key(legacy_id).is_some_and(|key| self.state().pending.contains_key(&key))
    }

    /// Counts the pending call `id` as sent in session epoch `epoch` (it is being sent again on a
    /// new session).
    pub fn set_pending_epoch(&self, id: &Value, epoch: u64) {
        if let Some(key) = legacy_id_key(id) {
            if let Some(entry) = self.state().pending.get_mut(&key) {
                entry.epoch = epoch;
            }
        }
    }

    /// Fails every pending call sent in session epoch `epoch` or earlier.
    pub fn fail_pending_up_to(&self, epoch: u64, error: BackendError) {
        let failed: Vec<PendingEntry> = {
            let mut state = self.state();
            let keys: Vec<u64> = state
                .pending
                .iter()
                .filter(|(_, entry)| entry.epoch <= epoch)
                .map(|(key, _)| *key)
                .collect();
            let entries: Vec<PendingEntry> = keys
                .iter()
                .filter_map(|key| state.pending.remove(key))
                .collect();
            for entry in &entries {
                if let Some(progress) = &entry.progress {
                    state.progress.remove(progress);
                }
            }
            entries
        };
        for entry in failed {
            let _ = entry.reply.send(Err(error.clone()));
        }
    }

    /// The lane is gone: every pending call fails with `Crashed`, the lease's event channel and
    /// every progress channel close.
    pub fn mark_dead(&self) {
        if self.alive.swap(false, Ordering::SeqCst) {
            let _entered = self.span.enter();
            tracing::info!("lane is dead");
        }
        let (pending, lease, progress, calls) = {
            let mut state = self.state();
            state.call_requests.clear();
            (
                std::mem::take(&mut state.pending),
                state.lease.take(),
                std::mem::take(&mut state.progress),
                std::mem::take(&mut state.calls),
            )
        };
        for (_, entry) in pending {
            let _ = entry.reply.send(Err(BackendError::Crashed));
        }
        drop(lease);
        drop(progress);
        drop(calls);
    }

    /// Routes events to a new lease; returns its generation and receiver. `kind` names the calls
    /// the holder runs (for [`Attribution`]).
    pub fn attach_lease(&self, kind: Option<Arc<str>>) -> (u64, EventReceiver) {
        let (events, receiver) = super::event_channel(LEASE_EVENTS);
        let mut state = self.state();
        state.lease_generation += 1;
        let generation = state.lease_generation;
        state.lease = Some(LeaseRoute {
            generation,
            events,
            delivered: HashMap::new(),
            kind,
            calls: Vec::new(),
            asked: false,
        });
        (generation, receiver)
    }

    /// About the lease `generation` while it still holds the lane: whether a server request
    /// reached it, and whether one of its calls still waits for its response.
    pub fn lease_report(&self, generation: u64) -> Option<(bool, bool)> {
        let state = self.state();
        let route = state
            .lease
            .as_ref()
            .filter(|r| r.generation == generation)
            .or_else(|| state.parked.get(&generation))?;
        let waiting = route.calls.iter().any(|id| state.pending.contains_key(id));
        Some((route.asked, waiting))
    }

    /// Ends the call routes of `ids` (a shared-session call is done with). Server requests
    /// delivered to them and never answered are answered locally.
    pub fn detach_calls(&self, ids: &[u64]) {
        let routes: Vec<CallRoute> = {
            let mut state = self.state();
            let routes: Vec<CallRoute> =
                ids.iter().filter_map(|id| state.calls.remove(id)).collect();
            for route in &routes {
                for key in route.delivered.keys() {
                    state.call_requests.remove(key);
                }
            }
            routes
        };
        for route in routes {
            self.answer_unanswered(route.delivered);
        }
    }

    fn answer_unanswered(&self, delivered: HashMap<String, Delivered>) {
        for (_, request) in delivered {
            let _entered = self.span.enter();
            tracing::warn!(
                method = %request.method,
                lane = self.id,
                "a server request of a finished call was never answered: answering it locally"
            );
            let outcome = self.local_answer(&request.method);
            self.send_detached(Message::response(request.id, outcome));
        }
    }

    /// Stops routing to the lease `generation`. Server requests it received and never answered
    /// are answered locally, so the legacy server does not wait for them forever.
    pub fn detach_lease(&self, generation: u64) {
        let route = {
            let mut state = self.state();
            if state
                .lease
                .as_ref()
                .is_some_and(|route| route.generation == generation)
            {
                state.last_active = Some(Instant::now());
                state.lease.take()
            } else {
                let parked = state.parked.remove(&generation);
                if parked.is_some() {
                    state.last_active = Some(Instant::now());
                }
                parked
            }
        };
        if let Some(route) = route {
            self.answer_unanswered(route.delivered);
        }
    }

    /// The running lease `generation` gives the lane up while its call waits for its client:
    /// its route is kept aside (see `CoreState::parked`) and the lane takes another call.
    /// Returns whether that lease was the running one.
    pub fn park_lease(&self, generation: u64) -> bool {
        let mut state = self.state();
        match state.lease.take() {
            Some(route) if route.generation == generation => {
                state.parked.insert(generation, route);
                true
            }
            other => {
                state.lease = other;
                false
            }
        }
    }

    /// The parked lease `generation` runs again: its route takes the lane back. Refused while
    /// another lease runs (the pool grants the lane to one running call at a time).
    pub fn unpark_lease(&self, generation: u64) -> bool {
        let mut state = self.state();
        if state.lease.is_some() {
            return false;
        }
        match state.parked.remove(&generation) {
            Some(route) => {
                state.lease = Some(route);
                true
            }
            None => false,
        }
    }

    /// Paused calls whose routes are parked on this lane.
    #[cfg(test)]
    pub fn parked_count(&self) -> usize {
        self.state().parked.len()
    }

    /// Notes that a server request was answered (by the lease holder or a routed call).
    pub fn responded(&self, id: &Value) {
        let key = value_key(id);
        let mut state = self.state();
        if let Some(owner) = state.call_requests.remove(&key) {
            if let Some(route) = state.calls.get_mut(&owner) {
                route.delivered.remove(&key);
            }
            return;
        }
        if let Some(route) = state.lease.as_mut() {
            if route.delivered.remove(&key).is_some() {
                return;
            }
        }
        for route in state.parked.values_mut() {
            if route.delivered.remove(&key).is_some() {
                return;
            }
        }
    }

    /// The answer to a server request nobody can forward to a client (translation T7 of docs/proxy/how-it-works.md).
    pub fn local_answer(&self, method: &str) -> Result<Value, ErrorObject> {
        match method {
            "ping" => Ok(json!({})),
            "roots/list" if !self.roots.is_empty() => Ok(json!({
                "roots": self.roots.iter().map(|uri| json!({"uri": uri})).collect::<Vec<_>>()
            })),
            "roots/list" => Err(ErrorObject::new(
                codes::INTERNAL_ERROR,
                "roots are only available to the proxy during a client call",
            )),
            "elicitation/create" => Ok(json!({"action": "decline"})),
            "sampling/createMessage" => Err(ErrorObject::new(
                codes::INTERNAL_ERROR,
                "sampling is not available outside a client call",
            )),
            _ => Err(ErrorObject::new(
                codes::METHOD_NOT_FOUND,
                format!("method not supported by the proxy: {method}"),
            )),
        }
    }

    fn answer_locally(&self, id: Value, method: &str) {
        let _entered = self.span.enter();
        tracing::warn!(
            method = %method,
            lane = self.id,
            "unattributed server request answered locally"
        );
        let outcome = self.local_answer(method);
        self.send_detached(Message::response(id, outcome));
    }

    /// Routes everything in one unit of legacy output (an HTTP response body, the data of an SSE
    /// `message` event, a line of a child's stdout): one message or a (2025-03-26) batch.
    /// Surrounding ASCII whitespace is ignored; output that is not JSON-RPC, and invalid entries
    /// of a batch, are logged and skipped. `source` names the unit in those logs. Returns how
    /// many messages were routed.
    pub fn handle_bytes(self: &Arc<Self>, bytes: &[u8], source: &'static str) -> usize {
        self.handle_bytes_from(bytes, source, None)
    }

    /// [`LaneCore::handle_bytes`] for output read from the POST response stream of our request
    /// `call` (a legacy id), when `Some`: server requests and notifications there belong to it.
    pub fn handle_bytes_from(
        self: &Arc<Self>,
        bytes: &[u8],
        source: &'static str,
        call: Option<&Value>,
    ) -> usize {
        let call = call.and_then(legacy_id_key);
        let bytes = bytes.trim_ascii();
        if bytes.is_empty() {
            return 0;
        }
        // Most output is a successful response: keep its result as text (no `Value` tree).
        if let Some(message) = crate::jsonrpc::parse_raw_response(bytes) {
            self.handle_from(message, call);
            return 1;
        }
        match Message::parse_batch(bytes) {
            Ok(messages) => {
                let mut routed = 0;
                for message in messages {
                    match message {
                        Ok(message) => {
                            self.handle_from(message, call);
                            routed += 1;
                        }
                        Err(error) => {
                            tracing::warn!(%error, source, "skipping an invalid message from the legacy server")
                        }
                    }
                }
                routed
            }
            Err(error) => {
                tracing::warn!(
                    %error,
                    bytes = bytes.len(),
                    source,
                    "skipping legacy server output that is not JSON-RPC"
                );
                0
            }
        }
    }

    /// Routes one message the legacy server sent.
    #[cfg(test)]
    pub fn handle(self: &Arc<Self>, message: Message) {
        self.handle_from(message, None);
    }

    /// Routes one message; `call`: it came on the POST response stream of that request of ours.
    fn handle_from(self: &Arc<Self>, message: Message, call: Option<u64>) {
        match message {
            Message::Response { id, outcome } => {
                if !self.complete(&id, Ok(outcome.map(Reply::Tree))) {
                    self.unmatched_response(&id);
                }
            }
            Message::RawResponse { id, result } => {
                if !self.complete(&id, Ok(Ok(Reply::Raw(result)))) {
                    self.unmatched_response(&id);
                }
            }
            Message::Request { id, method, params } => {
                let params = params.unwrap_or_else(|| Value::Object(Map::new()));
                if method == "ping" {
                    self.send_detached(Message::response(id, Ok(json!({}))));
                    return;
                }
                if let Some((id, method, params)) = self.route_to_call(call, id, method, params) {
                    self.route_request(id, method, params, call);
                }
            }
            Message::Notification { method, params } => {
                let params = params.unwrap_or_else(|| Value::Object(Map::new()));
                self.route_notification(method, params, call);
            }
        }
    }

    /// Delivers a server request that came on a routed call's own stream to that call; gives it
    /// back when `call` has no route.
    fn route_to_call(
        self: &Arc<Self>,
        call: Option<u64>,
        id: Value,
        method: String,
        params: Value,
    ) -> Option<(Value, String, Value)> {
        let Some(call) = call else {
            return Some((id, method, params));
        };
        let key = value_key(&id);
        let (sent, kind) = {
            let mut state = self.state();
            let Some(route) = state.calls.get_mut(&call) else {
                return Some((id, method, params));
            };
            let event = BackendEvent::ServerRequest {
                id: id.clone(),
                method: method.clone(),
                params,
            };
            let sent = match route.events.try_send(event) {
                Ok(()) => Ok(()),
                Err(mpsc::error::TrySendError::Full(event)) => {
                    Err(Some((route.events.clone(), event)))
                }
                Err(mpsc::error::TrySendError::Closed(_)) => Err(None),
            };
            let kind = Arc::clone(&route.kind);
            if !matches!(sent, Err(None)) {
                route.delivered.insert(
                    key.clone(),
                    Delivered {
                        id: id.clone(),
                        method: method.clone(),
                    },
                );
                state.call_requests.insert(key.clone(), call);
            }
            (sent, kind)
        };
        self.learn(|attribution| attribution.on_call_stream(&kind));
        match sent {
            Ok(()) => {}
            Err(None) => self.answer_locally(id, &method),
            Err(Some((events, event))) => {
                // The call is not reading: wait for it without blocking the stream's reader.
                let core = Arc::clone(self);
                tokio::spawn(async move {
                    if events.send(event).await.is_err() {
                        let still_ours = {
                            let mut state = core.state();
                            state.call_requests.remove(&key);
                            state
                                .calls
                                .get_mut(&call)
                                .and_then(|route| route.delivered.remove(&key))
                                .is_some()
                        };
                        if still_ours {
                            core.answer_locally(id, &method);
                        }
                    }
                });
            }
        }
        None
    }

    fn route_request(
        self: &Arc<Self>,
        id: Value,
        method: String,
        params: Value,
        call: Option<u64>,
    ) {
        enum Next {
            Local,
            Delivered,
            Later(EventSender, BackendEvent),
        }
        let event = BackendEvent::ServerRequest {
            id: id.clone(),
            method: method.clone(),
            params,
        };
        let next = {
            let mut state = self.state();
            if state.lease.is_none() && !state.calls.is_empty() {
                // On a shared session, a request that came on no call's stream names no call.
                let kinds: HashSet<Arc<str>> = state
                    .calls
                    .values()
                    .map(|route| Arc::clone(&route.kind))
                    .collect();
                drop(state);
                self.learn(|attribution| {
                    for kind in &kinds {
                        attribution.on_session_stream(kind);
                    }
                });
                state = self.state();
            }
            match state.lease.as_mut() {
                None => Next::Local,
                Some(route) => {
                    route.asked = true;
                    if let Some(kind) = &route.kind {
                        let own_stream = call.is_some_and(|call| route.calls.contains(&call));
                        let kind = Arc::clone(kind);
                        self.learn(|attribution| {
                            if own_stream {
                                attribution.on_call_stream(&kind);
                            } else {
                                attribution.on_session_stream(&kind);
                            }
                        });
                    }
                    let delivered = Delivered {
                        id: id.clone(),
                        method: method.clone(),
                    };
                    self.lease_events.fetch_add(1, Ordering::SeqCst);
                    match route.events.try_send(event) {
                        Ok(()) => {
                            route.delivered.insert(value_key(&id), delivered);
                            Next::Delivered
                        }
                        Err(mpsc::error::TrySendError::Full(event)) => {
                            route.delivered.insert(value_key(&id), delivered);
                            Next::Later(route.events.clone(), event)
                        }
                        Err(mpsc::error::TrySendError::Closed(_)) => Next::Local,
                    }
                }
            }
        };
        match next {
            Next::Local => self.answer_locally(id, &method),
            Next::Delivered => {
                let _entered = self.span.enter();
                tracing::debug!(method = %method, "server request routed to the lease");
            }
            Next::Later(events, event) => {
                // The lease is not reading: wait for it without blocking the lane's reader.
                let core = Arc::clone(self);
                tokio::spawn(async move {
                    if events.send(event).await.is_err() {
                        let still_ours = {
                            let mut state = core.state();
                            state
                                .lease
                                .as_mut()
                                .and_then(|route| route.delivered.remove(&value_key(&id)))
                                .is_some()
                        };
                        if still_ours {
                            core.answer_locally(id, &method);
                        }
                    }
                });
            }
        }
    }

    fn route_notification(&self, method: String, params: Value, call: Option<u64>) {
        if CHANGE_NOTIFICATIONS.contains(&method.as_str()) {
            // List changes and resource updates belong to no call, even when a call holds the
            // lane: they go to the `subscriptions/listen` streams.
            {
                let _entered = self.span.enter();
                tracing::debug!(method = %method, "change notification");
            }
            self.changes.publish(self.id, method, params);
            return;
        }
        let mut state = self.state();
        if method == "notifications/progress" {
            if let Some(token) = params.get("progressToken") {
                let key = value_key(token);
                if let Some(progress) = state.progress.get(&key) {
                    match progress.try_send(params) {
                        Ok(()) => {}
                        Err(mpsc::error::TrySendError::Full(_)) => {
                            let _entered = self.span.enter();
                            tracing::debug!("progress channel full: progress dropped");
                        }
                        Err(mpsc::error::TrySendError::Closed(_)) => {
                            state.progress.remove(&key);
                        }
                    }
                    return;
                }
            }
        }
        if method == "notifications/cancelled" && !state.parked.is_empty() {
            // The legacy server withdrawing a request it sent to a paused call: that call's.
            let withdrawn = params.get("requestId").map(value_key);
            let owner = withdrawn.and_then(|key| {
                state
                    .parked
                    .values()
                    .find(|route| route.delivered.contains_key(&key))
            });
            if let Some(route) = owner {
                let event = BackendEvent::Notification {
                    method: method.clone(),
                    params,
                };
                if route.events.try_send(event).is_err() {
                    let _entered = self.span.enter();
                    tracing::debug!("a paused call's withdrawal could not be queued");
                }
                return;
            }
        }
        if let Some(route) = call.and_then(|call| state.calls.get(&call)) {
            let event = BackendEvent::Notification {
                method: method.clone(),
                params,
            };
            match route.events.try_send(event) {
                Ok(()) => return,
                Err(mpsc::error::TrySendError::Full(_)) => {
                    let _entered = self.span.enter();
                    tracing::warn!(method = %method, "call event channel full: notification dropped");
                    return;
                }
                Err(mpsc::error::TrySendError::Closed(BackendEvent::Notification {
                    params,
                    ..
                })) => {
                    drop(state);
                    self.log_notification(&method, &params);
                    return;
                }
                Err(mpsc::error::TrySendError::Closed(_)) => return,
            }
        }
        let params = if let Some(route) = state.lease.as_mut() {
            let event = BackendEvent::Notification {
                method: method.clone(),
                params,
            };
            self.lease_events.fetch_add(1, Ordering::SeqCst);
            match route.events.try_send(event) {
                Ok(()) => return,
                Err(mpsc::error::TrySendError::Full(_)) => {
                    let _entered = self.span.enter();
                    tracing::warn!(method = %method, "lease event channel full: notification dropped");
                    return;
                }
                Err(mpsc::error::TrySendError::Closed(BackendEvent::Notification {
                    params,
                    ..
                })) => params,
                Err(mpsc::error::TrySendError::Closed(_)) => return,
            }
        } else {
            params
        };
        drop(state);
        self.log_notification(&method, &params);
    }

    /// A notification nobody takes: the proxy's own log.
    fn log_notification(&self, method: &str, params: &Value) {
        let _entered = self.span.enter();
        if method == "notifications/message" {
            let level = params
                .get("level")
                .and_then(Value::as_str)
                .unwrap_or("info");
            let logger = params
                .get("logger")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let data = params.get("data").cloned().unwrap_or(Value::Null);
            tracing::info!(
                lane = self.id,
                level,
                logger,
                data = %data,
                "legacy server log message"
            );
        } else {
            tracing::debug!(lane = self.id, method = %method, "unattributed notification");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Capture(Mutex<Vec<Message>>);

    impl Outbound for Arc<Capture> {
        fn send_detached(&self, message: Message) {
            self.0.lock().unwrap().push(message);
        }
    }

    fn core(roots: &[&str]) -> (Arc<LaneCore>, Arc<Capture>) {
        let core = LaneCore::new(
            7,
            CapabilityProfile::default(),
            "test",
            roots.iter().map(|r| r.to_string()).collect(),
            Arc::default(),
        );
        let capture = Arc::new(Capture::default());
        core.set_outbound(Box::new(Arc::clone(&capture)));
        (core, capture)
    }

    fn request(id: i64, method: &str) -> Message {
        Message::Request {
            id: id.into(),
            method: method.into(),
            params: None,
        }
    }

    #[tokio::test]
    async fn change_notifications_go_to_the_feed_even_from_a_leased_lane() {
        let changes = Arc::new(ChangeFeed::default());
        let mut feed = changes.subscribe();
        let core = LaneCore::new(
            1,
            CapabilityProfile::default(),
            "test",
            Vec::new(),
            Arc::clone(&changes),
        );
        let notification = |method: &str| Message::Notification {
            method: method.into(),
            params: Some(json!({ "uri": "file:///a" })),
        };
        core.handle(notification("notifications/prompts/list_changed"));
        assert_eq!(changes.tools_generation(), 0);
        let (_generation, mut events) = core.attach_lease(None);
        core.handle(notification("notifications/tools/list_changed"));
        core.handle(notification("notifications/resources/updated"));
        // Other notifications still go to the lease.
        core.handle(notification("notifications/message"));
        assert_eq!(changes.tools_generation(), 1);
        let mut seen = Vec::new();
        while let Ok(notice) = feed.try_recv() {
            assert_eq!(notice.lane, 1);
            seen.push(notice.method);
        }
        assert_eq!(
            seen,
            [
                "notifications/prompts/list_changed",
                "notifications/tools/list_changed",
                "notifications/resources/updated"
            ]
        );
        assert!(matches!(
            events.try_recv(),
            Ok(BackendEvent::Notification { method, .. }) if method == "notifications/message"
        ));
        assert!(events.try_recv().is_err());
    }

    /// A paused call's route is kept aside while another call runs on the lane: what names no
    /// call goes to the running one, a withdrawal of the paused call's request and its answer
    /// still reach the paused one, and it gets the lane back only once no call runs.
    #[tokio::test]
    async fn a_parked_lease_keeps_its_own_while_another_call_runs() {
        let (core, sent) = core(&[]);
        let (paused, mut paused_events) = core.attach_lease(None);
        core.handle(request(1, "elicitation/create"));
        assert!(matches!(
            paused_events.try_recv(),
            Ok(BackendEvent::ServerRequest { method, .. }) if method == "elicitation/create"
        ));
        assert!(core.park_lease(paused));
        assert_eq!(core.parked_count(), 1);
        assert!(!core.park_lease(paused), "parked once");
        assert!(
            core.idle_for().is_none(),
            "a lane with a paused call is busy"
        );

        let (running, mut running_events) = core.attach_lease(None);
        core.handle(request(2, "sampling/createMessage"));
        assert!(matches!(
            running_events.try_recv(),
            Ok(BackendEvent::ServerRequest { method, .. }) if method == "sampling/createMessage"
        ));
        assert!(
            paused_events.try_recv().is_err(),
            "nothing unattributed is the paused call's"
        );
        core.handle(Message::Notification {
            method: "notifications/cancelled".into(),
            params: Some(json!({ "requestId": 1 })),
        });
        assert!(matches!(
            paused_events.try_recv(),
            Ok(BackendEvent::Notification { method, .. }) if method == "notifications/cancelled"
        ));
        assert!(running_events.try_recv().is_err());

        assert!(!core.unpark_lease(paused), "another call runs");
        core.responded(&json!(1));
        core.detach_lease(running);
        // The running call never answered its request: answered locally on detach.
        assert_eq!(sent.0.lock().unwrap().len(), 1);
        assert!(core.unpark_lease(paused));
        assert_eq!(core.parked_count(), 0);
        core.handle(request(3, "roots/list"));
        assert!(matches!(
            paused_events.try_recv(),
            Ok(BackendEvent::ServerRequest { method, .. }) if method == "roots/list"
        ));
        // Its earlier request was answered: only the new one is answered locally on detach.
        core.detach_lease(paused);
        assert_eq!(sent.0.lock().unwrap().len(), 2);
    }

    #[tokio::test]
    async fn unattributed_requests_get_local_answers() {
        let (core, sent) = core(&[]);
        for (id, method) in [
            (1, "ping"),
            (2, "roots/list"),
            (3, "elicitation/create"),
            (4, "sampling/createMessage"),
            (5, "frobnicate"),
        ] {
            core.handle(request(id, method));
        }
        let sent = sent.0.lock().unwrap().clone();
        let outcomes: Vec<_> = sent
            .into_iter()
            .map(|m| match m {
                Message::Response { outcome, .. } => outcome.map_err(|e| e.code),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(
            outcomes,
            vec![
                Ok(json!({})),
                Err(-32603),
                Ok(json!({"action": "decline"})),
                Err(-32603),
                Err(-32601)
            ]
        );
        let (core, sent) = self::core(&["file:///w"]);
        core.handle(request(1, "roots/list"));
        assert_eq!(
            sent.0.lock().unwrap()[0],
            Message::response(1.into(), Ok(json!({"roots": [{"uri": "file:///w"}]})))
        );
    }

    #[tokio::test]
    async fn leased_requests_go_to_the_lease_and_unanswered_ones_are_answered_on_detach() {
        let (core, sent) = core(&[]);
        let (generation, mut events) = core.attach_lease(None);
        core.handle(request(1, "elicitation/create"));
        core.handle(request(2, "ping"));
        core.handle(request(3, "roots/list"));
        assert!(matches!(
            events.recv().await,
            Some(BackendEvent::ServerRequest { method, .. }) if method == "elicitation/create"
        ));
        core.responded(&json!(1));
        core.detach_lease(generation);
        let sent = sent.0.lock().unwrap().clone();
        assert_eq!(sent.len(), 2, "{sent:?}");
        assert_eq!(sent[0], Message::response(2.into(), Ok(json!({}))));
        assert!(matches!(&sent[1], Message::Response { id, outcome: Err(_) } if *id == json!(3)));
    }

    #[tokio::test]
    async fn responses_and_progress_reach_their_call() {
        let (core, _) = core(&[]);
        let (message, call, progress) = core
            .start_request("tools/call", json!({"name": "x"}), 0, Some(json!("t")))
            .unwrap();
        let Message::Request { params, .. } = message else {
            panic!()
        };
        assert_eq!(params.unwrap()["_meta"]["progressToken"], json!("t"));
        let mut progress = progress.unwrap();
        core.handle(Message::Notification {
            method: "notifications/progress".into(),
            params: Some(json!({"progressToken": "t", "progress": 1})),
        });
        core.handle(Message::response(
            call.legacy_id.clone(),
            Ok(json!({"ok": true})),
        ));
        assert_eq!(progress.recv().await.unwrap()["progress"], json!(1));
        assert!(
            progress.recv().await.is_none(),
            "closed once the call completed"
        );
        assert_eq!(
            call.response.await.unwrap().unwrap(),
            Ok(Reply::Tree(json!({"ok": true})))
        );
        let (_, call, _) = core.start_request("x", Value::Null, 0, None).unwrap();
        core.mark_dead();
        assert!(matches!(
            call.response.await.unwrap(),
            Err(BackendError::Crashed)
        ));
        assert!(core.start_request("x", Value::Null, 0, None).is_err());
    }
}
