//! Every limit of the proxy, hit from outside against the real binary and the real legacy
//! fixture server: what the client sees, and that the proxy keeps serving afterwards (no lane
//! lost or leaked). Defaults and flags: the README's "Limits" table.

use std::time::{Duration, Instant};

use mcp_migrate_tests::per_backend;
use mcp_migrate_tests::support::{
    assert_error, metric, wait_until, BackendKind, Proxy, ProxyOptions, RawClient, RawResponse,
    Script, Stack,
};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The code of every limit refusal (implementation-defined server error).
const LIMIT: i64 = -32000;

fn options(extra: &[&str]) -> ProxyOptions {
    ProxyOptions {
        extra_args: extra.iter().map(|arg| (*arg).to_owned()).collect(),
        ..ProxyOptions::default()
    }
}

/// `host:port` of the proxy.
fn address(proxy: &Proxy) -> String {
    proxy
        .url()
        .strip_prefix("http://")
        .and_then(|rest| rest.strip_suffix("/mcp"))
        .expect("http://ADDR/mcp")
        .to_owned()
}

/// Writes `head` (and `body`) on a fresh connection, then reads until the server closes it or
/// `limit` passes; returns what was read.
async fn raw_exchange(proxy: &Proxy, head: &str, body: &[u8], limit: Duration) -> String {
    let mut stream = tokio::net::TcpStream::connect(address(proxy))
        .await
        .expect("connect to the proxy");
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(body).await.unwrap();
    let mut read = Vec::new();
    let _ = tokio::time::timeout(limit, stream.read_to_end(&mut read)).await;
    String::from_utf8_lossy(&read).into_owned()
}

/// The error of a limit refusal, with its `data.limit`.
#[track_caller]
fn assert_limit(
    response: &RawResponse,
    request: &mcp_migrate_tests::support::RawRequest,
    limit: &str,
) -> String {
    let message = assert_error(response, request, &[LIMIT]);
    assert_eq!(
        response.error()["data"]["limit"],
        limit,
        "the error names the limit: {response:#?}"
    );
    message
}

/// A paused `ask_name` of `client`: its `(inputRequests, requestState)`.
async fn pause(client: &RawClient) -> (Value, String) {
    let response = client.call_tool("ask_name", json!({})).await;
    let (requests, state) = response.input_required();
    (requests.clone(), state.to_owned())
}

