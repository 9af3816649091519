//! One legacy client session relayed to its own lane, in both directions.
//!
//! Client → server: requests are forwarded with fresh legacy ids (the lane's) and their
//! responses relayed back under the client's id; notifications as they are
//! (`notifications/cancelled` with the request id translated; `notifications/initialized` is
//! swallowed: the lane sent its own); responses to the server's requests go back to the lane
//! under the server's own id.
//!
//! Server → client: the server's requests (elicitation, sampling, roots) and notifications keep
//! their ids and params. Where they go (a message is sent on exactly one stream, never
//! broadcast):
//! 1. progress whose `progressToken` is that of a request in flight: that request's stream;
//! 2. a server request or notification while exactly one client request with a stream of its
//!    own is in flight: that stream (legacy stdio and rmcp's HTTP server say nothing about which
//!    request a message belongs to; the one running is the one that caused it);
//! 3. the standalone stream (HTTP: the session's GET stream; stdio: stdout);
//! 4. the newest client request stream in flight;
//! 5. a bounded queue, flushed into the next stream that opens. A server request that cannot
//!    even be queued is answered with an error at once, so the server never waits forever.
//!
//! A stream that closed (its response went out, the client hung up) is skipped, and the message
//! goes to the next target.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::Value;
use tokio::sync::{broadcast, mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::route::{flush_queue_into_request, send, targets};
use crate::backend::{BackendError, BackendEvent, EventReceiver, Lane, SessionLane};
use crate::jsonrpc::{codes, ErrorObject, Message, Reply};
use crate::request::{Outgoing, Principal};
use mcp_migrate_rules::RuleId;

/// Messages kept for a client that has no stream open yet.
const QUEUE_LIMIT: usize = 1024;

/// Who the client said it is in `initialize` (`clientInfo`), for logs and warnings.
#[derive(Debug, Clone)]
pub struct ClientLabel {
    pub name: String,
    pub version: String,
}

impl ClientLabel {
    pub fn from_initialize(params: &Value) -> Self {
        let info = params.get("clientInfo");
        let text = |key: &str| {
            info.and_then(|info| info.get(key))
                .and_then(Value::as_str)
                .unwrap_or("unknown")
                .chars()
                .take(128)
                .collect()
        };
        ClientLabel {
            name: text("name"),
            version: text("version"),
        }
    }
}

pub(super) struct InFlight {
    pub(super) legacy_id: Option<Value>,
    pub(super) progress_token: Option<String>,
    /// The request's own stream (HTTP, SSE accepted), for server messages.
    pub(super) stream: Option<mpsc::Sender<Outgoing>>,
    /// Start order (the newest stream is a fallback target).
    pub(super) order: u64,
    pub(super) cancelled: bool,
}

#[derive(Default)]
pub(super) struct SessionState {
    pub(super) in_flight: HashMap<String, InFlight>,
    pub(super) next_order: u64,
    pub(super) standalone: Option<mpsc::Sender<Message>>,
    pub(super) queue: VecDeque<Message>,
    /// The server's requests the client has not answered yet (by id).
    pub(super) server_requests: HashSet<String>,
    pub(super) warned: HashSet<RuleId>,
    pub(super) last_active: Option<Instant>,
}

/// One legacy client session.
pub struct Session {
    pub id: String,
    /// Who opened the session (the digest of its credentials) when its lane carries them: then
    /// only that caller may use it. `None`: no credentials were sent on.
    pub owner: Option<Principal>,
    pub client: ClientLabel,
    /// The version the legacy server answered `initialize` with.
    pub protocol_version: String,
    lane: Arc<Lane>,
    state: Mutex<SessionState>,
    /// Cancelled when the session ends (DELETE, expiry, the lane died, shutdown).
    ended: CancellationToken,
    /// Asks the pump to deliver every event already received before it answers (see
    /// [`Session::flush_events`]).
    barriers: mpsc::UnboundedSender<oneshot::Sender<()>>,
    /// Lane events the pump delivered (compared with [`Lane::lease_events_sent`]).
    taken: AtomicU64,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("id", &self.id)
            .field("client", &self.client)
            .field("lane", &self.lane.id())
            .finish_non_exhaustive()
    }
}

/// Why a client message could not be relayed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RelayError {
    /// The session ended (HTTP: 404, the client re-initializes).
    Ended,
}

fn key(id: &Value) -> String {
    id.to_string()
}

impl Session {
    /// Whether `principal` may use the session (its owner, or anyone when it has none).
    pub fn admits(&self, principal: &Principal) -> bool {
        self.owner.as_ref().is_none_or(|owner| owner == principal)
    }

