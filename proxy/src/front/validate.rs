//! Front request validation: 2026-07-28 methods, the required `_meta` keys, the protocol version
//! and, on Streamable HTTP, the mirrored request headers (`MCP-Protocol-Version`, `Mcp-Method`,
//! `Mcp-Name`).
//!
//! Everything here is decided before the engine sees the request, so on HTTP every rejection is
//! still a plain JSON response with its own status (400, 404), never an SSE event.
//!
//! Order of the checks (the first failure wins):
//! 1. the message is a request or a notification (a response from the client is `-32600`);
//! 2. the method is a 2026-07-28 `ClientRequest` (else 404 / `-32601`; a legacy-shaped
//!    `initialize` gets 400 / `-32022` naming the supported versions);
//! 3. `params` is an object whose `_meta` has a string protocol version and an object of client
//!    capabilities (else 400 / `-32602` naming the key);
//! 4. HTTP: `MCP-Protocol-Version` is present and equals the `_meta` version (else `-32020`). This
//!    comes before the version check so that a header that disagrees with the body is reported as
//!    a mismatch even when the body's version is also unsupported;
//! 5. the version is `2026-07-28` (else 400 / `-32022` with `data {supported, requested}`);
//! 6. HTTP: `Mcp-Method` equals the method, `Mcp-Name` (base64 sentinel form decoded) equals
//!    `params.name` / `params.uri` (else 400 / `-32020`);
//! 7. `_meta` log level and progress token have valid types, `tools/call` / `prompts/get` carry a
//!    string `name`, `resources/read` a string `uri` (else 400 / `-32602`).

use serde_json::{json, Map, Value};

use super::read::FrontMessage;
use crate::capabilities::ClientCapabilities;
use crate::jsonrpc::{codes, ErrorObject, Message, ParseError};
use crate::param_headers::{decode_header_value, single_value};
use crate::params::{CapabilitiesRead, MetaRef, NotString, Params};
pub use crate::request::http_status;
use crate::request::{FrontRequest, Principal};

/// The protocol version the front speaks.
pub const PROTOCOL_VERSION: &str = "2026-07-28";

/// What `UnsupportedProtocolVersionError.data.supported` lists.
pub const SUPPORTED_VERSIONS: [&str; 1] = [PROTOCOL_VERSION];

/// The 2026-07-28 `ClientRequest` methods.
pub const CLIENT_REQUEST_METHODS: [&str; 10] = [
    "server/discover",
    "completion/complete",
    "prompts/get",
    "prompts/list",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "subscriptions/listen",
    "tools/call",
    "tools/list",
];

/// The `LoggingLevel` values.
pub const LOG_LEVELS: [&str; 8] = [
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
];

/// The reserved request `_meta` keys the front reads.
pub mod meta_keys {
    pub const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
    pub const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
    pub const CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
    pub const LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
    pub const PROGRESS_TOKEN: &str = "progressToken";
}

/// The request headers Streamable HTTP mirrors from the body (names are case-insensitive).
pub mod header_names {
    pub const MCP_PROTOCOL_VERSION: &str = "mcp-protocol-version";
    pub const MCP_METHOD: &str = "mcp-method";
    pub const MCP_NAME: &str = "mcp-name";
}

/// The request headers validation reads, found in one pass over the headers: three hashed
/// lookups and a walk for the `Mcp-Param-*` ones cost more (callgrind, bench/proxy-vs-nginx.md).
#[derive(Default)]
struct FrontHeaders<'a> {
    protocol_version: Found<'a>,
    method: Found<'a>,
    name: Found<'a>,
    /// Whether an `Mcp-Param-*` header was sent.
    params: bool,
}

/// The values of one header name.
#[derive(Default)]
struct Found<'a> {
    first: Option<&'a http::HeaderValue>,
    repeated: bool,
}

impl<'a> Found<'a> {
    fn add(&mut self, value: &'a http::HeaderValue) {
        if self.first.is_none() {
            self.first = Some(value);
        } else {
            self.repeated = true;
        }
    }

    /// [`single_header`](crate::param_headers::single_header) of this name.
    fn single(&self, display: &str) -> Result<&'a str, String> {
        single_value(self.first, self.repeated, display)
    }
}

