//! Several instances behind one load balancer, sharing a Redis pause store: a retry that lands
//! on an instance that does not hold the paused call is passed to the instance that does (the
//! owner named in the pause record, reachable at its `--advertise` URL), and its answer relayed.
//!
//! - [`seal_request`] / [`open_request`]: the forwarded request travels as one envelope sealed
//!   with a key derived from the shared state key ([`Sealer::seal_forward`]): only an instance
//!   that holds the key can forward, and the caller's principal (the digest of its credential,
//!   never the credential) cannot be forged. An envelope older than [`FORWARD_MAX_AGE`] is
//!   refused (a replay would in any case meet a `requestState` that was already used);
//! - [`Peers::forward`]: `POST {advertise}/mrtr/forward` over a kept HTTP/1.1 connection per
//!   peer; the owner answers as it answers `/mcp` (JSON, or SSE when notifications come first),
//!   and the notifications and the final response are relayed to the client's own response.
//!   An owner that cannot be reached, or whose answer ends early, is a lost call (a clear error
//!   at once, never a hang).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::{header, HeaderValue, Method, Request};
use http_body_util::{BodyExt, Full};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::backend::http_client::{LaneConnections, Upstream};
use crate::backend::sse::SseParser;
use crate::jsonrpc::{codes, ErrorObject, Message, Reply};
use crate::request::{FrontRequest, Principal, ResponseSink};
use crate::state::{hex_decode, hex_encode, now_ms, Sealer};

/// The path an instance takes forwarded requests on (beside `/mcp`).
pub const FORWARD_PATH: &str = "/mrtr/forward";
/// How old a forwarded envelope may be (clock differences between instances included).
pub const FORWARD_MAX_AGE: Duration = Duration::from_secs(60);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
const IDLE_TIMEOUT: Duration = Duration::from_secs(30);

/// What travels inside the sealed envelope.
#[derive(Debug, Serialize, Deserialize)]
struct Envelope {
    sent_ms: u64,
    id: Value,
    method: String,
    params: Value,
    client_capabilities: Value,
    client_info: Option<Value>,
    log_level: Option<String>,
    progress_token: Option<Value>,
    /// The principal digest, hex.
    principal: String,
}

/// Seals `request` for another instance.
pub fn seal_request(sealer: &Sealer, request: &FrontRequest) -> Vec<u8> {
    let envelope = Envelope {
        sent_ms: now_ms(),
        id: request.id.clone(),
        method: request.method.clone(),
        params: request.params.to_value(),
        client_capabilities: request.client_capabilities_value().clone(),
        client_info: request.client_info.clone(),
        log_level: request.log_level.clone(),
        progress_token: request.progress_token.clone(),
        principal: hex_encode(&request.principal.0),
    };
    let plaintext = serde_json::to_vec(&envelope).expect("an envelope serialises");
    sealer.seal_forward(&plaintext)
}

/// Opens an envelope from another instance. The `Mcp-Param-*` check was made by the instance
/// the client called, so the request carries no headers to check again.
pub fn open_request(sealer: &Sealer, sealed: &[u8], now: u64) -> Result<FrontRequest, ErrorObject> {
    let refused = |why: &str| {
        ErrorObject::new(
            codes::INVALID_REQUEST,
            format!("forwarded request refused: {why}"),
        )
    };
    let plaintext = sealer
        .open_forward(sealed)
        .ok_or_else(|| refused("not sealed with this cluster's state key"))?;
    let envelope: Envelope =
        serde_json::from_slice(&plaintext).map_err(|_| refused("unreadable envelope"))?;
    let max_age = FORWARD_MAX_AGE.as_millis() as u64;
    if now.abs_diff(envelope.sent_ms) > max_age {
        return Err(refused("too old (or the instances' clocks disagree)"));
    }
    let principal =
        hex_decode::<32>(&envelope.principal).ok_or_else(|| refused("bad principal"))?;
    Ok(FrontRequest {
        id: envelope.id,
        method: envelope.method,
        params: envelope.params.into(),
        client_capabilities: envelope.client_capabilities.into(),
        client_info: envelope.client_info,
        log_level: envelope.log_level,
        progress_token: envelope.progress_token,
        principal: Principal(principal),
        // A retry resumes on the lane its call already holds: no credentials travel.
        credentials: crate::credentials::Credentials::none(),
        param_headers: None,
    })
}

/// The error of a retry whose paused call lived on an instance that is gone.
pub fn lost_elsewhere(why: &str) -> ErrorObject {
    ErrorObject::new(
        codes::INTERNAL_ERROR,
        format!(
            "the paused call was lost: {why}; send the original request again without inputResponses and requestState"
        ),
    )
}

/// Kept connections to the other instances, one set per advertised URL.
#[derive(Default)]
pub struct Peers {
    peers: Mutex<HashMap<String, Arc<Peer>>>,
}

impl std::fmt::Debug for Peers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Peers").finish_non_exhaustive()
    }
}

struct Peer {
    upstream: Upstream,
    connections: LaneConnections,
}

impl Peers {
    fn peer(&self, url: &str) -> Result<Arc<Peer>, ErrorObject> {
        let mut peers = self.peers.lock().expect("peers lock");
        if let Some(peer) = peers.get(url) {
            return Ok(peer.clone());
        }
        let upstream = Upstream::parse(&format!("{url}{FORWARD_PATH}")).map_err(|error| {
            lost_elsewhere(&format!("the owner's URL {url} is unusable ({error})"))
        })?;
        let connections = LaneConnections::new(
            upstream.uri.clone(),
            CONNECT_TIMEOUT,
            IDLE_TIMEOUT,
            tracing::debug_span!("peer", url),
        );
        let peer = Arc::new(Peer {
            upstream,
            connections,
        });
        peers.insert(url.to_owned(), peer.clone());
        Ok(peer)
    }

