//! The legacy rmcp API surface, rule by rule, as lookup
//! tables from a syntax node's name to the findings it produces, with their messages.

use mcp_migrate_rules::RuleId;

use super::imports::Resolved;

/// One finding before it gets a position.
#[derive(Debug, Clone)]
pub struct Finding {
    pub rule: RuleId,
    pub message: String,
    pub help: Option<String>,
    pub label: Option<String>,
}

fn finding(rule: RuleId, message: impl Into<String>, help: &str, label: &str) -> Finding {
    Finding {
        rule,
        message: message.into(),
        help: Some(help.to_owned()),
        label: Some(label.to_owned()),
    }
}

const MRTR_HELP: &str = "return `input_required` instead: rmcp 3 `CallToolResponse::InputRequired(\
    InputRequiredResult::new(Some(input_requests), Some(sealed_state)))`, then read \
    `input_responses` when the client retries";
/// A request with no originating request: no MRTR round can carry it.
pub const NO_ORIGIN_HELP: &str = "no MRTR round can carry a request that answers no client \
    request: ask for the input in a tool call's arguments (or as an input request of the tool \
    call that starts the task), or drop the feature";
const SAMPLING_HELP: &str = "call the model provider's API from the server; if the client must \
    sample, ask for it through an MRTR input request (`InputRequest::CreateMessage`)";
const ROOTS_HELP: &str = "take paths as tool arguments, resource URIs or server configuration";
const LOGGING_HELP: &str =
    "log to stderr with `tracing` (or export with OpenTelemetry) instead of protocol logging";

fn sampling_call(method: &str) -> Finding {
    finding(
        RuleId::DeprecatedSampling,
        format!("`{method}` sends `sampling/createMessage`, and sampling is deprecated in MCP 2026-07-28"),
        SAMPLING_HELP,
        "sampling request",
    )
}

fn roots_call(method: &str) -> Finding {
    finding(
        RuleId::DeprecatedRoots,
        format!("`{method}` sends `roots/list`, and roots are deprecated in MCP 2026-07-28"),
        ROOTS_HELP,
        "roots request",
    )
}

fn server_request(method: &str, wire: &str) -> Finding {
    finding(
        RuleId::ServerInitiatedRequest,
        format!("`{method}` sends `{wire}` to the client mid-call and awaits the reply; MCP 2026-07-28 servers send no requests"),
        MRTR_HELP,
        "server-to-client request",
    )
}

/// Which receivers a method-name rule applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Receiver {
    /// Only a receiver recognised as an rmcp peer (the name is too common otherwise).
    Peer,
    /// Any receiver, in a crate that uses the SDK (the name is distinctive).
    Any,
}

/// A method-call rule.
pub struct MethodEntry {
    pub receiver: Receiver,
    pub findings: fn() -> Vec<Finding>,
    /// `elicit::<T>`: `T` is a typed elicitation form.
    pub typed_elicitation: bool,
    /// The index of the URL argument checked by `insecure-elicitation-url`.
    pub url_argument: Option<usize>,
}

const fn entry(receiver: Receiver, findings: fn() -> Vec<Finding>) -> MethodEntry {
    MethodEntry {
        receiver,
        findings,
        typed_elicitation: false,
        url_argument: None,
    }
}

/// Every method name [`method`] knows.
pub const METHOD_NAMES: &[&str] = &[
    "create_message",
    "list_roots",
    "elicit",
    "elicit_with_timeout",
    "create_elicitation",
    "create_elicitation_with_timeout",
    "elicit_url",
    "elicit_url_with_timeout",
    "set_level",
    "notify_logging_message",
    "notify_url_elicitation_completed",
    "notify_roots_list_changed",
    "enable_logging",
    "enable_logging_with",
    "enable_sampling",
    "enable_sampling_with",
    "enable_sampling_tools",
    "enable_sampling_context",
    "enable_roots",
    "enable_roots_with",
    "enable_roots_list_changed",
    "subscribe",
    "unsubscribe",
];

