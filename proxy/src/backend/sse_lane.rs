//! Lanes over the HTTP+SSE transport of protocol 2024-11-05 (T23), which servers built on older
//! SDKs still serve (Python `mcp` `FastMCP(...).run(transport="sse")`, TypeScript
//! `SSEServerTransport`): one SSE connection per lane.
//!
//! - The lane `GET`s the SSE endpoint (`--upstream URL`). The first event is `endpoint`: its data
//!   is the URL (usually relative, carrying the session in its query) to POST messages to.
//! - Every message of ours is POSTed there; the server answers `202 Accepted`. POSTs go out one
//!   after the other from one writer task, so messages keep their order.
//! - Everything the server sends (responses to our requests, its own requests, notifications)
//!   arrives as `message` events on the one GET stream. Correlation is by JSON-RPC id only, and
//!   the lane, leased per call like every lane, attributes server requests exactly.
//! - The session is the GET connection: when it ends the lane is dead (pending calls fail with
//!   [`BackendError::Crashed`]) and the pool opens a new one on its next use. There is no
//!   resumption (the transport has none).
//!
//! The transport carries any protocol revision: the lane asks for the newest legacy one, as the
//! other lanes do, and applies whatever the server answers.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::header::{ACCEPT, CONTENT_TYPE, HOST};
use http::{Method, Request, StatusCode, Uri};
use http_body_util::{BodyExt as _, Full};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tracing::Instrument as _;

use super::http_client::{LaneConnections, Upstream};
use super::lane_core::{LaneCore, Outbound};
use super::sse::SseParser;
use super::{AbortOnDrop, BackendError, Initialized, PendingCall};
use crate::credentials::CurrentCredentials;
use crate::jsonrpc::{ErrorObject, Message};

/// How long connecting to the server may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// A kept POST connection idle for longer is closed rather than reused.
const IDLE_TIMEOUT: Duration = Duration::from_secs(30);

struct SseOutbound(mpsc::UnboundedSender<Message>);

impl Outbound for SseOutbound {
    fn send_detached(&self, message: Message) {
        let _ = self.0.send(message);
    }
}

pub struct SseLane {
    core: Arc<LaneCore>,
    initialized: Initialized,
    writer: mpsc::UnboundedSender<Message>,
    /// The POST endpoint the server named (origin form).
    endpoint: Uri,
    /// Dropping them closes the GET stream, which ends the session.
    tasks: std::sync::Mutex<Option<AbortOnDrop>>,
}

impl std::fmt::Debug for SseLane {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SseLane")
            .field("core", &self.core)
            .field("endpoint", &self.endpoint)
            .field("protocol_version", &self.initialized.protocol_version)
            .finish_non_exhaustive()
    }
}

/// Where the messages go: the `endpoint` event's data resolved against the SSE URL. Only the
/// server's own authority is accepted (a server must not point the proxy elsewhere).
fn resolve_endpoint(sse_url: &Uri, data: &str) -> Result<Uri, String> {
    let data = data.trim();
    let origin_form = if data.starts_with('/') {
        data.to_owned()
    } else if data.contains("://") {
        let endpoint: Uri = data
            .parse()
            .map_err(|error| format!("`endpoint` event `{data}` is not a URL: {error}"))?;
        if endpoint.scheme_str() != Some("http") || endpoint.authority() != sse_url.authority() {
            return Err(format!(
                "`endpoint` event names another server (`{data}`); only the SSE server's own \
                 address is used"
            ));
        }
        endpoint
            .path_and_query()
            .map_or_else(|| "/".to_owned(), |path| path.as_str().to_owned())
    } else if data.is_empty() {
        return Err("the `endpoint` event is empty".into());
    } else {
        // Relative to the SSE URL's directory.
        let base = sse_url.path();
        format!("{}{data}", &base[..base.rfind('/').map_or(0, |at| at + 1)])
    };
    origin_form
        .parse()
        .map_err(|error| format!("`endpoint` event `{data}`: {error}"))
}

impl SseLane {
    /// Opens the SSE stream, waits for its `endpoint` event, then initializes the session.
    pub(crate) async fn start(
        core: Arc<LaneCore>,
        url: &str,
        client_info: &Value,
        credentials: &CurrentCredentials,
        init_timeout: Duration,
    ) -> Result<Self, BackendError> {
        let started = Self::open(
            Arc::clone(&core),
            url,
            client_info,
            credentials,
            init_timeout,
        )
        .await;
        if started.is_err() {
            core.mark_dead();
        }
        started
    }

