//! Lanes over legacy Streamable HTTP: one `Mcp-Session-Id` session per lane.
//!
//! - `initialize` is POSTed without a session; the `Mcp-Session-Id` of its response is sent on
//!   every later message, with `MCP-Protocol-Version` (2025-06-18 and later).
//! - Each of our requests is its own POST. The response is `application/json` (one message or a
//!   batch) or `text/event-stream` (server requests, notifications, then our response). Every
//!   message of either kind goes through the lane's router (`LaneCore::handle`). If an SSE
//!   response ends before our response arrived and the stream had event ids, the lane resumes it
//!   with `GET` + `Last-Event-ID`: after the server's `retry` delay when the server closed the
//!   stream (SEP-1699 polling, T18), at once when the connection broke. A server that cannot be
//!   reached any more fails the call with `Crashed` and kills the lane.
//! - The standalone `GET` stream is opened right after `initialize` and kept open (reconnecting
//!   with `Last-Event-ID`; `405` means the server offers none); the session is ready once the
//!   server answered it (at most 2 s), since a server may drop what it sends while no GET stream
//!   is open (the TypeScript SDK 1.x does). rmcp 2.x sends every server request and log
//!   notification there.
//! - Our responses and notifications are POSTed too; the server answers `202`.
//! - POSTs go out on the lean client of `call_http` (a paused call's response stream stays
//!   open there for as long as the call is parked, so it must cost little); the GET streams and
//!   the `DELETE` on hyper's (`http_client`).
//! - `404` means the session expired: the lane re-initializes (a new session, same profile) and
//!   every call in flight on the old session fails with [`BackendError::Crashed`].
//! - `shutdown` DELETEs the session.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use bytes::Bytes;
use http::header::{HeaderName, HeaderValue, ACCEPT, CONTENT_TYPE, HOST};
use http::{Method, Request, StatusCode, Uri};
use http_body_util::{BodyExt as _, Full};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tracing::Instrument as _;

use super::call_http::CallConnections;
use super::http_client::{LaneConnections, Upstream};
use super::lane_core::{CallTag, LaneCore, Outbound};
use super::sse::SseParser;
use super::{lock, BackendError, Initialized, PendingCall};
use crate::credentials::CurrentCredentials;
use crate::jsonrpc::{ErrorObject, Message};

/// TCP connection establishment; a legacy server that is down fails fast.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// A kept connection idle longer than this is closed, not reused (as hyper-util's pool did).
const IDLE_TIMEOUT: Duration = Duration::from_secs(30);
/// How long `shutdown` waits for the `DELETE`.
const DELETE_TIMEOUT: Duration = Duration::from_secs(2);
/// Reconnection delay when the server gave no `retry`.
const DEFAULT_RETRY: Duration = Duration::from_millis(500);
/// The longest reconnection delay (the server's `retry` and our backoff are capped to it).
const MAX_RETRY: Duration = Duration::from_secs(10);
/// Resumption attempts in a row that bring nothing before a call's stream is given up.
const MAX_IDLE_RESUMES: u32 = 3;
/// How long a new session waits for the server to answer its standalone GET.
const GET_STREAM_WAIT: Duration = Duration::from_secs(2);
/// Largest `application/json` body read.
const MAX_JSON_BODY: usize = 64 * 1024 * 1024;

// Parsed once, not on every request (a name outside http's standard set allocates when parsed).
const SESSION_HEADER: HeaderName = HeaderName::from_static("mcp-session-id");
const VERSION_HEADER: HeaderName = HeaderName::from_static("mcp-protocol-version");
const LAST_EVENT_ID: HeaderName = HeaderName::from_static("last-event-id");

/// How an SSE response ended, for resuming it.
#[derive(Debug, Clone)]
struct StreamEnd {
    last_event_id: String,
    retry: Duration,
    /// The body ended normally (the server closed the stream) rather than breaking.
    clean: bool,
}

