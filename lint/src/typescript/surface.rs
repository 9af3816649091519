//! The SDK surface the TypeScript analyzer matches: protocol method strings and their rules,
//! handler schemas, the names of the SDK's sending APIs, and the 2026-era APIs that stay silent.

use mcp_migrate_rules::RuleId;
use oxc_ast::ast::Expression;

/// A protocol method string and the rules a hand-built message with it reports: the rule of
/// the feature, and whether it is a request the server sends and awaits.
pub(super) const METHODS: &[(&str, Option<RuleId>, bool)] = &[
    (
        "sampling/createMessage",
        Some(RuleId::DeprecatedSampling),
        true,
    ),
    ("roots/list", Some(RuleId::DeprecatedRoots), true),
    ("elicitation/create", None, true),
    (
        "notifications/roots/list_changed",
        Some(RuleId::DeprecatedRoots),
        false,
    ),
    (
        "notifications/message",
        Some(RuleId::DeprecatedLogging),
        false,
    ),
    ("logging/setLevel", Some(RuleId::DeprecatedLogging), false),
    (
        "notifications/elicitation/complete",
        Some(RuleId::ElicitationCompleteNotification),
        false,
    ),
    (
        "resources/subscribe",
        Some(RuleId::LegacyResourceSubscription),
        false,
    ),
    (
        "resources/unsubscribe",
        Some(RuleId::LegacyResourceSubscription),
        false,
    ),
];

/// The names JavaScript code gives an SDK server it did not construct (a helper's parameter).
pub(super) const SERVER_NAMES: &[&str] = &["server", "mcpServer"];

/// The SDK schemas whose handlers belong to removed or deprecated flows.
pub(super) const HANDLER_SCHEMAS: &[(&str, RuleId)] = &[
    ("SetLevelRequestSchema", RuleId::DeprecatedLogging),
    (
        "LoggingMessageNotificationSchema",
        RuleId::DeprecatedLogging,
    ),
    ("SubscribeRequestSchema", RuleId::LegacyResourceSubscription),
    (
        "UnsubscribeRequestSchema",
        RuleId::LegacyResourceSubscription,
    ),
    (
        "RootsListChangedNotificationSchema",
        RuleId::DeprecatedRoots,
    ),
    (
        "ElicitationCompleteNotificationSchema",
        RuleId::ElicitationCompleteNotification,
    ),
];

pub(super) fn rule_help(rule: RuleId) -> &'static str {
    match rule {
        RuleId::DeprecatedSampling => "call the model provider directly",
        RuleId::DeprecatedRoots => "take paths as tool arguments or resource URIs",
        RuleId::DeprecatedLogging => "log to stderr or through OpenTelemetry",
        RuleId::ElicitationCompleteNotification => {
            "the client learns the outcome by retrying; correlate through `requestState`"
        }
        RuleId::LegacyResourceSubscription => {
            "serve resource updates on `subscriptions/listen` streams"
        }
        _ => "see the rule's documentation",
    }
}

/// The calls that send a message object given to them: the SDK's `request` / `notification` /
/// `sendRequest` / `sendNotification`, a transport's `send`, and the helpers a server writes
/// around them, named by what they do. Any other call (`seen.push(..)`, `log(..)`) only
/// receives a value that happens to have a `method` key.
pub(super) fn is_send_callee(callee: &Expression<'_>) -> bool {
    let name = match callee.get_inner_expression() {
        Expression::Identifier(id) => id.name.as_str(),
        Expression::StaticMemberExpression(member) => member.property.name.as_str(),
        _ => return true,
    };
    let lower = name.to_ascii_lowercase();
    [
        "request", "notif", "send", "emit", "dispatch", "post", "write",
    ]
    .iter()
    .any(|word| lower.contains(word))
}

/// Whether a function of this name is the API that sends `method` (the SDK's `createMessage`
/// builds `sampling/createMessage`, its MRTR builder `inputRequired.elicit` an
/// `elicitation/create` input request).
pub(super) fn defines_sender(function: &str, method: &str) -> bool {
    const SENDERS: &[(&str, &[&str])] = &[
        (
            "sampling/createMessage",
            &["createMessage", "createMessageStream", "requestSampling"],
        ),
        ("roots/list", &["listRoots"]),
        (
            "elicitation/create",
            &[
                "elicitInput",
                "elicitInputStream",
                "elicit",
                "elicitUrl",
                "_sendElicitationLeg",
            ],
        ),
        ("notifications/message", &["sendLoggingMessage", "log"]),
        ("logging/setLevel", &["setLoggingLevel"]),
        ("resources/subscribe", &["subscribeResource"]),
        ("resources/unsubscribe", &["unsubscribeResource"]),
        (
            "notifications/roots/list_changed",
            &["sendRootsListChanged"],
        ),
        (
            "notifications/elicitation/complete",
            &["createElicitationCompletionNotifier"],
        ),
    ];
    SENDERS
        .iter()
        .any(|(sent, names)| *sent == method && names.contains(&function))
}

/// `ctx.mcpReq.<..>` and `inputRequired.<..>`: the 2026-era SDK's own request API.
pub(super) fn is_modern_callee(callee: &Expression<'_>) -> bool {
    match callee.get_inner_expression() {
        Expression::StaticMemberExpression(member) => {
            is_modern_receiver(&member.object)
                || matches!(member.object.get_inner_expression(), Expression::Identifier(id) if id.name == "inputRequired")
        }
        Expression::Identifier(id) => id.name == "inputRequired",
        _ => false,
    }
}

/// A receiver chain that goes through `mcpReq` (the SDK 2.x request context).
pub(super) fn is_modern_receiver(receiver: &Expression<'_>) -> bool {
    match receiver.get_inner_expression() {
        Expression::StaticMemberExpression(member) => {
            member.property.name == "mcpReq" || is_modern_receiver(&member.object)
        }
        Expression::Identifier(id) => id.name == "mcpReq",
        _ => false,
    }
}

/// Whether a function of this name is the SDK's own registration of the handler of `method`:
/// the 2.x server registers `logging/setLevel` itself (`_registerLoggingHandler`) when a server
/// declares the `logging` capability, and that declaration is what is reported.
pub(super) fn defines_handler(function: &str, method: &str) -> bool {
    matches!(
        (method, function),
        ("logging/setLevel", "_registerLoggingHandler")
    )
}
