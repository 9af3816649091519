//! A legacy (`initialize`-era) client's Streamable HTTP POST, with or without a bearer token: what
//! the authentication tests (`proxy_auth.rs`, `proxy_jwt.rs`, `proxy_require_auth.rs`) send as a
//! 2025-06-18 client would, and read back.

use serde_json::{json, Value};

use super::parse_sse;

/// The `Authorization` value of a bearer token.
pub fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

/// A 2025-06-18 `initialize` request (id 1).
pub fn legacy_initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "legacy-e2e", "version": "1.0"},
    }})
}

/// POSTs `body` as a legacy client (with `token` as a bearer token, and `session` as
/// `Mcp-Session-Id` with protocol version 2025-06-18); returns the HTTP status, the
/// `Mcp-Session-Id` and `WWW-Authenticate` headers of the response, and its messages (one JSON
/// body, or the events of an SSE body).
pub async fn legacy_post(
    http: &reqwest::Client,
    url: &str,
    token: Option<&str>,
    session: Option<&str>,
    body: Value,
) -> (u16, Option<String>, Option<String>, Vec<Value>) {
    let mut request = http
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    if let Some(token) = token {
        request = request.header("authorization", bearer(token));
    }
    if let Some(session) = session {
        request = request
            .header("mcp-session-id", session)
            .header("mcp-protocol-version", "2025-06-18");
    }
    let response = request.json(&body).send().await.unwrap();
    let status = response.status().as_u16();
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned)
    };
    let (session, challenge) = (header("mcp-session-id"), header("www-authenticate"));
    let sse = header("content-type").is_some_and(|kind| kind.starts_with("text/event-stream"));
    let text = response.text().await.unwrap();
    let messages = if sse {
        parse_sse(&text)
    } else if text.trim().is_empty() {
        Vec::new()
    } else {
        vec![serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))]
    };
    (status, session, challenge, messages)
}
