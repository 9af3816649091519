//! JSON-RPC 2.0 messages as both sides of the proxy see them: parsing (single messages and the
//! batches 2025-03-26 servers may send), serialisation, and the error codes the proxy uses.

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

/// Error codes. The `-32020..-32099` range is reserved by MCP 2026-07-28: the proxy emits only the
/// three codes it defines there, and never the legacy `-32002` / `-32042`.
pub mod codes {
    pub const PARSE_ERROR: i64 = -32700;
    pub const INVALID_REQUEST: i64 = -32600;
    pub const METHOD_NOT_FOUND: i64 = -32601;
    pub const INVALID_PARAMS: i64 = -32602;
    pub const INTERNAL_ERROR: i64 = -32603;
    /// 2026-07-28: an HTTP header is missing, malformed, or disagrees with the body.
    pub const HEADER_MISMATCH: i64 = -32020;
    /// 2026-07-28: serving the request needs a client capability the request did not declare.
    pub const MISSING_REQUIRED_CLIENT_CAPABILITY: i64 = -32021;
    /// 2026-07-28: the requested protocol version is not supported.
    pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
    /// Legacy "resource not found" (2025-11-25); 2026-07-28 uses `-32602`.
    pub const LEGACY_RESOURCE_NOT_FOUND: i64 = -32002;
    /// Legacy "URL elicitation required" (2025-11-25); forbidden in 2026-07-28.
    pub const LEGACY_URL_ELICITATION_REQUIRED: i64 = -32042;
}

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq)]
pub struct ErrorObject {
    pub code: i64,
    pub message: String,
    pub data: Option<Value>,
}

impl ErrorObject {
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        ErrorObject {
            code,
            message: message.into(),
            data: None,
        }
    }

    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    pub fn to_value(&self) -> Value {
        let mut error = json!({"code": self.code, "message": self.message});
        if let Some(data) = &self.data {
            error["data"] = data.clone();
        }
        error
    }

    fn from_value(value: &Value) -> Option<Self> {
        Some(ErrorObject {
            code: value.get("code")?.as_i64()?,
            message: value
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            data: value.get("data").cloned(),
        })
    }
}

/// One JSON-RPC message.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    Request {
        id: Value,
        method: String,
        params: Option<Value>,
    },
    Notification {
        method: String,
        params: Option<Value>,
    },
    Response {
        /// `null` only for errors about unparsable requests.
        id: Value,
        outcome: Result<Value, ErrorObject>,
    },
    /// A successful response whose result is kept as the text the legacy server sent (the
    /// pass-through fast path: no `Value` tree is built), with `prefix` (members such as
    /// `"resultType":"complete"`) written at the start of the object. Only produced by the proxy.
    RawResponse { id: Value, result: RawResult },
}

/// A legacy result as the engine receives it: a `Value` tree, or, for a successful response read
/// on the fast path ([`parse_raw_response`]), the legacy server's own JSON text of the result.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    Tree(Value),
    Raw(RawResult),
}

impl Reply {
    /// The result as a `Value` tree; an error if raw text does not parse into one (a lone UTF-16
    /// surrogate escape passes the raw scan but not `Value` parsing).
    pub fn into_value(self) -> Result<Value, ErrorObject> {
        match self {
            Reply::Tree(value) => Ok(value),
            Reply::Raw(raw) => raw.to_value().map_err(|error| {
                ErrorObject::new(
                    codes::INTERNAL_ERROR,
                    format!("the legacy server sent an unreadable result: {error}"),
                )
            }),
        }
    }
}

/// A result as JSON text (no `Value` tree is built), plus members to write at the start of the
/// object. The text never contains a line break (see [`parse_raw_response`]), so front lines and
/// SSE events stay single-line.
#[derive(Debug, Clone)]
pub struct RawResult {
    raw: Box<RawValue>,
    /// Complete members (`"key":value`), comma-separated, without a trailing comma; may be empty.
    prefix: String,
}

impl RawResult {
    /// The JSON text as the legacy server sent it.
    pub fn text(&self) -> &str {
        self.raw.get()
    }