/// The rule entry for a method name, if the name is part of the legacy surface.
pub fn method(name: &str) -> Option<MethodEntry> {
    use Receiver::{Any, Peer};
    Some(match name {
        "create_message" => entry(Peer, || {
            vec![
                sampling_call("create_message"),
                server_request("create_message", "sampling/createMessage"),
            ]
        }),
        "list_roots" => entry(Peer, || {
            vec![
                roots_call("list_roots"),
                server_request("list_roots", "roots/list"),
            ]
        }),
        "elicit" | "elicit_with_timeout" => MethodEntry {
            typed_elicitation: true,
            ..entry(Peer, || {
                vec![server_request("elicit", "elicitation/create")]
            })
        },
        "create_elicitation" => entry(Any, || {
            vec![server_request("create_elicitation", "elicitation/create")]
        }),
        "create_elicitation_with_timeout" => entry(Any, || {
            vec![server_request(
                "create_elicitation_with_timeout",
                "elicitation/create",
            )]
        }),
        "elicit_url" | "elicit_url_with_timeout" => MethodEntry {
            url_argument: Some(1),
            ..entry(Any, || {
                vec![server_request("elicit_url", "elicitation/create")]
            })
        },
        "set_level" => entry(Peer, || {
            vec![finding(
                RuleId::DeprecatedLogging,
                "`set_level` sends `logging/setLevel`, which MCP 2026-07-28 removed",
                "send the level per request in `_meta[\"io.modelcontextprotocol/logLevel\"]`, or log locally",
                "logging request",
            )]
        }),
        "notify_logging_message" => entry(Any, || {
            vec![finding(
                RuleId::DeprecatedLogging,
                "`notify_logging_message` sends `notifications/message`, and protocol logging is deprecated in MCP 2026-07-28",
                LOGGING_HELP,
                "log notification",
            )]
        }),
        "notify_url_elicitation_completed" => entry(Any, || {
            vec![finding(
                RuleId::ElicitationCompleteNotification,
                "`notify_url_elicitation_completed` sends `notifications/elicitation/complete`, which MCP 2026-07-28 removed",
                "drop it: the client learns the outcome by retrying; put your own correlation id in the sealed `requestState`",
                "removed notification",
            )]
        }),
        "notify_roots_list_changed" => entry(Any, || {
            vec![finding(
                RuleId::DeprecatedRoots,
                "`notify_roots_list_changed` sends `notifications/roots/list_changed`, which MCP 2026-07-28 removed",
                ROOTS_HELP,
                "removed notification",
            )]
        }),
        "enable_logging" | "enable_logging_with" => entry(Any, || {
            vec![capability(RuleId::DeprecatedLogging, "logging")]
        }),
        "enable_sampling" | "enable_sampling_with" | "enable_sampling_tools" => entry(Any, || {
            vec![capability(RuleId::DeprecatedSampling, "sampling")]
        }),
        "enable_sampling_context" => entry(Any, || {
            vec![finding(
                RuleId::DeprecatedIncludeContext,
                "`enable_sampling_context` advertises `includeContext` support, which MCP 2026-07-28 deprecates",
                "drop the `context` sampling capability; servers should send `includeContext: \"none\"` or omit it",
                "deprecated capability",
            )]
        }),
        "enable_roots" | "enable_roots_with" | "enable_roots_list_changed" => {
            entry(Any, || vec![capability(RuleId::DeprecatedRoots, "roots")])
        }
        "subscribe" => entry(Peer, || vec![resource_subscription_call("subscribe")]),
        "unsubscribe" => entry(Peer, || vec![resource_subscription_call("unsubscribe")]),
        _ => return None,
    })
}

fn capability(rule: RuleId, name: &str) -> Finding {
    let help = match rule {
        RuleId::DeprecatedLogging => LOGGING_HELP,
        RuleId::DeprecatedSampling => SAMPLING_HELP,
        _ => ROOTS_HELP,
    };
    finding(
        rule,
        format!("the `{name}` capability is deprecated in MCP 2026-07-28"),
        help,
        "deprecated capability",
    )
}

