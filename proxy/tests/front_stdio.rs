//! The stdio front through in-memory pipes: concurrency and interleaving, cancellation, invalid
//! lines, EOF and shutdown. Error lines are checked against the 2026-07-28 schema.

mod front_support;

use std::collections::HashMap;
use std::time::Duration;

use front_support::{call, expect_event, params, request, Event, Schema, TestHandler};
use mcp_mrtr_proxy::front::stdio::{serve_stdio, MAX_LINE_BYTES};
use mcp_mrtr_proxy::jsonrpc::codes;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

struct Stdio {
    input: Option<DuplexStream>,
    output: Lines<BufReader<DuplexStream>>,
    events: mpsc::UnboundedReceiver<Event>,
    shutdown: CancellationToken,
    task: Option<JoinHandle<std::io::Result<()>>>,
}

fn start() -> Stdio {
    start_with_limit(1024)
}

fn start_with_limit(max_concurrent_requests: usize) -> Stdio {
    let (input, server_in) = tokio::io::duplex(1 << 16);
    let (server_out, output) = tokio::io::duplex(1 << 16);
    let (handler, events) = TestHandler::new();
    let shutdown = CancellationToken::new();
    let task = tokio::spawn(serve_stdio(
        BufReader::new(server_in),
        server_out,
        handler,
        None,
        max_concurrent_requests,
        shutdown.clone(),
    ));
    Stdio {
        input: Some(input),
        output: BufReader::new(output).lines(),
        events,
        shutdown,
        task: Some(task),
    }
}

impl Stdio {
    async fn send_raw(&mut self, bytes: &[u8]) {
        self.input.as_mut().unwrap().write_all(bytes).await.unwrap();
    }

    async fn send(&mut self, message: &Value) {
        self.send_raw(format!("{message}\n").as_bytes()).await;
    }

    /// The next output line, which must be exactly one JSON value (30 s: a loaded machine).
    async fn next(&mut self) -> Value {
        let line = tokio::time::timeout(Duration::from_secs(30), self.output.next_line())
            .await
            .expect("no output line within 30 s")
            .unwrap()
            .expect("stdout closed");
        serde_json::from_str(&line).unwrap_or_else(|error| panic!("{error}: {line:?}"))
    }

    async fn close_stdin(&mut self) {
        self.input.take();
    }

    async fn finished(&mut self) -> std::io::Result<()> {
        tokio::time::timeout(Duration::from_secs(30), self.task.take().unwrap())
            .await
            .expect("serve_stdio did not return within 30 s")
            .unwrap()
    }
}

fn slow(id: Value, token: &str, steps: u64, delay_ms: u64) -> Value {
    let mut message = call(id, "slow", json!({"steps": steps, "delay_ms": delay_ms}));
    message["params"]["_meta"]["progressToken"] = json!(token);
    message
}

#[tokio::test]
async fn concurrent_requests_interleave_one_json_per_line() {
    let mut stdio = start();
    stdio.send(&slow(json!("a"), "ta", 5, 30)).await;
    stdio.send(&slow(json!("b"), "tb", 5, 30)).await;
    let mut progress: HashMap<String, Vec<u64>> = HashMap::new();
    let mut order = Vec::new();
    for _ in 0..12 {
        let message = stdio.next().await;
        if message["method"] == "notifications/progress" {
            let token = message["params"]["progressToken"]
                .as_str()
                .unwrap()
                .to_owned();
            order.push(format!("{token}:progress"));
            progress
                .entry(token)
                .or_default()
                .push(message["params"]["progress"].as_u64().unwrap());
        } else {
            let id = message["id"].as_str().unwrap();
            assert_eq!(message["result"]["resultType"], "complete");
            order.push(format!("{id}:final"));
            let token = format!("t{id}");
            assert_eq!(progress[&token], vec![1, 2, 3, 4, 5], "{order:?}");
        }
    }
    let position = |item: &str| order.iter().position(|o| o == item).unwrap();
    // Both ran at once: each one's progress started before the other finished.
    assert!(position("tb:progress") < position("a:final"), "{order:?}");
    assert!(position("ta:progress") < position("b:final"), "{order:?}");
}

