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
//!
//! Here: the lane core's state (the routes, the call tags) and what it reports. By concern:
//! - `pending`: our requests (fresh legacy ids, the pending table, progress routes, completion,
//!   failure, cancelled requests);
//! - `routes`: the lease route (running or parked) and shared-session call routes, and the server
//!   requests delivered along them: answered, or answered locally;
//! - `router`: what the legacy server sends, routed by the rules above.

use crate::FastHashMap;
use std::collections::HashSet;
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
use crate::idle_clock::IdleStamp;
use crate::jsonrpc::{codes, ErrorObject, Message, Reply};

use self::pending::PendingEntry;

mod pending;
mod router;
mod routes;
#[cfg(test)]
mod tests;

/// What a pending call eventually receives.
pub(crate) type Outcome = Result<Result<Reply, ErrorObject>, BackendError>;

/// Capacity of a lease's event channel.
pub(crate) const LEASE_EVENTS: usize = 256;
/// Capacity of a call's progress channel (progress beyond it is dropped, never waited for).
pub(crate) const PROGRESS_EVENTS: usize = 64;

/// Lanes of this process that have died ([`LaneCore::mark_dead`]), counted.
static LANE_DEATHS: AtomicU64 = AtomicU64::new(0);

/// How a lane sends a message it does not wait on (local answers, `ping` replies).
pub(crate) trait Outbound: Send + Sync {
    fn send_detached(&self, message: Message);
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
    delivered: FastHashMap<String, Delivered>,
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
    delivered: FastHashMap<String, Delivered>,
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
    pending: FastHashMap<u64, PendingEntry>,
    /// The route of the call that runs on the lane (exclusive leases): what the lane receives
    /// that names no call goes there.
    lease: Option<LeaseRoute>,
    /// Routes of paused calls that gave the lane up while they wait for their clients (a lane
    /// that holds many paused calls, see `pool.rs`), by lease generation: their handlers are
    /// blocked on the legacy side, so nothing unattributed is theirs; what names one of their
    /// server requests (a withdrawal) still reaches them, and their answers are noted.
    parked: FastHashMap<u64, LeaseRoute>,
    lease_generation: u64,
    progress: FastHashMap<String, mpsc::Sender<Value>>,
    /// Call routes by the call's legacy id.
    calls: FastHashMap<u64, CallRoute>,
    /// Server request id (serialised) -> the legacy id of the routed call it was delivered to.
    call_requests: FastHashMap<String, u64>,
    /// The event channel of an ended lease, emptied, for the next one: its route held the only
    /// sender and its receiver came back ([`LaneCore::detach_lease`]). A channel per lease cost
    /// ~0.7k instructions a call (callgrind, bench/proxy-vs-nginx.md).
    spare_events: Option<(EventSender, EventReceiver)>,
    /// Requests of ours cancelled so far ([`LaneCore::note_cancelled`]).
    cancelled: u64,
    /// Cancelled requests (serialised ids) the legacy server has not finished yet: no response
    /// has come for them since (the Python SDK answers a cancelled request with an error; the
    /// TypeScript SDK sends nothing).
    cancels_open: HashSet<String>,
    /// When a request of ours last ended or a lease last went (none yet: the lane's creation).
    /// Only read while nothing is in flight or leased ([`LaneCore::idle_for`]), so the starts
    /// need no stamp.
    last_active: Option<IdleStamp>,
}

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

    /// How many lanes of the process have died so far: a pool looks for dead lanes only when
    /// this moved since its last look.
    pub fn deaths() -> u64 {
        LANE_DEATHS.load(Ordering::SeqCst)
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
        (!busy).then(|| match state.last_active {
            Some(at) => at.elapsed(),
            None => self.created.elapsed(),
        })
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
}