/// A capability declared in a struct literal: `ServerCapabilities { logging: Some(..), .. }`.
pub fn capability_field(struct_name: &str, field: &str) -> Option<Finding> {
    match (struct_name, field) {
        ("ServerCapabilities", "logging") => Some(capability(RuleId::DeprecatedLogging, "logging")),
        ("ClientCapabilities", "sampling") => {
            Some(capability(RuleId::DeprecatedSampling, "sampling"))
        }
        ("ClientCapabilities", "roots") => Some(capability(RuleId::DeprecatedRoots, "roots")),
        ("SamplingCapability", "context") => Some(finding(
            RuleId::DeprecatedIncludeContext,
            "the sampling `context` capability advertises `includeContext`, which MCP 2026-07-28 deprecates",
            "drop the `context` sampling capability",
            "deprecated capability",
        )),
        _ => None,
    }
}

/// A trait method implemented in `impl ServerHandler` / `impl ClientHandler`.
pub fn handler_method(server: bool, client: bool, name: &str) -> Option<Finding> {
    match name {
        "set_level" if server => Some(finding(
            RuleId::DeprecatedLogging,
            "`ServerHandler::set_level` answers `logging/setLevel`, which MCP 2026-07-28 removed",
            "read the level per request from `_meta[\"io.modelcontextprotocol/logLevel\"]`, or log to stderr",
            "removed request handler",
        )),
        "on_roots_list_changed" if server => Some(finding(
            RuleId::DeprecatedRoots,
            "`ServerHandler::on_roots_list_changed` waits for `notifications/roots/list_changed`, which MCP 2026-07-28 removed",
            ROOTS_HELP,
            "removed notification handler",
        )),
        "subscribe" | "unsubscribe" if server => Some(finding(
            RuleId::LegacyResourceSubscription,
            format!("`ServerHandler::{name}` answers `resources/{name}`, which MCP 2026-07-28 removed"),
            RESOURCE_SUBSCRIPTION_HELP,
            "removed request handler",
        )),
        "on_logging_message" if client => Some(finding(
            RuleId::DeprecatedLogging,
            "`ClientHandler::on_logging_message` receives `notifications/message`, and protocol logging is deprecated in MCP 2026-07-28",
            "servers should log locally; request per-call logs with `_meta[\"io.modelcontextprotocol/logLevel\"]` if you must",
            "deprecated notification handler",
        )),
        "on_url_elicitation_notification_complete" if client => Some(finding(
            RuleId::ElicitationCompleteNotification,
            "`ClientHandler::on_url_elicitation_notification_complete` waits for `notifications/elicitation/complete`, which MCP 2026-07-28 removed",
            "retry the original request once the user is done; the server answers from its sealed `requestState`",
            "removed notification handler",
        )),
        _ => None,
    }
}