    /// Wraps a started session lane and starts relaying what the server sends.
    pub fn start(
        id: String,
        client: ClientLabel,
        protocol_version: String,
        lane: SessionLane,
        owner: Option<Principal>,
    ) -> Arc<Session> {
        let SessionLane {
            lane,
            events,
            changes,
        } = lane;
        let (barriers, barrier_rx) = mpsc::unbounded_channel();
        let session = Arc::new(Session {
            id,
            owner,
            client,
            protocol_version,
            lane,
            state: Mutex::new(SessionState {
                last_active: Some(Instant::now()),
                ..SessionState::default()
            }),
            ended: CancellationToken::new(),
            barriers,
            taken: AtomicU64::new(0),
        });
        tokio::spawn(Arc::clone(&session).pump(events, changes, barrier_rx));
        session
    }

    fn state(&self) -> std::sync::MutexGuard<'_, SessionState> {
        self.state
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }

    pub fn lane(&self) -> &Arc<Lane> {
        &self.lane
    }

    pub fn is_ended(&self) -> bool {
        self.ended.is_cancelled()
    }

    /// Resolves when the session ended.
    pub async fn ended(&self) {
        self.ended.cancelled().await;
    }

    /// Since when nothing happened (`None`: a client request is in flight).
    pub fn idle_since(&self) -> Option<Instant> {
        let state = self.state();
        if state.in_flight.is_empty() {
            state.last_active
        } else {
            None
        }
    }

    fn touch(&self) {
        self.state().last_active = Some(Instant::now());
    }

    /// Ends the session: streams close, the lane is shut down (HTTP: DELETE; stdio: the child
    /// exits). Idempotent.
    pub async fn end(&self, why: &str) {
        if self.ended.is_cancelled() {
            return;
        }
        self.ended.cancel();
        tracing::info!(session = %self.id, client = %self.client.name, why, "legacy session ended");
        {
            let mut state = self.state();
            state.standalone = None;
            state.queue.clear();
            for flight in state.in_flight.values_mut() {
                flight.stream = None;
            }
        }
        self.lane.shutdown().await;
    }

    /// Logs a deprecation warning once per session and rule, naming the client.
    pub fn warn_once(&self, rule: RuleId, what: &str) {
        if !self.state().warned.insert(rule) {
            return;
        }
        let rule = rule.rule();
        crate::metrics::global().deprecation_warning(rule.name);
        tracing::warn!(
            rule = rule.name,
            code = rule.code,
            client = %self.client.name,
            client_version = %self.client.version,
            session = %self.id,
            "legacy client {} {}: {what}: {} (see `cargo mcp-lint --explain {}`)",
            self.client.name,
            self.client.version,
            rule.summary,
            rule.name
        );
    }

    /// Opens the standalone stream (HTTP GET; stdio: stdout) and flushes what was queued.
    /// `false` when one is open already (nothing changes).
    pub fn attach_standalone(&self, tx: mpsc::Sender<Message>) -> bool {
        let mut state = self.state();
        if state
            .standalone
            .as_ref()
            .is_some_and(|open| !open.is_closed())
        {
            return false;
        }
        while let Some(message) = state.queue.pop_front() {
            if let Err(error) = tx.try_send(message) {
                state.queue.push_front(error.into_inner());
                break;
            }
        }
        state.standalone = Some(tx);
        true
    }

    /// Closes the standalone stream (shutdown: an open GET stream would hold its connection
    /// until the shutdown grace ends). The session lives on.
    pub fn close_standalone(&self) {
        self.state().standalone = None;
    }

    /// Relays one client request; returns its final response (with the client's id), or
    /// `None` when the client cancelled it. `stream`: the request's own response stream, for
    /// server messages that belong to it (HTTP with SSE accepted).
    pub async fn request(
        self: &Arc<Self>,
        id: Value,
        method: &str,
        params: Option<Value>,
        stream: Option<mpsc::Sender<Outgoing>>,
    ) -> Result<Option<Message>, RelayError> {
        if self.is_ended() {
            return Err(RelayError::Ended);
        }
        crate::metrics::global().era_request(super::Era::Legacy.label());
        match method {
            "initialize" => {
                return Ok(Some(Message::response(
                    id,
                    Err(ErrorObject::new(
                        codes::INVALID_REQUEST,
                        "this session is initialized already; start a new one without \
                         `Mcp-Session-Id` to initialize again",
                    )),
                )))
            }
            "logging/setLevel" => {
                self.warn_once(RuleId::DeprecatedLogging, "sets a log level");
            }
            "resources/subscribe" | "resources/unsubscribe" => {
                self.warn_once(
                    RuleId::LegacyResourceSubscription,
                    "subscribes to a resource",
                );
            }
            _ => {}
        }
        let request_key = key(&id);
        let progress_token = params
            .as_ref()
            .and_then(|params| params.get("_meta"))
            .and_then(|meta| meta.get("progressToken"))
            .map(key);
        {
            let mut state = self.state();
            if state.in_flight.contains_key(&request_key) {
                return Ok(Some(Message::response(
                    id,
                    Err(ErrorObject::new(
                        codes::INVALID_REQUEST,
                        "a request with this id is already in flight",
                    )),
                )));
            }
            state.next_order += 1;
            let order = state.next_order;
            state.in_flight.insert(
                request_key.clone(),
                InFlight {
                    legacy_id: None,
                    progress_token,
                    stream: stream.clone(),
                    order,
                    cancelled: false,
                },
            );
            if let Some(stream) = &stream {
                flush_queue_into_request(&mut state, stream);
            }
        }
        let _done = InFlightGuard {
            session: self,
            key: request_key.clone(),
        };
        let call = match self
            .lane
            .request(method, params.unwrap_or(Value::Null))
            .await
        {
            Ok(call) => call,
            Err(error) => return Ok(Some(self.failure(id, &error))),
        };
        if let Some(flight) = self.state().in_flight.get_mut(&request_key) {
            flight.legacy_id = Some(call.legacy_id.clone());
        }
        let outcome = tokio::select! {
            outcome = call.response => outcome,
            () = self.ended.cancelled() => return Err(RelayError::Ended),
        };
        // What the server sent before its response (progress, logs) goes out before it.
        self.flush_events().await;
        let cancelled = self
            .state()
            .in_flight
            .get(&request_key)
            .is_some_and(|flight| flight.cancelled);
        if cancelled {
            return Ok(None);
        }
        Ok(Some(match outcome {
            Ok(Ok(Ok(Reply::Raw(result)))) => Message::RawResponse { id, result },
            Ok(Ok(Ok(Reply::Tree(result)))) => Message::response(id, Ok(result)),
            Ok(Ok(Err(error))) => Message::response(id, Err(error)),
            Ok(Err(error)) => self.failure(id, &error),
            Err(_) => self.failure(id, &BackendError::Crashed),
        }))
    }

    fn failure(&self, id: Value, error: &BackendError) -> Message {
        tracing::warn!(session = %self.id, %error, "a relayed request failed on the legacy side");
        Message::response(
            id,
            Err(ErrorObject::new(codes::INTERNAL_ERROR, error.to_string())),
        )
    }

    /// Relays a client notification.
    pub async fn notification(
        &self,
        method: &str,
        params: Option<Value>,
    ) -> Result<(), RelayError> {
        if self.is_ended() {
            return Err(RelayError::Ended);
        }
        self.touch();
        match method {
            // The lane sent its own when it initialized.
            "notifications/initialized" => Ok(()),
            "notifications/cancelled" => {
                let request_id = params.as_ref().and_then(|params| params.get("requestId"));
                let reason = params
                    .as_ref()
                    .and_then(|params| params.get("reason"))
                    .and_then(Value::as_str)
                    .unwrap_or("cancelled by the client")
                    .to_owned();
                let legacy_id = request_id.and_then(|request_id| {
                    let mut state = self.state();
                    let flight = state.in_flight.get_mut(&key(request_id))?;
                    flight.cancelled = true;
                    flight.legacy_id.clone()
                });
                match legacy_id {
                    Some(legacy_id) => {
                        let _ = self.lane.cancel(&legacy_id, &reason).await;
                    }
                    None => tracing::debug!(
                        session = %self.id,
                        "a cancellation for no request in flight ignored"
                    ),
                }
                Ok(())
            }
            _ => {
                if method == "notifications/roots/list_changed" {
                    self.warn_once(RuleId::DeprecatedRoots, "announces a roots change");
                }
                let _ = self
                    .lane
                    .notify(method, params.unwrap_or(Value::Null))
                    .await;
                Ok(())
            }
        }
    }

    /// Relays the client's answer to one of the server's requests. `Ok(false)`: no such request
    /// is waiting (dropped).
    pub async fn response(
        &self,
        id: Value,
        outcome: Result<Value, ErrorObject>,
    ) -> Result<bool, RelayError> {
        if self.is_ended() {
            return Err(RelayError::Ended);
        }
        self.touch();
        if !self.state().server_requests.remove(&key(&id)) {
            tracing::warn!(session = %self.id, id = %id, "a response to no server request of this session dropped");
            return Ok(false);
        }
        if let Err(error) = self.lane.respond(id, outcome).await {
            tracing::warn!(session = %self.id, %error, "relaying a response to the legacy server failed");
        }
        Ok(true)
    }

    /// Returns once the pump delivered every server message the lane received so far. A response
    /// reaches its call straight from the lane while the messages sent before it go through the
    /// pump: without this, a final response could overtake the call's last progress.
    async fn flush_events(&self) {
        if self.taken.load(Ordering::SeqCst) == self.lane.lease_events_sent() {
            // Everything the lane handed over was delivered already (counted after delivery):
            // nothing can be overtaken, no need to wake the pump.
            return;
        }
        let (done, flushed) = oneshot::channel();
        if self.barriers.send(done).is_ok() {
            let _ = flushed.await;
        }
    }

    /// Delivers one lane event, then counts it (after: see [`Session::flush_events`]).
    fn take(&self, event: BackendEvent) {
        let message = self.relayed(event);
        self.deliver(message);
        self.taken.fetch_add(1, Ordering::SeqCst);
    }

    /// The client message for a lane event.
    fn relayed(&self, event: BackendEvent) -> Message {
        match event {
            BackendEvent::ServerRequest { id, method, params } => {
                self.note_server_request(&method);
                self.state().server_requests.insert(key(&id));
                Message::Request {
                    id,
                    method,
                    params: Some(params),
                }
            }
            BackendEvent::Notification { method, params } => {
                if method == "notifications/message" {
                    self.warn_once(RuleId::DeprecatedLogging, "receives log messages");
                }
                Message::notification(&method, params)
            }
        }
    }

    /// What the server sends, to the client, until the lane dies or the session ends.
    async fn pump(
        self: Arc<Self>,
        mut events: EventReceiver,
        mut changes: broadcast::Receiver<crate::backend::ChangeNotice>,
        mut barriers: mpsc::UnboundedReceiver<oneshot::Sender<()>>,
    ) {
        loop {
            tokio::select! {
                () = self.ended.cancelled() => return,
                Some(done) = barriers.recv() => {
                    while let Ok(event) = events.try_recv() {
                        self.take(event);
                    }
                    let _ = done.send(());
                }
                event = events.recv() => match event {
                    Some(event) => self.take(event),
                    None => break,
                },
                notice = changes.recv() => match notice {
                    Ok(notice) => self.deliver(Message::notification(&notice.method, notice.params)),
                    Err(broadcast::error::RecvError::Lagged(missed)) => {
                        tracing::warn!(session = %self.id, missed, "change notifications dropped (slow client)");
                    }
                    Err(broadcast::error::RecvError::Closed) => break,
                },
            }
        }
        if !self.is_ended() {
            self.end("the legacy server closed the session").await;
        }
    }

    fn note_server_request(&self, method: &str) {
        match method {
            "sampling/createMessage" => {
                self.warn_once(RuleId::DeprecatedSampling, "is asked to sample")
            }
            "roots/list" => self.warn_once(RuleId::DeprecatedRoots, "is asked for its roots"),
            _ => {}
        }
    }

    /// Sends one server message to the client (see the module documentation for where).
    fn deliver(&self, message: Message) {
        let mut state = self.state();
        let progress = match &message {
            Message::Notification { method, params } if method == "notifications/progress" => {
                params
                    .as_ref()
                    .and_then(|params| params.get("progressToken"))
                    .map(key)
            }
            _ => None,
        };
        let change = matches!(&message, Message::Notification { method, .. }
            if crate::backend::CHANGE_NOTIFICATIONS.contains(&method.as_str()));
        let mut message = message;
        for target in targets(&state, progress.as_deref(), change) {
            match send(target, message) {
                Ok(()) => return,
                Err(back) => message = back,
            }
        }
        if state.queue.len() < QUEUE_LIMIT {
            state.queue.push_back(message);
            return;
        }
        drop(state);
        tracing::warn!(session = %self.id, "the client has no open stream and its queue is full");
        if let Message::Request { id, .. } = message {
            self.state().server_requests.remove(&key(&id));
            let lane = Arc::clone(&self.lane);
            tokio::spawn(async move {
                let error = ErrorObject::new(
                    codes::INTERNAL_ERROR,
                    "the client has no open stream to receive the request",
                );
                let _ = lane.respond(id, Err(error)).await;
            });
        }
    }
}

/// Removes a request from the in-flight table when it ends (also when its future is dropped).
struct InFlightGuard<'a> {
    session: &'a Session,
    key: String,
}

impl Drop for InFlightGuard<'_> {
    fn drop(&mut self) {
        let mut state = self.session.state();
        state.in_flight.remove(&self.key);
        state.last_active = Some(Instant::now());
    }
}