#[derive(Debug, Clone)]
struct Session {
    id: Option<String>,
    /// Bumped at every re-initialization.
    epoch: u64,
    /// The negotiated protocol version (decides the `MCP-Protocol-Version` header); `None`
    /// until `initialize` was answered.
    version: Option<String>,
}

struct HttpShared {
    core: Arc<LaneCore>,
    /// The GET streams and the DELETE (hyper).
    client: LaneConnections,
    /// The POSTs: our requests (a paused call's response stream stays open on one of these for
    /// as long as the call is parked), responses and notifications (call_http.rs).
    posts: CallConnections,
    /// The request target: the upstream URL's path and query (origin form).
    path: Uri,
    /// The `Host` header: the upstream URL's authority.
    host: HeaderValue,
    /// The upstream for messages and logs, without any userinfo.
    target: String,
    session: Mutex<Session>,
    /// Serialises re-initializations.
    reinit: tokio::sync::Mutex<()>,
    client_info: Value,
    /// The caller's headers, its newest, sent with every request of the lane
    /// ([`CurrentCredentials`]).
    credentials: CurrentCredentials,
    init_timeout: Duration,
    shut: AtomicBool,
    get_task: Mutex<Option<JoinHandle<()>>>,
}

struct HttpOutbound(Weak<HttpShared>);

impl Outbound for HttpOutbound {
    fn send_detached(&self, message: Message) {
        // A lease dropped outside the runtime (at exit) has nowhere to send from.
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        if let Some(shared) = self.0.upgrade() {
            let span = shared.core.span.clone();
            runtime.spawn(
                async move {
                    if let Err(error) = shared.post_message(&message).await {
                        tracing::warn!(%error, "sending a local answer to the legacy server failed");
                    }
                }
                .instrument(span),
            );
        }
    }
}

pub struct HttpLane {
    shared: Arc<HttpShared>,
    initialized: Initialized,
}

impl std::fmt::Debug for HttpLane {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpLane")
            .field("core", &self.shared.core)
            .field("target", &self.shared.target)
            .field("protocol_version", &self.initialized.protocol_version)
            .finish_non_exhaustive()
    }
}

impl Drop for HttpLane {
    fn drop(&mut self) {
        // `shut` also keeps a re-initialization still in flight from starting a new GET stream.
        self.shared.shut.store(true, Ordering::SeqCst);
        self.shared.stop_get_stream();
    }
}

/// Whether a revision defines the `MCP-Protocol-Version` header.
fn version_header(session: &Session) -> Option<&str> {
    session
        .version
        .as_deref()
        .filter(|version| *version >= "2025-06-18")
}

