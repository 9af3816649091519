//! Faults, observed from outside with the real binary and the real legacy fixture server.
//!
//! - While a call is paused the live legacy call may go (backend killed or restarted, proxy
//!   SIGKILLed and restarted): a retry must get a JSON-RPC error saying the paused call was
//!   lost — never a result, never a silent re-run — and the proxy must keep serving new calls.
//! - A backend crash mid-call fails the call at once; an unwritable store refuses new pauses
//!   (pass-through keeps working); an abandoned pause is swept at its TTL; two concurrent
//!   retries with one state resume the call once. The README's fault table maps each fault to
//!   its test.

use std::time::{Duration, Instant};

use mcp_migrate_tests::per_backend;
use mcp_migrate_tests::support::{
    assert_error, metric, tool_text, wait_until, BackendKind, Proxy, ProxyOptions, RawClient,
    Script, Stack, StreamItem,
};
use serde_json::{json, Value};

/// How long a test waits for an event (a message, a metric, a readiness check) on a loaded
/// 2-core machine; the wait ends as soon as the event happened.
const EVENT: Duration = Duration::from_secs(30);

/// Waits until `series` of the proxy's `/metrics` satisfies `holds`.
async fn wait_for_metric(proxy: &Proxy, series: &str, holds: impl Fn(f64) -> bool) {
    wait_until(EVENT, series, || async {
        holds(metric(&proxy.metrics().await, series))
    })
    .await;
}

/// Waits until `/readyz` reports the `store` check as `writable`.
async fn wait_for_store_check(proxy: &Proxy, writable: bool) {
    wait_until(EVENT, "the readiness check of the store", || async {
        proxy.readiness().await["checks"]["store"] == writable
    })
    .await;
}

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

