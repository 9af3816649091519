//! Translations beyond the plain MRTR round (the translation table of docs/proxy/how-it-works.md): the legacy `-32042` URL-elicitation
//! error (T9), per-request capability checks (T10), per-request logging (T12), and deprecation
//! warnings logged under the linter's rule names.

use mcp_migrate_tests::per_backend;
use mcp_migrate_tests::support::{BackendKind, ProxyOptions, RawClient, Stack, LOG_WAIT};
use serde_json::{json, Value};

/// T9: `open_vault` fails with -32042 the first time per session; the proxy shows its URL as an
/// MRTR input request and, once the user accepted, calls the tool again.
async fn legacy_url_elicitation_error_becomes_an_input_request(kind: BackendKind) {
    let stack = Stack::start(kind, ProxyOptions::default()).await;
    let raw = stack.raw();
    let first = raw.call_tool("open_vault", json!({})).await;
    assert_eq!(first.status, 200, "{first:#?}");
    let (requests, state) = first.input_required();
    let requests = requests.as_object().expect("inputRequests").clone();
    assert_eq!(requests.len(), 1, "{requests:#?}");
    let (key, request) = requests.iter().next().unwrap();
    assert_eq!(request["method"], "elicitation/create");
    assert_eq!(request["params"]["mode"], "url");
    assert_eq!(
        request["params"]["url"],
        "https://vault.example.com/authorize"
    );
    assert!(
        request["params"].get("elicitationId").is_none(),
        "{request}"
    );
    assert!(!first.text().contains("-32042"));

    let answers = json!({ key.clone(): {"action": "accept"} });
    let retry = raw
        .retry_tool("open_vault", json!({}), answers, Some(state))
        .await;
    assert_eq!(retry.result_type(), Some("complete"), "{retry:#?}");
    assert_eq!(retry.text(), "vault opened");
}

/// A declined URL elicitation of a -32042 round ends the call with a tool error, not a retry.
async fn declining_the_legacy_url_elicitation_is_a_tool_error(kind: BackendKind) {
    let stack = Stack::start(kind, ProxyOptions::default()).await;
    let raw = stack.raw();
    let first = raw.call_tool("open_vault", json!({})).await;
    let (requests, state) = first.input_required();
    let key = requests.as_object().unwrap().keys().next().unwrap().clone();
    let retry = raw
        .retry_tool(
            "open_vault",
            json!({}),
            json!({ key: {"action": "decline"} }),
            Some(state),
        )
        .await;
    assert_eq!(retry.result()["isError"], true, "{retry:#?}");
    assert!(retry
        .text()
        .contains("did not complete the URL elicitation"));
}

/// T10: a legacy request of a kind or mode the front request did not declare is never shown to
/// it: before the response starts, the front request gets 400 / -32021 with the capability.
/// (`confirm_delete` and `summarize` send without checking what the client declared, as
/// `create_elicitation` and `create_message` do in rmcp 2.2; `ask_name`'s typed `elicit` checks
/// and fails on its own.)
async fn undeclared_capabilities_get_32021(kind: BackendKind) {
    let stack = Stack::start(kind, ProxyOptions::default()).await;
    let bare = stack.raw().with_capabilities(json!({}));
    let response = bare
        .call_tool("confirm_delete", json!({"path": "/tmp/x"}))
        .await;
    assert_eq!(response.status, 400, "{response:#?}");
    assert_eq!(response.error_code(), Some(-32021));
    assert_eq!(
        response.error()["data"]["requiredCapabilities"],
        json!({"elicitation": {"form": {}}})
    );
    let refused_by_the_server = bare.call_tool("ask_name", json!({})).await;
    assert!(
        refused_by_the_server.message.get("error").is_some(),
        "{refused_by_the_server:#?}"
    );

    let form_only = stack
        .raw()
        .with_capabilities(json!({"elicitation": {"form": {}}}));
    let response = form_only.call_tool("open_vault", json!({})).await;
    assert_eq!(response.status, 400, "{response:#?}");
    assert_eq!(response.error_code(), Some(-32021));
    assert_eq!(
        response.error()["data"]["requiredCapabilities"],
        json!({"elicitation": {"url": {}}})
    );
    let response = form_only.call_tool("summarize", json!({"text": "x"})).await;
    assert_eq!(response.error_code(), Some(-32021), "{response:#?}");
    assert_eq!(
        response.error()["data"]["requiredCapabilities"],
        json!({"sampling": {}})
    );

    // The refused calls do not hold the lanes: a call with the capability pauses as usual.
    let full = stack.raw();
    let first = full.call_tool("ask_name", json!({})).await;
    assert_eq!(first.result_type(), Some("input_required"), "{first:#?}");
}

