//! The lane's face to the pool: [`HttpLane`] opened ([`HttpLane::start`]), its calls sent, its
//! responses and notifications POSTed, and its end (the session's `DELETE`); the [`Outbound`]
//! that POSTs the lane core's local answers.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use bytes::Bytes;
use http::header::HOST;
use http::{Method, Request};
use http_body_util::Full;
use serde_json::Value;
use tokio::sync::mpsc;
use tracing::Instrument as _;

use super::{
    HttpShared, Session, CONNECT_TIMEOUT, DELETE_TIMEOUT, IDLE_TIMEOUT, SESSION_HEADER,
    VERSION_HEADER,
};
use crate::backend::call_http::CallConnections;
use crate::backend::http_client::{LaneConnections, Upstream};
use crate::backend::lane_core::{CallTag, LaneCore, Outbound};
use crate::backend::{lock, BackendError, CallDriver, Initialized, PendingCall};
use crate::credentials::CurrentCredentials;
use crate::jsonrpc::{ErrorObject, Message};

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
            post_start: super::post_start(&path, &host),
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
        lock(&self.shared.session)
            .id
            .as_ref()
            .and_then(|id| id.to_str().ok())
            .map(str::to_owned)
    }

    pub(crate) async fn send_request(
        &self,
        method: &str,
        params: crate::params::OutParams,
        progress_token: Option<Value>,
        tag: CallTag,
        driven: bool,
    ) -> Result<(PendingCall, Option<mpsc::Receiver<Value>>), BackendError> {
        let session = self.shared.session();
        let (message, mut call, progress) = self.shared.core.start_tagged_request(
            method,
            params,
            session.epoch,
            progress_token,
            tag,
        )?;
        let shared = Arc::clone(&self.shared);
        let id = call.legacy_id.clone();
        // Not instrumented with the lane's span: entering it on every poll of every call's POST
        // cost ~0.5 µs a call (bench/proxy-vs-nginx.md). The events of the POST's path name the
        // lane's span as their parent instead (`parent: &core.span`), which the log shows the same.
        let post = async move { shared.run_request(id, message, session).await };
        if driven {
            call.driver = CallDriver::new(post);
        } else {
            tokio::spawn(post);
        }
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
                .header(SESSION_HEADER, id.clone());
            if let Some(version) = &session.version {
                request = request.header(VERSION_HEADER, version.clone());
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
