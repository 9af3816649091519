//! The front's request parsing and validation, on both fronts.
//!
//! Input formats (so that seeds are readable requests):
//! - `stdio\n` + a stream: what a client writes to the stdio front (lines of JSON-RPC);
//! - otherwise an HTTP POST: header lines (`Name: value`) up to the first blank line (`\n\n`),
//!   then the body. Without a blank line the whole input is the body (no headers).
//!
//! Beyond "no panic", every input checks:
//! - the stdio line reader splits exactly like `split('\n')`, whatever its buffer size, and
//!   refuses exactly the lines over the limit;
//! - an unreadable body is a 400 `-32700`/`-32600` without an id;
//! - every message that parses re-serialises (one line) and re-parses to the same message;
//! - a rejected request echoes its id, with a known code and the status the code implies;
//! - an accepted request is a 2026-07-28 method with `_meta` protocol version `2026-07-28`, a
//!   client-capabilities object, the name/uri its method needs, and (HTTP) the mirrored headers
//!   equal to the body;
//! - HTTP validation is stdio validation plus header checks: HTTP accepts ⇒ stdio accepts the same
//!   request; a rejection that is not about headers is the same on both fronts.

#![no_main]

use http::{HeaderMap, HeaderName, HeaderValue};
use libfuzzer_sys::fuzz_target;
use mcp_mrtr_proxy::capabilities::CapabilityProfile;
use mcp_mrtr_proxy::front::read::FrontMessage;
use mcp_mrtr_proxy::front::validate::{
    header_names, meta_keys, validate, Rejection, Validated, CLIENT_REQUEST_METHODS,
    PROTOCOL_VERSION,
};
use mcp_mrtr_proxy::fuzzing::{
    accepts_event_stream, check_round_trip, decide_post, origin_allowed, stdio_lines,
    stdio_parse_line, PostDecision, StdioLine,
};
use mcp_mrtr_proxy::jsonrpc::{codes, Message};
use mcp_mrtr_proxy::param_headers::decode_header_value;
use mcp_mrtr_proxy::params::Params;
use mcp_mrtr_proxy::request::{FrontRequest, Principal};
use serde_json::Value;

/// The stdio front's real line limit (`front::stdio::MAX_LINE_BYTES`).
const MAX_LINE: usize = mcp_mrtr_proxy::front::stdio::MAX_LINE_BYTES;

fuzz_target!(|data: &[u8]| {
    match data.strip_prefix(b"stdio\n") {
        Some(stream) => stdio(stream),
        None => http_post(data),
    }
});

fn stdio(stream: &[u8]) {
    // The reader against `split('\n')`, with a small buffer and a small limit...
    let capacity = stream.len() % 13 + 1;
    let small = 40;
    assert_eq!(
        stdio_lines(stream, capacity, small),
        reference_lines(stream, small)
    );
    // ... and with the real limit, then each line through the front.
    let lines = stdio_lines(stream, capacity, MAX_LINE);
    assert_eq!(lines, reference_lines(stream, MAX_LINE));
    for line in lines {
        let StdioLine::Complete(line) = line else {
            continue;
        };
        let text = line.strip_suffix(b"\r").unwrap_or(&line);
        match stdio_parse_line(&line) {
            None => assert!(text.iter().all(u8::is_ascii_whitespace)),
            Some(parsed) => {
                assert_eq!(parsed, Message::parse(text));
                // Both fronts read a request with its params raw: the same message or error.
                assert_eq!(
                    FrontMessage::parse(text).map(FrontMessage::into_message),
                    parsed
                );
                if let Ok(message) = parsed {
                    check_round_trip(&message);
                    let outcome = validate(&message, None, Principal::anonymous());
                    check_outcome(&message, &outcome, None);
                }
            }
        }
    }
}

/// What the reader must return: the `\n`-separated pieces (a final empty piece is no line),
/// those over `max` bytes refused.
fn reference_lines(stream: &[u8], max: usize) -> Vec<StdioLine> {
    let mut pieces: Vec<&[u8]> = stream.split(|&byte| byte == b'\n').collect();
    if pieces.last().is_some_and(|last| last.is_empty()) {
        pieces.pop();
    }
    pieces
        .into_iter()
        .map(|piece| {
            if piece.len() > max {
                StdioLine::TooLong
            } else {
                StdioLine::Complete(piece.to_vec())
            }
        })
        .collect()
}