/// T12: `notifications/message` reaches a front request only when it asked for logs with
/// `_meta["io.modelcontextprotocol/logLevel"]`, at or above that level.
async fn legacy_logs_reach_only_requests_that_ask_for_them(kind: BackendKind) {
    let stack = Stack::start(kind, ProxyOptions::default()).await;
    let raw = stack.raw();
    let mut request = raw.tool_request("log_and_echo", json!({"text": "hello"}));
    request.body["params"]["_meta"]["io.modelcontextprotocol/logLevel"] = json!("debug");
    let with_logs = raw.send(&request).await;
    assert_eq!(with_logs.text(), "hello", "{with_logs:#?}");
    let messages: Vec<&Value> = with_logs
        .notifications
        .iter()
        .filter(|n| n["method"] == "notifications/message")
        .collect();
    assert!(!messages.is_empty(), "{with_logs:#?}");
    assert_eq!(messages[0]["params"]["level"], "info");

    let mut request = raw.tool_request("log_and_echo", json!({"text": "quiet"}));
    request.body["params"]["_meta"]["io.modelcontextprotocol/logLevel"] = json!("error");
    let above = raw.send(&request).await;
    assert!(above.notifications.is_empty(), "{above:#?}");
    let plain = raw
        .call_tool("log_and_echo", json!({"text": "plain"}))
        .await;
    assert_eq!(plain.text(), "plain");
    assert!(plain.notifications.is_empty(), "{plain:#?}");
}

/// Deprecated capabilities and legacy sampling are logged once per (client, rule) under the
/// linter's rule names.
async fn deprecations_are_logged_once_under_rule_names(kind: BackendKind) {
    let stack = Stack::start(kind, ProxyOptions::default()).await;
    let raw = stack
        .raw()
        .with_capabilities(json!({"elicitation": {}, "sampling": {}, "roots": {}}));
    for _ in 0..3 {
        let response = raw.call_tool("echo", json!({"text": "x"})).await;
        assert_eq!(response.text(), "x");
    }
    // The log pump runs behind the calls: wait for each warning, then count them.
    for rule in ["rule=\"deprecated-sampling\"", "rule=\"deprecated-roots\""] {
        let logged = stack
            .proxy
            .logs_within(LOG_WAIT, |line| line.contains(rule))
            .await;
        assert!(logged, "no {rule} warning: {:#?}", stack.proxy.log_lines());
    }
    let lines = stack.proxy.log_lines();
    let count = |rule: &str| lines.iter().filter(|line| line.contains(rule)).count();
    assert_eq!(count("rule=\"deprecated-sampling\""), 1, "{lines:#?}");
    assert_eq!(count("rule=\"deprecated-roots\""), 1, "{lines:#?}");
    assert_eq!(count("code=\"MCP101\""), 1, "{lines:#?}");
}

per_backend!(120;
    legacy_url_elicitation_error_becomes_an_input_request,
    declining_the_legacy_url_elicitation_is_a_tool_error,
    undeclared_capabilities_get_32021,
    legacy_logs_reach_only_requests_that_ask_for_them,
    deprecations_are_logged_once_under_rule_names,
);

/// Starts `slow_count` (`steps` of 20 ms, with progress) on a one-lane proxy and hangs up at its
/// first progress notification.
async fn leave_slow_count(kind: BackendKind, steps: u64) -> (Stack, RawClient) {
    let stack = Stack::start(kind, ProxyOptions::one_lane()).await;
    let raw = stack.raw();
    let mut request = raw.tool_request("slow_count", json!({"n": steps}));
    request.body["params"]["_meta"]["progressToken"] = json!("p");
    let outcome = raw.hang_up_after_progress(&request).await;
    assert!(
        outcome.is_ok(),
        "slow_count finished without progress: {outcome:?}"
    );
    (stack, raw)
}

/// T14: a client that disconnects mid-call cancels the legacy call (`notifications/cancelled`
/// with the proxy's legacy id), and the lane serves the next call.
async fn a_disconnect_mid_call_cancels_the_legacy_call(kind: BackendKind) {
    // 100 steps of 20 ms: the client gives up at the first progress, with the call running.
    let (stack, raw) = leave_slow_count(kind, 100).await;
    let cancelled = stack.proxy.logs_delivered_cancellation().await;
    assert!(cancelled, "{:#?}", stack.proxy.log_lines());
    let next = raw.call_tool("ask_name", json!({})).await;
    assert_eq!(next.result_type(), Some("input_required"), "{next:#?}");
}

/// A client that leaves a call about to answer: the call gets a moment to end by itself and is
/// not cancelled (a cancellation racing the answer ends the whole legacy session on the Python
/// SDK, docs/conformance.md), and the lane it leaves serves the next call.
async fn a_call_left_just_before_its_answer_is_not_cancelled(kind: BackendKind) {
    // 10 steps of 20 ms: the client gives up at the first progress, ~200 ms before the answer.
    let (stack, raw) = leave_slow_count(kind, 10).await;
    let ended = stack
        .proxy
        .logs_call_ended_by_itself("the client request ended", false)
        .await;
    let log = stack.proxy.log_lines().join("\n");
    assert!(ended, "{log}");
    assert!(!log.contains("cancelled the legacy call"), "{log}");
    assert!(!log.contains("retiring a lane"), "{log}");
    let next = raw.call_tool("echo", json!({"text": "next"})).await;
    assert_eq!(next.text(), "next", "{next:#?}");
}

per_backend!(60;
    a_disconnect_mid_call_cancels_the_legacy_call,
    a_call_left_just_before_its_answer_is_not_cancelled,
);