    /// Whether the result is a JSON object (only objects get members added).
    pub fn is_object(&self) -> bool {
        self.raw.get().starts_with('{')
    }

    /// Adds `member` (`"key":value`, valid JSON) at the start of the object. Only for objects
    /// that do not have the key already.
    pub fn push_member(&mut self, member: &str) {
        debug_assert!(self.is_object());
        if !self.prefix.is_empty() {
            self.prefix.push(',');
        }
        self.prefix.push_str(member);
    }

    /// Appends the result, with the added members, to `out`.
    pub fn write_to(&self, out: &mut Vec<u8>) {
        let text = self.raw.get();
        if self.prefix.is_empty() {
            out.extend_from_slice(text.as_bytes());
            return;
        }
        let rest = &text[1..]; // after `{`
        out.push(b'{');
        out.extend_from_slice(self.prefix.as_bytes());
        if !rest.trim_start().starts_with('}') {
            out.push(b',');
        }
        out.extend_from_slice(rest.as_bytes());
    }

    /// The result, with the added members, as a `Value` tree.
    pub fn to_value(&self) -> Result<Value, serde_json::Error> {
        let mut text = Vec::with_capacity(self.raw.get().len() + self.prefix.len() + 1);
        self.write_to(&mut text);
        serde_json::from_slice(&text)
    }
}

/// Compares the JSON values, not the texts.
impl PartialEq for RawResult {
    fn eq(&self, other: &Self) -> bool {
        match (self.to_value(), other.to_value()) {
            (Ok(one), Ok(other)) => one == other,
            _ => self.raw.get() == other.raw.get() && self.prefix == other.prefix,
        }
    }
}

/// The envelope of a successful response, with the result left as text.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawResultEnvelope<'a> {
    jsonrpc: &'a str,
    id: Value,
    result: Box<RawValue>,
}

/// The fast path for a successful response (`{"jsonrpc":"2.0","id":…,"result":…}` and nothing
/// else): the result is checked to be valid JSON but kept as text. `None` for everything else
/// (requests, notifications, errors, batches, unknown or duplicate members, an escaped
/// `jsonrpc`, and any text with a line break), which [`Message::parse_batch`] then reads.
pub fn parse_raw_response(bytes: &[u8]) -> Option<Message> {
    if bytes.first() != Some(&b'{') || memchr::memchr2(b'\n', b'\r', bytes).is_some() {
        return None;
    }
    let envelope: RawResultEnvelope<'_> = serde_json::from_slice(bytes).ok()?;
    let id = envelope.id;
    if envelope.jsonrpc != "2.0" || !(id.is_string() || id.is_i64() || id.is_u64() || id.is_null())
    {
        return None;
    }
    Some(Message::RawResponse {
        id,
        result: RawResult {
            raw: envelope.result,
            prefix: String::new(),
        },
    })
}

/// The members of a message object that [`Message::from_value`] reads (the last of duplicates,
/// as in a `Value` map).
#[derive(Default)]
struct Members {
    /// `jsonrpc` is the string `"2.0"`.
    jsonrpc_ok: bool,
    id: Option<Value>,
    method: Option<Value>,
    params: Option<Value>,
    result: Option<Value>,
    error: Option<Value>,
}

/// A JSON text as [`Message::parse`] reads it. Every part is parsed as a `Value` would be (other
/// members, array items included, into `Value`s that are then dropped), so a text is valid JSON
/// here exactly when it parses into a `Value`.
enum Envelope {
    Object(Members),
    Array,
    Other,
}

impl<'de> Deserialize<'de> for Envelope {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(EnvelopeVisitor)
    }
}

struct EnvelopeVisitor;

