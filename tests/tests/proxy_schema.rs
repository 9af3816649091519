//! Everything the proxy's front sends validates against the 2026-07-28 `schema.json`
//! (the vendored `tests/schemas/mcp-2026-07-28.schema.json`, validated per `$defs` type).

use mcp_migrate_tests::per_backend;
use mcp_migrate_tests::support::{
    assert_error, BackendKind, ProxyOptions, RawRequest, RawResponse, Script, SpecSchema, Stack,
    PROTOCOL_VERSION,
};
use serde_json::{json, Value};

/// The tools of the legacy fixture server.
const FIXTURE_TOOLS: [&str; 10] = [
    "echo",
    "ask_name",
    "confirm_delete",
    "connect_account",
    "summarize",
    "list_workspace_roots",
    "ask_twice",
    "ask_three",
    "log_and_echo",
    "slow_count",
];

/// Checks one response: the final message against `response_type`, every notification
/// before it against `ServerNotification`, and the id against the request's.
fn check(schema: &SpecSchema, request: &RawRequest, response: &RawResponse, response_type: &str) {
    schema.assert_valid(response_type, &response.message);
    assert_eq!(&response.message["id"], request.id(), "{response:#?}");
    for notification in &response.notifications {
        schema.assert_valid("JSONRPCNotification", notification);
        schema.assert_valid("ServerNotification", notification);
    }
}

/// The `$defs` type of an input request, by method.
fn input_request_type(method: &str) -> &'static str {
    match method {
        "elicitation/create" => "ElicitRequest",
        "sampling/createMessage" => "CreateMessageRequest",
        "roots/list" => "ListRootsRequest",
        other => panic!("not an input request method: {other}"),
    }
}

/// Checks an `input_required` result: the type, each input request against its own type, no
/// JSON-RPC envelope fields inside, no caching hints.
fn check_input_required(schema: &SpecSchema, result: &Value) {
    schema.assert_valid("InputRequiredResult", result);
    assert_eq!(result["resultType"], "input_required");
    assert!(result["requestState"].is_string(), "{result:#}");
    for key in ["ttlMs", "cacheScope"] {
        assert!(
            result.get(key).is_none(),
            "input_required carries no {key}: {result:#}"
        );
    }
    let requests = result["inputRequests"].as_object().expect("inputRequests");
    assert!(!requests.is_empty());
    for (key, request) in requests {
        schema.assert_valid("InputRequest", request);
        let method = request["method"].as_str().unwrap_or_default();
        schema.assert_valid(input_request_type(method), request);
        for envelope in ["id", "jsonrpc"] {
            assert!(
                request.get(envelope).is_none(),
                "input request {key} has a JSON-RPC `{envelope}`: {request:#}"
            );
        }
    }
}

fn check_cacheable(result: &Value) {
    assert!(
        result["ttlMs"].is_u64(),
        "ttlMs is an integer >= 0: {result:#}"
    );
    assert!(
        matches!(result["cacheScope"].as_str(), Some("public" | "private")),
        "cacheScope: {result:#}"
    );
    assert_eq!(result["resultType"], "complete");
}

