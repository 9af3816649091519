//! What a legacy server sends the proxy: JSON-RPC messages and (2025-03-26) batches, in an HTTP
//! response body, in SSE events, or as lines of a child's stdout; then the lane's router.
//!
//! Input formats (so that seeds are readable server output):
//! - `sse\n` + a `text/event-stream` body;
//! - `stdio\n` + a child's stdout (newline-delimited);
//! - otherwise an `application/json` response body.
//!
//! Beyond "no panic", every input checks:
//! - SSE: the events do not depend on how the body is cut into chunks (whole, byte by byte, in
//!   chunks of k), nor do the last event id and retry; event data has no CR, is never empty;
//!   re-encoding the events as SSE gives the same events back;
//! - every message that parses re-serialises and re-parses to the same message, and a
//!   non-batch unit parses the same with `parse_batch` as with `parse`;
//! - the router, unleased and leased, does exactly what its contract says for each message:
//!   `ping` answered `{}` at once; other server requests answered locally (unleased) or handed to
//!   the lease in order; notifications handed to the lease; a response completes the pending call
//!   with that id exactly once, with exactly the outcome sent, and is dropped otherwise.

#![no_main]

use std::collections::BTreeSet;

use libfuzzer_sys::fuzz_target;
use mcp_mrtr_proxy::backend::BackendEvent;
use mcp_mrtr_proxy::fuzzing::{check_round_trip, LegacyRouter, SseEvent, SseParser};
use mcp_mrtr_proxy::jsonrpc::{parse_raw_response, ErrorObject, Message, Reply};
use serde_json::{json, Map, Value};

/// Own requests in flight on each router: legacy ids 0, 1, 2.
const PENDING: u64 = 3;
/// Above this many messages in one unit the lease's event channel (256) may fill up, which has
/// its own (asynchronous) rules: only "no panic" is checked then.
const EXACT_LIMIT: usize = 200;

fuzz_target!(|data: &[u8]| {
    let units: Vec<Vec<u8>> = if let Some(body) = data.strip_prefix(b"sse\n") {
        sse_units(body)
    } else if let Some(stdout) = data.strip_prefix(b"stdio\n") {
        // `read_until(b'\n')`: each piece keeps its newline; the last may lack it.
        stdout
            .split_inclusive(|&byte| byte == b'\n')
            .map(<[u8]>::to_vec)
            .collect()
    } else if data.iter().all(u8::is_ascii_whitespace) {
        // The HTTP lane skips blank bodies before routing.
        Vec::new()
    } else {
        vec![data.to_vec()]
    };
    let mut routers = [Checked::new(false), Checked::new(true)];
    for unit in &units {
        for router in &mut routers {
            router.route(unit);
        }
    }
});

/// The `message` events' data, as the HTTP lane routes them; checks the parser on the way.
fn sse_units(body: &[u8]) -> Vec<Vec<u8>> {
    let mut whole = SseParser::new();
    let events = whole.feed(body);
    let mut bytewise = SseParser::new();
    let by_byte: Vec<SseEvent> = body
        .iter()
        .flat_map(|byte| bytewise.feed(&[*byte]))
        .collect();
    assert_eq!(events, by_byte);
    let chunk = body.len() % 7 + 2;
    let mut chunked = SseParser::new();
    let by_chunk: Vec<SseEvent> = body.chunks(chunk).flat_map(|c| chunked.feed(c)).collect();
    assert_eq!(events, by_chunk);
    for parser in [&bytewise, &chunked] {
        assert_eq!(parser.last_event_id(), whole.last_event_id());
        assert_eq!(parser.retry_ms(), whole.retry_ms());
    }
    if let Some(id) = whole.last_event_id() {
        assert!(!id.contains(['\0', '\r', '\n']));
    }

    let mut encoded = String::new();
    for event in &events {
        assert!(!event.data.is_empty());
        assert!(!event.data.contains('\r'));
        assert!(!event.event.is_empty() && !event.event.contains(['\r', '\n']));
        encoded.push_str(&format!("event: {}\n", event.event));
        for line in event.data.split('\n') {
            encoded.push_str(&format!("data: {line}\n"));
        }
        encoded.push('\n');
    }
    assert_eq!(SseParser::new().feed(encoded.as_bytes()), events);

    whole.finish();
    events
        .into_iter()
        .filter(|event| event.event == "message")
        .map(|event| event.data.into_bytes())
        .collect()
}

