//! The legacy Python SDK surface (`mcp` 1.x/2.x, standalone `fastmcp` 2.x), rule by rule: which
//! names produce which findings, and their messages. The wording follows the Rust front-end's
//! (`rust/symbols.rs`), with the Python replacements in the help.

use mcp_migrate_rules::RuleId;

/// One finding before it gets a position.
#[derive(Debug, Clone)]
pub struct Finding {
    pub rule: RuleId,
    pub message: String,
    pub help: String,
    pub label: &'static str,
}

fn finding(rule: RuleId, message: impl Into<String>, help: &str, label: &'static str) -> Finding {
    Finding {
        rule,
        message: message.into(),
        help: help.to_owned(),
        label,
    }
}

const MRTR_HELP: &str = "return `input_required` instead: with `mcp` 2.x, an `Elicit[Model]` / \
    `Sample` / `ListRoots` resolver (`mcp.server.mcpserver`), or `InputRequiredResult(input_requests=\
    {...}, request_state=...)` and read `ctx.input_responses` when the client retries";
const SAMPLING_HELP: &str = "call the model provider's API from the server; if the client must \
    sample, ask for it through an MRTR input request (`mcp` 2.x `Sample` resolver or a \
    `CreateMessageRequest` in `InputRequiredResult.input_requests`)";
const ROOTS_HELP: &str = "take paths as tool arguments, resource URIs or server configuration";
const LOGGING_HELP: &str =
    "log to stderr with the standard `logging` module (or export with OpenTelemetry) instead of protocol logging";
const RESOURCE_SUBSCRIPTION_HELP: &str = "serve `subscriptions/listen` instead (resource updates \
    go to the client's listen stream); drop the subscribe/unsubscribe handlers";
const SSE_HELP: &str = "serve Streamable HTTP: `run(transport=\"streamable-http\")` or \
    `streamable_http_app()` (client: `streamable_http_client`)";

/// The sampling finding of a call named `method`.
pub fn sampling_call(method: &str) -> Finding {
    finding(
        RuleId::DeprecatedSampling,
        format!("`{method}` sends `sampling/createMessage`, and sampling is deprecated in MCP 2026-07-28"),
        SAMPLING_HELP,
        "sampling request",
    )
}

pub fn roots_call(method: &str) -> Finding {
    finding(
        RuleId::DeprecatedRoots,
        format!("`{method}` sends `roots/list`, and roots are deprecated in MCP 2026-07-28"),
        ROOTS_HELP,
        "roots request",
    )
}

pub fn server_request(method: &str, wire: &str) -> Finding {
    finding(
        RuleId::ServerInitiatedRequest,
        format!("`{method}` sends `{wire}` to the client mid-call and awaits the reply; MCP 2026-07-28 servers send no requests"),
        MRTR_HELP,
        "server-to-client request",
    )
}

/// `ctx.info(..)` and its siblings on an SDK `Context`.
pub fn context_log(method: &str) -> Finding {
    finding(
        RuleId::DeprecatedLogging,
        format!("`Context.{method}` sends `notifications/message`, and protocol logging is deprecated in MCP 2026-07-28"),
        LOGGING_HELP,
        "log notification",
    )
}

pub fn send_log_message() -> Finding {
    finding(
        RuleId::DeprecatedLogging,
        "`send_log_message` sends `notifications/message`, and protocol logging is deprecated in MCP 2026-07-28",
        LOGGING_HELP,
        "log notification",
    )
}

/// `session.set_logging_level(..)` (a client asking for `logging/setLevel`).
pub fn set_logging_level_call() -> Finding {
    finding(
        RuleId::DeprecatedLogging,
        "`set_logging_level` sends `logging/setLevel`, which MCP 2026-07-28 removed",
        "send the level per request in `_meta[\"io.modelcontextprotocol/logLevel\"]` (`mcp` 2.x: `Client(log_level=...)`), or log locally",
        "logging request",
    )
}