/// Retries a pause whose legacy session ended under it and asserts the "evicted" error with its
/// reason (never "expired", never a result).
async fn assert_evicted(raw: &RawClient, requests: &Value, state: &str) {
    let answers = Script::default().answer_all(requests).unwrap();
    let request = raw.retry_request("ask_name", json!({}), answers, Some(state));
    let response = raw.send(&request).await;
    let message = assert_error(&response, &request, &[-32603]);
    assert!(
        message.contains("evicted: its legacy session ended"),
        "the error says the paused call was evicted, and why: {message:?}"
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
        let stack = Stack::start(BackendKind::Stdio, ProxyOptions::one_lane()).await;
        let raw = stack.raw();
        let (requests, state) = pause_ask_name(&raw).await;

        let killed = stack.proxy.kill_backend().await;
        assert!(
            !killed.is_empty(),
            "the proxy runs the legacy server as a child"
        );
        assert_evicted(&raw, &requests, &state).await;

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

/// Kills the legacy server: the stdio children, or the HTTP server process.
async fn kill_backend(stack: &mut Stack) {
    match stack.legacy.as_mut() {
        Some(server) => server.kill(),
        None => {
            let killed = stack.proxy.kill_backend().await;
            assert!(
                !killed.is_empty(),
                "the proxy runs the legacy server as a child"
            );
        }
    }
}

/// Brings the legacy server back: the HTTP server restarts on the same address (the proxy must
/// open new sessions); stdio children are respawned by the proxy itself.
async fn restart_backend(stack: &mut Stack) {
    if let Some(server) = stack.legacy.as_mut() {
        server.restart().await;
    }
}

/// The legacy server dies in the middle of a call (no round yet): the client gets an error at
/// once, not a hang; after the backend restarts, new calls work.
async fn a_backend_crash_mid_call_fails_the_call(kind: BackendKind) {
    let mut stack = Stack::start(kind, ProxyOptions::default()).await;
    let call = {
        let raw = stack.raw();
        tokio::spawn(async move {
            let request = raw.tool_request("rounds", json!({"n": 0, "sleep_ms": 60000}));
            let response = raw.send(&request).await;
            (request, response)
        })
    };
    // The call holds a lane: from now on a dead backend fails it (before, the proxy would
    // start a fresh backend and the call would run its 60 s).
    wait_for_metric(&stack.proxy, "mcp_proxy_lanes_leased", |leased| {
        leased >= 1.0
    })
    .await;
    let started = Instant::now();
    kill_backend(&mut stack).await;
    let (request, response) = call.await.unwrap();
    // A hang would last the call's 60 s; a loaded machine fails it well within 30 s.
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "the client waited {:?} for a dead backend",
        started.elapsed()
    );
    assert!(response.message.get("result").is_none(), "{response:#?}");
    assert_error(&response, &request, &[-32603]);
    restart_backend(&mut stack).await;
    a_new_call_works(&stack.proxy).await;
}

/// The legacy server dies while a call is paused, then comes back: the retry is told the call
/// was lost, and new calls work.
async fn a_backend_restart_mid_pause_loses_the_pause(kind: BackendKind) {
    let mut stack = Stack::start(kind, ProxyOptions::default()).await;
    let raw = stack.raw();
    let (requests, state) = pause_ask_name(&raw).await;
    kill_backend(&mut stack).await;
    restart_backend(&mut stack).await;
    // The retry comes once the proxy has noticed (its sweep evicts the pause): a retry that
    // races the notice finds the call still paused, and its delivery to the new server tells it
    // the call was lost on the way, which says less (seen on a loaded machine over HTTP).
    wait_for_metric(
        &stack.proxy,
        "mcp_proxy_pause_expiries_total{cause=\"evicted\"}",
        |evicted| evicted >= 1.0,
    )
    .await;
    assert_evicted(&raw, &requests, &state).await;
    a_new_call_works(&stack.proxy).await;
}

/// The legacy server dies under a `subscriptions/listen` stream that holds resource
/// subscriptions: they died with it (with the process, or with the HTTP session the restarted
/// server no longer knows), so the stream ends with an error that says to listen again, and a
/// new stream subscribes anew.
async fn a_backend_crash_ends_listen_streams_with_an_error(kind: BackendKind) {
    let mut stack = Stack::start(kind, ProxyOptions::one_lane()).await;
    // No capabilities: the profile of the lane the proxy starts with (see proxy_subscriptions).
    let raw = stack.raw().with_capabilities(json!({}));
    let filter = json!({ "resourceSubscriptions": ["test://watched"] });
    let mut stream = raw.listen(filter.clone()).await;
    let ack = stream.expect_message(EVENT).await;
    assert_eq!(ack["params"]["notifications"], filter, "{ack}");
    kill_backend(&mut stack).await;
    restart_backend(&mut stack).await;
    let started = Instant::now();
    // Under the backend's 30 s idle timeout, which would also end it: the death was seen.
    let ended = stream.expect_message(Duration::from_secs(25)).await;
    assert_eq!(ended["id"], stream.id, "{ended}");
    assert_eq!(ended["error"]["code"], -32603, "{ended}");
    assert!(
        ended["error"]["message"]
            .as_str()
            .is_some_and(|message| message.contains("listen again")),
        "{ended}"
    );
    assert_eq!(
        stream.next_within(Duration::from_secs(5)).await,
        StreamItem::End
    );
    assert!(
        started.elapsed() < Duration::from_secs(25),
        "{:?}",
        started.elapsed()
    );
    let mut stream = raw.listen(filter.clone()).await;
    let ack = stream.expect_message(EVENT).await;
    assert_eq!(ack["params"]["notifications"], filter, "{ack}");
    let touched = raw
        .call_tool("touch_resource", json!({ "uri": "test://watched" }))
        .await;
    assert_eq!(touched.text(), "told 1", "{touched:#?}");
    let updated = stream.expect_message(EVENT).await;
    assert_eq!(updated["params"]["uri"], "test://watched", "{updated}");
}

per_backend!(120;
    a_backend_crash_mid_call_fails_the_call,
    a_backend_restart_mid_pause_loses_the_pause,
    a_backend_crash_ends_listen_streams_with_an_error,
);

/// The store directory is replaced under the running proxy (moved away, a file in its place):
/// pauses written now would be lost, so new pauses are refused with a clear error while calls
/// that need no pause keep working; once the directory is back, pauses work again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unwritable_store_refuses_new_pauses_but_passes_through() {
    mcp_migrate_tests::support::binaries_async().await;
    mcp_migrate_tests::support::within(Duration::from_secs(120), "unwritable store", async {
        let stack = Stack::start(BackendKind::Stdio, ProxyOptions::default()).await;
        let raw = stack.raw();
        let before = pause_ask_name(&raw).await;

        let store = stack.proxy.store_dir().to_owned();
        let moved = store.with_extension("moved");
        std::fs::rename(&store, &moved).unwrap();
        std::fs::write(&store, b"not a directory").unwrap();
        // The proxy probes the store periodically; `/readyz` shows what it found.
        wait_for_store_check(&stack.proxy, false).await;

        let request = raw.tool_request("ask_name", json!({}));
        let response = raw.send(&request).await;
        let message = assert_error(&response, &request, &[-32000]);
        assert!(
            message.contains("cannot be paused") && message.contains("pause store"),
            "{message}"
        );
        assert_eq!(
            raw.call_tool("echo", json!({"text": "still"})).await.text(),
            "still"
        );
        let listed = raw.call("tools/list", json!({})).await;
        assert!(listed.result()["tools"].is_array(), "{listed:#?}");

        std::fs::remove_file(&store).unwrap();
        std::fs::rename(&moved, &store).unwrap();
        wait_for_store_check(&stack.proxy, true).await;
        let after = pause_ask_name(&raw).await;
        // Both pauses, before and after the outage, complete.
        for (requests, state) in [before, after] {
            let answers = Script::default().answer_all(&requests).unwrap();
            let done = raw
                .retry_tool("ask_name", json!({}), answers, Some(&state))
                .await;
            assert_eq!(done.text(), "Hello, Alice!", "{done:#?}");
        }
    })
    .await;
}