/// `401`/`403`: the legacy server refused the credentials; its `WWW-Authenticate` challenge
/// goes to the client.
pub(super) fn unauthorized<B>(response: &http::Response<B>) -> Option<BackendError> {
    let status = response.status();
    if status != StatusCode::UNAUTHORIZED && status != StatusCode::FORBIDDEN {
        return None;
    }
    let challenge = response
        .headers()
        .get_all(http::header::WWW_AUTHENTICATE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .collect::<Vec<_>>()
        .join(", ");
    Some(BackendError::Unauthorized {
        status: status.as_u16(),
        challenge: (!challenge.is_empty()).then_some(challenge),
    })
}

fn is_event_stream(content_type: &str) -> bool {
    content_type
        .trim_start()
        .to_ascii_lowercase()
        .starts_with("text/event-stream")
}

impl HttpLane {
    /// Bumped each time the lane re-initializes (a new legacy session, which remembers nothing
    /// of the old one: subscriptions, log level).
    pub(crate) fn session_epoch(&self) -> u64 {
        self.shared.session().epoch
    }

    /// Opens a session: `initialize`, `notifications/initialized`, then the GET stream.
    pub(crate) async fn start(
        core: Arc<LaneCore>,
        url: &str,
        client_info: &Value,
        credentials: &CurrentCredentials,
        init_timeout: Duration,
    ) -> Result<Self, BackendError> {
        let Upstream { uri, host, path } = Upstream::parse(url)?;
        let client = LaneConnections::new(
            uri.clone(),
            CONNECT_TIMEOUT,
            IDLE_TIMEOUT,
            core.span.clone(),
        );
        let posts = CallConnections::new(&uri, CONNECT_TIMEOUT, IDLE_TIMEOUT);
        let shared = Arc::new(HttpShared {
            core: Arc::clone(&core),
            client,
            posts,
            target: format!(
                "http://{}{}",
                uri.host().unwrap_or_default(),
                uri.port()
                    .map(|port| format!(":{port}"))
                    .unwrap_or_default()
            ) + uri.path(),
            path,
            host,
            session: Mutex::new(Session {
                id: None,
                epoch: 0,
                version: None,
            }),
            reinit: tokio::sync::Mutex::new(()),
            client_info: client_info.clone(),
            credentials: credentials.clone(),
            init_timeout,
            shut: AtomicBool::new(false),
            get_task: Mutex::new(None),
        });
        core.set_outbound(Box::new(HttpOutbound(Arc::downgrade(&shared))));
        let initialized = match shared.open_session(0).await {
            Ok(initialized) => initialized,
            Err(error) => {
                core.mark_dead();
                return Err(error);
            }
        };
        core.span.in_scope(|| {
            tracing::info!(
                protocol_version = %initialized.protocol_version,
                "legacy HTTP session initialized"
            )
        });
        Ok(HttpLane {
            shared,
            initialized,
        })
    }

    pub(crate) fn core(&self) -> &Arc<LaneCore> {
        &self.shared.core
    }

    pub fn initialized(&self) -> &Initialized {
        &self.initialized
    }

    /// The current `Mcp-Session-Id` (changes when the lane re-initializes after a 404).
    pub fn session_id(&self) -> Option<String> {
        lock(&self.shared.session).id.clone()
    }

    pub(crate) async fn send_request(
        &self,
        method: &str,
        params: Value,
        progress_token: Option<Value>,
        tag: CallTag,
    ) -> Result<(PendingCall, Option<mpsc::Receiver<Value>>), BackendError> {
        let session = self.shared.session();
        let (message, call, progress) = self.shared.core.start_tagged_request(
            method,
            params,
            session.epoch,
            progress_token,
            tag,
        )?;
        let shared = Arc::clone(&self.shared);
        let id = call.legacy_id.clone();
        tokio::spawn(
            async move { shared.run_request(id, message, session).await }
                .instrument(self.shared.core.span.clone()),
        );
        Ok((call, progress))
    }

    pub async fn respond(
        &self,
        id: Value,
        outcome: Result<Value, ErrorObject>,
    ) -> Result<(), BackendError> {
        if !self.is_alive() {
            return Err(BackendError::Crashed);
        }
        self.shared.core.responded(&id);
        self.shared
            .post_message(&Message::response(id, outcome))
            .await
    }

    pub async fn notify(&self, method: &str, params: Value) -> Result<(), BackendError> {
        if !self.is_alive() {
            return Err(BackendError::Crashed);
        }
        self.shared
            .post_message(&Message::notification(method, params))
            .await
    }

    pub fn is_alive(&self) -> bool {
        self.shared.core.is_alive()
    }

    /// Stops the GET stream and DELETEs the session (a 405 is fine).
    pub async fn shutdown(&self) {
        self.shared.shut.store(true, Ordering::SeqCst);
        self.shared.stop_get_stream();
        let session = self.shared.session();
        if let Some(id) = &session.id {
            let mut request = self
                .shared
                .credentials
                .apply(Request::builder())
                .method(Method::DELETE)
                .uri(self.shared.path.clone())
                .header(HOST, self.shared.host.clone())
                .header(SESSION_HEADER, id.as_str());
            if let Some(version) = version_header(&session) {
                request = request.header(VERSION_HEADER, version);
            }
            if let Ok(request) = request.body(Full::new(Bytes::new())) {
                match tokio::time::timeout(DELETE_TIMEOUT, self.shared.client.request(request))
                    .await
                {
                    Ok(Ok(response)) => self.shared.core.span.in_scope(
                        || tracing::debug!(status = %response.status(), "session deleted"),
                    ),
                    Ok(Err(error)) => self
                        .shared
                        .core
                        .span
                        .in_scope(|| tracing::debug!(%error, "DELETE of the session failed")),
                    Err(_) => self
                        .shared
                        .core
                        .span
                        .in_scope(|| tracing::debug!("DELETE of the session timed out")),
                }
            }
        }
        self.shared.core.mark_dead();
    }
}

impl HttpShared {
    fn session(&self) -> Session {
        lock(&self.session).clone()
    }

    fn stop_get_stream(&self) {
        if let Some(task) = lock(&self.get_task).take() {
            task.abort();
        }
    }

    /// The POST of `body` (every call's request goes through here). Its head is filled in place
    /// rather than through `Request::builder()`, whose every step moves the request's parts and
    /// parses each header from a string: callgrind, bench/proxy-vs-nginx.md.
    fn post(&self, body: Bytes, session: &Session) -> Result<Request<Bytes>, BackendError> {
        let mut request = Request::new(body);
        *request.method_mut() = Method::POST;
        *request.uri_mut() = self.path.clone();
        let headers = request.headers_mut();
        self.credentials.append_to(headers);
        headers.append(HOST, self.host.clone());
        headers.append(
            ACCEPT,
            HeaderValue::from_static("application/json, text/event-stream"),
        );
        headers.append(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        let bad = |error: http::header::InvalidHeaderValue| {
            BackendError::Protocol(format!("cannot build the request: {error}"))
        };
        if let Some(id) = &session.id {
            headers.append(SESSION_HEADER, HeaderValue::from_str(id).map_err(bad)?);
        }
        if let Some(version) = version_header(session) {
            headers.append(VERSION_HEADER, HeaderValue::from_str(version).map_err(bad)?);
        }
        Ok(request)
    }

    fn get(&self, session: &Session, last_event_id: Option<&str>) -> Option<Request<Full<Bytes>>> {
        let mut request = self
            .credentials
            .apply(Request::builder())
            .method(Method::GET)
            .uri(self.path.clone())
            .header(HOST, self.host.clone())
            .header(ACCEPT, "text/event-stream");
        if let Some(id) = &session.id {
            request = request.header(SESSION_HEADER, id.as_str());
        }
        if let Some(version) = version_header(session) {
            request = request.header(VERSION_HEADER, version);
        }
        if let Some(last) = last_event_id {
            request = request.header(LAST_EVENT_ID, last);
        }
        request.body(Full::new(Bytes::new())).ok()
    }

    /// `initialize` + `notifications/initialized` on a new session, then the GET stream.
    ///
    /// Boxed with an explicit `Send` bound: the GET stream task it spawns can call it again
    /// (through `session_expired`), and that cycle hides `Send` from the compiler otherwise.
    fn open_session(
        self: &Arc<Self>,
        epoch: u64,
    ) -> Pin<Box<dyn Future<Output = Result<Initialized, BackendError>> + Send + '_>> {
        Box::pin(self.open_session_inner(epoch))
    }

    async fn open_session_inner(self: &Arc<Self>, epoch: u64) -> Result<Initialized, BackendError> {
        let params = self.core.initialize_params(&self.client_info);
        let (message, call, _) = self.core.start_request("initialize", params, epoch, None)?;
        let fresh = Session {
            id: None,
            epoch,
            version: None,
        };
        let request = self.post(Bytes::from(message.to_vec()), &fresh)?;
        let exchange = async {
            let response = self.posts.request(request).await.map_err(|error| {
                BackendError::Unavailable(format!("cannot reach {}: {error}", self.target))
            })?;
            let status = response.status();
            if matches!(
                status,
                StatusCode::BAD_REQUEST | StatusCode::NOT_FOUND | StatusCode::METHOD_NOT_ALLOWED
            ) {
                return Err(BackendError::NotStreamableHttp(format!(
                    "initialize was answered with HTTP {status}"
                )));
            }
            if let Some(refused) = unauthorized(&response) {
                return Err(refused);
            }
            if !status.is_success() {
                return Err(BackendError::Unavailable(format!(
                    "initialize was answered with HTTP {status}"
                )));
            }
            let session_id = response
                .headers()
                .get(SESSION_HEADER)
                .and_then(|value| value.to_str().ok())
                .map(str::to_owned);
            // Read the body in the background: the response may follow server messages.
            let shared = Arc::clone(self);
            let id = call.legacy_id.clone();
            let reader = tokio::spawn(
                async move { shared.read_response(response, Some(&id)).await }
                    .instrument(self.core.span.clone()),
            );
            let result = super::await_initialize(call, self.init_timeout).await;
            reader.abort();
            Ok((session_id, result?))
        };
        let (session_id, result) = tokio::time::timeout(self.init_timeout, exchange)
            .await
            .map_err(|_| {
                BackendError::Unavailable(format!(
                    "no answer to initialize within {:?}",
                    self.init_timeout
                ))
            })??;
        let initialized = super::check_initialize(result)?;
        let session = Session {
            id: session_id,
            epoch,
            version: Some(initialized.protocol_version.clone()),
        };
        *lock(&self.session) = session.clone();
        let notification = Message::Notification {
            method: "notifications/initialized".into(),
            params: None,
        };
        tokio::time::timeout(self.init_timeout, self.post_message(&notification))
            .await
            .map_err(|_| {
                BackendError::Unavailable("notifications/initialized was not accepted".into())
            })??;
        self.stop_get_stream();
        if self.shut.load(Ordering::SeqCst) {
            return Ok(initialized);
        }
        let shared = Arc::clone(self);
        let (open_tx, open) = tokio::sync::oneshot::channel();
        let task = tokio::spawn(
            async move { shared.run_get_stream(Some(open_tx)).await }
                .instrument(self.core.span.clone()),
        );
        *lock(&self.get_task) = Some(task);
        // A server that sends requests on the GET stream drops them while no stream is open
        // (the TypeScript SDK does): the lane serves calls once the server answered the GET.
        let _ = tokio::time::timeout(GET_STREAM_WAIT.min(self.init_timeout), open).await;
        Ok(initialized)
    }

    /// The session expired (404): start a new one, unless another task already did.
    async fn session_expired(self: &Arc<Self>, epoch: u64) {
        let _serial = self.reinit.lock().await;
        let current = self.session().epoch;
        if current != epoch || self.shut.load(Ordering::SeqCst) || !self.core.is_alive() {
            return;
        }
        if self.core.is_session_lane() {
            // A legacy client's own session: it re-initializes itself once told (404).
            tracing::info!("the legacy session expired (404): ending the client's session");
            self.core.mark_dead();
            return;
        }
        tracing::warn!("the legacy session expired (404): re-initializing the lane");
        self.core.fail_pending_up_to(epoch, BackendError::Crashed);
        match self.open_session(epoch + 1).await {
            Ok(initialized) => tracing::info!(
                protocol_version = %initialized.protocol_version,
                "legacy HTTP session re-initialized"
            ),
            Err(error) => {
                tracing::warn!(%error, "re-initializing the legacy session failed");
                self.core.mark_dead();
            }
        }
    }

    /// POSTs one of our requests and reads its response, resuming a dropped SSE stream.
    async fn run_request(self: Arc<Self>, id: Value, message: Message, session: Session) {
        // Kept serialized (for a resend after a 404) while the response streams: a paused
        // call's task then holds its request as bytes, not as a JSON tree.
        let body = Bytes::from(message.to_vec());
        drop(message);
        self.run_request_on(id, body, session, true).await;
    }

    /// [`Self::run_request`] on `session`; `resend_after_404`: a 404 (the session expired before
    /// the server read the request, so nothing ran) sends it once more on the new session.
    async fn run_request_on(
        self: Arc<Self>,
        id: Value,
        body: Bytes,
        session: Session,
        resend_after_404: bool,
    ) {
        let request = match self.post(body.clone(), &session) {
            Ok(request) => request,
            Err(error) => {
                self.core.complete(&id, Err(error));
                return;
            }
        };
        let response = match self.posts.request(request).await {
            Ok(response) => response,
            Err(error) => {
                tracing::warn!(%error, "POST to the legacy server failed");
                if error.is_connect() {
                    self.core.complete(
                        &id,
                        Err(BackendError::Unavailable(format!(
                            "cannot reach {}: {error}",
                            self.target
                        ))),
                    );
                    self.core.mark_dead();
                } else {
                    self.core.complete(&id, Err(BackendError::Crashed));
                }
                return;
            }
        };
        let status = response.status();
        if status == StatusCode::NOT_FOUND && session.id.is_some() {
            if resend_after_404 && !self.core.is_session_lane() {
                // Not failed with the old session's calls: it never reached a handler.
                self.core.set_pending_epoch(&id, session.epoch + 1);
                self.session_expired(session.epoch).await;
                let renewed = self.session();
                if renewed.epoch > session.epoch
                    && self.core.is_alive()
                    && self.core.is_pending(&id)
                {
                    tracing::debug!(id = %id, "sending the request again on the new legacy session");
                    return Box::pin(self.run_request_on(id, body, renewed, false)).await;
                }
            }
            self.core.complete(&id, Err(BackendError::Crashed));
            self.session_expired(session.epoch).await;
            return;
        }
        if status == StatusCode::ACCEPTED {
            // The response will come on another stream (the GET stream).
            return;
        }
        if let Some(refused) = unauthorized(&response) {
            // The credentials this lane was opened with are refused now (expired, revoked):
            // the caller hears it, and the lane is of no more use to anyone.
            tracing::info!(%status, "the legacy server refused the lane's credentials");
            self.core.complete(&id, Err(refused));
            self.core.mark_dead();
            return;
        }
        let success = status.is_success();
        let mut resume = self.read_response(response, Some(&id)).await;
        if success && resume.is_some() && self.core.is_pending(&id) {
            // Boxed: resuming is rare, and its state would otherwise be part of every call's
            // task, a paused call's included.
            match Box::pin(self.resume_stream(&id, resume)).await {
                Some(end) => resume = end,
                None => return,
            }
        }
        if self.core.is_pending(&id) {
            let error = match (success, resume) {
                (true, Some(end)) if !end.clean => BackendError::Crashed,
                (true, _) => {
                    BackendError::Protocol("the response stream ended without the response".into())
                }
                (false, _) => {
                    BackendError::Protocol(format!("the legacy server answered HTTP {status}"))
                }
            };
            self.core.complete(&id, Err(error));
        }
    }

    /// Resumes a call's SSE response stream that ended before the response (`GET` with
    /// `Last-Event-ID`), until the response came or the stream cannot be resumed. `None`: the
    /// call was failed here; otherwise how the last stream ended.
    async fn resume_stream(
        self: &Arc<Self>,
        id: &Value,
        mut resume: Option<StreamEnd>,
    ) -> Option<Option<StreamEnd>> {
        let mut idle = 0;
        while self.core.is_pending(id) && self.core.is_alive() && idle < MAX_IDLE_RESUMES {
            let Some(end) = resume.take() else {
                break;
            };
            // The server closed the stream on purpose (SEP-1699 polling): wait as it asked.
            // A broken connection is retried at once, so a dead server is noticed quickly.
            if end.clean {
                tokio::time::sleep(end.retry.min(MAX_RETRY)).await;
            }
            tracing::debug!(last_event_id = %end.last_event_id, "resuming the response stream");
            let session = self.session();
            let Some(request) = self.get(&session, Some(&end.last_event_id)) else {
                break;
            };
            match self.client.request(request).await {
                Ok(response) if response.status().is_success() => {
                    // Read only while the call waits: a server that ignores `Last-Event-ID` would
                    // otherwise hold us on a fresh stream forever.
                    let read = self.read_response(response, Some(id));
                    let done = async {
                        while self.core.is_pending(id) {
                            tokio::time::sleep(Duration::from_millis(100)).await;
                        }
                    };
                    let outcome = tokio::select! {
                        outcome = read => outcome,
                        () = done => None,
                    };
                    match outcome {
                        Some(next) => {
                            idle = if next.last_event_id == end.last_event_id {
                                idle + 1
                            } else {
                                0
                            };
                            resume = Some(next);
                        }
                        None => {
                            idle += 1;
                            resume = Some(StreamEnd { clean: true, ..end });
                        }
                    }
                }
                Ok(response) if response.status() == StatusCode::NOT_FOUND => {
                    self.core.complete(id, Err(BackendError::Crashed));
                    self.session_expired(session.epoch).await;
                    return None;
                }
                Ok(response) => {
                    tracing::debug!(status = %response.status(), "resumption refused");
                    break;
                }
                Err(error) if error.is_connect() => {
                    tracing::warn!(%error, "the legacy server went away during a call");
                    self.core.complete(id, Err(BackendError::Crashed));
                    self.core.mark_dead();
                    return None;
                }
                Err(error) => {
                    // Typically a pooled connection the dying server had already closed: try
                    // again at once on a new one (a dead server then refuses the connection).
                    tracing::debug!(%error, "resumption failed");
                    idle += 1;
                    resume = Some(StreamEnd {
                        clean: false,
                        ..end
                    });
                }
            }
        }
        Some(resume)
    }

    /// Reads a response body (JSON or SSE) through the router. For an SSE stream with event ids,
    /// returns what a resumption needs.
    /// `call`: the response belongs to that request of ours (what its stream carries is the
    /// call's); `None` for the answer to a POSTed response or notification.
    async fn read_response<B>(
        &self,
        response: http::Response<B>,
        call: Option<&Value>,
    ) -> Option<StreamEnd>
    where
        B: hyper::body::Body<Data = Bytes>,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>> + std::fmt::Display,
    {
        let content_type = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        if is_event_stream(&content_type) {
            let mut parser = SseParser::new();
            let clean = self.read_sse(response.into_body(), &mut parser, call).await;
            let retry = parser
                .retry_ms()
                .map(Duration::from_millis)
                .unwrap_or(DEFAULT_RETRY);
            return parser
                .last_event_id()
                .filter(|last| !last.is_empty())
                .map(|last| StreamEnd {
                    last_event_id: last.to_owned(),
                    retry,
                    clean,
                });
        }
        let body = match http_body_util::Limited::new(response.into_body(), MAX_JSON_BODY)
            .collect()
            .await
        {
            Ok(body) => body.to_bytes(),
            Err(error) => {
                tracing::warn!(%error, "reading a response body failed");
                return None;
            }
        };
        if body.iter().all(u8::is_ascii_whitespace) {
            return None;
        }
        self.process_bytes(&body, call);
        if call.is_some_and(|id| self.core.is_pending(id)) && !content_type.contains("json") {
            tracing::debug!(%content_type, "unexpected response content type");
        }
        None
    }

    /// Reads SSE events until the body ends, routing each `message` event. Returns whether the
    /// stream ended cleanly (rather than with a broken connection).
    async fn read_sse<B>(&self, body: B, parser: &mut SseParser, call: Option<&Value>) -> bool
    where
        B: hyper::body::Body<Data = Bytes>,
        B::Error: std::fmt::Display,
    {
        let mut body = std::pin::pin!(body);
        let clean = loop {
            match body.frame().await {
                None => break true,
                Some(Err(error)) => {
                    tracing::debug!(%error, "SSE stream broke");
                    break false;
                }
                Some(Ok(frame)) => {
                    if let Some(data) = frame.data_ref() {
                        for event in parser.feed(data) {
                            if event.event == "message" {
                                self.process_bytes(event.data.as_bytes(), call);
                            } else {
                                tracing::debug!(event = %event.event, "SSE event of another type ignored");
                            }
                        }
                    }
                }
            }
        };
        parser.finish();
        clean
    }

    fn process_bytes(&self, bytes: &[u8], call: Option<&Value>) {
        self.core.handle_bytes_from(bytes, "http response", call);
    }

    /// POSTs a response or notification; the server should answer 202.
    async fn post_message(self: &Arc<Self>, message: &Message) -> Result<(), BackendError> {
        let session = self.session();
        let request = self.post(Bytes::from(message.to_vec()), &session)?;
        let response = self.posts.request(request).await.map_err(|error| {
            if error.is_connect() {
                BackendError::Unavailable(format!("cannot reach {}: {error}", self.target))
            } else {
                BackendError::Crashed
            }
        })?;
        let status = response.status();
        if status == StatusCode::NOT_FOUND && session.id.is_some() {
            let shared = Arc::clone(self);
            let epoch = session.epoch;
            tokio::spawn(
                async move { shared.session_expired(epoch).await }
                    .instrument(self.core.span.clone()),
            );
            return Err(BackendError::Crashed);
        }
        if let Some(refused) = unauthorized(&response) {
            self.core.mark_dead();
            return Err(refused);
        }
        if !status.is_success() {
            return Err(BackendError::Protocol(format!(
                "the legacy server answered HTTP {status}"
            )));
        }
        if status != StatusCode::ACCEPTED {
            // Unusual, but whatever came back is routed like any other message.
            let _ = self.read_response(response, None).await;
        }
        Ok(())
    }

    /// The standalone GET stream: kept open, reconnected with `Last-Event-ID`.
    /// `open` is told once the server answered the first GET (whatever it answered).
    async fn run_get_stream(self: Arc<Self>, mut open: Option<tokio::sync::oneshot::Sender<()>>) {
        let mut last_event_id: Option<String> = None;
        let mut epoch = self.session().epoch;
        let mut backoff = DEFAULT_RETRY;
        loop {
            if self.shut.load(Ordering::SeqCst) || !self.core.is_alive() {
                return;
            }
            let session = self.session();
            if session.epoch != epoch {
                epoch = session.epoch;
                last_event_id = None;
            }
            let Some(request) = self.get(&session, last_event_id.as_deref()) else {
                return;
            };
            let answered = self.client.request(request).await;
            if let Some(open) = open.take() {
                let _ = open.send(());
            }
            match answered {
                Ok(response) if response.status() == StatusCode::OK => {
                    backoff = DEFAULT_RETRY;
                    tracing::debug!("standalone GET stream open");
                    let mut parser = SseParser::new();
                    let clean = self.read_sse(response.into_body(), &mut parser, None).await;
                    if let Some(last) = parser.last_event_id().filter(|last| !last.is_empty()) {
                        last_event_id = Some(last.to_owned());
                    }
                    // A clean end is the server's choice: wait as long as it asked. A broken
                    // connection is retried sooner (and backs off if it keeps failing).
                    let delay = if clean {
                        parser
                            .retry_ms()
                            .map(Duration::from_millis)
                            .unwrap_or(DEFAULT_RETRY)
                    } else {
                        backoff
                    };
                    tracing::debug!(?delay, clean, "standalone GET stream ended: reconnecting");
                    tokio::time::sleep(delay.min(MAX_RETRY)).await;
                }
                Ok(response) if response.status() == StatusCode::METHOD_NOT_ALLOWED => {
                    tracing::info!("the legacy server offers no standalone GET stream (405)");
                    return;
                }
                Ok(response) if response.status() == StatusCode::NOT_FOUND => {
                    self.session_expired(session.epoch).await;
                    // A new session restarts this task; stop unless nothing changed.
                    if self.session().epoch != session.epoch {
                        return;
                    }
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(MAX_RETRY);
                }
                Ok(response) => {
                    tracing::debug!(status = %response.status(), "standalone GET refused");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(MAX_RETRY);
                }
                Err(error) => {
                    tracing::debug!(%error, "standalone GET failed");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(MAX_RETRY);
                }
            }
        }
    }
}
