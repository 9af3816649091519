//! The HTTP+SSE backend (T23): a legacy server on the 2024-11-05 transport, built on the official
//! Python SDK (`mcp` 1.30, FastMCP with `transport="sse"`, `tests/legacy-sse-server/server.py`),
//! behind the proxy, driven by rmcp 3.11 (2026-07-28) and raw HTTP. The Python server pushes
//! elicitation, sampling and roots requests mid-call, as the Rust fixture does.

use std::time::Duration;

use mcp_migrate_tests::support::{
    assert_concurrent_clients_are_isolated, assert_error, tool_text, Backend, LegacySseServer,
    ModernClient, Proxy, ProxyOptions, Script,
};
use serde_json::json;

const LIMIT: Duration = Duration::from_secs(180);

async fn proxy_for(server: &LegacySseServer, transport: Option<&str>) -> Proxy {
    let extra_args = transport
        .map(|transport| vec!["--upstream-transport".to_owned(), transport.to_owned()])
        .unwrap_or_default();
    Proxy::start(ProxyOptions {
        backend: Backend::Http(server.url().to_owned()),
        extra_args,
        ..ProxyOptions::default()
    })
    .await
}

/// `--upstream-transport auto` (the default) finds the HTTP+SSE server (its `initialize` POST
/// to the SSE URL is refused), warns under `legacy-sse-transport`, and every legacy flow works
/// through it: pass-through, form elicitation, sampling, roots, two rounds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_sse_server_is_found_and_translated() {
    mcp_migrate_tests::support::binaries_async().await;
    let server = LegacySseServer::start().await;
    mcp_migrate_tests::support::within(LIMIT, "HTTP+SSE backend", async {
        let proxy = proxy_for(&server, None).await;
        let raw = proxy.raw();
        let discover = raw.call("server/discover", json!({})).await;
        assert_eq!(discover.status, 200, "{discover:#?}");
        assert!(
            discover.result()["capabilities"]["tools"].is_object(),
            "{discover:#?}"
        );
        let echoed = raw.call_tool("echo", json!({ "text": "over SSE" })).await;
        assert_eq!(echoed.text(), "over SSE", "{echoed:#?}");

        let script = Script::default();
        let client = ModernClient::connect(proxy.url(), script.clone(), None).await;
        let greeted = client.call_tool("ask_name", json!({})).await.unwrap();
        assert_eq!(tool_text(&greeted), "Hello, Alice!");
        let summary = client
            .call_tool("summarize", json!({ "text": "The quick brown fox." }))
            .await
            .unwrap();
        assert_eq!(tool_text(&summary), script.sampling_text);
        let roots = client
            .call_tool("list_workspace_roots", json!({}))
            .await
            .unwrap();
        assert_eq!(tool_text(&roots), script.root_uris("\n"));
        let twice = client.call_tool("ask_twice", json!({})).await.unwrap();
        assert!(tool_text(&twice).contains("Alice"), "{twice:?}");
        assert!(tool_text(&twice).contains("blue"), "{twice:?}");
        let methods: Vec<_> = client
            .seen()
            .iter()
            .map(|seen| seen.method.clone())
            .collect();
        assert_eq!(
            methods,
            [
                "elicitation/create",
                "sampling/createMessage",
                "roots/list",
                "elicitation/create",
                "elicitation/create"
            ]
        );
        client.close().await;

        let warned = proxy.log_lines().iter().any(|line| {
            line.contains("legacy-sse-transport") && line.contains("HTTP+SSE transport")
        });
        assert!(warned, "{:#?}", proxy.log_lines());
    })
    .await;
}

/// Six clients at once over three SSE sessions (distinct `Authorization`, distinct answers),
/// each running `ask_name` and `ask_twice` concurrently: every server request comes from the
/// one stream of its session, and still each client is asked only its own questions and gets
/// its own answers back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_clients_are_isolated_over_sse() {
    const CLIENTS: usize = 6;
    mcp_migrate_tests::support::binaries_async().await;
    let server = LegacySseServer::start().await;
    mcp_migrate_tests::support::within(LIMIT, "HTTP+SSE isolation", async {
        let proxy = Proxy::start(ProxyOptions {
            backend: Backend::Http(server.url().to_owned()),
            pool_size: Some(3),
            ..ProxyOptions::default()
        })
        .await;
        assert_concurrent_clients_are_isolated(proxy.url(), CLIENTS).await;
    })
    .await;
}

/// `--upstream-transport sse`: the server dies while a call is paused; the retry is told the
/// call was lost, and once the server is back new calls work on a new SSE session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashed_sse_server_loses_the_pause_and_comes_back() {
    mcp_migrate_tests::support::binaries_async().await;
    let mut server = LegacySseServer::start().await;
    mcp_migrate_tests::support::within(LIMIT, "HTTP+SSE backend crash", async {
        let proxy = proxy_for(&server, Some("sse")).await;
        let raw = proxy.raw();
        let first = raw.call_tool("ask_name", json!({})).await;
        let (requests, state) = first.input_required();
        let key = requests.as_object().unwrap().keys().next().unwrap().clone();
        let state = state.to_owned();
        server.kill();
        server.restart().await;
        let retry = raw.retry_request(
            "ask_name",
            json!({}),
            json!({ key: { "action": "accept", "content": { "name": "Bo" } } }),
            Some(&state),
        );
        let lost = raw.send(&retry).await;
        let message = assert_error(&lost, &retry, &[-32603]);
        assert!(
            message.contains("evicted: its legacy session ended"),
            "{message}"
        );
        // The proxy opens a new SSE session: at least 60 s of tries for a loaded 2-core machine.
        let mut echoed = None;
        for _ in 0..300 {
            let response = raw.call_tool("echo", json!({ "text": "back" })).await;
            if response.message.get("result").is_some() {
                echoed = Some(response.text());
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        assert_eq!(echoed.as_deref(), Some("back"));
    })
    .await;
}

/// `--upstream-transport streamable-http` does not fall back: the proxy never becomes ready and
/// calls fail with a clear error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streamable_http_only_does_not_fall_back() {
    mcp_migrate_tests::support::binaries_async().await;
    let server = LegacySseServer::start().await;
    mcp_migrate_tests::support::within(LIMIT, "no fallback", async {
        let proxy = Proxy::start_unready(ProxyOptions {
            backend: Backend::Http(server.url().to_owned()),
            extra_args: vec!["--upstream-transport".into(), "streamable-http".into()],
            ..ProxyOptions::default()
        })
        .await;
        let raw = proxy.raw();
        let request = raw.tool_request("echo", json!({ "text": "x" }));
        let refused = raw.send(&request).await;
        let message = assert_error(&refused, &request, &[-32603]);
        assert!(message.contains("Streamable HTTP"), "{message}");
    })
    .await;
}