/// Answers a pause of `ask_name` and checks the result.
async fn finish(client: &RawClient, paused: &(Value, String)) {
    let answers = Script::default().answer_all(&paused.0).unwrap();
    let done = client
        .retry_tool("ask_name", json!({}), answers, Some(&paused.1))
        .await;
    assert_eq!(done.text(), "Hello, Alice!", "{done:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_bodies_and_heads_are_refused() {
    mcp_migrate_tests::support::binaries_async().await;
    mcp_migrate_tests::support::within(Duration::from_secs(120), "size limits", async {
        let stack = Stack::start(
            BackendKind::Stdio,
            options(&[
                "--max-body-bytes",
                "2000",
                "--max-header-bytes",
                "8192",
                "--max-headers",
                "40",
            ]),
        )
        .await;
        let raw = stack.raw();

        // Body: 413 with a JSON-RPC error, before anything reaches the backend.
        let mut request = raw.tool_request("echo", json!({"text": "x".repeat(3000)}));
        request.set_header("Accept", "application/json, text/event-stream");
        let response = raw.send(&request).await;
        assert_eq!(response.status, 413, "{response:#?}");
        assert!(
            response.error()["message"]
                .as_str()
                .unwrap()
                .contains("2000 bytes"),
            "{response:#?}"
        );
        // Just under the limit passes.
        let response = raw
            .call_tool("echo", json!({"text": "y".repeat(1000)}))
            .await;
        assert_eq!(response.text(), "y".repeat(1000));

        // Head: one 16 KiB header, and 60 small headers: 431 from hyper.
        let head = format!(
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: {}\r\nContent-Length: 0\r\n\r\n",
            "b".repeat(16 * 1024)
        );
        let answer = raw_exchange(&stack.proxy, &head, b"", Duration::from_secs(10)).await;
        assert!(answer.starts_with("HTTP/1.1 431"), "{answer:?}");
        let many: String = (0..60).map(|i| format!("X-H{i}: v\r\n")).collect();
        let head =
            format!("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n{many}Content-Length: 0\r\n\r\n");
        let answer = raw_exchange(&stack.proxy, &head, b"", Duration::from_secs(10)).await;
        assert!(answer.starts_with("HTTP/1.1 431"), "{answer:?}");

        // The proxy still serves.
        assert_eq!(
            raw.call_tool("echo", json!({"text": "ok"})).await.text(),
            "ok"
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_body_gets_408() {
    mcp_migrate_tests::support::binaries_async().await;
    mcp_migrate_tests::support::within(Duration::from_secs(120), "body read timeout", async {
        let stack = Stack::start(BackendKind::Stdio, options(&["--body-read-timeout", "1s"])).await;
        let head = "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n";
        let started = Instant::now();
        let answer = raw_exchange(&stack.proxy, head, b"{\"jsonrpc\":", Duration::from_secs(20)).await;
        assert!(answer.starts_with("HTTP/1.1 408"), "{answer:?}");
        assert!(answer.contains("--body-read-timeout"), "{answer:?}");
        let took = started.elapsed();
        assert!(
            took >= Duration::from_millis(900) && took < Duration::from_secs(10),
            "refused after {took:?}"
        );
        let raw = stack.raw();
        assert_eq!(raw.call_tool("echo", json!({"text": "ok"})).await.text(), "ok");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn too_many_concurrent_requests_get_503_with_retry_after() {
    mcp_migrate_tests::support::binaries_async().await;
    mcp_migrate_tests::support::within(Duration::from_secs(120), "concurrency limit", async {
        let stack = Stack::start(
            BackendKind::Stdio,
            ProxyOptions {
                pool_size: Some(4),
                ..options(&["--max-concurrent-requests", "2"])
            },
        )
        .await;
        let raw = stack.raw();
        // Long enough to outlast the checks below on a loaded 2-core machine.
        let slow = || {
            let raw = stack.raw();
            async move {
                raw.call_tool("rounds", json!({"n": 0, "sleep_ms": 10000}))
                    .await
            }
        };
        let first = tokio::spawn(slow());
        let second = tokio::spawn(slow());
        let in_flight = "mcp_proxy_requests_in_flight";
        wait_until(
            Duration::from_secs(30),
            "both slow calls in flight",
            || async { metric(&stack.proxy.metrics().await, in_flight) == 2.0 },
        )
        .await;

        let request = raw.tool_request("echo", json!({"text": "third"}));
        let response = raw.send(&request).await;
        assert_eq!(response.status, 503, "{response:#?}");
        assert_eq!(response.content_type, "application/json");
        assert_limit(&response, &request, "max-concurrent-requests");
        let retry_after = reqwest::Client::new()
            .post(raw.url())
            .headers(
                request
                    .headers
                    .iter()
                    .map(|(n, v)| (n.parse().unwrap(), v.parse().unwrap()))
                    .collect(),
            )
            .body(serde_json::to_vec(&request.body).unwrap())
            .send()
            .await
            .unwrap();
        assert_eq!(retry_after.status(), 503);
        assert_eq!(retry_after.headers()["retry-after"], "1");

        for call in [first, second] {
            assert_eq!(call.await.unwrap().text(), "rounds 0");
        }
        assert_eq!(
            raw.call_tool("echo", json!({"text": "ok"})).await.text(),
            "ok"
        );
    })
    .await;
}

/// Paused calls are capped per principal and overall; a refused call is cancelled on the legacy
/// side (its lane comes back at once: no eviction of the others is needed) and every pause that
/// was accepted can still be completed.
async fn paused_calls_are_capped_overall_and_per_principal(kind: BackendKind) {
    let stack = Stack::start(
        kind,
        ProxyOptions {
            pool_size: Some(6),
            ..options(&["--max-paused-calls", "3", "--max-paused-per-principal", "2"])
        },
    )
    .await;
    let alice = stack.raw().with_authorization("Bearer alice");
    let bob = stack.raw().with_authorization("Bearer bob");
    let carol = stack.raw().with_authorization("Bearer carol");

    let a1 = pause(&alice).await;
    let a2 = pause(&alice).await;
    let request = alice.tool_request("ask_name", json!({}));
    let response = alice.send(&request).await;
    let message = assert_limit(&response, &request, "max-paused-per-principal");
    assert!(message.contains("cancelled"), "{message}");

    let b1 = pause(&bob).await;
    let request = carol.tool_request("ask_name", json!({}));
    let response = carol.send(&request).await;
    assert_limit(&response, &request, "max-paused-calls");

    // Calls that need no pause are served meanwhile, at once (the refused calls gave their
    // lanes back; the paused ones keep theirs). A call queued behind the pauses would be refused
    // or time out instead; 10 s holds for a served one on a loaded 2-core machine.
    let started = Instant::now();
    assert_eq!(
        carol.call_tool("echo", json!({"text": "ok"})).await.text(),
        "ok"
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );

    // Each refusal is counted under its reason.
    let metrics = stack.proxy.metrics().await;
    for reason in ["limit_paused_per_principal", "limit_paused_calls"] {
        let series = format!("mcp_proxy_rejections_total{{reason=\"{reason}\"}}");
        assert_eq!(metric(&metrics, &series), 1.0, "{series}: {metrics:#?}");
    }

    for (client, paused) in [(&alice, &a1), (&alice, &a2), (&bob, &b1)] {
        finish(client, paused).await;
    }
    // Room again.
    let c1 = pause(&carol).await;
    finish(&carol, &c1).await;
}

/// One round too many: the call is cancelled with a clear error; the proxy keeps serving.
async fn rounds_per_call_are_capped(kind: BackendKind) {
    let stack = Stack::start(kind, options(&["--max-rounds", "2"])).await;
    let raw = stack.raw();
    let arguments = json!({"n": 3});
    let mut response = raw.call_tool("rounds", arguments.clone()).await;
    for round in 1..=2 {
        let (requests, state) = response.input_required();
        assert_eq!(requests.as_object().unwrap().len(), 1, "round {round}");
        let answers = Script::default().answer_all(requests).unwrap();
        let request = raw.retry_request("rounds", arguments.clone(), answers, Some(state));
        response = raw.send(&request).await;
        if round == 2 {
            let message = assert_limit(&response, &request, "max-rounds");
            assert!(message.contains("more than 2"), "{message}");
        }
    }
    // Within the cap the same tool completes.
    let client = stack.modern(Script::default()).await;
    let result = client
        .call_tool("rounds", json!({"n": 2}))
        .await
        .expect("two rounds are allowed");
    assert_eq!(mcp_migrate_tests::support::tool_text(&result), "rounds 2");
    client.close().await;
}

/// A legacy request too large to forward is refused on the legacy side; the front gets a
/// clear error, and a normal one still pauses.
async fn oversized_input_requests_are_refused(kind: BackendKind) {
    let stack = Stack::start(kind, options(&["--max-input-request-bytes", "4000"])).await;
    let raw = stack.raw();
    let request = raw.tool_request("rounds", json!({"n": 1, "pad": 8000}));
    let response = raw.send(&request).await;
    let message = assert_limit(&response, &request, "max-input-request-bytes");
    assert!(message.contains("refused"), "{message}");

    let response = raw.call_tool("rounds", json!({"n": 1, "pad": 100})).await;
    assert_eq!(
        response.result_type(),
        Some("input_required"),
        "{response:#?}"
    );
}

/// A legacy server that stays silent mid-call (before any round, and after a retry) is cut off
/// by `--call-timeout`: the client gets an error, the legacy call is cancelled.
async fn a_hanging_backend_is_cut_off(kind: BackendKind) {
    let stack = Stack::start(kind, options(&["--call-timeout", "1s"])).await;
    let raw = stack.raw();

    let started = Instant::now();
    let request = raw.tool_request("rounds", json!({"n": 0, "sleep_ms": 60000}));
    let response = raw.send(&request).await;
    assert_limit(&response, &request, "call-timeout");
    // The legacy call would run 60 s; the 1 s timeout fires well within 30 s on a loaded machine.
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );

    // Mid-pump: after a round, the retry waits on a silent legacy call.
    let arguments = json!({"n": 1, "sleep_ms": 60000});
    let response = raw.call_tool("rounds", arguments.clone()).await;
    let (requests, state) = response.input_required();
    let answers = Script::default().answer_all(requests).unwrap();
    let request = raw.retry_request("rounds", arguments, answers, Some(state));
    let started = Instant::now();
    let response = raw.send(&request).await;
    assert_limit(&response, &request, "call-timeout");
    // The legacy call would run 60 s; the 1 s timeout fires well within 30 s on a loaded machine.
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );

    // A call shorter than the timeout is untouched.
    let response = raw
        .call_tool("rounds", json!({"n": 0, "sleep_ms": 300}))
        .await;
    assert_eq!(response.text(), "rounds 0");
}

per_backend!(120;
    paused_calls_are_capped_overall_and_per_principal,
    rounds_per_call_are_capped,
    oversized_input_requests_are_refused,
    a_hanging_backend_is_cut_off,
);

/// DNS rebinding: on a loopback bind a foreign `Host` is refused (403) even without `Origin`;
/// loopback hosts and `--allowed-host` entries pass.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn foreign_hosts_are_refused_on_a_loopback_bind() {
    mcp_migrate_tests::support::binaries_async().await;
    mcp_migrate_tests::support::within(Duration::from_secs(120), "host check", async {
        let stack = Stack::start(
            BackendKind::Stdio,
            options(&["--allowed-host", "proxy.internal"]),
        )
        .await;
        let raw = stack.raw();
        let port = address(&stack.proxy).rsplit_once(':').unwrap().1.to_owned();
        for (host, status) in [
            (format!("evil.example:{port}"), 403),
            (format!("127.0.0.1.nip.io:{port}"), 403),
            (format!("localhost:{port}"), 200),
            (format!("[::1]:{port}"), 200),
            (format!("proxy.internal:{port}"), 200),
        ] {
            let request = raw.tool_request("echo", json!({"text": "h"}));
            let headers: String = request
                .headers
                .iter()
                .map(|(n, v)| format!("{n}: {v}\r\n"))
                .collect();
            let body = serde_json::to_vec(&request.body).unwrap();
            let head = format!(
                "POST /mcp HTTP/1.1\r\nHost: {host}\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let answer = raw_exchange(&stack.proxy, &head, &body, Duration::from_secs(20)).await;
            assert!(
                answer.starts_with(&format!("HTTP/1.1 {status}")),
                "Host {host}: {answer:?}"
            );
            if status == 403 {
                assert!(answer.contains("host not allowed"), "{answer:?}");
            }
        }
    })
    .await;
}
