//! JSON-RPC 2.0 messages as both sides of the proxy see them: parsing (single messages and the
//! batches 2025-03-26 servers may send), serialisation, and the error codes the proxy uses.

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

mod raw;

pub(crate) use raw::parse_raw_text;
pub use raw::{parse_raw_response, Added, RawResult};

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
    /// pass-through fast path: no `Value` tree is built), with the members the front adds (such
    /// as `"resultType":"complete"`) written at the start of the object. Only produced by the
    /// proxy.
    RawResponse { id: Value, result: RawResult },
    /// A request whose `params` are JSON text (an object, without line breaks), written as they
    /// are: a front request's params spliced into the legacy request ([`crate::params`]). Only
    /// produced by the proxy, for the legacy server.
    RawRequest {
        id: Value,
        method: String,
        params: RawText,
    },
}

/// JSON text (checked by whoever made it: [`crate::params`]), compared by the value it holds.
#[derive(Debug, Clone)]
pub struct RawText(String);

impl RawText {
    /// `text` must be one JSON value, without line breaks.
    pub(crate) fn new_unchecked(text: String) -> Self {
        RawText(text)
    }

    pub fn get(&self) -> &str {
        &self.0
    }

    /// The text as a `Value` tree (`Null` for the only text that does not parse: a lone UTF-16
    /// surrogate escape, which [`crate::params`] never lets through).
    pub fn to_value(&self) -> Value {
        serde_json::from_str(self.get()).unwrap_or(Value::Null)
    }
}

impl PartialEq for RawText {
    fn eq(&self, other: &Self) -> bool {
        self.to_value() == other.to_value()
    }
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
            Message::RawRequest { id, method, params } => {
                object.insert("id".into(), id.clone());
                object.insert("method".into(), method.clone().into());
                object.insert("params".into(), params.to_value());
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
        if let Message::RawResponse { .. } | Message::RawRequest { .. } = self {
            return String::from_utf8(self.to_vec()).expect("JSON text is UTF-8");
        }
        serde_json::to_string(self).expect("a JSON-RPC message always serialises")
    }

    /// [`Message::to_line`] as bytes. A raw result is copied as it is (the same members as the
    /// `Value` serialisation, not necessarily in the same order or spacing).
    pub fn to_vec(&self) -> Vec<u8> {
        if let Message::RawResponse { id, result } = self {
            const HEAD: &[u8] = b"{\"id\":";
            const MIDDLE: &[u8] = b",\"jsonrpc\":\"2.0\",\"result\":";
            // The exact length: a front turns the vector into `Bytes` without another allocation
            // when it is full (callgrind, bench/proxy-vs-nginx.md).
            let result = result.pieces();
            let len = HEAD.len() + id_len(id) + MIDDLE.len() + result.len() + 1;
            let mut out = Vec::with_capacity(len);
            out.extend_from_slice(HEAD);
            serde_json::to_writer(&mut out, id).expect("an id always serialises");
            out.extend_from_slice(MIDDLE);
            result.write_to(&mut out);
            out.push(b'}');
            debug_assert_eq!(out.len(), len);
            return out;
        }
        if let Message::RawRequest { id, method, params } = self {
            let mut out = Vec::with_capacity(params.get().len() + method.len() + 48);
            out.extend_from_slice(b"{\"id\":");
            serde_json::to_writer(&mut out, id).expect("an id always serialises");
            out.extend_from_slice(b",\"jsonrpc\":\"2.0\",\"method\":");
            serde_json::to_writer(&mut out, method).expect("a string always serialises");
            out.extend_from_slice(b",\"params\":");
            out.extend_from_slice(params.get().as_bytes());
            out.push(b'}');
            return out;
        }
        serde_json::to_vec(self).expect("a JSON-RPC message always serialises")
    }

    /// The message with a [`Message::RawRequest`]'s params as a tree ([`Message::Request`]); any
    /// other message as it is.
    pub fn into_tree(self) -> Message {
        match self {
            Message::RawRequest { id, method, params } => Message::Request {
                id,
                method,
                params: Some(params.to_value()),
            },
            other => other,
        }
    }

    pub fn response(id: Value, outcome: Result<Value, ErrorObject>) -> Message {
        Message::Response { id, outcome }
    }
}

/// How many bytes serde_json writes for `id`.
fn id_len(id: &Value) -> usize {
    fn digits(n: u64) -> usize {
        n.checked_ilog10().map_or(1, |log| log as usize + 1)
    }
    /// Counts what is written.
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    match id {
        Value::Number(n) if n.is_u64() => digits(n.as_u64().unwrap_or_default()),
        Value::Number(n) if n.is_i64() => 1 + digits(n.as_i64().unwrap_or_default().unsigned_abs()),
        Value::Null => 4,
        other => {
            let mut count = Count(0);
            serde_json::to_writer(&mut count, other).expect("an id always serialises");
            count.0
        }
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
            Message::RawRequest { id, method, params } => {
                map.serialize_entry("id", id)?;
                map.serialize_entry("jsonrpc", "2.0")?;
                map.serialize_entry("method", method)?;
                let raw =
                    RawValue::from_string(params.0.clone()).map_err(serde::ser::Error::custom)?;
                map.serialize_entry("params", &raw)?;
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
mod tests;