    async fn open(
        core: Arc<LaneCore>,
        url: &str,
        client_info: &Value,
        credentials: &CurrentCredentials,
        init_timeout: Duration,
    ) -> Result<Self, BackendError> {
        let unavailable = |why: String| BackendError::Unavailable(why);
        let Upstream { uri, host, path } = Upstream::parse(url)?;
        let client = Arc::new(LaneConnections::new(
            uri.clone(),
            CONNECT_TIMEOUT,
            IDLE_TIMEOUT,
            core.span.clone(),
        ));

        let get = credentials
            .apply(Request::builder())
            .method(Method::GET)
            .uri(path)
            .header(HOST, host.clone())
            .header(ACCEPT, "text/event-stream")
            .body(Full::new(Bytes::new()))
            .map_err(|error| BackendError::Protocol(format!("cannot build the GET: {error}")))?;
        let response = tokio::time::timeout(init_timeout, client.request(get))
            .await
            .map_err(|_| unavailable(format!("{url} did not answer within {init_timeout:?}")))?
            .map_err(|error| unavailable(format!("cannot reach {url}: {error}")))?;
        if let Some(refused) = super::http::unauthorized(&response) {
            return Err(refused);
        }
        let content_type = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .unwrap_or_default()
            .to_ascii_lowercase();
        if response.status() != StatusCode::OK || !content_type.starts_with("text/event-stream") {
            return Err(unavailable(format!(
                "{url} is not an HTTP+SSE endpoint (GET answered {} `{content_type}`)",
                response.status()
            )));
        }

        // The GET stream: the endpoint first, then every message of the server.
        let (endpoint_tx, endpoint_rx) = oneshot::channel::<String>();
        let reader_core = Arc::clone(&core);
        let reader = tokio::spawn(
            async move {
                let mut endpoint_tx = Some(endpoint_tx);
                let mut parser = SseParser::new();
                let mut body = response.into_body();
                loop {
                    match body.frame().await {
                        None => {
                            tracing::info!("the legacy server closed the SSE stream");
                            break;
                        }
                        Some(Err(error)) => {
                            tracing::info!(%error, "the SSE stream broke");
                            break;
                        }
                        Some(Ok(frame)) => {
                            let Some(data) = frame.data_ref() else {
                                continue;
                            };
                            for event in parser.feed(data) {
                                match event.event.as_str() {
                                    "endpoint" => match endpoint_tx.take() {
                                        Some(tx) => {
                                            let _ = tx.send(event.data);
                                        }
                                        None => tracing::debug!("a second `endpoint` event ignored"),
                                    },
                                    "message" => {
                                        reader_core.handle_bytes(event.data.as_bytes(), "SSE event");
                                    }
                                    other => tracing::debug!(event = %other, "SSE event of another type ignored"),
                                }
                            }
                        }
                    }
                }
                reader_core.mark_dead();
            }
            .instrument(core.span.clone()),
        );
        let mut tasks = AbortOnDrop(vec![reader]);

        let endpoint = tokio::time::timeout(init_timeout, endpoint_rx)
            .await
            .map_err(|_| unavailable(format!("{url} sent no `endpoint` event")))?
            .map_err(|_| unavailable(format!("{url} closed the SSE stream before `endpoint`")))?;
        let endpoint = resolve_endpoint(&uri, &endpoint).map_err(unavailable)?;
        core.span
            .in_scope(|| tracing::debug!(%endpoint, "legacy SSE session opened"));

        // The writer: POSTs one message after the other.
        let (writer, mut messages) = mpsc::unbounded_channel::<Message>();
        core.set_outbound(Box::new(SseOutbound(writer.clone())));
        let writer_core = Arc::clone(&core);
        let post_target = endpoint.clone();
        let post_credentials = credentials.clone();
        tasks.0.push(tokio::spawn(
            async move {
                while let Some(message) = messages.recv().await {
                    // A request of ours the server refuses will get no answer on the stream.
                    let ours = match &message {
                        Message::Request { id, .. } => Some(id.clone()),
                        _ => None,
                    };
                    let request = post_credentials
                        .apply(Request::builder())
                        .method(Method::POST)
                        .uri(post_target.clone())
                        .header(HOST, host.clone())
                        .header(CONTENT_TYPE, "application/json")
                        .body(Full::new(Bytes::from(message.to_vec())));
                    let Ok(request) = request else {
                        continue;
                    };
                    match client.request(request).await {
                        Ok(response) if response.status().is_success() => {
                            // `202 Accepted` (the body, if any, is not the reply: that comes
                            // on the SSE stream).
                            let _ = response.into_body().collect().await;
                        }
                        Ok(response) => {
                            let status = response.status();
                            tracing::warn!(%status, "the legacy server refused a message");
                            if status == StatusCode::NOT_FOUND {
                                // The session is gone (the server forgot it).
                                writer_core.mark_dead();
                                break;
                            }
                            if let Some(id) = ours {
                                writer_core.complete(
                                    &id,
                                    Err(BackendError::Protocol(format!(
                                        "the legacy server refused the request: HTTP {status}"
                                    ))),
                                );
                            }
                        }
                        Err(error) => {
                            tracing::info!(%error, "posting to the legacy server failed");
                            writer_core.mark_dead();
                            break;
                        }
                    }
                }
            }
            .instrument(core.span.clone()),
        ));

        let initialized = super::handshake(&core, client_info, init_timeout, |message| {
            writer
                .send(message)
                .map_err(|_| unavailable("the SSE lane's writer stopped".into()))
        })
        .await?;
        core.span.in_scope(|| {
            tracing::info!(
                protocol_version = %initialized.protocol_version,
                "legacy HTTP+SSE session initialized"
            )
        });
        Ok(SseLane {
            core,
            initialized,
            writer,
            endpoint,
            tasks: std::sync::Mutex::new(Some(tasks)),
        })
    }