/// A handler registration: `@server.set_logging_level()` and the like.
pub fn handler(registration: &str) -> Option<Finding> {
    Some(match registration {
        "set_logging_level" | "on_set_logging_level" => finding(
            RuleId::DeprecatedLogging,
            format!("`{registration}` registers a `logging/setLevel` handler, which MCP 2026-07-28 removed"),
            "read the level per request from `_meta[\"io.modelcontextprotocol/logLevel\"]`, or log to stderr",
            "removed request handler",
        ),
        "subscribe_resource" | "unsubscribe_resource" | "on_subscribe_resource"
        | "on_unsubscribe_resource" => {
            let method = if registration.contains("unsubscribe") {
                "unsubscribe"
            } else {
                "subscribe"
            };
            finding(
                RuleId::LegacyResourceSubscription,
                format!("`{registration}` registers a `resources/{method}` handler, which MCP 2026-07-28 removed"),
                RESOURCE_SUBSCRIPTION_HELP,
                "removed request handler",
            )
        }
        "on_roots_list_changed" => finding(
            RuleId::DeprecatedRoots,
            "`on_roots_list_changed` waits for `notifications/roots/list_changed`, which MCP 2026-07-28 removed",
            ROOTS_HELP,
            "removed notification handler",
        ),
        "logging_callback" => finding(
            RuleId::DeprecatedLogging,
            "`logging_callback` receives `notifications/message`, and protocol logging is deprecated in MCP 2026-07-28",
            "servers should log locally; request per-call logs with `_meta[\"io.modelcontextprotocol/logLevel\"]` if you must",
            "deprecated notification handler",
        ),
        _ => return None,
    })
}

/// `session.subscribe_resource(uri)` from a client.
pub fn subscription_call(method: &str) -> Finding {
    let wire = if method.starts_with("un") {
        "unsubscribe"
    } else {
        "subscribe"
    };
    finding(
        RuleId::LegacyResourceSubscription,
        format!("`{method}` sends `resources/{wire}`, which MCP 2026-07-28 removed"),
        RESOURCE_SUBSCRIPTION_HELP,
        "removed request",
    )
}

pub fn send_elicit_complete() -> Finding {
    finding(
        RuleId::ElicitationCompleteNotification,
        "`send_elicit_complete` sends `notifications/elicitation/complete`, which MCP 2026-07-28 removed",
        "drop it: the client learns the outcome by retrying; put your own correlation id in the sealed `request_state`",
        "removed notification",
    )
}

pub fn roots_list_changed_call() -> Finding {
    finding(
        RuleId::DeprecatedRoots,
        "`send_roots_list_changed` sends `notifications/roots/list_changed`, which MCP 2026-07-28 removed",
        ROOTS_HELP,
        "removed notification",
    )
}

/// The legacy names of the SDK's modules and types, by their last segment, reported wherever a
/// resolved name ends with one (a use, an annotation, a `request_handlers[...]` key, an import).
pub const SYMBOLS: &[(&str, RuleId)] = &[
    ("SubscribeRequest", RuleId::LegacyResourceSubscription),
    ("UnsubscribeRequest", RuleId::LegacyResourceSubscription),
    ("SubscribeRequestParams", RuleId::LegacyResourceSubscription),
    (
        "UnsubscribeRequestParams",
        RuleId::LegacyResourceSubscription,
    ),
    ("SetLevelRequest", RuleId::DeprecatedLogging),
    ("SetLevelRequestParams", RuleId::DeprecatedLogging),
    ("LoggingMessageNotification", RuleId::DeprecatedLogging),
    (
        "LoggingMessageNotificationParams",
        RuleId::DeprecatedLogging,
    ),
    ("RootsListChangedNotification", RuleId::DeprecatedRoots),
    (
        "ElicitCompleteNotification",
        RuleId::ElicitationCompleteNotification,
    ),
    (
        "ElicitCompleteNotificationParams",
        RuleId::ElicitationCompleteNotification,
    ),
    (
        "UrlElicitationRequiredError",
        RuleId::ServerInitiatedRequest,
    ),
    ("URL_ELICITATION_REQUIRED", RuleId::ServerInitiatedRequest),
    ("SseServerTransport", RuleId::LegacySseTransport),
    ("sse_client", RuleId::LegacySseTransport),
    ("SSETransport", RuleId::LegacySseTransport),
];

