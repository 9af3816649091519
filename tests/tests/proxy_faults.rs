//! Faults while a call is paused: the live legacy call is gone (stdio child killed, proxy
//! restarted), so a retry must get a JSON-RPC error saying the paused call was lost — never a
//! result, never a silent re-run — and the proxy must keep serving new calls.

use std::time::{Duration, Instant};

use mcp_migrate_tests::per_backend;
use mcp_migrate_tests::support::{
    assert_error, tool_text, BackendKind, Proxy, ProxyOptions, RawClient, Script, Stack,
};
use serde_json::{json, Value};

/// What a lost pause may be answered with.
const LOST_CODES: &[i64] = &[-32603, -32602];

/// Round 1 of `ask_name`: `(inputRequests, requestState)`.
async fn pause_ask_name(raw: &RawClient) -> (Value, String) {
    let response = raw.call_tool("ask_name", json!({})).await;
    let (requests, state) = response.input_required();
    (requests.clone(), state.to_string())
}

/// Retries the pause and asserts the "lost" error.
async fn assert_lost(raw: &RawClient, requests: &Value, state: &str) {
    let answers = Script::default().answer_all(requests).unwrap();
    let request = raw.retry_request("ask_name", json!({}), answers, Some(state));
    let response = raw.send(&request).await;
    assert!(
        response.message.get("result").is_none(),
        "a lost pause must never produce a result: {response:#?}"
    );
    let message = assert_error(&response, &request, LOST_CODES);
    assert!(
        message.to_lowercase().contains("lost"),
        "the error says the paused call was lost: {message:?}"
    );
}

/// A new `ask_name` completes. The proxy may need a moment to bring the backend back, so
/// failures are retried for up to 30 s; the last one is reported.
async fn a_new_call_works(proxy: &Proxy) {
    let deadline = Instant::now() + Duration::from_secs(30);
    let client = proxy.modern(Script::default()).await;
    loop {
        match client.call_tool("ask_name", json!({})).await {
            Ok(result) => {
                assert_eq!(tool_text(&result), "Hello, Alice!");
                break;
            }
            Err(e) if Instant::now() < deadline => {
                eprintln!("new call failed, retrying: {e}");
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            Err(e) => panic!("no new call works after the fault: {e}"),
        }
    }
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_stdio_backend_loses_the_paused_call_and_is_replaced() {
    mcp_migrate_tests::support::binaries_async().await;
    mcp_migrate_tests::support::within(Duration::from_secs(120), "killed backend", async {
        let stack = Stack::start(
            BackendKind::Stdio,
            ProxyOptions {
                pool_size: Some(1),
                ..ProxyOptions::default()
            },
        )
        .await;
        let raw = stack.raw();
        let (requests, state) = pause_ask_name(&raw).await;

        let killed = stack.proxy.kill_backend().await;
        assert!(
            !killed.is_empty(),
            "the proxy runs the legacy server as a child"
        );
        assert_lost(&raw, &requests, &state).await;

        a_new_call_works(&stack.proxy).await;
        let now = stack.proxy.backend_pids();
        assert!(!now.is_empty(), "a legacy server runs again");
        assert!(
            now.iter().all(|pid| !killed.contains(pid)),
            "a new child, not the killed one: {now:?} vs {killed:?}"
        );
    })
    .await;
}

/// Kill the proxy (SIGKILL) while a call is paused and start it again on the same store and key:
/// the state still opens (same key), the store knows the pause, but its live call died with the
/// old process.
async fn a_restarted_proxy_reports_paused_calls_as_lost(kind: BackendKind) {
    let mut stack = Stack::start(kind, ProxyOptions::default()).await;
    let (requests, state) = pause_ask_name(&stack.raw()).await;
    stack.proxy.restart().await;
    assert_lost(&stack.raw(), &requests, &state).await;
    a_new_call_works(&stack.proxy).await;
}

/// The same with the key given as `MCP_MRTR_STATE_KEY`: a state minted before the restart is
/// reported lost (it opened), not tampered (it would not open under another key).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_from_the_environment_survives_a_restart() {
    mcp_migrate_tests::support::binaries_async().await;
    mcp_migrate_tests::support::within(Duration::from_secs(120), "env key restart", async {
        let mut stack = Stack::start(
            BackendKind::Stdio,
            ProxyOptions {
                key_in_env: true,
                ..ProxyOptions::default()
            },
        )
        .await;
        let (requests, state) = pause_ask_name(&stack.raw()).await;
        stack.proxy.restart().await;
        assert_lost(&stack.raw(), &requests, &state).await;
    })
    .await;
}

per_backend!(120; a_restarted_proxy_reports_paused_calls_as_lost);