/// An expression path: enum variants and associated items of the legacy surface.
pub fn path(resolved: &Resolved) -> Vec<Finding> {
    let tail: Vec<&str> = resolved.tail(2).iter().map(String::as_str).collect();
    let mut out = Vec::new();
    match tail.as_slice() {
        ["ContextInclusion", variant @ ("ThisServer" | "AllServers")] => out.push(finding(
            RuleId::DeprecatedIncludeContext,
            format!("`ContextInclusion::{variant}` is deprecated in MCP 2026-07-28"),
            "omit `include_context` or use `ContextInclusion::None`",
            "deprecated `includeContext` value",
        )),
        ["ServerRequest", "CreateMessageRequest"] => {
            out.push(sampling_variant(&tail.join("::")));
            out.push(server_request_variant(&tail.join("::"), "sampling/createMessage"));
        }
        ["ServerRequest", "ListRootsRequest"] => {
            out.push(roots_variant(&tail.join("::")));
            out.push(server_request_variant(&tail.join("::"), "roots/list"));
        }
        ["ServerRequest", "ElicitRequest" | "CreateElicitationRequest"] => {
            out.push(server_request_variant(&tail.join("::"), "elicitation/create"));
        }
        ["InputRequest", "CreateMessage"] => {
            out.push(finding(
                RuleId::DeprecatedSampling,
                format!("`{}` asks the client to sample, and sampling is deprecated in MCP 2026-07-28", tail.join("::")),
                SAMPLING_HELP,
                "sampling request",
            ))
        }
        ["InputRequest", "ListRoots"] | ["ClientNotification", "RootsListChangedNotification"] => {
            out.push(roots_variant(&tail.join("::")))
        }
        ["ClientRequest", variant @ ("SubscribeRequest" | "UnsubscribeRequest")] => {
            out.push(resource_subscription_item(&format!("ClientRequest::{variant}")))
        }
        ["ServerNotification", "LoggingMessageNotification"] => out.push(finding(
            RuleId::DeprecatedLogging,
            "`ServerNotification::LoggingMessageNotification` is protocol logging, deprecated in MCP 2026-07-28",
            LOGGING_HELP,
            "log notification",
        )),
        ["ServerNotification", "ElicitationCompletionNotification" | "ElicitationCompleteNotification"] => {
            out.push(elicitation_complete(&tail.join("::")))
        }
        ["ErrorCode", "URL_ELICITATION_REQUIRED"] | ["ErrorData", "url_elicitation_required"] => {
            out.push(finding(
                RuleId::ServerInitiatedRequest,
                format!("`{}` (-32042) is the legacy URL-elicitation flow; MCP 2026-07-28 forbids code -32042", tail.join("::")),
                "return `input_required` with a URL-mode `InputRequest::Elicitation` instead",
                "legacy URL elicitation error",
            ))
        }
        ["RequestStateCodec", ctor @ ("new" | "new_unchecked")] => out.push(finding(
            RuleId::UnsignedRequestState,
            format!("`RequestStateCodec::{ctor}` accepts keys too short to protect `requestState`"),
            "use `RequestStateCodec::try_new(key)` with a key of at least 32 random bytes from configuration",
            "weak request-state key",
        )),
        ["InputRequiredResult", "new" | "from_input_requests" | "from_request_state"]
        | ["ServerResult", "InputRequiredResult"] => out.push(Finding {
            rule: RuleId::InputRequiredOutsideMrtr,
            message: String::new(),
            help: None,
            label: None,
        }),
        _ => {}
    }
    // An expression that names a legacy item constructs or calls it (`SseServer::serve(..)`,
    // `SseClientTransport::start(..)`), through an import or not: a use.
    if out.is_empty() {
        out.extend(symbol(&resolved.segments));
    }
    out
}

/// The JSON-RPC message enums. A pattern that names one of their variants routes, labels or
/// refuses a message; it does not use the feature.
pub const MESSAGE_ENUMS: &[&str] = &[
    "ServerRequest",
    "ClientRequest",
    "ServerNotification",
    "ClientNotification",
];

fn sampling_variant(name: &str) -> Finding {
    finding(
        RuleId::DeprecatedSampling,
        format!("`{name}` asks the client to sample, and sampling is deprecated in MCP 2026-07-28"),
        SAMPLING_HELP,
        "sampling request",
    )
}

fn roots_variant(name: &str) -> Finding {
    finding(
        RuleId::DeprecatedRoots,
        format!("`{name}` uses roots, which are deprecated in MCP 2026-07-28"),
        ROOTS_HELP,
        "roots",
    )
}

fn server_request_variant(name: &str, wire: &str) -> Finding {
    finding(
        RuleId::ServerInitiatedRequest,
        format!(
            "`{name}` is a `{wire}` request to the client; MCP 2026-07-28 servers send no requests"
        ),
        MRTR_HELP,
        "server-to-client request",
    )
}

/// The legacy server-to-client method that the argument of `peer.send_request(..)` builds, if
/// any: a `ServerRequest` variant or a method-name literal anywhere in it.
pub fn sent_request_method(arg: &syn::Expr) -> Option<&'static str> {
    fn scan(tokens: proc_macro2::TokenStream) -> Option<&'static str> {
        tokens.into_iter().find_map(|tree| match tree {
            proc_macro2::TokenTree::Group(group) => scan(group.stream()),
            proc_macro2::TokenTree::Ident(ident) => {
                let name = ident.to_string();
                match name.as_str() {
                    "CreateMessageRequest" | "CreateMessageRequestParams" => {
                        Some("sampling/createMessage")
                    }
                    "ListRootsRequest" => Some("roots/list"),
                    "ElicitRequest"
                    | "CreateElicitationRequest"
                    | "CreateElicitationRequestParams" => Some("elicitation/create"),
                    _ => None,
                }
            }
            proc_macro2::TokenTree::Literal(literal) => {
                let text = literal.to_string();
                ["sampling/createMessage", "roots/list", "elicitation/create"]
                    .into_iter()
                    .find(|method| text == format!("\"{method}\""))
            }
            proc_macro2::TokenTree::Punct(_) => None,
        })
    }
    scan(quote::ToTokens::to_token_stream(arg))
}

