//! JSON-RPC 2.0 messages as both sides of the proxy see them: parsing (single messages and the
//! batches 2025-03-26 servers may send), serialisation, and the error codes the proxy uses.

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
    /// Reads one message from a JSON value.
    pub fn from_value(value: Value) -> Result<Message, ParseError> {
        let Value::Object(mut object) = value else {
            return Err(ParseError::Shape("expected a JSON object"));
        };
        if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
            return Err(ParseError::Shape("`jsonrpc` must be \"2.0\""));
        }
        let id = object.remove("id");
        if let Some(id) = &id {
            if !(id.is_string() || id.is_i64() || id.is_u64() || id.is_null()) {
                return Err(ParseError::Shape("`id` must be a string or an integer"));
            }
        }
        if let Some(method) = object.remove("method") {
            let Value::String(method) = method else {
                return Err(ParseError::Shape("`method` must be a string"));
            };
            let params = object.remove("params");
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
        match (object.remove("result"), object.remove("error")) {
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

    /// Reads exactly one message (no batch) from bytes.
    pub fn parse(bytes: &[u8]) -> Result<Message, ParseError> {
        let value: Value =
            serde_json::from_slice(bytes).map_err(|error| ParseError::Json(error.to_string()))?;
        if value.is_array() {
            return Err(ParseError::Shape("batches are not allowed"));
        }
        Message::from_value(value)
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
        }
        Value::Object(object)
    }

    /// Serialised as one line (no embedded newlines: serde_json escapes them in strings).
    /// Written straight from the borrowed message (no intermediate `Value`), with the same
    /// text as `to_value().to_string()`.
    pub fn to_line(&self) -> String {
        serde_json::to_string(self).expect("a JSON-RPC message always serialises")
    }

    /// [`Message::to_line`] as bytes.
    pub fn to_vec(&self) -> Vec<u8> {
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
