//! `Mcp-Param-*` headers (2026-07-28 Streamable HTTP, SEP-2243): the legacy fixture's
//! `route_query` annotates `region` with `x-mcp-header: Region`; 2026-07-28 clients mirror it into
//! `Mcp-Param-Region`, and the proxy, which processes the body on the legacy server's behalf,
//! refuses a call whose header disagrees with the body (400, `-32020`) before anything reaches
//! the legacy server.

use mcp_migrate_tests::per_backend;
use mcp_migrate_tests::support::{
    assert_error, metric, tool_text, BackendKind, ProxyOptions, Script, Stack,
};
use serde_json::json;

const MISMATCHES: &str = "mcp_proxy_rejections_total{reason=\"header_mismatch\"}";

async fn mirrored_arguments_must_match_their_headers(kind: BackendKind) {
    let stack = Stack::start(kind, ProxyOptions::default()).await;
    let raw = stack.raw();
    let arguments = json!({ "region": "us-west1", "query": "SELECT 1" });
    let request_with = |region: Option<&str>| {
        let mut request = raw.tool_request("route_query", arguments.clone());
        if let Some(region) = region {
            request.set_header("Mcp-Param-Region", region);
        }
        request
    };

    // The plain value, the Base64 sentinel form, and whitespace around the value.
    for region in ["us-west1", "=?base64?dXMtd2VzdDE=?=", "  us-west1 "] {
        let accepted = raw.send(&request_with(Some(region))).await;
        assert_eq!(accepted.status, 200, "{region}: {accepted:#?}");
        assert_eq!(
            accepted.text(),
            "us-west1: SELECT 1",
            "{region}: {accepted:#?}"
        );
    }

    for (region, expected) in [
        (Some("eu-west1"), "does not match"),
        (None, "missing `Mcp-Param-Region` header"),
        // Base64 without its padding.
        (Some("=?base64?dXMtd2VzdDE?="), "base64"),
    ] {
        let request = request_with(region);
        let refused = raw.send(&request).await;
        assert_eq!(refused.status, 400, "{region:?}: {refused:#?}");
        assert!(!refused.is_sse(), "{refused:#?}");
        let message = assert_error(&refused, &request, &[-32020]);
        assert!(message.contains(expected), "{region:?}: {message}");
    }

    // A header for an argument the body does not carry is a disagreement too.
    let mut request = raw.tool_request("route_query", json!({ "query": "SELECT 1" }));
    request.set_header("Mcp-Param-Region", "us-west1");
    let refused = raw.send(&request).await;
    assert_eq!(refused.status, 400, "{refused:#?}");
    assert_error(&refused, &request, &[-32020]);

    // Headers of tools without annotations are not looked at.
    let mut request = raw.tool_request("echo", json!({ "text": "hi" }));
    request.set_header("Mcp-Param-Region", "anything");
    let echoed = raw.send(&request).await;
    assert_eq!(echoed.text(), "hi", "{echoed:#?}");

    let metrics = stack.proxy.metrics().await;
    assert_eq!(metric(&metrics, MISMATCHES), 4.0, "{metrics:#?}");
}

/// rmcp 3.11 mirrors annotated arguments once it has listed the tools: the call goes through. A
/// client that never listed them sends no header, and the proxy refuses the call.
async fn a_current_rmcp_client_mirrors_annotated_arguments(kind: BackendKind) {
    let stack = Stack::start(kind, ProxyOptions::default()).await;
    let arguments = json!({ "region": "eu-north1", "query": "q" });

    let unlisted = stack.modern(Script::default()).await;
    let error = unlisted
        .call_tool("route_query", arguments.clone())
        .await
        .expect_err("no Mcp-Param-Region header: refused");
    let error = error.to_string();
    assert!(error.contains("Mcp-Param-Region"), "{error}");
    unlisted.close().await;

    let client = stack.modern(Script::default()).await;
    let tools = client
        .service
        .list_all_tools()
        .await
        .expect("tools/list through the proxy");
    let route = tools
        .iter()
        .find(|tool| tool.name == "route_query")
        .expect("route_query listed");
    assert_eq!(
        route.input_schema["properties"]["region"]["x-mcp-header"],
        "Region"
    );
    let result = client
        .call_tool("route_query", arguments)
        .await
        .expect("a listed tool's header is mirrored");
    assert_eq!(tool_text(&result), "eu-north1: q");
    client.close().await;
}

per_backend!(120;
    mirrored_arguments_must_match_their_headers,
    a_current_rmcp_client_mirrors_annotated_arguments,
);