/// The finding of a resolved SDK name whose last segment is one of [`SYMBOLS`]; `qualified` is
/// the whole dotted name (`mcp.types.SubscribeRequest`).
pub fn symbol(qualified: &str) -> Option<Finding> {
    let last = qualified.rsplit('.').next().unwrap_or(qualified);
    let (_, rule) = SYMBOLS.iter().find(|(name, _)| *name == last)?;
    Some(match rule {
        RuleId::LegacyResourceSubscription => finding(
            *rule,
            format!("`{last}` belongs to `resources/subscribe` / `resources/unsubscribe`, which MCP 2026-07-28 removed"),
            RESOURCE_SUBSCRIPTION_HELP,
            "removed request",
        ),
        RuleId::DeprecatedLogging => finding(
            *rule,
            format!("`{last}` is protocol logging, deprecated in MCP 2026-07-28"),
            LOGGING_HELP,
            "protocol logging",
        ),
        RuleId::DeprecatedRoots => finding(
            *rule,
            format!("`{last}` is `notifications/roots/list_changed`, which MCP 2026-07-28 removed"),
            ROOTS_HELP,
            "roots",
        ),
        RuleId::ElicitationCompleteNotification => elicitation_complete(last),
        RuleId::ServerInitiatedRequest => url_elicitation_error(&format!("`{last}`")),
        RuleId::LegacySseTransport => sse(last),
        _ => return None,
    })
}

/// The SDK modules of the HTTP+SSE transport (`from mcp.server.sse import ...`).
pub const SSE_MODULES: &[&str] = &["mcp.server.sse", "mcp.client.sse"];

pub fn sse(name: &str) -> Finding {
    finding(
        RuleId::LegacySseTransport,
        format!(
            "`{name}` is the HTTP+SSE transport, deprecated since MCP 2025-03-26 and in 2026-07-28"
        ),
        SSE_HELP,
        "legacy transport",
    )
}

/// `run(transport="sse")` and its kin.
pub fn sse_argument(method: &str) -> Finding {
    finding(
        RuleId::LegacySseTransport,
        format!("`{method}` with transport `\"sse\"` serves the HTTP+SSE transport, deprecated since MCP 2025-03-26 and in 2026-07-28"),
        SSE_HELP,
        "legacy transport",
    )
}

pub fn url_elicitation_error(what: &str) -> Finding {
    let message = if what == "-32042" {
        "error code -32042 is the legacy URL-elicitation flow; MCP 2026-07-28 forbids it".to_owned()
    } else {
        format!("{what} (-32042) is the legacy URL-elicitation flow; MCP 2026-07-28 forbids code -32042")
    };
    finding(
        RuleId::ServerInitiatedRequest,
        message,
        "return `input_required` with a URL-mode `ElicitRequest` in `InputRequiredResult.input_requests` instead",
        "legacy URL elicitation error",
    )
}

fn elicitation_complete(name: &str) -> Finding {
    finding(
        RuleId::ElicitationCompleteNotification,
        format!("`{name}` belongs to `notifications/elicitation/complete`, which MCP 2026-07-28 removed"),
        "drop the notification: the client retries when the user is done; correlate through the sealed `request_state`",
        "removed notification",
    )
}

/// The legacy server-to-client method a request type names, if any.
pub fn request_type_method(last: &str) -> Option<&'static str> {
    match last {
        "CreateMessageRequest" | "CreateMessageRequestParams" => Some("sampling/createMessage"),
        "ListRootsRequest" => Some("roots/list"),
        "ElicitRequest"
        | "ElicitRequestParams"
        | "ElicitRequestFormParams"
        | "ElicitRequestURLParams" => Some("elicitation/create"),
        _ => None,
    }
}

/// `session.send_request(request, ...)` with a legacy server-to-client request.
pub fn generic_request(method: &str, wire: &str) -> Vec<Finding> {
    let mut out = match wire {
        "sampling/createMessage" => vec![sampling_call(method)],
        "roots/list" => vec![roots_call(method)],
        _ => Vec::new(),
    };
    out.push(server_request(method, wire));
    out
}

/// A JSON-RPC method name written as a string literal where a method goes. `envelope`: the
/// literal is the `method` of a dict that also has `jsonrpc` or `id` (a hand-built request).
pub fn method_literal(method: &str, envelope: bool) -> Vec<Finding> {
    let mut out = Vec::new();
    match method {
        "sampling/createMessage" => out.push(finding(
            RuleId::DeprecatedSampling,
            "`sampling/createMessage` is deprecated in MCP 2026-07-28",
            SAMPLING_HELP,
            "sampling request",
        )),
        "roots/list" | "notifications/roots/list_changed" => out.push(finding(
            RuleId::DeprecatedRoots,
            format!("`{method}` is deprecated in MCP 2026-07-28"),
            ROOTS_HELP,
            "roots",
        )),
        "notifications/message" | "logging/setLevel" => out.push(finding(
            RuleId::DeprecatedLogging,
            format!("`{method}` is protocol logging, deprecated in MCP 2026-07-28"),
            LOGGING_HELP,
            "protocol logging",
        )),
        "notifications/elicitation/complete" => out.push(elicitation_complete(method)),
        "resources/subscribe" | "resources/unsubscribe" => out.push(finding(
            RuleId::LegacyResourceSubscription,
            format!("`{method}` was removed in MCP 2026-07-28"),
            RESOURCE_SUBSCRIPTION_HELP,
            "removed request",
        )),
        _ => {}
    }
    if envelope
        && matches!(
            method,
            "elicitation/create" | "sampling/createMessage" | "roots/list"
        )
    {
        out.push(finding(
            RuleId::ServerInitiatedRequest,
            format!("a hand-built `{method}` JSON-RPC request to the client; MCP 2026-07-28 servers send no requests"),
            "put the request (without `jsonrpc` and `id`) in the `input_requests` of an `InputRequiredResult`",
            "server-to-client request",
        ));
    }
    out
}

