//! Legacy Streamable HTTP (2025-03-26 … 2025-11-25) on the front's endpoint: the HTTP side of
//! [`crate::legacy_session`].
//!
//! - `POST` `initialize` without `Mcp-Session-Id`: a new session; the response carries the
//!   legacy server's `InitializeResult` and the session's `Mcp-Session-Id`.
//! - `POST` with `Mcp-Session-Id`: a request (its response as JSON, or an SSE stream when server
//!   messages come first and the client takes `text/event-stream`), a notification or a response
//!   to a server request (`202 Accepted`).
//! - `GET` with `Mcp-Session-Id`: the session's standalone SSE stream (one at a time: `409`
//!   while one is open). No event ids: streams are not resumable.
//! - `DELETE` with `Mcp-Session-Id`: ends the session (`200`).
//! - An unknown, ended or expired `Mcp-Session-Id`: `404` with a JSON-RPC error, after which the
//!   client initializes again.
//! - A session whose legacy session carries the credentials that opened it (`Authorization` and
//!   the `--forward-header` headers, see `--forward-credentials`) belongs to them: any request on
//!   it with other credentials gets `403`. The legacy server's refusal of the credentials at `initialize` is
//!   its `401`/`403` with its `WWW-Authenticate` challenge.
//!
//! JSON-RPC errors of the legacy server travel with HTTP 200, as legacy servers send them.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{header, HeaderMap, HeaderValue, Method, Request, Response, StatusCode};
use hyper::body::{Body, Frame, Incoming, SizeHint};
use serde_json::Value;
use tokio::sync::mpsc;

use super::callers::Caller;
use super::http::{
    accepts_event_stream, challenge_response, empty_response, json_response, message_response,
    overloaded, respond_from, sse_event, sse_response, InlineHandler, KeepAlive, ResponseBody,
};
use super::validate::error_response;
use super::SINK_CAPACITY;
use crate::credentials::{Credentials, OriginRewrite};
use crate::jsonrpc::{codes, ErrorObject, Message};
use crate::legacy_session::{EraPolicy, LegacySessions, RelayError, Session, SESSION_HEADER};
use crate::limits::RequestGate;
use crate::request::{Outgoing, Principal};

/// The JSON-RPC error code legacy SDK servers send with a `404` for an unknown session.
const SESSION_NOT_FOUND: i64 = -32001;

fn session_id(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(SESSION_HEADER)
        .and_then(|value| value.to_str().ok())
        .map(str::trim)
}

/// `404`: the session is unknown, ended or expired; the client must initialize again.
fn session_not_found(id: Option<&Value>) -> Response<ResponseBody> {
    json_response(
        StatusCode::NOT_FOUND,
        &error_response(
            id,
            &ErrorObject::new(
                SESSION_NOT_FOUND,
                "Session not found: it ended or expired; initialize a new session",
            ),
        ),
    )
}

fn bad_request(id: Option<&Value>, message: &str) -> Response<ResponseBody> {
    json_response(
        StatusCode::BAD_REQUEST,
        &error_response(id, &ErrorObject::new(codes::INVALID_REQUEST, message)),
    )
}

/// A 2026-07-28 request under `--era-policy legacy-only`.
pub(super) fn refuse_modern(body: &[u8]) -> Response<ResponseBody> {
    crate::metrics::global().rejection("era_policy");
    let id = match Message::parse(body) {
        Ok(Message::Request { id, .. }) => Some(id),
        _ => None,
    };
    json_response(
        StatusCode::BAD_REQUEST,
        &error_response(id.as_ref(), &EraPolicy::modern_refusal()),
    )
}

/// How a legacy request names its caller, and how challenges are relayed.
pub(super) struct Callers<'a> {
    /// Who sends the request ([`super::callers`]).
    pub caller: Caller,
    /// `--public-url` in the legacy server's challenges.
    pub rewrite: Option<&'a OriginRewrite>,
}

/// `403`: the session was opened with other credentials.
fn not_your_session(id: Option<&Value>) -> Response<ResponseBody> {
    crate::metrics::global().rejection("session_owner");
    tracing::warn!("refused a request on a legacy session opened with other credentials");
    json_response(
        StatusCode::FORBIDDEN,
        &error_response(
            id,
            &ErrorObject::new(
                codes::INVALID_REQUEST,
                "Forbidden: this session was opened with other credentials",
            ),
        ),
    )
}

/// A legacy POST (see the module documentation).
pub(super) async fn post(
    legacy: &Arc<LegacySessions>,
    headers: &HeaderMap,
    body: &[u8],
    gate: &RequestGate,
    keep_alive: Option<Duration>,
    callers: Callers<'_>,
) -> Response<ResponseBody> {
    let message = match Message::parse(body) {
        Ok(message) => message,
        Err(error) => {
            crate::metrics::global().rejection("unreadable");
            return json_response(
                StatusCode::BAD_REQUEST,
                &error_response(None, &error.to_error()),
            );
        }
    };
    let Caller {
        credentials,
        principal,
        verified,
    } = callers.caller;
    let Some(session_id) = session_id(headers) else {
        return match message {
            Message::Request { id, method, params } if method == "initialize" => {
                let opener = Opener {
                    principal,
                    credentials: &credentials,
                    verified,
                };
                initialize(legacy, id, params, opener, callers.rewrite).await
            }
            message => bad_request(
                request_id(&message),
                "Bad Request: the `Mcp-Session-Id` header is required (initialize first)",
            ),
        };
    };
    let Some(session) = legacy.get(session_id) else {
        return session_not_found(request_id(&message));
    };
    if !session.admits(&principal) {
        return not_your_session(request_id(&message));
    }
    legacy.refresh_credentials(&principal, &credentials);
    match message.into_tree() {
        Message::Request { id, method, params } => {
            let Some(permit) = gate.try_enter() else {
                crate::metrics::global().rejection("limit_concurrent_requests");
                return overloaded(&id, gate);
            };
            let sse = accepts_event_stream(headers);
            let (tx, rx) = mpsc::channel(SINK_CAPACITY);
            tokio::spawn(relay_request(session, id.clone(), method, params, tx, sse));
            respond_from(
                rx.into(),
                &mut InlineHandler::default(),
                id,
                sse,
                permit,
                keep_alive,
                callers.rewrite,
            )
            .await
        }
        Message::Notification { method, params } => {
            match session.notification(&method, params).await {
                Ok(()) => empty_response(StatusCode::ACCEPTED),
                Err(RelayError::Ended) => session_not_found(None),
            }
        }
        Message::Response { id, outcome } => relay_response(&session, id, outcome).await,
        Message::RawResponse { id, result } => {
            let outcome = result.to_value().map_err(|error| {
                ErrorObject::new(codes::PARSE_ERROR, format!("unreadable result: {error}"))
            });
            relay_response(&session, id, outcome).await
        }
        Message::RawRequest { .. } => unreachable!("`into_tree` leaves no raw request"),
    }
}

