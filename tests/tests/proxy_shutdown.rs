//! Graceful shutdown of the real binary: SIGTERM while one call is in flight and another is
//! paused. The in-flight call completes, new connections are refused, the paused call's legacy
//! side is cancelled, its record is marked lost (a retry after the restart is told so), the
//! legacy children are reaped, and the proxy exits 0.

use std::time::Duration;

use mcp_migrate_tests::per_backend;
use mcp_migrate_tests::support::{
    assert_error, is_alive, metric, wait_until, BackendKind, ProxyOptions, Script, Stack,
};
use serde_json::json;

async fn sigterm_drains_and_cancels_paused_calls(kind: BackendKind) {
    let mut stack = Stack::start(
        kind,
        ProxyOptions {
            pool_size: Some(4),
            extra_args: vec!["--shutdown-grace".into(), "10s".into()],
            ..ProxyOptions::default()
        },
    )
    .await;
    let raw = stack.raw();
    let paused = raw.call_tool("ask_name", json!({})).await;
    let (requests, state) = paused.input_required();
    let (requests, state) = (requests.clone(), state.to_owned());

    let in_flight = {
        let raw = stack.raw();
        tokio::spawn(async move {
            raw.call_tool("rounds", json!({"n": 0, "sleep_ms": 4000}))
                .await
        })
    };
    // The call is in flight (over stdio the proxy has children: lanes and started spares).
    wait_until(
        Duration::from_secs(30),
        "the call in flight, and children over stdio",
        || async {
            metric(&stack.proxy.metrics().await, "mcp_proxy_requests_in_flight") == 1.0
                && (kind != BackendKind::Stdio || stack.proxy.child_pids().len() >= 2)
        },
    )
    .await;
    let children = stack.proxy.child_pids();
    let address = stack
        .proxy
        .url()
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_owned();

    let terminate = stack.proxy.terminate(Duration::from_secs(30));
    let refused = async {
        // Once the signal is handled, the listener is closed: new connections are refused
        // while the call in flight still runs.
        while tokio::net::TcpStream::connect(&address).await.is_ok() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        in_flight.is_finished()
    };
    let (status, call_ended_first) = tokio::join!(terminate, refused);
    assert!(
        !call_ended_first,
        "connections were accepted until the call in flight ended"
    );
    assert_eq!(status.code(), Some(0), "exit status {status:?}");

    // Its answer came from a proxy that waited for it (an exit would have cut it off).
    let done = in_flight.await.unwrap();
    assert_eq!(
        done.text(),
        "rounds 0",
        "the call in flight completes: {done:#?}"
    );
    for pid in &children {
        assert!(!is_alive(*pid), "legacy child {pid} outlived the proxy");
    }
    let log = stack.proxy.log_lines().join("\n");
    // The handler gets its elicitation answered `cancel` and ends by itself: no cancellation
    // is needed (docs/conformance.md).
    assert!(
        log.lines().any(|line| line
            .contains("the legacy call ended by itself before it was cancelled")
            && line.contains("the proxy is shutting down")
            && line.contains("refused=true")),
        "the paused call's legacy call was ended: {log}"
    );
    assert!(log.contains("paused_calls_ended=1"), "{log}");

    // After a restart, the paused call's retry is told it was lost; the shutdown had marked
    // it already, so the new boot finds nothing left to mark.
    stack.proxy.start_again().await;
    let raw = stack.raw();
    let answers = Script::default().answer_all(&requests).unwrap();
    let request = raw.retry_request("ask_name", json!({}), answers, Some(&state));
    let response = raw.send(&request).await;
    let message = assert_error(&response, &request, &[-32603]);
    assert!(message.contains("lost"), "{message}");
    let log = stack.proxy.log_lines().join("\n");
    let second_boot = log.rsplit("==== start again ====").next().unwrap();
    assert!(
        !second_boot.contains("paused calls of the previous run were lost"),
        "the shutdown marked the pause lost itself: {second_boot}"
    );
    let done = stack
        .modern(Script::default())
        .await
        .call_tool("ask_name", json!({}))
        .await
        .expect("a new call works after the restart");
    assert_eq!(
        mcp_migrate_tests::support::tool_text(&done),
        "Hello, Alice!"
    );
}

per_backend!(120; sigterm_drains_and_cancels_paused_calls);