    pub(crate) fn core(&self) -> &Arc<LaneCore> {
        &self.core
    }

    pub fn initialized(&self) -> &Initialized {
        &self.initialized
    }

    fn write(&self, message: Message) -> Result<(), BackendError> {
        if !self.core.is_alive() {
            return Err(BackendError::Crashed);
        }
        self.writer.send(message).map_err(|_| BackendError::Crashed)
    }

    pub(crate) async fn send_request(
        &self,
        method: &str,
        params: crate::params::OutParams,
        progress_token: Option<Value>,
    ) -> Result<(PendingCall, Option<mpsc::Receiver<Value>>), BackendError> {
        self.core
            .send_request_with(method, params, progress_token, |message| {
                self.write(message)
            })
    }

    pub async fn respond(
        &self,
        id: Value,
        outcome: Result<Value, ErrorObject>,
    ) -> Result<(), BackendError> {
        self.core.responded(&id);
        self.write(Message::response(id, outcome))
    }

    pub async fn notify(&self, method: &str, params: Value) -> Result<(), BackendError> {
        self.write(Message::notification(method, params))
    }

    pub fn is_alive(&self) -> bool {
        self.core.is_alive()
    }

    /// Closes the SSE stream (the transport's only way to end a session).
    pub async fn shutdown(&self) {
        let tasks = self
            .tasks
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
            .take();
        drop(tasks);
        self.core.mark_dead();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_resolve_against_the_sse_url_and_stay_on_its_server() {
        let sse: Uri = "http://127.0.0.1:8000/sse".parse().unwrap();
        let resolve = |data: &str| resolve_endpoint(&sse, data).map(|uri| uri.to_string());
        assert_eq!(
            resolve("/messages/?session_id=abc").unwrap(),
            "/messages/?session_id=abc"
        );
        assert_eq!(
            resolve("http://127.0.0.1:8000/messages?sessionId=1").unwrap(),
            "/messages?sessionId=1"
        );
        assert_eq!(resolve(" messages?x=1\n").unwrap(), "/messages?x=1");
        let nested: Uri = "http://127.0.0.1:8000/mcp/sse".parse().unwrap();
        assert_eq!(
            resolve_endpoint(&nested, "messages?x=1")
                .unwrap()
                .to_string(),
            "/mcp/messages?x=1"
        );
        assert!(resolve("http://evil.example.com/messages").is_err());
        assert!(resolve("http://127.0.0.1:9999/messages").is_err());
        assert!(resolve("").is_err());
    }
}