    /// Passes a sealed request to the instance at `url` and relays its answer: notifications
    /// to `sink`, the final response returned. `None` when the client left meanwhile.
    pub async fn forward(
        &self,
        url: &str,
        envelope: Vec<u8>,
        sink: &mut ResponseSink,
    ) -> Option<Result<Reply, ErrorObject>> {
        let unreachable = |detail: String| {
            tracing::warn!(url, %detail, "the instance holding a paused call cannot be reached");
            lost_elsewhere(&format!(
                "the proxy instance holding it ({url}) cannot be reached ({detail})"
            ))
        };
        let peer = match self.peer(url) {
            Ok(peer) => peer,
            Err(error) => return Some(Err(error)),
        };
        let request = Request::builder()
            .method(Method::POST)
            .uri(peer.upstream.path.clone())
            .header(header::HOST, peer.upstream.host.clone())
            .header(header::CONTENT_TYPE, "application/octet-stream")
            .header(
                header::ACCEPT,
                HeaderValue::from_static("application/json, text/event-stream"),
            )
            .body(Full::new(Bytes::from(envelope)))
            .expect("a valid request");
        let response = tokio::select! {
            response = peer.connections.request(request) => response,
            () = sink.closed() => return None,
        };
        let response = match response {
            Ok(response) => response,
            Err(error) => return Some(Err(unreachable(error.to_string()))),
        };
        let is_sse = response
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .is_some_and(|value| value.starts_with("text/event-stream"));
        let mut body = response.into_body();
        let mut parser = SseParser::new();
        let mut whole = Vec::new();
        loop {
            let frame = tokio::select! {
                frame = body.frame() => frame,
                () = sink.closed() => return None,
            };
            let data = match frame {
                None => break,
                Some(Err(error)) => return Some(Err(unreachable(error.to_string()))),
                Some(Ok(frame)) => match frame.into_data() {
                    Ok(data) => data,
                    Err(_) => continue,
                },
            };
            if !is_sse {
                whole.extend_from_slice(&data);
                continue;
            }
            for event in parser.feed(&data) {
                let message = match Message::parse(event.data.as_bytes()) {
                    Ok(Message::Response { outcome, .. }) => {
                        return Some(outcome.map(Reply::Tree));
                    }
                    Ok(message @ Message::Notification { .. }) => message,
                    _ => continue,
                };
                if !sink.notify(message).await {
                    return None;
                }
            }
        }
        if !is_sse {
            if let Ok(Message::Response { outcome, .. }) = Message::parse(&whole) {
                return Some(outcome.map(Reply::Tree));
            }
        }
        Some(Err(unreachable("its answer ended early".into())))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::state::StateKey;

    fn request() -> FrontRequest {
        FrontRequest {
            id: json!(7),
            method: "tools/call".into(),
            // mcp-lint: allow(unsigned-request-state) a placeholder a client echoes; never opened here
            params: json!({"name": "ask_name", "arguments": {}, "requestState": "mrs1.x"}).into(),
            client_capabilities: json!({"elicitation": {}}).into(),
            client_info: Some(json!({"name": "c"})),
            log_level: Some("info".into()),
            progress_token: Some(json!("p")),
            principal: Principal::from_credential(b"Bearer alice"),
            credentials: crate::credentials::Credentials::none(),
            param_headers: None,
        }
    }

    #[test]
    fn an_envelope_opens_with_the_same_key_only() {
        let key = StateKey::generate();
        let sealer = Sealer::new(&key);
        let sealed = seal_request(&sealer, &request());
        let opened = open_request(&Sealer::new(&key), &sealed, now_ms()).unwrap();
        let original = request();
        assert_eq!(opened.id, original.id);
        assert_eq!(opened.method, original.method);
        assert_eq!(opened.params, original.params);
        assert_eq!(
            opened.client_capabilities_value(),
            original.client_capabilities_value()
        );
        assert_eq!(opened.client_capabilities, original.client_capabilities);
        assert_eq!(opened.client_info, original.client_info);
        assert_eq!(opened.log_level, original.log_level);
        assert_eq!(opened.progress_token, original.progress_token);
        assert_eq!(opened.principal, original.principal);

        let other = Sealer::new(&StateKey::generate());
        let error = open_request(&other, &sealed, now_ms()).unwrap_err();
        assert!(error.message.contains("state key"), "{}", error.message);
        let mut tampered = sealed.clone();
        let last = tampered.len() - 1;
        tampered[last] ^= 1;
        assert!(open_request(&sealer, &tampered, now_ms()).is_err());
        assert!(open_request(&sealer, &sealed[..10], now_ms()).is_err());
        assert!(open_request(&sealer, b"", now_ms()).is_err());
    }

    #[test]
    fn an_old_envelope_is_refused() {
        let sealer = Sealer::new(&StateKey::generate());
        let sealed = seal_request(&sealer, &request());
        let later = now_ms() + FORWARD_MAX_AGE.as_millis() as u64 + 1_000;
        let error = open_request(&sealer, &sealed, later).unwrap_err();
        assert!(error.message.contains("too old"), "{}", error.message);
    }

    #[test]
    fn a_forward_envelope_is_not_a_request_state() {
        // The two keys differ: an envelope's bytes never open as a state, nor the reverse.
        let sealer = Sealer::new(&StateKey::generate());
        let sealed = seal_request(&sealer, &request());
        let as_state = format!(
            "mrs1.{}",
            base64::Engine::encode(&base64::engine::general_purpose::URL_SAFE_NO_PAD, &sealed)
        );
        assert!(sealer.open(&as_state, now_ms()).is_err());
    }
}
