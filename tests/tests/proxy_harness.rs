//! Self-tests of the proxy end-to-end harness that need no proxy: the scripted rmcp 3.11 client
//! against the legacy fixture server directly (legacy `initialize`, push-style requests), and
//! the schema checks. They pin the texts the proxy tests expect: whatever the legacy server
//! answers a scripted client directly, it must answer through the proxy too.

use std::time::Duration;

use mcp_migrate_tests::support::{
    tool_text, within, LegacyHttpServer, ModernClient, RawClient, Script, SpecSchema,
};
use rmcp::model::ProtocolVersion;
use rmcp::service::ClientLifecycleMode;
use serde_json::{json, Value};

const LIMIT: Duration = Duration::from_secs(120);

/// A scripted client that reaches the legacy server with the legacy handshake (rmcp's `Auto`
/// mode: `server/discover` fails, then `initialize` with 2025-11-25).
async fn legacy_client(server: &LegacyHttpServer, script: Script) -> ModernClient {
    let lifecycle = ClientLifecycleMode::Auto {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        legacy_version: Some(ProtocolVersion::V_2025_11_25),
    };
    ModernClient::try_connect(server.url(), script, None, lifecycle)
        .await
        .unwrap_or_else(|e| panic!("no legacy connection to the fixture server: {e}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_scripted_client_gets_the_expected_texts_from_the_legacy_server_directly() {
    within(LIMIT, "direct legacy calls", async {
        let server = LegacyHttpServer::start().await;
        let script = Script::default();
        let client = legacy_client(&server, script.clone()).await;

        let cases = [
            ("ask_name", json!({}), "Hello, Alice!".to_string()),
            ("ask_twice", json!({}), "Alice likes blue".to_string()),
            (
                "ask_three",
                json!({}),
                format!(
                    "name: Alice\nsample: {}\nroots: {}",
                    script.sampling_text,
                    script.root_uris(", ")
                ),
            ),
            (
                "summarize",
                json!({"text": "a long text"}),
                script.sampling_text.clone(),
            ),
            ("list_workspace_roots", json!({}), script.root_uris("\n")),
            (
                "confirm_delete",
                json!({"path": "/tmp/x"}),
                "Deletion of /tmp/x confirmed.".to_string(),
            ),
            ("echo", json!({"text": "hi"}), "hi".to_string()),
        ];
        for (tool, arguments, expected) in cases {
            let result = client
                .call_tool(tool, arguments)
                .await
                .unwrap_or_else(|e| panic!("{tool}: {e}"));
            assert_eq!(tool_text(&result), expected, "{tool}");
            assert_ne!(result.is_error, Some(true), "{tool}");
        }
        let url = client
            .call_tool("connect_account", json!({}))
            .await
            .unwrap();
        let text = tool_text(&url);
        assert!(
            text.starts_with("URL elicitation connect-account-") && text.ends_with(": Accept"),
            "{text}"
        );

        // The handler saw the push-style requests (numeric ids, so no MRTR key).
        let seen = client.seen();
        let methods: Vec<&str> = seen.iter().map(|s| s.method.as_str()).collect();
        assert_eq!(
            methods
                .iter()
                .filter(|m| **m == "elicitation/create")
                .count(),
            1 + 2 + 1 + 1 + 1,
            "{methods:?}"
        );
        assert!(seen.iter().all(|s| s.key.is_none()));
        client.close().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn declining_and_cancelling_give_the_legacy_texts_directly() {
    within(LIMIT, "decline and cancel", async {
        let server = LegacyHttpServer::start().await;
        for (action, text) in [
            (
                mcp_migrate_tests::support::FormAction::Decline,
                "No name given: the user declined.",
            ),
            (
                mcp_migrate_tests::support::FormAction::Cancel,
                "No name given: the user cancelled.",
            ),
        ] {
            let client = legacy_client(&server, Script::default().with_form_action(action)).await;
            let result = client.call_tool("ask_name", json!({})).await.unwrap();
            assert_eq!(tool_text(&result), text);
            client.close().await;
        }
    })
    .await;
}

#[test]
fn the_schema_checks_are_not_vacuous() {
    let schema = SpecSchema::load();
    let complete = json!({"jsonrpc": "2.0", "id": 1, "result": {
        "resultType": "complete", "content": [{"type": "text", "text": "hi"}]}});
    schema.assert_valid("CallToolResultResponse", &complete);
    schema.assert_valid("CallToolResult", &complete["result"]);
    let mut no_jsonrpc = complete.clone();
    no_jsonrpc.as_object_mut().unwrap().remove("jsonrpc");
    assert!(!schema
        .errors("CallToolResultResponse", &no_jsonrpc)
        .is_empty());
    let bad_content = json!({"resultType": "complete", "content": [{"type": "text"}]});
    assert!(!schema.errors("CallToolResult", &bad_content).is_empty());

    let input_required = json!({
        "resultType": "input_required",
        "inputRequests": {"k": {"method": "elicitation/create", "params": {
            "mode": "form", "message": "What is your name?",
            "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}}}},
        "requestState": "opaque",
    });
    schema.assert_valid("InputRequiredResult", &input_required);
    schema.assert_valid("ElicitRequest", &input_required["inputRequests"]["k"]);
    assert!(!schema
        .errors("ElicitRequest", &json!({"method": "elicitation/create"}))
        .is_empty());

    let discover = json!({"resultType": "complete", "supportedVersions": ["2026-07-28"],
        "capabilities": {}, "ttlMs": 0, "cacheScope": "private"});
    schema.assert_valid("DiscoverResult", &discover);
    let mut no_ttl = discover.clone();
    no_ttl.as_object_mut().unwrap().remove("ttlMs");
    assert!(!schema.errors("DiscoverResult", &no_ttl).is_empty());
    schema.assert_valid(
        "JSONRPCErrorResponse",
        &json!({"jsonrpc": "2.0", "id": 3, "error": {"code": -32602, "message": "bad state"}}),
    );
    assert!(!schema
        .errors(
            "JSONRPCErrorResponse",
            &json!({"jsonrpc": "2.0", "id": 3, "error": {"code": "x"}})
        )
        .is_empty());
}

#[test]
fn raw_requests_and_scripted_answers_are_valid_2026_messages() {
    let schema = SpecSchema::load();
    let client = RawClient::new("http://127.0.0.1:1/mcp");
    schema.assert_valid(
        "DiscoverRequest",
        &client.request("server/discover", Value::Null).body,
    );
    schema.assert_valid(
        "ListToolsRequest",
        &client.request("tools/list", Value::Null).body,
    );
    schema.assert_valid(
        "CallToolRequest",
        &client.tool_request("echo", json!({"text": "hi"})).body,
    );

    let script = Script::default();
    let elicitation = json!({"mode": "form", "message": "m", "requestedSchema": {
        "type": "object", "properties": {"name": {"type": "string"}, "color": {"type": "string"}}}});
    let answers = json!({
        "e": script.answer("elicitation/create", &elicitation).unwrap(),
        "s": script.answer("sampling/createMessage", &Value::Null).unwrap(),
        "r": script.answer("roots/list", &Value::Null).unwrap(),
    });
    assert_eq!(
        answers["e"],
        json!({"action": "accept", "content": {"name": "Alice", "color": "blue"}})
    );
    schema.assert_valid("ElicitResult", &answers["e"]);
    schema.assert_valid("CreateMessageResult", &answers["s"]);
    schema.assert_valid("ListRootsResult", &answers["r"]);
    let retry = client.retry_request("ask_three", Value::Null, answers, Some("state"));
    schema.assert_valid("CallToolRequest", &retry.body);
    assert_eq!(retry.body["params"]["requestState"], "state");
}
