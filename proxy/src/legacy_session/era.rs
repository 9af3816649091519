//! Which era a client speaks, which eras the proxy serves, and the legacy version negotiation.
//!
//! The 2026-07-28 revision's backward-compatibility rules: a dual-era server picks its behaviour
//! per opening message. A request with modern `_meta` is served statelessly; an `initialize`
//! request selects legacy semantics, scoped to the session (HTTP: `Mcp-Session-Id`) or to the
//! process (stdio: the first message decides).

use http::HeaderMap;
use serde_json::{json, Value};

use crate::front::validate::{header_names, meta_keys, PROTOCOL_VERSION};
use crate::jsonrpc::{codes, ErrorObject, Message};

/// The legacy protocol versions a legacy client may negotiate, newest first (the legacy server
/// must speak the one chosen too: it answers `initialize` with its own choice).
pub const LEGACY_VERSIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// The legacy session header.
pub const SESSION_HEADER: &str = "mcp-session-id";

/// `--era-policy`: which clients the proxy serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum EraPolicy {
    /// Legacy (`initialize`) and 2026-07-28 clients, side by side.
    #[default]
    Both,
    /// 2026-07-28 clients only: `initialize` is refused with `-32022` naming 2026-07-28.
    ModernOnly,
    /// Legacy clients only: 2026-07-28 requests are refused with an error that is not a modern
    /// one, so a dual-era client falls back to `initialize`.
    LegacyOnly,
}

impl EraPolicy {
    pub fn serves_legacy(self) -> bool {
        self != EraPolicy::ModernOnly
    }

    pub fn serves_modern(self) -> bool {
        self != EraPolicy::LegacyOnly
    }

    /// The error a 2026-07-28 request gets under [`EraPolicy::LegacyOnly`] (HTTP 400).
    pub fn modern_refusal() -> ErrorObject {
        ErrorObject::new(
            codes::INVALID_REQUEST,
            "this endpoint serves legacy MCP clients only (--era-policy legacy-only): open a \
             session with `initialize`",
        )
        .with_data(json!({ "supported": LEGACY_VERSIONS }))
    }
}

/// The era of one message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Era {
    Legacy,
    Modern,
}

impl Era {
    /// The metrics label.
    pub fn label(self) -> &'static str {
        match self {
            Era::Legacy => "legacy",
            Era::Modern => PROTOCOL_VERSION,
        }
    }
}

/// The era of a POST, from its headers and body, cheaply (a modern request is not parsed here):
/// - `MCP-Protocol-Version: 2026-07-28` → modern;
/// - an `Mcp-Session-Id` header → legacy (a session's traffic), unless the body carries the
///   modern `_meta` protocol version (a 2026-07-28 client with a stray header: ignored, as
///   before);
/// - no session: an `initialize` request → legacy; anything else → modern (and validated as
///   such: a legacy client without a session gets the modern errors).
pub fn http_post_era(headers: &HeaderMap, body: &[u8]) -> Era {
    if headers
        .get(header_names::MCP_PROTOCOL_VERSION)
        .is_some_and(|value| value.as_bytes() == PROTOCOL_VERSION.as_bytes())
    {
        return Era::Modern;
    }
    if headers.contains_key(SESSION_HEADER) {
        let modern = memchr::memmem::find(body, meta_keys::PROTOCOL_VERSION.as_bytes()).is_some();
        return if modern { Era::Modern } else { Era::Legacy };
    }
    if memchr::memmem::find(body, b"\"initialize\"").is_none() {
        return Era::Modern;
    }
    match Message::parse(body) {
        Ok(message) => first_message_era(&message),
        Err(_) => Era::Modern,
    }
}

/// stdio: the first message decides for the whole process; an `initialize` request is legacy.
pub fn first_message_era(message: &Message) -> Era {
    match message {
        Message::Request { method, .. } if method == "initialize" => Era::Legacy,
        _ => Era::Modern,
    }
}