fn request_id(message: &Message) -> Option<&Value> {
    match message {
        Message::Request { id, .. } => Some(id),
        _ => None,
    }
}

/// Who opens a legacy session.
struct Opener<'a> {
    principal: Principal,
    credentials: &'a Credentials,
    verified: bool,
}

async fn initialize(
    legacy: &Arc<LegacySessions>,
    id: Value,
    params: Option<Value>,
    opener: Opener<'_>,
    rewrite: Option<&OriginRewrite>,
) -> Response<ResponseBody> {
    let opened = legacy
        .initialize(
            id,
            params,
            opener.principal,
            opener.credentials,
            opener.verified,
        )
        .await;
    match opened {
        Ok((session, response)) => {
            let mut reply = message_response(StatusCode::OK, &response);
            if let Ok(value) = HeaderValue::from_str(&session.id) {
                reply.headers_mut().insert(SESSION_HEADER, value);
            }
            reply
        }
        Err(refused) => {
            let status = StatusCode::from_u16(refused.http_status).unwrap_or(StatusCode::OK);
            let mut reply = challenge_response(status, &refused.response, rewrite)
                .unwrap_or_else(|| message_response(status, &refused.response));
            if status == StatusCode::SERVICE_UNAVAILABLE {
                reply.headers_mut().insert(
                    header::RETRY_AFTER,
                    HeaderValue::from(crate::limits::RETRY_AFTER_SECS),
                );
            }
            reply
        }
    }
}

/// Runs one relayed request and sends its final response (none when the client cancelled it).
async fn relay_request(
    session: Arc<Session>,
    id: Value,
    method: String,
    params: Option<Value>,
    tx: mpsc::Sender<Outgoing>,
    sse: bool,
) {
    let stream = sse.then(|| tx.clone());
    let message = match session.request(id.clone(), &method, params, stream).await {
        Ok(Some(message)) => message,
        Ok(None) => return,
        Err(RelayError::Ended) => Message::response(
            id,
            Err(ErrorObject::new(
                SESSION_NOT_FOUND,
                "Session not found: the session ended during the request",
            )),
        ),
    };
    let _ = tx
        .send(Outgoing::Final {
            message,
            http_status: 200,
        })
        .await;
}

async fn relay_response(
    session: &Session,
    id: Value,
    outcome: Result<Value, ErrorObject>,
) -> Response<ResponseBody> {
    match session.response(id, outcome).await {
        Ok(_) => empty_response(StatusCode::ACCEPTED),
        Err(RelayError::Ended) => session_not_found(None),
    }
}

/// `GET` (the standalone stream) or `DELETE` (end) of a session.
pub(super) async fn session_route(
    legacy: &Arc<LegacySessions>,
    request: Request<Incoming>,
    keep_alive: Option<Duration>,
    callers: Callers<'_>,
) -> Response<ResponseBody> {
    let Some(id) = session_id(request.headers()).map(str::to_owned) else {
        return session_not_found(None);
    };
    let Some(session) = legacy.get(&id) else {
        return session_not_found(None);
    };
    let principal = callers.caller.principal;
    if !session.admits(&principal) {
        return not_your_session(None);
    }
    if request.method() == Method::DELETE {
        return if legacy.delete(&id).await {
            empty_response(StatusCode::OK)
        } else {
            session_not_found(None)
        };
    }
    if !accepts_event_stream(request.headers()) {
        return bad_request(None, "the GET stream needs `Accept: text/event-stream`");
    }
    let (tx, rx) = mpsc::channel(SINK_CAPACITY);
    if !session.attach_standalone(tx) {
        return json_response(
            StatusCode::CONFLICT,
            &error_response(
                None,
                &ErrorObject::new(
                    codes::INVALID_REQUEST,
                    "Conflict: only one GET stream per session is allowed",
                ),
            ),
        );
    }
    sse_response(GetStream {
        rx,
        keep_alive: KeepAlive::new(keep_alive),
    })
}

/// The body of a session's GET stream: every message the session routes to it, until the
/// session ends (the sender is dropped) or the client hangs up (the receiver is dropped).
struct GetStream {
    rx: mpsc::Receiver<Message>,
    keep_alive: KeepAlive,
}

impl Body for GetStream {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = self.get_mut();
        match this.rx.poll_recv(cx) {
            Poll::Ready(Some(message)) => {
                this.keep_alive.reset();
                Poll::Ready(Some(Ok(Frame::data(sse_event(&message)))))
            }
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => this.keep_alive.poll_comment(cx),
        }
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::default()
    }
}