impl<'a> FrontHeaders<'a> {
    fn read(headers: &'a http::HeaderMap) -> Self {
        let mut found = FrontHeaders::default();
        // Names are lower case in a `HeaderMap`.
        for (name, value) in headers {
            let name = name.as_str();
            match name.len() {
                20 if name == header_names::MCP_PROTOCOL_VERSION => {
                    found.protocol_version.add(value)
                }
                10 if name == header_names::MCP_METHOD => found.method.add(value),
                8 if name == header_names::MCP_NAME => found.name.add(value),
                _ if name.starts_with(crate::param_headers::HEADER_PREFIX) => found.params = true,
                _ => {}
            }
        }
        found
    }
}

/// The only client notification 2026-07-28 defines.
pub const CANCELLED: &str = "notifications/cancelled";

/// A message that passed validation.
#[derive(Debug, Clone)]
pub enum Validated {
    /// A request for the engine.
    Request(FrontRequest),
    /// `notifications/cancelled` (meaningful on stdio; on HTTP closing the stream cancels).
    Cancelled {
        request_id: Value,
        reason: Option<String>,
    },
    /// Any other notification. 2026-07-28 defines none, and notifications are never answered,
    /// so the fronts ignore it (HTTP still answers 202).
    OtherNotification { method: String },
}

/// Why a message was refused, and how to say so.
#[derive(Debug, Clone, PartialEq)]
pub struct Rejection {
    /// The request id; `None` when there is none to echo (unreadable messages, notifications,
    /// transport-level refusals). The error response then has no `id` member: 2026-07-28's
    /// `RequestId` is a string or an integer, never `null`.
    pub id: Option<Value>,
    pub error: ErrorObject,
    /// The HTTP status of the plain JSON response carrying the error.
    pub http_status: u16,
}

impl Rejection {
    pub fn new(id: Option<Value>, error: ErrorObject, http_status: u16) -> Self {
        Rejection {
            id,
            error,
            http_status,
        }
    }

    /// A message that could not be read at all (400; `-32700` or `-32600`, no id).
    pub fn unreadable(error: &ParseError) -> Self {
        Rejection::new(None, error.to_error(), 400)
    }

    /// The JSON-RPC error response (`JSONRPCErrorResponse`).
    pub fn to_value(&self) -> Value {
        error_response(self.id.as_ref(), &self.error)
    }
}

/// A JSON-RPC error response; `id` is left out when `None` (or `null`).
pub fn error_response(id: Option<&Value>, error: &ErrorObject) -> Value {
    let mut object = Map::new();
    object.insert("jsonrpc".into(), "2.0".into());
    if let Some(id) = id.filter(|id| !id.is_null()) {
        object.insert("id".into(), id.clone());
    }
    object.insert("error".into(), error.to_value());
    Value::Object(object)
}

/// Validates one client message. `headers` is `Some` on Streamable HTTP (the mirrored headers are
/// then required), `None` on stdio. `principal` is recorded in the [`FrontRequest`].
pub fn validate(
    message: &Message,
    headers: Option<&http::HeaderMap>,
    principal: Principal,
) -> Result<Validated, Rejection> {
    validate_owned(message.clone(), headers, principal)
}

/// [`validate`] for a message the caller no longer needs: the request's `params` are moved into
/// the [`FrontRequest`], not copied.
pub fn validate_owned(
    message: Message,
    headers: Option<&http::HeaderMap>,
    principal: Principal,
) -> Result<Validated, Rejection> {
    validate_front(FrontMessage::from(message), headers, principal)
}

/// [`validate_owned`] for a message as the fronts read it ([`FrontMessage::parse`]).
pub fn validate_front(
    message: FrontMessage,
    headers: Option<&http::HeaderMap>,
    principal: Principal,
) -> Result<Validated, Rejection> {
    match message {
        FrontMessage::Request { id, method, params } => {
            let mut validated =
                validate_request(&id, &method, params.as_ref(), headers, principal)?;
            if let (Validated::Request(request), Some(mut params)) = (&mut validated, params) {
                // Checked above: moved out of the text's slots, not copied.
                request.client_info = params.take_client_info().filter(Value::is_object);
                request.id = id;
                request.method = method;
                request.params = params;
            }
            Ok(validated)
        }
        FrontMessage::Other(Message::Notification { method, params }) => {
            validate_notification(&method, params.as_ref())
        }
        FrontMessage::Other(_) => Err(Rejection::new(
            None,
            ErrorObject::new(
                codes::INVALID_REQUEST,
                "unexpected JSON-RPC response: a 2026-07-28 server sends no requests",
            ),
            400,
        )),
    }
}