/// [`first_message_era`] of a message as the fronts read it.
pub fn first_front_era(message: &crate::front::read::FrontMessage) -> Era {
    match message {
        crate::front::read::FrontMessage::Request { method, .. } if method == "initialize" => {
            Era::Legacy
        }
        _ => Era::Modern,
    }
}

/// The `protocolVersion` to ask the legacy server for, given what the client asked for:
/// - a legacy version the proxy speaks: that one (the legacy server answers with it if it speaks
///   it, otherwise with its own choice, as a real server does);
/// - a later version (a client newer than every legacy revision, still opening with
///   `initialize`): the newest legacy version, so the answer is the newest both speak;
/// - anything else (older than every legacy revision, not a version at all): the spec's
///   unsupported-version error, `-32602` with `data {supported, requested}`.
pub fn negotiate(requested: Option<&Value>) -> Result<&'static str, ErrorObject> {
    let text = requested.and_then(Value::as_str);
    if let Some(version) = text.and_then(|text| LEGACY_VERSIONS.iter().find(|v| **v == text)) {
        return Ok(version);
    }
    if let Some(text) = text.filter(|text| is_version(text) && *text > LEGACY_VERSIONS[0]) {
        tracing::debug!(
            requested = text,
            "a newer version was asked for in initialize"
        );
        return Ok(LEGACY_VERSIONS[0]);
    }
    Err(ErrorObject::new(
        codes::INVALID_PARAMS,
        format!(
            "Unsupported protocol version {} (supported: {})",
            requested.map_or("(none)".to_owned(), Value::to_string),
            LEGACY_VERSIONS.join(", ")
        ),
    )
    .with_data(json!({
        "supported": LEGACY_VERSIONS,
        "requested": requested.cloned().unwrap_or(Value::Null),
    })))
}

/// `YYYY-MM-DD`.
fn is_version(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.len() == 10
        && bytes.iter().enumerate().all(|(at, byte)| match at {
            4 | 7 => *byte == b'-',
            _ => byte.is_ascii_digit(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    #[test]
    fn negotiation_follows_a_real_server() {
        for version in LEGACY_VERSIONS {
            assert_eq!(negotiate(Some(&json!(version))), Ok(version));
        }
        assert_eq!(negotiate(Some(&json!("2026-07-28"))), Ok("2025-11-25"));
        assert_eq!(negotiate(Some(&json!("2099-01-01"))), Ok("2025-11-25"));
        for bad in [json!("2024-10-07"), json!("1.0.0"), json!(3), Value::Null] {
            let error = negotiate(Some(&bad)).unwrap_err();
            assert_eq!(error.code, codes::INVALID_PARAMS);
            assert_eq!(error.data.as_ref().unwrap()["requested"], bad);
        }
        assert!(negotiate(None).is_err());
    }

    #[test]
    fn eras_of_posts() {
        let initialize = br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}"#;
        let modern = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#;
        let legacy_call = br#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;
        let none = HeaderMap::new();
        let mut session = HeaderMap::new();
        session.insert(SESSION_HEADER, HeaderValue::from_static("abc"));
        assert_eq!(http_post_era(&none, initialize), Era::Legacy);
        assert_eq!(http_post_era(&none, modern), Era::Modern);
        assert_eq!(http_post_era(&none, legacy_call), Era::Modern);
        assert_eq!(http_post_era(&session, legacy_call), Era::Legacy);
        assert_eq!(http_post_era(&session, modern), Era::Modern);
        let mut modern_header = session.clone();
        modern_header.insert(
            header_names::MCP_PROTOCOL_VERSION,
            HeaderValue::from_static(PROTOCOL_VERSION),
        );
        assert_eq!(http_post_era(&modern_header, initialize), Era::Modern);
        // A tool argument that says "initialize" is not an initialize request.
        let call =
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"initialize"}}"#;
        assert_eq!(http_post_era(&none, call), Era::Modern);
    }
}