/// `peer.send_request(..)` with a legacy server-to-client request.
pub fn generic_request(method: &str, wire: &str) -> Vec<Finding> {
    let mut out = match wire {
        "sampling/createMessage" => vec![sampling_call(method)],
        "roots/list" => vec![roots_call(method)],
        _ => Vec::new(),
    };
    out.push(server_request(method, wire));
    out
}

/// A `use` of a legacy module or type, reported once at the import.
pub fn imported_symbol(path: &[String]) -> Option<Finding> {
    symbol(path)
}

fn symbol(path: &[String]) -> Option<Finding> {
    // The legacy item may sit anywhere in the path: `rmcp::model::ElicitationCompletionNotification::new`.
    path.iter().rev().find_map(|segment| symbol_name(segment))
}

/// The legacy SDK items reported by name wherever a path names them, with their rule (see
/// [`symbol_name`]).
pub const SYMBOLS: &[(&str, RuleId)] = &[
    (
        "ElicitationCompletionNotification",
        RuleId::ElicitationCompleteNotification,
    ),
    (
        "ElicitationCompleteNotification",
        RuleId::ElicitationCompleteNotification,
    ),
    (
        "ElicitationResponseNotificationParam",
        RuleId::ElicitationCompleteNotification,
    ),
    ("SubscribeRequest", RuleId::LegacyResourceSubscription),
    ("UnsubscribeRequest", RuleId::LegacyResourceSubscription),
    ("SubscribeRequestParams", RuleId::LegacyResourceSubscription),
    (
        "UnsubscribeRequestParams",
        RuleId::LegacyResourceSubscription,
    ),
    ("SubscribeRequestParam", RuleId::LegacyResourceSubscription),
    (
        "UnsubscribeRequestParam",
        RuleId::LegacyResourceSubscription,
    ),
    ("SubscribeRequestMethod", RuleId::LegacyResourceSubscription),
    (
        "UnsubscribeRequestMethod",
        RuleId::LegacyResourceSubscription,
    ),
    ("SseServer", RuleId::LegacySseTransport),
    ("SseServerConfig", RuleId::LegacySseTransport),
    ("SseServerTransport", RuleId::LegacySseTransport),
    ("SseClientTransport", RuleId::LegacySseTransport),
    ("SseTransport", RuleId::LegacySseTransport),
    ("SseClientConfig", RuleId::LegacySseTransport),
    ("SseClient", RuleId::LegacySseTransport),
    ("sse_server", RuleId::LegacySseTransport),
    ("sse_client", RuleId::LegacySseTransport),
];

/// The finding for a path segment that names one of [`SYMBOLS`].
fn symbol_name(last: &str) -> Option<Finding> {
    let (_, rule) = SYMBOLS.iter().find(|(name, _)| *name == last)?;
    match rule {
        RuleId::ElicitationCompleteNotification => Some(elicitation_complete(last)),
        RuleId::LegacyResourceSubscription => Some(resource_subscription_item(last)),
        RuleId::LegacySseTransport => Some(sse(last)),
        // A rule without a message for a named item (the test below checks every entry).
        _ => None,
    }
}

/// The legacy transports' own types, followed through a wrapper crate's re-export.
pub const SSE_TRANSPORT_TYPES: &[&str] = &["SseServer", "SseClientTransport", "SseTransport"];

fn sse(name: &str) -> Finding {
    finding(
        RuleId::LegacySseTransport,
        format!("`{name}` is the HTTP+SSE transport, deprecated since MCP 2025-03-26 and in 2026-07-28"),
        "serve Streamable HTTP with `StreamableHttpService` (client: `StreamableHttpClientTransport`)",
        "legacy transport",
    )
}