impl<'de> serde::de::Visitor<'de> for EnvelopeVisitor {
    type Value = Envelope;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<Envelope, E> {
        Ok(Envelope::Other)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Envelope, E> {
        Ok(Envelope::Other)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Envelope, E> {
        Ok(Envelope::Other)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Envelope, E> {
        Ok(Envelope::Other)
    }
    fn visit_str<E>(self, _: &str) -> Result<Envelope, E> {
        Ok(Envelope::Other)
    }
    fn visit_unit<E>(self) -> Result<Envelope, E> {
        Ok(Envelope::Other)
    }
    fn visit_none<E>(self) -> Result<Envelope, E> {
        Ok(Envelope::Other)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Envelope, A::Error> {
        while seq.next_element::<Value>()?.is_some() {}
        Ok(Envelope::Array)
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Envelope, A::Error> {
        let mut members = Members::default();
        while let Some(key) = map.next_key::<MemberKey>()? {
            let slot = match key {
                MemberKey::Jsonrpc => {
                    let value: Value = map.next_value()?;
                    members.jsonrpc_ok = value.as_str() == Some("2.0");
                    continue;
                }
                MemberKey::Id => &mut members.id,
                MemberKey::Method => &mut members.method,
                MemberKey::Params => &mut members.params,
                MemberKey::Result => &mut members.result,
                MemberKey::Error => &mut members.error,
                MemberKey::Other => {
                    map.next_value::<Value>()?;
                    continue;
                }
            };
            *slot = Some(map.next_value()?);
        }
        Ok(Envelope::Object(members))
    }
}

/// A member name of a message object, read without allocating (escapes decoded, as in a
/// `Value` map's keys).
enum MemberKey {
    Jsonrpc,
    Id,
    Method,
    Params,
    Result,
    Error,
    Other,
}

impl<'de> Deserialize<'de> for MemberKey {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl serde::de::Visitor<'_> for KeyVisitor {
            type Value = MemberKey;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a member name")
            }
            fn visit_str<E>(self, key: &str) -> Result<MemberKey, E> {
                Ok(match key {
                    "jsonrpc" => MemberKey::Jsonrpc,
                    "id" => MemberKey::Id,
                    "method" => MemberKey::Method,
                    "params" => MemberKey::Params,
                    "result" => MemberKey::Result,
                    "error" => MemberKey::Error,
                    _ => MemberKey::Other,
                })
            }
        }
        deserializer.deserialize_str(KeyVisitor)
    }
}

/// Why a message could not be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ParseError {
    #[error("not valid JSON: {0}")]
    Json(String),
    #[error("not a JSON-RPC 2.0 message: {0}")]
    Shape(&'static str),
}

impl ParseError {
    /// The JSON-RPC error to answer with.
    pub fn to_error(&self) -> ErrorObject {
        match self {
            ParseError::Json(_) => ErrorObject::new(codes::PARSE_ERROR, self.to_string()),
            ParseError::Shape(_) => ErrorObject::new(codes::INVALID_REQUEST, self.to_string()),
        }
    }
}

impl Message {
    /// A notification; `null` params are left out.
    pub fn notification(method: &str, params: Value) -> Message {
        Message::Notification {
            method: method.to_owned(),
            params: if params.is_null() { None } else { Some(params) },
        }
    }

    /// Reads one message from a JSON value.
    pub fn from_value(value: Value) -> Result<Message, ParseError> {
        let Value::Object(mut object) = value else {
            return Err(ParseError::Shape("expected a JSON object"));
        };
        Message::from_members(Members {
            jsonrpc_ok: object.get("jsonrpc").and_then(Value::as_str) == Some("2.0"),
            id: object.remove("id"),
            method: object.remove("method"),
            params: object.remove("params"),
            result: object.remove("result"),
            error: object.remove("error"),
        })
    }

    /// [`Message::from_value`] from the members it reads.
    fn from_members(members: Members) -> Result<Message, ParseError> {
        let Members {
            jsonrpc_ok,
            id,
            method,
            params,
            result,
            error,
        } = members;
        if !jsonrpc_ok {
            return Err(ParseError::Shape("`jsonrpc` must be \"2.0\""));
        }
        if let Some(id) = &id {
            if !(id.is_string() || id.is_i64() || id.is_u64() || id.is_null()) {
                return Err(ParseError::Shape("`id` must be a string or an integer"));
            }
        }
        if let Some(method) = method {
            let Value::String(method) = method else {
                return Err(ParseError::Shape("`method` must be a string"));
            };
            if params
                .as_ref()
                .is_some_and(|p| !p.is_object() && !p.is_array())
            {
                return Err(ParseError::Shape("`params` must be an object or an array"));
            }
            return Ok(match id {
                Some(Value::Null) => {
                    return Err(ParseError::Shape("a request `id` must not be null"))
                }
                Some(id) => Message::Request { id, method, params },
                None => Message::Notification { method, params },
            });
        }
        let id = id.ok_or(ParseError::Shape("a response needs an `id`"))?;
        match (result, error) {
            (Some(result), None) => Ok(Message::Response {
                id,
                outcome: Ok(result),
            }),
            (None, Some(error)) => Ok(Message::Response {
                id,
                outcome: Err(ErrorObject::from_value(&error)
                    .ok_or(ParseError::Shape("`error` needs an integer `code`"))?),
            }),
            _ => Err(ParseError::Shape(
                "a message needs `method`, or exactly one of `result` and `error`",
            )),
        }
    }

    /// Reads one message, or a batch (a JSON array), from bytes.
    pub fn parse_batch(bytes: &[u8]) -> Result<Vec<Result<Message, ParseError>>, ParseError> {
        let value: Value =
            serde_json::from_slice(bytes).map_err(|error| ParseError::Json(error.to_string()))?;
        match value {
            Value::Array(items) if items.is_empty() => Err(ParseError::Shape("empty batch")),
            Value::Array(items) => Ok(items.into_iter().map(Message::from_value).collect()),
            single => Ok(vec![Message::from_value(single)]),
        }
    }

    /// Reads exactly one message (no batch) from bytes: the same message, or the same error, as
    /// [`Message::from_value`] of the parsed [`Value`], without building the envelope's map (its
    /// members are read straight off the parser; callgrind, bench/proxy-vs-nginx.md).
    pub fn parse(bytes: &[u8]) -> Result<Message, ParseError> {
        let read: Envelope =
            serde_json::from_slice(bytes).map_err(|error| ParseError::Json(error.to_string()))?;
        match read {
            Envelope::Object(members) => Message::from_members(members),
            Envelope::Array => Err(ParseError::Shape("batches are not allowed")),
            Envelope::Other => Err(ParseError::Shape("expected a JSON object")),
        }
    }

    pub fn to_value(&self) -> Value {
        let mut object = Map::new();
        object.insert("jsonrpc".into(), "2.0".into());
        match self {
            Message::Request { id, method, params } => {
                object.insert("id".into(), id.clone());
                object.insert("method".into(), method.clone().into());
                if let Some(params) = params {
                    object.insert("params".into(), params.clone());
                }
            }
            Message::Notification { method, params } => {
                object.insert("method".into(), method.clone().into());
                if let Some(params) = params {
                    object.insert("params".into(), params.clone());
                }
            }
            Message::Response { id, outcome } => {
                object.insert("id".into(), id.clone());
                match outcome {
                    Ok(result) => object.insert("result".into(), result.clone()),
                    Err(error) => object.insert("error".into(), error.to_value()),
                };
            }
            Message::RawResponse { id, result } => {
                object.insert("id".into(), id.clone());
                // Only a lone surrogate escape fails here (see `Reply::into_value`).
                object.insert("result".into(), result.to_value().unwrap_or(Value::Null));
            }
        }
        Value::Object(object)
    }

    /// Serialised as one line (no embedded newlines: serde_json escapes them in strings).
    /// Written straight from the borrowed message (no intermediate `Value`), with the same
    /// text as `to_value().to_string()`.
    pub fn to_line(&self) -> String {
        if let Message::RawResponse { .. } = self {
            return String::from_utf8(self.to_vec()).expect("JSON text is UTF-8");
        }
        serde_json::to_string(self).expect("a JSON-RPC message always serialises")
    }

    /// [`Message::to_line`] as bytes. A raw result is copied as it is (the same members as the
    /// `Value` serialisation, not necessarily in the same order or spacing).
    pub fn to_vec(&self) -> Vec<u8> {
        if let Message::RawResponse { id, result } = self {
            let mut out = Vec::with_capacity(result.text().len() + result.prefix.len() + 48);
            out.extend_from_slice(b"{\"id\":");
            serde_json::to_writer(&mut out, id).expect("an id always serialises");
            out.extend_from_slice(b",\"jsonrpc\":\"2.0\",\"result\":");
            result.write_to(&mut out);
            out.push(b'}');
            return out;
        }
        serde_json::to_vec(self).expect("a JSON-RPC message always serialises")
    }

    pub fn response(id: Value, outcome: Result<Value, ErrorObject>) -> Message {
        Message::Response { id, outcome }
    }
}

/// Keys in the order `to_value` yields them (serde_json's `Map` is sorted), so that both
/// serialisations give the same text.
impl serde::Serialize for Message {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap as _;
        let mut map = serializer.serialize_map(None)?;
        match self {
            Message::Request { id, method, params } => {
                map.serialize_entry("id", id)?;
                map.serialize_entry("jsonrpc", "2.0")?;
                map.serialize_entry("method", method)?;
                if let Some(params) = params {
                    map.serialize_entry("params", params)?;
                }
            }
            Message::Notification { method, params } => {
                map.serialize_entry("jsonrpc", "2.0")?;
                map.serialize_entry("method", method)?;
                if let Some(params) = params {
                    map.serialize_entry("params", params)?;
                }
            }
            Message::Response { id, outcome } => match outcome {
                Ok(result) => {
                    map.serialize_entry("id", id)?;
                    map.serialize_entry("jsonrpc", "2.0")?;
                    map.serialize_entry("result", result)?;
                }
                Err(error) => {
                    map.serialize_entry("error", error)?;
                    map.serialize_entry("id", id)?;
                    map.serialize_entry("jsonrpc", "2.0")?;
                }
            },
            Message::RawResponse { id, result } => {
                let mut text = Vec::new();
                result.write_to(&mut text);
                let text = String::from_utf8(text).map_err(serde::ser::Error::custom)?;
                let raw = RawValue::from_string(text).map_err(serde::ser::Error::custom)?;
                map.serialize_entry("id", id)?;
                map.serialize_entry("jsonrpc", "2.0")?;
                map.serialize_entry("result", &raw)?;
            }
        }
        map.end()
    }
}

impl serde::Serialize for ErrorObject {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap as _;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("code", &self.code)?;
        if let Some(data) = &self.data {
            map.serialize_entry("data", data)?;
        }
        map.serialize_entry("message", &self.message)?;
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn successful_responses_take_the_raw_path_and_everything_else_does_not() {
        let text = br#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"h\u00e9 1.5e300"}],"n":0.1}}"#;
        let Some(Message::RawResponse { id, result }) = parse_raw_response(text) else {
            panic!("a plain successful response takes the fast path");
        };
        assert_eq!(id, json!(7));
        assert_eq!(
            result.text(),
            r#"{"content":[{"type":"text","text":"h\u00e9 1.5e300"}],"n":0.1}"#
        );
        assert_eq!(
            Message::parse(text).unwrap(),
            Message::Response {
                id: json!(7),
                outcome: Ok(result.to_value().unwrap())
            }
        );
        for other in [
            &br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#[..],
            br#"{"jsonrpc":"2.0","method":"notifications/progress","params":{}}"#,
            br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32002,"message":"gone"}}"#,
            br#"{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":""}}"#,
            br#"{"jsonrpc":"2.0","id":1,"result":{},"result":{}}"#,
            br#"{"jsonrpc":"1.0","id":1,"result":{}}"#,
            br#"{"jsonrpc":"2.0","id":1.5,"result":{}}"#,
            br#"{"jsonrpc":"2.0","id":[1],"result":{}}"#,
            br#"{"jsonrpc":"2.0","id":1,"result":{},"extra":1}"#,
            br#"{"jsonrpc":"2.0","id":1,"result":{"a":tru}}"#,
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\n\"result\":{}}",
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\r}}",
            br#"[{"jsonrpc":"2.0","id":1,"result":{}}]"#,
        ] {
            assert!(
                parse_raw_response(other).is_none(),
                "{}",
                String::from_utf8_lossy(other)
            );
        }
    }

    #[test]
    fn raw_results_get_members_spliced_in_and_serialise_like_values() {
        for (result, members, expected) in [
            (
                r#"{"a":1}"#,
                &[r#""resultType":"complete""#][..],
                json!({"a": 1, "resultType": "complete"}),
            ),
            (
                "{ }",
                &[r#""resultType":"complete""#, r#""ttlMs":0"#],
                json!({"resultType": "complete", "ttlMs": 0}),
            ),
            (
                r#"{"x":[1,{"y":null}]}"#,
                &[],
                json!({"x": [1, {"y": null}]}),
            ),
            ("[1,2]", &[], json!([1, 2])),
        ] {
            let text = format!(r#"{{"jsonrpc":"2.0","id":"k","result":{result}}}"#);
            let Some(Message::RawResponse { id, mut result }) = parse_raw_response(text.as_bytes())
            else {
                panic!("{text}");
            };
            for member in members {
                result.push_member(member);
            }
            assert_eq!(result.to_value().unwrap(), expected);
            let message = Message::RawResponse { id, result };
            let line = message.to_line();
            assert!(!line.contains('\n'));
            assert_eq!(line.as_bytes(), message.to_vec());
            let read: Value = serde_json::from_str(&line).unwrap();
            assert_eq!(
                read,
                json!({"jsonrpc": "2.0", "id": "k", "result": expected})
            );
            assert_eq!(read, message.to_value());
            assert_eq!(
                serde_json::to_value(&message).unwrap(),
                read,
                "Serialize agrees"
            );
        }
    }

    #[test]
    fn requests_notifications_and_responses_round_trip() {
        for text in [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":"a","method":"ping"}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}"#,
            r#"{"jsonrpc":"2.0","id":7,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"nope","data":[1]}}"#,
        ] {
            let message = Message::parse(text.as_bytes()).unwrap();
            let again = Message::from_value(message.to_value()).unwrap();
            assert_eq!(message, again, "{text}");
            assert_eq!(message.to_line(), message.to_value().to_string(), "{text}");
            assert_eq!(message.to_vec(), message.to_line().into_bytes(), "{text}");
        }
    }

    /// Found by the `legacy_messages` fuzz target: a long number literal was parsed one ulp off,
    /// so the message the proxy re-serialised carried another number than the one received.
    #[test]
    fn long_number_literals_pass_through_unchanged() {
        let digits = "3".repeat(121);
        for (literal, exact) in [
            (digits.as_str(), 3.333_333_333_333_333e120_f64),
            ("3.333333333333333e+120", 3.333_333_333_333_333e120),
            ("0.30000000000000004441", 0.300_000_000_000_000_04),
            ("1.7976931348623157e308", f64::MAX),
        ] {
            let text = format!(
                r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":{literal}}}}}"#
            );
            let message = Message::parse(text.as_bytes()).unwrap();
            let Message::Notification {
                params: Some(params),
                ..
            } = &message
            else {
                panic!("{message:?}");
            };
            assert_eq!(params["requestId"].as_f64(), Some(exact), "{literal}");
            let again = Message::parse(message.to_line().as_bytes()).unwrap();
            assert_eq!(again, message, "{literal}");
        }
    }

    #[test]
    fn malformed_messages_are_rejected_with_the_right_code() {
        let cases = [
            ("{", codes::PARSE_ERROR),
            ("[]", codes::INVALID_REQUEST),
            (r#"{"id":1,"method":"x"}"#, codes::INVALID_REQUEST),
            (
                r#"{"jsonrpc":"2.0","id":{},"method":"x"}"#,
                codes::INVALID_REQUEST,
            ),
            (
                r#"{"jsonrpc":"2.0","id":null,"method":"x"}"#,
                codes::INVALID_REQUEST,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"x","params":3}"#,
                codes::INVALID_REQUEST,
            ),
            (r#"{"jsonrpc":"2.0","id":1}"#, codes::INVALID_REQUEST),
            (
                r#"{"jsonrpc":"2.0","id":1,"error":{"message":"no code"}}"#,
                codes::INVALID_REQUEST,
            ),
        ];
        for (text, code) in cases {
            let error = Message::parse_batch(text.as_bytes())
                .and_then(|mut messages| messages.remove(0))
                .unwrap_err();
            assert_eq!(error.to_error().code, code, "{text}");
        }
    }

    /// `Message::parse` reads the envelope off the parser: the same message or the same error
    /// as parsing a `Value` first.
    #[test]
    fn parse_agrees_with_the_value_path() {
        fn by_value(bytes: &[u8]) -> Result<Message, ParseError> {
            let value: Value = serde_json::from_slice(bytes)
                .map_err(|error| ParseError::Json(error.to_string()))?;
            if value.is_array() {
                return Err(ParseError::Shape("batches are not allowed"));
            }
            Message::from_value(value)
        }
        let texts: &[&[u8]] = &[
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#,
            br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#,
            br#"{"jsonrpc":"2.0","id":"a","result":{"x":[1,2.5,null,true]}}"#,
            br#"{"jsonrpc":"2.0","id":7,"error":{"code":-32600,"message":"m","data":{}}}"#,
            br#"{"jsonrpc":"2.0","id":7,"error":{"message":"m"}}"#,
            br#"{"jsonrpc":"2.0","id":7,"result":1,"error":{"code":1}}"#,
            br#"{"jsonrpc":"2.0","id":7}"#,
            br#"{"jsonrpc":"2.0"}"#,
            br#"{"jsonrpc":"1.0","id":1,"method":"m"}"#,
            br#"{"jsonrpc":2,"id":1,"method":"m"}"#,
            br#"{"id":1,"method":"m"}"#,
            br#"{"jsonrpc":"2.0","id":null,"method":"m"}"#,
            br#"{"jsonrpc":"2.0","id":1.5,"method":"m"}"#,
            br#"{"jsonrpc":"2.0","id":-3,"method":"m"}"#,
            br#"{"jsonrpc":"2.0","id":[1],"method":"m"}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":3}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"m","params":3}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"m","params":[1]}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"m","params":null}"#,
            br#"{"jsonrpc":"1.0","jsonrpc":"2.0","id":1,"id":2,"method":"a","method":"b"}"#,
            br#"{"jsonrpc":"2.0","jsonrpc":"1.0","id":1,"method":"m"}"#,
            br#"{"json\u0072pc":"2.0","\u0069d":1,"method":"m","extra":{"deep":[{}]}}"#,
            br#"{"jsonrpc":"2.\u0030","id":"\ud83d\ude00","method":"m"}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"m","extra":"\ud800"}"#,
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"extra\":\"\xff\"}",
            b"[\"\xff\"]",
            br#"[{"jsonrpc":"2.0","id":1,"method":"m"}]"#,
            br#"[]"#,
            br#"[1,"#,
            br#""text""#,
            br#"3"#,
            br#"-1.5e3"#,
            br#"1e400"#,
            br#"true"#,
            br#"null"#,
            br#"{}"#,
            br#""#,
            br#"   "#,
            br#"{"jsonrpc":"2.0","id":1,"method":"m"} x"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"m",}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"m""#,
            br#"{"jsonrpc":"2.0","id":18446744073709551616,"method":"m"}"#,
            br#"{"jsonrpc":"2.0","id":18446744073709551615,"method":"m"}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":"\u0000\n"}}"#,
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":{\"a\":\"\x01\"}}",
            br#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":1}}  "#,
            br#"{1:2}"#,
        ];
        for text in texts {
            assert_eq!(
                Message::parse(text),
                by_value(text),
                "{}",
                String::from_utf8_lossy(text)
            );
        }
        for deep in [
            format!("{}{}", "[".repeat(200), "]".repeat(200)),
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":{}1{}}}"#,
                r#"{"a":"#.repeat(130),
                "}".repeat(130)
            ),
        ] {
            assert_eq!(Message::parse(deep.as_bytes()), by_value(deep.as_bytes()));
        }
    }

    #[test]
    fn batches_from_old_servers_are_read() {
        let messages = Message::parse_batch(
            br#"[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","method":"n"},3]"#,
        )
        .unwrap();
        assert_eq!(messages.len(), 3);
        assert!(messages[0].is_ok() && messages[1].is_ok() && messages[2].is_err());
        assert!(Message::parse(b"[{}]").is_err());
    }
}