fn http_post(data: &[u8]) {
    let (head, body) = match data.windows(2).position(|pair| pair == b"\n\n") {
        Some(at) => (&data[..at], &data[at + 2..]),
        None => (&[][..], data),
    };
    let mut headers = HeaderMap::new();
    for line in head.split(|&byte| byte == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let Some(colon) = line.iter().position(|&byte| byte == b':') else {
            continue;
        };
        // As hyper hands them over: a valid name, the value without surrounding whitespace.
        let value = line[colon + 1..].trim_ascii();
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(line[..colon].trim_ascii()),
            HeaderValue::from_bytes(value),
        ) {
            headers.append(name, value);
        }
    }

    for origin in headers.get_all(http::header::ORIGIN) {
        if let Ok(origin) = origin.to_str() {
            let origin = origin.trim();
            let _ = origin_allowed(origin, &[]);
            assert!(origin_allowed(origin, &["*".to_owned()]));
            assert!(origin_allowed(origin, &[origin.to_ascii_uppercase()]));
        }
    }

    let decision = decide_post(&headers, body);
    let message = match Message::parse(body) {
        Err(error) => {
            let PostDecision::Reject(rejection) = decision else {
                panic!("an unreadable body was accepted: {decision:?}");
            };
            assert_eq!(rejection, Rejection::unreadable(&error));
            assert_eq!(rejection.http_status, 400);
            assert!(matches!(
                rejection.error.code,
                codes::PARSE_ERROR | codes::INVALID_REQUEST
            ));
            assert!(rejection.to_value().get("id").is_none());
            return;
        }
        Ok(message) => message,
    };
    check_round_trip(&message);
    let stdio_outcome = validate(&message, None, Principal::anonymous());
    check_outcome(&message, &stdio_outcome, None);
    match decision {
        // The one refusal that depends on `Accept`: a listen stream is an event stream.
        PostDecision::Reject(rejection) if rejection.http_status == 406 => {
            let Message::Request { id, method, .. } = &message else {
                panic!("406 for a non-request: {rejection:?}");
            };
            assert_eq!(method, "subscriptions/listen", "{rejection:?}");
            assert_eq!(rejection.id.as_ref(), Some(id));
            assert_eq!(rejection.error.code, codes::INVALID_REQUEST);
            assert!(!accepts_event_stream(&headers));
            // Otherwise valid: stdio (which has no `Accept`) takes it.
            assert!(
                matches!(&stdio_outcome, Ok(Validated::Request(request)) if request.method == *method),
                "{stdio_outcome:?}"
            );
        }
        PostDecision::Reject(rejection) => {
            check_rejection(&message, &rejection, true);
            // Not about headers: the stdio front says the same.
            if rejection.error.code != codes::HEADER_MISMATCH {
                match &stdio_outcome {
                    Err(stdio) => assert_eq!(stdio, &rejection),
                    Ok(accepted) => panic!(
                        "HTTP refused {rejection:?} without a header problem, stdio accepted {accepted:?}"
                    ),
                }
            }
        }
        PostDecision::Accepted => {
            assert!(matches!(message, Message::Notification { .. }));
            assert!(matches!(
                stdio_outcome,
                Ok(Validated::Cancelled { .. } | Validated::OtherNotification { .. })
            ));
        }
        PostDecision::Dispatch { request, .. } => {
            check_accepted(
                &message,
                &Validated::Request(request.clone()),
                Some(&headers),
            );
            if headers.get(http::header::AUTHORIZATION).is_none() {
                assert_eq!(request.principal, Principal::anonymous());
            }
            // `tools/call` carries exactly the `Mcp-Param-*` headers, for the engine's check.
            match &request.param_headers {
                Some(mirrored) => {
                    assert_eq!(request.method, "tools/call");
                    let expected: Vec<_> = headers
                        .iter()
                        .filter(|(name, _)| name.as_str().starts_with("mcp-param-"))
                        .collect();
                    assert_eq!(mirrored.iter().collect::<Vec<_>>(), expected);
                }
                None => assert_ne!(request.method, "tools/call"),
            }
            let Ok(Validated::Request(stdio)) = &stdio_outcome else {
                panic!("HTTP accepted a request stdio refuses: {stdio_outcome:?}");
            };
            assert!(matches!(
                stdio,
                FrontRequest {
                    param_headers: None,
                    ..
                }
            ));
            assert_eq!(same_request(stdio), same_request(&request));
        }
    }
}

/// A request without its principal, credentials and mirrored headers (which differ between the
/// fronts: only HTTP carries headers), its params as a tree (one front may keep them as the
/// client's text, the other as the `Value` this target validated).
fn same_request(request: &FrontRequest) -> String {
    format!(
        "{:?}",
        FrontRequest {
            principal: Principal::anonymous(),
            credentials: Default::default(),
            param_headers: None,
            params: Params::from(request.params.tree().clone()),
            ..request.clone()
        }
    )
}