const RESOURCE_SUBSCRIPTION_HELP: &str = "serve `subscriptions/listen` instead (rmcp 3.x: `ServerHandler::accepted_subscription_filter` + `listen`; clients: `Peer::listen` with `resourceSubscriptions`)";

fn resource_subscription_call(method: &str) -> Finding {
    finding(
        RuleId::LegacyResourceSubscription,
        format!("`{method}` sends `resources/{method}`, which MCP 2026-07-28 removed"),
        RESOURCE_SUBSCRIPTION_HELP,
        "removed request",
    )
}

fn resource_subscription_item(name: &str) -> Finding {
    finding(
        RuleId::LegacyResourceSubscription,
        format!("`{name}` belongs to `resources/subscribe` / `resources/unsubscribe`, which MCP 2026-07-28 removed"),
        RESOURCE_SUBSCRIPTION_HELP,
        "removed request",
    )
}

fn elicitation_complete(name: &str) -> Finding {
    finding(
        RuleId::ElicitationCompleteNotification,
        format!("`{name}` belongs to `notifications/elicitation/complete`, which MCP 2026-07-28 removed"),
        "drop the notification: the client retries when the user is done; correlate through the sealed `requestState`",
        "removed notification",
    )
}

/// A JSON-RPC method name written as a string literal. `envelope`: the literal is the `method`
/// of a JSON object that also has `jsonrpc` or `id`, i.e. a hand-built request on the wire.
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
            "put the request (without `jsonrpc` and `id`) in the `inputRequests` of an `input_required` result",
            "server-to-client request",
        ));
    }
    out
}

/// `"includeContext": "thisServer"` in hand-written JSON.
pub fn include_context_literal(value: &str) -> Option<Finding> {
    matches!(value, "thisServer" | "allServers").then(|| {
        finding(
            RuleId::DeprecatedIncludeContext,
            format!("`includeContext: \"{value}\"` is deprecated in MCP 2026-07-28"),
            "omit `includeContext` or send `\"none\"`",
            "deprecated `includeContext` value",
        )
    })
}

pub fn input_required_outside(what: &str, place: &str) -> Finding {
    finding(
        RuleId::InputRequiredOutsideMrtr,
        format!("{what} in {place}: only `tools/call`, `resources/read` and `prompts/get` may answer `input_required`"),
        "return a complete result here, or move the input request into the tool, prompt or resource handler",
        "`input_required` outside MRTR",
    )
}

pub fn unsigned_state() -> Finding {
    finding(
        RuleId::UnsignedRequestState,
        "`requestState` is built from plain data with no seal or MAC; clients can forge it",
        "seal it: rmcp 3 `RequestStateCodec::try_new(key)?.seal_json(&state)` (open with `open_json` on the retry)",
        "unsigned state",
    )
}

pub fn short_state_key(length: usize) -> Finding {
    finding(
        RuleId::UnsignedRequestState,
        format!("a {length}-byte literal `requestState` key: keys must be at least 32 random bytes and kept out of source"),
        "load a 32-byte random key from configuration or a secret store",
        "short literal key",
    )
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn method_names_list_matches_the_table() {
        for name in METHOD_NAMES {
            assert!(method(name).is_some(), "{name}");
        }
        assert!(method("send").is_none());
    }

    #[test]
    fn every_symbol_name_has_its_rule() {
        let rule = |name: &str| symbol_name(name).map(|finding| finding.rule);
        for (name, expected) in SYMBOLS {
            assert_eq!(rule(name), Some(*expected), "{name}");
        }
        assert_eq!(
            rule("ElicitationResponseNotificationParam"),
            Some(RuleId::ElicitationCompleteNotification)
        );
        assert_eq!(
            rule("UnsubscribeRequestMethod"),
            Some(RuleId::LegacyResourceSubscription)
        );
        assert_eq!(rule("sse_client"), Some(RuleId::LegacySseTransport));
        assert_eq!(rule("SseServerConfig"), Some(RuleId::LegacySseTransport));
        for name in [
            "SseEvent",
            "Sse",
            "sse_keep_alive",
            "Subscriber",
            "Elicitation",
        ] {
            assert_eq!(rule(name), None, "{name}");
        }
    }
}
