//! The responses the front builds: JSON (a value, a message, a rejection), text, empty, SSE
//! (headers and event framing), the limit answers (408, 413, 503 with `Retry-After`), and the
//! `401`/`403` challenge relayed from the legacy server with its origin rewritten.

use std::convert::Infallible;
use std::time::Duration;

use bytes::Bytes;
use http::{header, HeaderValue, Response, StatusCode};
use http_body_util::{BodyExt, Empty, Full};
use hyper::body::Body;
use serde_json::Value;

use super::ResponseBody;
use crate::credentials::OriginRewrite;
use crate::front::validate::{error_response, Rejection};
use crate::jsonrpc::{codes, ErrorObject, Message};
use crate::limits::{self, RequestGate};

/// The `401`/`403` answer for the legacy server's refusal of the caller's credentials: the
/// JSON-RPC error without its internal `data`, and the legacy server's `WWW-Authenticate`
/// challenge (its origin rewritten to `--public-url`), so that the client can start its
/// authorization flow. `None` for any other answer.
pub(crate) fn challenge_response(
    status: StatusCode,
    message: &Message,
    rewrite: Option<&OriginRewrite>,
) -> Option<Response<ResponseBody>> {
    if status != StatusCode::UNAUTHORIZED && status != StatusCode::FORBIDDEN {
        return None;
    }
    let Message::Response {
        id,
        outcome: Err(error),
    } = message
    else {
        return None;
    };
    let (_, challenge) = crate::credentials::refused(error)?;
    let plain = ErrorObject::new(error.code, error.message.clone());
    let mut response = message_response(status, &Message::response(id.clone(), Err(plain)));
    let challenge = challenge.map(|challenge| match rewrite {
        Some(rewrite) => rewrite.apply(challenge),
        None => challenge.to_owned(),
    });
    if let Some(value) = challenge.and_then(|challenge| HeaderValue::from_str(&challenge).ok()) {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, value);
    }
    Some(response)
}

pub(crate) fn sse_event(message: &Message) -> Bytes {
    Bytes::from(format!("event: message\ndata: {}\n\n", message.to_line()))
}

pub(crate) fn json_response(status: StatusCode, value: &Value) -> Response<ResponseBody> {
    let mut response = Response::new(Full::new(Bytes::from(value.to_string())).boxed_unsync());
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

pub(super) fn metrics_response() -> Response<ResponseBody> {
    let mut response =
        Response::new(Full::new(Bytes::from(crate::metrics::global().render())).boxed_unsync());
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(crate::metrics::CONTENT_TYPE),
    );
    response
}

/// A final response, serialised straight from the message.
pub(crate) fn message_response(status: StatusCode, message: &Message) -> Response<ResponseBody> {
    let mut response = Response::new(Full::new(Bytes::from(message.to_vec())).boxed_unsync());
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

pub(super) fn rejection_response(rejection: &Rejection) -> Response<ResponseBody> {
    let status = StatusCode::from_u16(rejection.http_status).unwrap_or(StatusCode::BAD_REQUEST);
    json_response(status, &rejection.to_value())
}

/// 503 with `Retry-After` and a JSON-RPC error: too many requests in flight.
pub(crate) fn overloaded(id: &Value, gate: &RequestGate) -> Response<ResponseBody> {
    let mut response = json_response(
        StatusCode::SERVICE_UNAVAILABLE,
        &error_response(Some(id), &gate.overload_error()),
    );
    response.headers_mut().insert(
        header::RETRY_AFTER,
        HeaderValue::from(limits::RETRY_AFTER_SECS),
    );
    response
}

/// 408: the client did not send its body within the body read timeout.
pub(super) fn body_timeout(limit: Duration) -> Response<ResponseBody> {
    let mut response = json_response(
        StatusCode::REQUEST_TIMEOUT,
        &error_response(
            None,
            &ErrorObject::new(
                codes::INVALID_REQUEST,
                format!(
                    "the request body did not arrive within {} (--body-read-timeout)",
                    humantime::format_duration(limit)
                ),
            ),
        ),
    );
    response
        .headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

pub(super) fn too_large(limit: usize) -> Response<ResponseBody> {
    let mut response = json_response(
        StatusCode::PAYLOAD_TOO_LARGE,
        &error_response(
            None,
            &ErrorObject::new(
                codes::INVALID_REQUEST,
                format!("request body larger than {limit} bytes"),
            ),
        ),
    );
    // The rest of the body is not read: the connection cannot be reused.
    response
        .headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

pub(super) fn text_response(status: StatusCode, text: &'static str) -> Response<ResponseBody> {
    let mut response = Response::new(Full::new(Bytes::from_static(text.as_bytes())).boxed_unsync());
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

pub(crate) fn empty_response(status: StatusCode) -> Response<ResponseBody> {
    let mut response = Response::new(Empty::new().boxed_unsync());
    *response.status_mut() = status;
    response
}

pub(super) fn method_not_allowed(allow: &'static str) -> Response<ResponseBody> {
    let mut response = empty_response(StatusCode::METHOD_NOT_ALLOWED);
    response
        .headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static(allow));
    response
}

pub(crate) fn sse_response(
    body: impl Body<Data = Bytes, Error = Infallible> + Send + 'static,
) -> Response<ResponseBody> {
    let mut response = Response::new(body.boxed_unsync());
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}