fn check_outcome(
    message: &Message,
    outcome: &Result<Validated, Rejection>,
    headers: Option<&HeaderMap>,
) {
    match outcome {
        Err(rejection) => check_rejection(message, rejection, headers.is_some()),
        Ok(validated) => check_accepted(message, validated, headers),
    }
}

fn check_rejection(message: &Message, rejection: &Rejection, http: bool) {
    let expected_id = match message {
        Message::Request { id, .. } => Some(id.clone()),
        _ => None,
    };
    assert_eq!(rejection.id, expected_id);
    let code = rejection.error.code;
    let expected_status = match code {
        codes::METHOD_NOT_FOUND => 404,
        codes::INVALID_REQUEST
        | codes::INVALID_PARAMS
        | codes::HEADER_MISMATCH
        | codes::UNSUPPORTED_PROTOCOL_VERSION => 400,
        other => panic!("unexpected rejection code {other}: {rejection:?}"),
    };
    assert_eq!(rejection.http_status, expected_status, "{rejection:?}");
    if !http {
        assert_ne!(code, codes::HEADER_MISMATCH);
    }
    let response = rejection.to_value();
    assert_eq!(response["jsonrpc"], "2.0");
    assert_eq!(response["error"]["code"], code);
    // 2026-07-28's RequestId is a string or an integer, never null.
    if let Some(id) = response.get("id") {
        assert!(id.is_string() || id.is_i64() || id.is_u64(), "{id}");
    }
}

fn check_accepted(message: &Message, validated: &Validated, headers: Option<&HeaderMap>) {
    match validated {
        Validated::Request(request) => {
            let Message::Request { id, method, params } = message else {
                panic!("a non-request was accepted as a request: {message:?}");
            };
            assert_eq!(&request.id, id);
            assert_eq!(&request.method, method);
            assert!(CLIENT_REQUEST_METHODS.contains(&method.as_str()));
            assert_eq!(Some(request.params.tree()), params.as_ref());
            let meta = &request.params.tree()["_meta"];
            assert_eq!(meta[meta_keys::PROTOCOL_VERSION], PROTOCOL_VERSION);
            assert!(request.client_capabilities_value().is_object());
            assert_eq!(
                request.client_capabilities_value(),
                &meta[meta_keys::CLIENT_CAPABILITIES]
            );
            assert_eq!(
                request.client_capabilities.profile(),
                &CapabilityProfile::from_client_capabilities(&meta[meta_keys::CLIENT_CAPABILITIES])
            );
            let name_key = match method.as_str() {
                "tools/call" | "prompts/get" => Some("name"),
                "resources/read" => Some("uri"),
                _ => None,
            };
            let name = name_key.map(|key| {
                request.params.tree()[key]
                    .as_str()
                    .unwrap_or_else(|| panic!("accepted without a string `{key}`"))
            });
            if let Some(headers) = headers {
                let single = |header: &str| {
                    let mut values = headers.get_all(header).iter();
                    let value = values.next().expect("a required header is missing");
                    assert!(values.next().is_none(), "a header is repeated");
                    value
                        .to_str()
                        .expect("a visible-ASCII header")
                        .trim_matches([' ', '\t'])
                        .to_owned()
                };
                assert_eq!(single(header_names::MCP_PROTOCOL_VERSION), PROTOCOL_VERSION);
                assert_eq!(&single(header_names::MCP_METHOD), method);
                if let Some(name) = name {
                    let header = single(header_names::MCP_NAME);
                    assert_eq!(decode_header_value(&header).as_deref(), Ok(name));
                }
            }
            if let Some(level) = &request.log_level {
                assert_eq!(&meta[meta_keys::LOG_LEVEL], &Value::from(level.as_str()));
            }
        }
        Validated::Cancelled { request_id, .. } => {
            let Message::Notification { method, params } = message else {
                panic!("a non-notification was accepted as a cancellation: {message:?}");
            };
            assert_eq!(method, "notifications/cancelled");
            assert_eq!(params.as_ref().map(|p| &p["requestId"]), Some(request_id));
        }
        Validated::OtherNotification { method } => {
            let Message::Notification { method: sent, .. } = message else {
                panic!("a non-notification was accepted as a notification: {message:?}");
            };
            assert_eq!(sent, method);
            assert_ne!(method, "notifications/cancelled");
        }
    }
}
