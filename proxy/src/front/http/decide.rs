//! What the front does with a POST, decided from its headers and body bytes alone: reject,
//! accept (a notification), or dispatch, and whether the response may be an event stream. Pure
//! and synchronous (the fuzz target `front_request` drives it).

use http::{header, HeaderMap};

use crate::credentials::Credentials;
use crate::front::callers::Caller;
use crate::front::read::FrontMessage;
use crate::front::validate::{self, Rejection, Validated};
use crate::jsonrpc::{codes, ErrorObject};
use crate::request::FrontRequest;

/// What the front does with a POST once its body is read.
#[derive(Debug)]
pub enum PostDecision {
    /// Answer with this error as a plain JSON response (its status, no SSE).
    Reject(Rejection),
    /// A notification: `202 Accepted`, nothing else.
    Accepted,
    /// Hand the request to the handler; `sse_allowed` when the client takes
    /// `text/event-stream`.
    Dispatch {
        request: FrontRequest,
        sse_allowed: bool,
    },
}

/// Everything [`serve`](super::serve) decides about a POST from its headers and body bytes alone (after the
/// `Origin` check and the body size limit): parse one JSON-RPC message (no batches), derive the
/// principal from `Authorization`, validate ([`validate::validate`]), and pick the response mode.
/// Pure and synchronous; the fuzz target `front_request` drives it.
pub fn decide_post(headers: &HeaderMap, body: &[u8]) -> PostDecision {
    decide_post_forwarding(headers, body, &[])
}

/// [`decide_post`] with the `--forward-header` names: those headers (and `Authorization`) go
/// with the request as its [`Credentials`] and make its principal.
pub fn decide_post_forwarding(
    headers: &HeaderMap,
    body: &[u8],
    forward: &[http::HeaderName],
) -> PostDecision {
    let (credentials, principal) = Credentials::from_request(headers, forward);
    decide_post_as(
        headers,
        body,
        Caller {
            credentials,
            principal,
            verified: false,
        },
    )
}

/// [`decide_post`] for a caller the front identified already ([`CallerAuth::identify`](crate::front::callers::CallerAuth::identify)).
pub fn decide_post_as(headers: &HeaderMap, body: &[u8], caller: Caller) -> PostDecision {
    let Caller {
        credentials,
        principal,
        ..
    } = caller;
    let message = match FrontMessage::parse(body) {
        Ok(message) => message,
        Err(error) => return PostDecision::Reject(Rejection::unreadable(&error)),
    };
    match validate::validate_front(message, Some(headers), principal) {
        Err(rejection) => PostDecision::Reject(rejection),
        Ok(Validated::Cancelled { .. } | Validated::OtherNotification { .. }) => {
            PostDecision::Accepted
        }
        Ok(Validated::Request(mut request)) => {
            request.credentials = credentials;
            let sse_allowed = accepts_event_stream(headers);
            if request.method == "subscriptions/listen" && !sse_allowed {
                // A listen stream is nothing but notifications.
                return PostDecision::Reject(Rejection::new(
                    Some(request.id),
                    ErrorObject::new(
                        codes::INVALID_REQUEST,
                        "`subscriptions/listen` answers with an event stream: send \
                         `Accept: application/json, text/event-stream`",
                    ),
                    406,
                ));
            }
            PostDecision::Dispatch {
                request,
                sse_allowed,
            }
        }
    }
}

/// Whether the client takes `text/event-stream` (no `Accept` header: yes).
pub fn accepts_event_stream(headers: &HeaderMap) -> bool {
    let mut values = headers.get_all(header::ACCEPT).iter().peekable();
    if values.peek().is_none() {
        return true;
    }
    values.any(|value| {
        value.as_bytes().split(|&byte| byte == b',').any(|item| {
            let media = memchr::memchr(b';', item).map_or(item, |at| &item[..at]);
            // By length first: this runs on every POST (callgrind, bench/proxy-vs-nginx.md).
            let media = media.trim_ascii();
            match media.len() {
                17 => media.eq_ignore_ascii_case(b"text/event-stream"),
                6 => media.eq_ignore_ascii_case(b"text/*"),
                3 => media == b"*/*",
                _ => false,
            }
        })
    })
}
