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
//!
//! Here: the lane's shared state (`HttpShared`, the `Session`), the limits and header names, and
//! the reading of a `401`/`403` ([`unauthorized`], the HTTP+SSE lane's too). The parts, one
//! concern each: `lane.rs` ([`HttpLane`]: opening, sending, shutdown), `session.rs`
//! (`initialize` and re-initialization), `post.rs` (the POSTs and their responses, resumption),
//! `read.rs` (a JSON or SSE body through the router), `get_stream.rs` (the standalone GET
//! stream task).

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http::header::{HeaderName, HeaderValue, ACCEPT, CONTENT_TYPE, HOST};
use http::{StatusCode, Uri};
use serde_json::Value;
use tokio::task::JoinHandle;

use super::call_http::{CallConnections, RequestHead};
use super::http_client::LaneConnections;
use super::lane_core::LaneCore;
use super::{lock, BackendError};
use crate::credentials::CurrentCredentials;

mod get_stream;
mod lane;
mod post;
mod read;
mod session;

pub use lane::HttpLane;

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

/// A lane's legacy session, as its requests name it. The header values are built once per
/// session, not per request (cloning one is a reference count).
#[derive(Debug, Clone)]
struct Session {
    /// The `Mcp-Session-Id` the server gave (one that is not visible ASCII is not kept).
    id: Option<HeaderValue>,
    /// Bumped at every re-initialization.
    epoch: u64,
    /// The `MCP-Protocol-Version` header: the negotiated revision, when that revision defines
    /// the header (2025-06-18 and later); `None` until `initialize` was answered.
    version: Option<HeaderValue>,
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
    /// The start of every POST's head: the request line and the fields that never change
    /// (`Host`, `Accept`, `Content-Type`), as bytes ([`post_start`]).
    post_start: Box<[u8]>,
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

impl HttpShared {
    fn session(&self) -> Session {
        lock(&self.session).clone()
    }

    fn stop_get_stream(&self) {
        if let Some(task) = lock(&self.get_task).take() {
            task.abort();
        }
    }
}

/// The start of a POST's head to `path` on `host`: the request line, `Host`, `Accept` (JSON or
/// an SSE stream, as Streamable HTTP asks) and `Content-Type`.
fn post_start(path: &Uri, host: &HeaderValue) -> Box<[u8]> {
    let target = path.path_and_query().map_or("/", |path| path.as_str());
    let mut head = RequestHead::new(&RequestHead::request_line("POST", target), 0);
    head.field(&HOST, host);
    head.field(
        &ACCEPT,
        &HeaderValue::from_static("application/json, text/event-stream"),
    );
    head.field(&CONTENT_TYPE, &HeaderValue::from_static("application/json"));
    head.into_bytes().into_boxed_slice()
}

/// The `MCP-Protocol-Version` header a session's requests carry for the negotiated `version`:
/// none before 2025-06-18, which defined it.
fn version_header(version: &str) -> Option<HeaderValue> {
    if version < "2025-06-18" {
        return None;
    }
    HeaderValue::from_str(version).ok()
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