/// A client that never retries: the TTL sweep refuses the legacy call's elicitation, the call
/// ends by itself, and its lane goes back to the pool (a new call gets it well before the 2 s
/// after which it would be refused as over capacity).
async fn a_client_that_never_retries_is_swept(kind: BackendKind) {
    let stack = Stack::start(
        kind,
        ProxyOptions {
            pool_size: Some(1),
            pause_ttl: Some("1s".into()),
            ..ProxyOptions::default()
        },
    )
    .await;
    let raw = stack.raw();
    let _abandoned = pause_ask_name(&raw).await;
    // Its handler gets the elicitation answered `cancel` and returns: no cancellation needed.
    let swept = stack
        .proxy
        .logs_call_ended_by_itself("did not retry in time", true)
        .await;
    let log = stack.proxy.log_lines().join("\n");
    assert!(swept, "{log}");
    assert!(
        log.contains("pause expired: cancelling the legacy call"),
        "{log}"
    );
    // The sweep gave the lane back (the paused call held the only one).
    wait_for_metric(&stack.proxy, "mcp_proxy_lanes_leased", |leased| {
        leased == 0.0
    })
    .await;
    assert_eq!(
        raw.call_tool("echo", json!({"text": "free"})).await.text(),
        "free"
    );
}

/// Two retries with the same state at the same time: exactly one resumes the call, the other
/// is told the state was used already.
async fn concurrent_retries_with_one_state_resume_once(kind: BackendKind) {
    let stack = Stack::start(kind, ProxyOptions::default()).await;
    let raw = stack.raw();
    for _ in 0..3 {
        let (requests, state) = pause_ask_name(&raw).await;
        let answers = Script::default().answer_all(&requests).unwrap();
        let first = raw.retry_request("ask_name", json!({}), answers.clone(), Some(&state));
        let second = raw.retry_request("ask_name", json!({}), answers, Some(&state));
        let (one, two) = tokio::join!(raw.send(&first), raw.send(&second));
        let outcomes = [(&first, &one), (&second, &two)];
        let winners = outcomes
            .iter()
            .filter(|(_, response)| response.message.get("result").is_some())
            .count();
        assert_eq!(winners, 1, "exactly one retry resumes: {one:#?} {two:#?}");
        for (request, response) in outcomes {
            if response.message.get("result").is_some() {
                assert_eq!(response.text(), "Hello, Alice!");
            } else {
                let message = assert_error(response, request, &[-32602]);
                assert!(message.contains("already used"), "{message}");
            }
        }
    }
}

per_backend!(120;
    a_client_that_never_retries_is_swept,
    concurrent_retries_with_one_state_resume_once,
);