#[tokio::test]
async fn cancellation_closes_the_sink_and_silences_the_request() {
    let mut stdio = start();
    stdio
        .send(&call(json!("c"), "hang_then_notify", json!({})))
        .await;
    let first = stdio.next().await;
    assert_eq!(first["method"], "notifications/progress");
    stdio
        .send(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "c", "reason": "user"}}))
        .await;
    expect_event(&mut stdio.events, |event| {
        *event == Event::Closed(json!("c"))
    })
    .await;
    expect_event(&mut stdio.events, |event| {
        *event == Event::NotifyAfterClose(json!("c"), false)
    })
    .await;
    // Nothing more for "c": the next line is the answer to the next request.
    stdio.send(&call(json!("d"), "echo", json!({}))).await;
    let next = stdio.next().await;
    assert_eq!(next["id"], "d");
    // A cancellation for nothing in flight, or with the id's other type, changes nothing.
    stdio
        .send(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "zzz"}}))
        .await;
    stdio.send(&call(json!(1), "hang", json!({}))).await;
    assert_eq!(stdio.next().await["method"], "notifications/progress");
    stdio
        .send(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "1"}}))
        .await;
    stdio.send(&call(json!(2), "echo", json!({}))).await;
    assert_eq!(stdio.next().await["id"], 2);
    tokio::time::sleep(Duration::from_millis(100)).await;
    while let Ok(event) = stdio.events.try_recv() {
        assert_ne!(
            event,
            Event::Closed(json!(1)),
            "`\"1\"` cancelled request `1`"
        );
    }
    stdio
        .send(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}))
        .await;
    expect_event(&mut stdio.events, |event| *event == Event::Closed(json!(1))).await;
}

#[tokio::test]
async fn invalid_lines_get_errors_and_valid_ones_still_work() {
    let mut stdio = start();
    let schema = Schema::load();
    let garbage: Vec<(&[u8], i64)> = vec![
        (b"{\n", codes::PARSE_ERROR),
        (b"not json\n", codes::PARSE_ERROR),
        (b"\xff\xfe\n", codes::PARSE_ERROR),
        (b"[]\n", codes::INVALID_REQUEST),
        (b"42\n", codes::INVALID_REQUEST),
        (b"{\"jsonrpc\":\"2.0\",\"id\":1}\n", codes::INVALID_REQUEST),
        (
            b"{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"tools/list\"}\n",
            codes::INVALID_REQUEST,
        ),
    ];
    for (line, code) in garbage {
        stdio.send_raw(line).await;
        let error = stdio.next().await;
        assert_eq!(
            error["error"]["code"],
            code,
            "{:?}",
            String::from_utf8_lossy(line)
        );
        assert!(error.get("id").is_none());
        schema.assert_error_response(&error);
    }
    let batch = json!([call(json!(1), "echo", json!({}))]);
    stdio.send(&batch).await;
    let error = stdio.next().await;
    assert_eq!(error["error"]["code"], codes::INVALID_REQUEST);
    schema.assert_error_response(&error);

    // Blank lines, client responses and notifications get no answer.
    stdio.send_raw(b"\n   \n\r\n").await;
    stdio
        .send(&json!({"jsonrpc": "2.0", "id": 5, "result": {}}))
        .await;
    stdio
        .send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await;
    stdio
        .send(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled"}))
        .await;

    // Invalid requests get their id back.
    let mut unsupported = request(json!(10), "tools/list", params("tools/list", json!({})));
    unsupported["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("2025-11-25");
    let mut bad_level = request(json!(11), "tools/list", params("tools/list", json!({})));
    bad_level["params"]["_meta"]["io.modelcontextprotocol/logLevel"] = json!("shout");
    let requests = vec![
        (
            request(json!(6), "ping", json!({})),
            codes::METHOD_NOT_FOUND,
        ),
        (
            json!({"jsonrpc": "2.0", "id": 7, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}}}),
            codes::UNSUPPORTED_PROTOCOL_VERSION,
        ),
        (
            request(json!(8), "tools/list", json!({})),
            codes::INVALID_PARAMS,
        ),
        (
            json!({"jsonrpc": "2.0", "id": 9, "method": "tools/list"}),
            codes::INVALID_PARAMS,
        ),
        (unsupported, codes::UNSUPPORTED_PROTOCOL_VERSION),
        (bad_level, codes::INVALID_PARAMS),
        (
            request(json!(12), "tools/call", params("tools/list", json!({}))),
            codes::INVALID_PARAMS,
        ),
    ];
    for (message, code) in requests {
        stdio.send(&message).await;
        let error = stdio.next().await;
        assert_eq!(error["id"], message["id"], "{message}");
        assert_eq!(error["error"]["code"], code, "{message}: {error}");
        schema.assert_error_response(&error);
    }
    // CRLF line endings are fine; no headers are needed on stdio.
    stdio
        .send_raw(format!("{}\r\n", call(json!(13), "echo", json!({}))).as_bytes())
        .await;
    let answer = stdio.next().await;
    assert_eq!(answer["id"], 13);
    assert_eq!(answer["result"]["resultType"], "complete");
}

#[tokio::test]
async fn oversized_lines_are_refused_and_skipped() {
    let mut stdio = start();
    let writer = {
        let mut input = stdio.input.take().unwrap();
        tokio::spawn(async move {
            let big = vec![b'x'; MAX_LINE_BYTES + 10];
            input.write_all(&big).await.unwrap();
            input.write_all(b"\n").await.unwrap();
            input
                .write_all(format!("{}\n", call(json!(1), "echo", json!({}))).as_bytes())
                .await
                .unwrap();
            input
        })
    };
    let error = stdio.next().await;
    assert_eq!(error["error"]["code"], codes::INVALID_REQUEST);
    assert!(error.get("id").is_none());
    assert_eq!(stdio.next().await["id"], 1);
    stdio.input = Some(writer.await.unwrap());
}