/// `include_context="thisServer"` (or `includeContext`, or a dict key).
pub fn include_context_literal(value: &str) -> Option<Finding> {
    matches!(value, "thisServer" | "allServers").then(|| {
        finding(
            RuleId::DeprecatedIncludeContext,
            format!("the `includeContext` value `\"{value}\"` is deprecated in MCP 2026-07-28"),
            "omit `include_context` or pass `\"none\"`",
            "deprecated `includeContext` value",
        )
    })
}

pub fn insecure_url(problem: &str) -> Finding {
    finding(
        RuleId::InsecureElicitationUrl,
        format!("insecure URL-mode elicitation: {problem}"),
        "use `https://` and keep credentials, tokens and session ids out of the URL (bind them server-side)",
        "insecure URL",
    )
}

pub fn secret_property(name: &str) -> Finding {
    finding(
        RuleId::FormElicitationSecret,
        format!(
            "form-mode elicitation asks for `{name}`; MCP forbids requesting secrets in form mode"
        ),
        "collect secrets out of band: a URL-mode elicitation to your own HTTPS page, or OAuth",
        "secret requested in a form",
    )
}

pub fn secret_field(owner: &str, field: &str) -> Finding {
    finding(
        RuleId::FormElicitationSecret,
        format!("`{owner}` is elicited as a form and its field `{field}` asks for a secret"),
        "collect secrets out of band: a URL-mode elicitation to your own HTTPS page, or OAuth",
        "secret requested in a form",
    )
}

pub fn input_required_outside(what: &str, request: &str) -> Finding {
    finding(
        RuleId::InputRequiredOutsideMrtr,
        format!(
            "{what} answering `{request}`: only `tools/call`, `resources/read` and `prompts/get` may answer `input_required`"
        ),
        "return a complete result here, or ask for the input inside the tool, prompt or resource handler that needs it",
        "`input_required` outside MRTR",
    )
}

pub fn unsigned_state() -> Finding {
    finding(
        RuleId::UnsignedRequestState,
        "`request_state` is built from plain data with no seal or MAC; clients can forge it",
        "seal it: serve through `MCPServer` (it seals `request_state` by default, \
         `RequestStateSecurity(keys=[...])` for several instances), or wire a \
         `RequestStateBoundary` into the low-level `Server`",
        "unsigned state",
    )
}

pub fn short_state_key(length: usize) -> Finding {
    finding(
        RuleId::UnsignedRequestState,
        format!("a {length}-byte literal `request_state` key: keys must be at least 32 random bytes and kept out of source"),
        "load a 32-byte random key from configuration or a secret store",
        "short literal key",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_symbol_has_a_finding_of_its_rule() {
        for (name, rule) in SYMBOLS {
            let qualified = format!("mcp.types.{name}");
            assert_eq!(symbol(&qualified).map(|f| f.rule), Some(*rule), "{name}");
        }
        for name in ["mcp.types.CallToolRequest", "mcp.server.fastmcp.Context"] {
            assert!(symbol(name).is_none(), "{name}");
        }
    }

    #[test]
    fn handler_registrations_map_to_their_rules() {
        let rule = |name: &str| handler(name).map(|f| f.rule);
        assert_eq!(
            rule("subscribe_resource"),
            Some(RuleId::LegacyResourceSubscription)
        );
        assert_eq!(
            rule("on_set_logging_level"),
            Some(RuleId::DeprecatedLogging)
        );
        assert_eq!(rule("on_roots_list_changed"), Some(RuleId::DeprecatedRoots));
        assert_eq!(rule("call_tool"), None);
    }
}