fn validate_notification(method: &str, params: Option<&Value>) -> Result<Validated, Rejection> {
    if method != CANCELLED {
        return Ok(Validated::OtherNotification {
            method: method.to_owned(),
        });
    }
    let invalid = |message: &str| {
        Rejection::new(
            None,
            ErrorObject::new(codes::INVALID_PARAMS, message.to_owned()),
            400,
        )
    };
    let params = params
        .and_then(Value::as_object)
        .ok_or_else(|| invalid("`notifications/cancelled` needs a `params` object"))?;
    let request_id = params
        .get("requestId")
        .filter(|id| is_request_id(id))
        .ok_or_else(|| {
            invalid("`notifications/cancelled` needs `params.requestId` (a string or an integer)")
        })?;
    Ok(Validated::Cancelled {
        request_id: request_id.clone(),
        reason: params
            .get("reason")
            .and_then(Value::as_str)
            .map(str::to_owned),
    })
}

fn is_request_id(id: &Value) -> bool {
    id.is_string() || id.is_i64() || id.is_u64()
}

fn validate_request(
    id: &Value,
    method: &str,
    params: Option<&Params>,
    headers: Option<&http::HeaderMap>,
    principal: Principal,
) -> Result<Validated, Rejection> {
    let reject = |error: ErrorObject, status: u16| Rejection::new(Some(id.clone()), error, status);
    let invalid_params =
        |message: String| reject(ErrorObject::new(codes::INVALID_PARAMS, message), 400);
    let mismatch = |message: String| reject(ErrorObject::new(codes::HEADER_MISMATCH, message), 400);

    // 1. Method.
    if !CLIENT_REQUEST_METHODS.contains(&method) {
        return Err(unknown_method(method, params, reject));
    }

    // 2. `params._meta`.
    let params_object = match params {
        None => {
            return Err(invalid_params(
                "missing `params` (it must carry `_meta`)".into(),
            ))
        }
        Some(params) if params.is_object() => params,
        Some(_) => return Err(invalid_params("`params` must be an object".into())),
    };
    let meta = match params_object.meta() {
        MetaRef::Absent => return Err(invalid_params("missing `params._meta`".into())),
        MetaRef::Object(meta) => meta,
        MetaRef::NotObject => {
            return Err(invalid_params("`params._meta` must be an object".into()))
        }
    };
    let version = match meta.protocol_version() {
        None => {
            return Err(invalid_params(format!(
                "missing `_meta[\"{}\"]`",
                meta_keys::PROTOCOL_VERSION
            )))
        }
        Some(Ok(version)) => version,
        Some(Err(NotString)) => {
            return Err(invalid_params(format!(
                "`_meta[\"{}\"]` must be a string",
                meta_keys::PROTOCOL_VERSION
            )))
        }
    };
    let capabilities = match meta.client_capabilities() {
        None => {
            return Err(invalid_params(format!(
                "missing `_meta[\"{}\"]`",
                meta_keys::CLIENT_CAPABILITIES
            )))
        }
        Some(CapabilitiesRead::Object(profile)) => profile,
        Some(CapabilitiesRead::NotObject) => {
            return Err(invalid_params(format!(
                "`_meta[\"{}\"]` must be an object",
                meta_keys::CLIENT_CAPABILITIES
            )))
        }
    };

    // 3. `MCP-Protocol-Version` header = `_meta` version (HTTP).
    let found = headers.map(FrontHeaders::read);
    if let Some(found) = &found {
        let header = found
            .protocol_version
            .single("MCP-Protocol-Version")
            .map_err(mismatch)?;
        if header != version {
            return Err(mismatch(format!(
                "`MCP-Protocol-Version` header `{header}` does not match `_meta` protocol version `{version}`"
            )));
        }
    }

    // 4. Version.
    if version != PROTOCOL_VERSION {
        return Err(reject(unsupported_version(version), 400));
    }

    // 5. `Mcp-Method` and `Mcp-Name` (HTTP).
    let name_key = match method {
        "tools/call" | "prompts/get" => Some("name"),
        "resources/read" => Some("uri"),
        _ => None,
    };
    if let Some(found) = &found {
        let header = found.method.single("Mcp-Method").map_err(mismatch)?;
        if header != method {
            return Err(mismatch(format!(
                "`Mcp-Method` header `{header}` does not match body method `{method}`"
            )));
        }
        // A body without a string name/uri is refused below with -32602.
        if let Some(body_name) = name_key.and_then(|key| params_object.get(key)?.as_str()) {
            let header = found.name.single("Mcp-Name").map_err(mismatch)?;
            let decoded = decode_header_value(header)
                .map_err(|problem| mismatch(format!("`Mcp-Name` header {problem}")))?;
            if decoded != body_name {
                return Err(mismatch(format!(
                    "`Mcp-Name` header `{}` does not match body `params.{}` `{}`",
                    decoded.escape_debug(),
                    name_key.unwrap_or_default(),
                    body_name.escape_debug()
                )));
            }
        }
    }

    // 6. Remaining `_meta` and `params` types.
    let log_level = match meta.get(meta_keys::LOG_LEVEL) {
        None => None,
        Some(Value::String(level)) if LOG_LEVELS.contains(&level.as_str()) => Some(level.clone()),
        Some(_) => {
            return Err(invalid_params(format!(
                "`_meta[\"{}\"]` must be one of {}",
                meta_keys::LOG_LEVEL,
                LOG_LEVELS.join(", ")
            )))
        }
    };
    let progress_token = match meta.get(meta_keys::PROGRESS_TOKEN) {
        None => None,
        Some(token @ (Value::String(_) | Value::Number(_))) => Some(token.clone()),
        Some(_) => {
            return Err(invalid_params(
                "`_meta.progressToken` must be a string or a number".into(),
            ))
        }
    };
    if let Some(key) = name_key {
        match params_object.get(key) {
            Some(Value::String(_)) => {}
            None => return Err(invalid_params(format!("`{method}` needs `params.{key}`"))),
            Some(_) => return Err(invalid_params(format!("`params.{key}` must be a string"))),
        }
    }

    Ok(Validated::Request(FrontRequest {
        // Moved in by the caller.
        id: Value::Null,
        method: String::new(),
        params: Params::default(),
        // Left in the params the caller moves in.
        client_capabilities: ClientCapabilities::in_params(capabilities),
        // Moved in by the caller, once checked here.
        client_info: None,
        log_level,
        progress_token,
        principal,
        credentials: crate::credentials::Credentials::none(),
        param_headers: headers
            .zip(found)
            .filter(|_| method == "tools/call")
            .map(|(headers, found)| mirrored_headers(headers, found.params)),
    }))
}