/// A router and the model of what it owes.
struct Checked {
    router: LegacyRouter,
    leased: bool,
    /// Own requests still waiting for their response.
    pending: BTreeSet<u64>,
    /// Cleared once a unit had too many messages to predict (see [`EXACT_LIMIT`]).
    exact: bool,
}

impl Checked {
    fn new(leased: bool) -> Checked {
        let router = LegacyRouter::new(leased, PENDING as usize, vec!["file:///workspace".into()]);
        assert_eq!(router.pending(), PENDING as usize);
        Checked {
            router,
            leased,
            pending: (0..PENDING).collect(),
            exact: true,
        }
    }

    fn route(&mut self, unit: &[u8]) {
        let trimmed = unit.trim_ascii();
        let expected: Vec<Message> = if trimmed.is_empty() {
            Vec::new()
        } else if let Some(Message::RawResponse { id, result }) = parse_raw_response(trimmed) {
            // A plain successful response keeps its result as text (the lane's fast path); its
            // outcome is what the `Value` reading of that text gives.
            vec![Message::Response {
                id,
                outcome: Reply::Raw(result).into_value(),
            }]
        } else {
            match Message::parse_batch(trimmed) {
                Err(_) => Vec::new(),
                Ok(entries) => entries.into_iter().filter_map(Result::ok).collect(),
            }
        };
        if !trimmed.is_empty() && !trimmed.starts_with(b"[") {
            // Not a batch: `parse_batch` is `parse`.
            let single = Message::parse_batch(trimmed).map(|mut all| all.remove(0));
            assert_eq!(single.and_then(|message| message), Message::parse(trimmed));
        }
        for message in &expected {
            check_round_trip(message);
        }

        let routed = self.router.handle_bytes(unit);
        assert_eq!(routed, expected.len());
        let sent = self.router.take_sent();
        let events = self.router.take_events();
        let mut completed = self.router.take_completed();
        if expected.len() > EXACT_LIMIT {
            self.exact = false;
        }
        if !self.exact {
            return;
        }

        let mut want_sent: Vec<(Value, Option<Value>)> = Vec::new();
        let mut want_events = Vec::new();
        let mut want_completed: Vec<(Value, Result<Value, ErrorObject>)> = Vec::new();
        for message in expected {
            match message {
                Message::Request { id, method, .. } if method == "ping" => {
                    want_sent.push((id, Some(json!({}))));
                }
                Message::Request { id, method, params } => {
                    if self.leased {
                        want_events.push(BackendEvent::ServerRequest {
                            id,
                            method,
                            params: params.unwrap_or_else(|| Value::Object(Map::new())),
                        });
                    } else {
                        // A local answer; its content is `local_answer`'s business.
                        want_sent.push((id, None));
                    }
                }
                Message::Notification { method, params } => {
                    if self.leased {
                        want_events.push(BackendEvent::Notification {
                            method,
                            params: params.unwrap_or_else(|| Value::Object(Map::new())),
                        });
                    }
                }
                Message::RawResponse { .. } => {
                    unreachable!("Message::parse_batch reads every response into a Value")
                }
                Message::RawRequest { .. } => {
                    unreachable!("Message::parse_batch reads every request into a Value")
                }
                Message::Response { id, outcome } => {
                    let key = match &id {
                        Value::Number(number) => number.as_u64(),
                        Value::String(text) => text.parse().ok(),
                        _ => None,
                    };
                    if let Some(key) = key.filter(|key| self.pending.remove(key)) {
                        want_completed.push((Value::from(key), outcome));
                    }
                }
            }
        }

        assert_eq!(sent.len(), want_sent.len(), "{sent:?}");
        for (message, (id, result)) in sent.iter().zip(&want_sent) {
            let Message::Response {
                id: sent_id,
                outcome,
            } = message
            else {
                panic!("the router sent a non-response: {message:?}");
            };
            assert_eq!(sent_id, id);
            if let Some(result) = result {
                assert_eq!(outcome.as_ref(), Ok(result));
            }
        }
        assert_eq!(events, want_events);
        // Both in id order: a batch may answer our requests in any order.
        completed.sort_by_key(|(id, _)| id.as_u64());
        want_completed.sort_by_key(|(id, _)| id.as_u64());
        assert_eq!(completed, want_completed);
        assert_eq!(self.router.pending(), self.pending.len());
    }
}