async fn discover_tools_list_and_an_ask_name_round_trip_validate(kind: BackendKind) {
    let schema = SpecSchema::load();
    let stack = Stack::start(kind, ProxyOptions::default()).await;
    let raw = stack.raw();

    // server/discover
    let request = raw.request("server/discover", Value::Null);
    schema.assert_valid("DiscoverRequest", &request.body);
    let response = raw.send(&request).await;
    assert_eq!(response.status, 200, "{response:#?}");
    check(&schema, &request, &response, "DiscoverResultResponse");
    let discover = response.result();
    check_cacheable(discover);
    assert!(
        discover["supportedVersions"]
            .as_array()
            .is_some_and(|v| v.contains(&json!(PROTOCOL_VERSION))),
        "{discover:#}"
    );
    assert!(
        discover["capabilities"]["tools"].is_object(),
        "{discover:#}"
    );
    assert!(
        discover["capabilities"].get("tasks").is_none(),
        "legacy tasks are never advertised: {discover:#}"
    );
    assert_eq!(
        discover["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "mcp-legacy-fixture-server",
        "serverInfo is the legacy server's: {discover:#}"
    );

    // tools/list
    let request = raw.request("tools/list", Value::Null);
    schema.assert_valid("ListToolsRequest", &request.body);
    let response = raw.send(&request).await;
    assert_eq!(response.status, 200, "{response:#?}");
    check(&schema, &request, &response, "ListToolsResultResponse");
    let tools = response.result();
    check_cacheable(tools);
    let names: Vec<&str> = tools["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|tool| tool["name"].as_str())
        .collect();
    for tool in FIXTURE_TOOLS {
        assert!(names.contains(&tool), "{tool} missing from {names:?}");
    }

    // ask_name, round 1
    let request = raw.tool_request("ask_name", json!({}));
    schema.assert_valid("CallToolRequest", &request.body);
    let response = raw.send(&request).await;
    assert_eq!(response.status, 200, "{response:#?}");
    check(&schema, &request, &response, "CallToolResultResponse");
    check_input_required(&schema, response.result());
    let (requests, state) = response.input_required();
    let answers = Script::default().answer_all(requests).unwrap();
    let (requests, state) = (requests.clone(), state.to_string());

    // A tampered retry: an error response.
    let request = raw.retry_request(
        "ask_name",
        json!({}),
        answers.clone(),
        Some(&format!("{state}x")),
    );
    schema.assert_valid("CallToolRequest", &request.body);
    let response = raw.send(&request).await;
    check(&schema, &request, &response, "JSONRPCErrorResponse");
    assert_error(&response, &request, &[-32602]);

    // The retry: complete.
    let request = raw.retry_request("ask_name", json!({}), answers, Some(&state));
    schema.assert_valid("CallToolRequest", &request.body);
    let response = raw.send(&request).await;
    assert_eq!(response.status, 200, "{response:#?}");
    check(&schema, &request, &response, "CallToolResultResponse");
    schema.assert_valid("CallToolResult", response.result());
    assert_eq!(response.result_type(), Some("complete"));
    assert_eq!(response.text(), "Hello, Alice!");
    assert!(requests.as_object().is_some_and(|r| r.len() == 1));
}

async fn ask_three_input_requests_validate_by_kind(kind: BackendKind) {
    let schema = SpecSchema::load();
    let stack = Stack::start(
        kind,
        ProxyOptions {
            // Three concurrent pushes make one round even on a loaded 2-core machine.
            batch_window: Some("1s".into()),
            ..ProxyOptions::default()
        },
    )
    .await;
    let raw = stack.raw();
    let request = raw.tool_request("ask_three", json!({}));
    let response = raw.send(&request).await;
    check(&schema, &request, &response, "CallToolResultResponse");
    check_input_required(&schema, response.result());
    let (requests, state) = response.input_required();
    assert_eq!(requests.as_object().unwrap().len(), 3, "{response:#?}");

    let answers = Script::default().answer_all(requests).unwrap();
    let request = raw.retry_request("ask_three", json!({}), answers, Some(state));
    schema.assert_valid("CallToolRequest", &request.body);
    let response = raw.send(&request).await;
    check(&schema, &request, &response, "CallToolResultResponse");
    schema.assert_valid("CallToolResult", response.result());
    assert!(
        response.text().starts_with("name: Alice\n"),
        "{response:#?}"
    );
}

async fn progress_notifications_validate(kind: BackendKind) {
    let schema = SpecSchema::load();
    let stack = Stack::start(kind, ProxyOptions::default()).await;
    let raw = stack.raw();
    let request = raw.request(
        "tools/call",
        json!({"name": "slow_count", "arguments": {"n": 3}, "_meta": {"progressToken": 7}}),
    );
    schema.assert_valid("CallToolRequest", &request.body);
    let response = raw.send(&request).await;
    check(&schema, &request, &response, "CallToolResultResponse");
    assert!(!response.notifications.is_empty(), "{response:#?}");
    for notification in &response.notifications {
        schema.assert_valid("ProgressNotification", notification);
        assert_eq!(notification["params"]["progressToken"], 7);
    }
    assert_eq!(response.text(), "counted 3");
}

/// Front validation errors (decided before any SSE byte): the status and the error body.
async fn front_errors_validate(kind: BackendKind) {
    let schema = SpecSchema::load();
    let stack = Stack::start(kind, ProxyOptions::default()).await;
    let raw = stack.raw();

    // Unknown method: 404 + -32601.
    let request = raw.request("no/such/method", Value::Null);
    let response = raw.send(&request).await;
    assert_eq!(response.status, 404, "{response:#?}");
    check(&schema, &request, &response, "JSONRPCErrorResponse");
    assert_error(&response, &request, &[-32601]);

    // Mcp-Name that does not match the body: 400 + -32020.
    let mut request = raw.tool_request("echo", json!({"text": "hi"}));
    request.set_header("Mcp-Name", "ask_name");
    let response = raw.send(&request).await;
    assert_eq!(response.status, 400, "{response:#?}");
    check(&schema, &request, &response, "JSONRPCErrorResponse");
    assert_error(&response, &request, &[-32020]);

    // An unsupported version (header and _meta agree): 400 + -32022 naming the supported ones.
    let mut request = raw.request("tools/list", Value::Null);
    request.set_header("MCP-Protocol-Version", "1900-01-01");
    request.body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] =
        json!("1900-01-01");
    let response = raw.send(&request).await;
    assert_eq!(response.status, 400, "{response:#?}");
    check(&schema, &request, &response, "JSONRPCErrorResponse");
    assert_error(&response, &request, &[-32022]);
    assert!(
        response.error()["data"]["supported"]
            .as_array()
            .is_some_and(|v| v.contains(&json!(PROTOCOL_VERSION))),
        "{response:#?}"
    );

    // Required _meta missing: 400 + -32602.
    let mut request = raw.request("tools/list", Value::Null);
    request.body["params"]
        .as_object_mut()
        .unwrap()
        .remove("_meta");
    let response = raw.send(&request).await;
    assert_eq!(response.status, 400, "{response:#?}");
    check(&schema, &request, &response, "JSONRPCErrorResponse");
    assert_error(&response, &request, &[-32602]);
}

per_backend!(120;
    discover_tools_list_and_an_ask_name_round_trip_validate,
    ask_three_input_requests_validate_by_kind,
    progress_notifications_validate,
    front_errors_validate,
);