/// The `Mcp-Param-*` headers of a request, for the engine's check against the tool's annotations
/// (which only the engine knows); `any`: whether there is one.
fn mirrored_headers(headers: &http::HeaderMap, any: bool) -> Box<http::HeaderMap> {
    let mut mirrored = http::HeaderMap::new();
    if !any {
        return Box::new(mirrored);
    }
    for (name, value) in headers {
        if name
            .as_str()
            .starts_with(crate::param_headers::HEADER_PREFIX)
        {
            mirrored.append(name.clone(), value.clone());
        }
    }
    Box::new(mirrored)
}

/// `-32601` for anything outside the 2026-07-28 request set; a legacy `initialize` (one that
/// carries `params.protocolVersion`) gets `-32022` naming the supported versions instead, so a
/// legacy client can tell its user why. Both name the supported versions.
fn unknown_method(
    method: &str,
    params: Option<&Params>,
    reject: impl Fn(ErrorObject, u16) -> Rejection,
) -> Rejection {
    if method == "initialize" {
        if let Some(requested) = params
            .and_then(|params| params.get("protocolVersion"))
            .and_then(Value::as_str)
        {
            return reject(unsupported_version(requested), 400);
        }
        return reject(
            ErrorObject::new(
                codes::METHOD_NOT_FOUND,
                format!(
                    "method not found: `initialize` does not exist in MCP {PROTOCOL_VERSION}; \
                     send requests with `_meta` instead (supported versions: {})",
                    SUPPORTED_VERSIONS.join(", ")
                ),
            )
            .with_data(json!({ "supported": SUPPORTED_VERSIONS })),
            404,
        );
    }
    reject(
        ErrorObject::new(
            codes::METHOD_NOT_FOUND,
            format!("method not found: `{}`", method.escape_debug()),
        ),
        404,
    )
}

fn unsupported_version(requested: &str) -> ErrorObject {
    ErrorObject::new(
        codes::UNSUPPORTED_PROTOCOL_VERSION,
        format!(
            "unsupported protocol version `{}` (supported: {})",
            requested.escape_debug(),
            SUPPORTED_VERSIONS.join(", ")
        ),
    )
    .with_data(json!({ "supported": SUPPORTED_VERSIONS, "requested": requested }))
}

#[cfg(test)]
mod tests;