#[tokio::test]
async fn duplicate_ids_in_flight_are_refused() {
    let mut stdio = start();
    stdio.send(&call(json!(1), "hang", json!({}))).await;
    assert_eq!(stdio.next().await["method"], "notifications/progress");
    stdio.send(&call(json!(1), "echo", json!({}))).await;
    let error = stdio.next().await;
    assert_eq!(error["id"], 1);
    assert_eq!(error["error"]["code"], codes::INVALID_REQUEST);
    // Once the first is done, the id is free again.
    stdio
        .send(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}))
        .await;
    expect_event(&mut stdio.events, |event| *event == Event::Closed(json!(1))).await;
    stdio.send(&call(json!(1), "echo", json!({}))).await;
    assert_eq!(stdio.next().await["result"]["resultType"], "complete");
    // And right after a final response, too.
    stdio.send(&call(json!(1), "echo", json!({}))).await;
    assert_eq!(stdio.next().await["result"]["resultType"], "complete");
}

#[tokio::test]
async fn requests_beyond_the_concurrency_limit_are_refused_until_one_ends() {
    let mut stdio = start_with_limit(2);
    for id in [1, 2] {
        stdio.send(&call(json!(id), "hang", json!({}))).await;
        assert_eq!(stdio.next().await["method"], "notifications/progress");
    }
    stdio.send(&call(json!(3), "echo", json!({}))).await;
    let error = stdio.next().await;
    assert_eq!(error["id"], 3, "{error}");
    assert_eq!(error["error"]["code"], -32000, "{error}");
    assert_eq!(
        error["error"]["data"]["limit"], "max-concurrent-requests",
        "{error}"
    );
    Schema::load().assert_error_response(&error);
    // A cancelled request frees its place.
    stdio
        .send(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}))
        .await;
    expect_event(&mut stdio.events, |event| *event == Event::Closed(json!(1))).await;
    stdio.send(&call(json!(4), "echo", json!({}))).await;
    assert_eq!(stdio.next().await["result"]["resultType"], "complete");
    // So does a finished one: the limit is on requests running, not on requests ever made.
    for id in 5..10 {
        stdio.send(&call(json!(id), "echo", json!({}))).await;
        assert_eq!(stdio.next().await["result"]["resultType"], "complete");
    }
}

#[tokio::test]
async fn a_handler_without_a_final_gets_an_internal_error() {
    let mut stdio = start();
    let schema = Schema::load();
    for tool in ["drop", "panic", "panic_sync"] {
        stdio.send(&call(json!(tool), tool, json!({}))).await;
        let error = stdio.next().await;
        assert_eq!(error["id"], tool);
        assert_eq!(error["error"]["code"], codes::INTERNAL_ERROR);
        schema.assert_error_response(&error);
    }
    stdio
        .send(&call(json!("d"), "drop_after_progress", json!({})))
        .await;
    assert_eq!(stdio.next().await["method"], "notifications/progress");
    assert_eq!(stdio.next().await["error"]["code"], codes::INTERNAL_ERROR);
}

#[tokio::test]
async fn eof_lets_requests_in_flight_finish() {
    let mut stdio = start();
    stdio.send(&slow(json!("e"), "te", 3, 50)).await;
    stdio.close_stdin().await;
    for step in 1..=3 {
        assert_eq!(stdio.next().await["params"]["progress"], step);
    }
    assert_eq!(stdio.next().await["id"], "e");
    stdio.finished().await.unwrap();
    // stdout is closed after the last line.
    assert!(stdio.output.next_line().await.unwrap().is_none());
}

#[tokio::test]
async fn shutdown_drops_requests_in_flight() {
    let mut stdio = start();
    stdio.send(&call(json!("s"), "hang", json!({}))).await;
    assert_eq!(stdio.next().await["method"], "notifications/progress");
    stdio.close_stdin().await;
    // EOF alone waits for the request...
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!stdio.task.as_ref().unwrap().is_finished());
    // ...shutdown does not.
    stdio.shutdown.cancel();
    stdio.finished().await.unwrap();
    expect_event(&mut stdio.events, |event| {
        *event == Event::Closed(json!("s"))
    })
    .await;
}

#[tokio::test]
async fn shutdown_while_reading_returns() {
    let mut stdio = start();
    stdio.send(&call(json!(1), "echo", json!({}))).await;
    assert_eq!(stdio.next().await["id"], 1);
    stdio.shutdown.cancel();
    stdio.finished().await.unwrap();
}
