//! An HTTP lane against a legacy server whose call responses are malformed or cut short (a raw
//! TCP server writing scripted bytes; `initialize` and the rest are answered properly): every
//! such call fails with an error, quickly, and the lane keeps serving the next call.

mod backend_support;

use std::time::{Duration, Instant};

use backend_support::*;
use mcp_mrtr_proxy::backend::{BackendSpec, LanePool, UpstreamTransport};
use mcp_mrtr_proxy::capabilities::CapabilityProfile;
use serde_json::{json, Value};
use tokio::io::AsyncWriteExt as _;
use tokio::net::{TcpListener, TcpStream};

mod raw_http;
use raw_http::read_request;

fn json_response(body: &Value) -> Vec<u8> {
    let body = body.to_string();
    format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nmcp-session-id: s1\r\n\
         content-length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

const SSE_HEAD: &str =
    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";

/// Serves one connection: a proper session, and `tools/call NAME` answered as NAME says.
async fn serve(mut stream: TcpStream) {
    while let Some(request) = read_request(&mut stream).await {
        let (head, body) = (request.head(), request.body().to_vec());
        if !head.starts_with("post ") {
            let answer: &[u8] = if head.starts_with("delete ") {
                b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n"
            } else {
                b"HTTP/1.1 405 Method Not Allowed\r\ncontent-length: 0\r\n\r\n"
            };
            if stream.write_all(answer).await.is_err() {
                return;
            }
            continue;
        }
        let message: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let id = message["id"].clone();
        let answer = match message["method"].as_str().unwrap_or_default() {
            "initialize" => json_response(&json!({"jsonrpc": "2.0", "id": id, "result": {
                "protocolVersion": "2025-06-18",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "malformed", "version": "0"},
            }})),
            "tools/call" => {
                let event = format!(
                    "data: {}\n\n",
                    json!({"jsonrpc": "2.0", "id": id, "result": {"content": []}})
                );
                match message["params"]["name"].as_str().unwrap_or_default() {
                    "ok" => {
                        format!("{SSE_HEAD}{:x}\r\n{event}\r\n0\r\n\r\n", event.len()).into_bytes()
                    }
                    "truncated_chunk" => {
                        let _ = stream
                            .write_all(
                                format!("{SSE_HEAD}{:x}\r\n{}", event.len(), &event[..10])
                                    .as_bytes(),
                            )
                            .await;
                        return;
                    }
                    "bad_chunk_size" => {
                        format!("{SSE_HEAD}zz\r\n{event}\r\n0\r\n\r\n").into_bytes()
                    }
                    "short_body" => {
                        let _ = stream
                            .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 500\r\n\r\n{\"jsonrpc\"")
                            .await;
                        return;
                    }
                    "reset_mid_event" => {
                        let _ = stream
                            .write_all(
                                format!("{SSE_HEAD}{:x}\r\n{}", event.len(), &event[..20])
                                    .as_bytes(),
                            )
                            .await;
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        let _ = socket2::SockRef::from(&stream).set_linger(Some(Duration::ZERO));
                        return;
                    }
                    _ => b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n".to_vec(),
                }
            }
            _ => b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n".to_vec(),
        };
        if stream.write_all(&answer).await.is_err() {
            return;
        }
    }
}

async fn malformed_server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(serve(stream));
        }
    });
    format!("http://{address}/mcp")
}

#[tokio::test]
async fn malformed_and_truncated_call_responses_fail_the_call_not_the_lane() {
    init_tracing();
    let spec = BackendSpec::Http {
        url: malformed_server().await,
        transport: UpstreamTransport::StreamableHttp,
    };
    within(Duration::from_secs(30), async {
        let pool = LanePool::new(spec, settings(1, &[]));
        let lease = pool.lease(&CapabilityProfile::default()).await.unwrap();
        let ok = |lease: &mcp_mrtr_proxy::backend::Lease| {
            let lane = std::sync::Arc::clone(&lease.lane);
            async move {
                let call = lane
                    .request("tools/call", json!({"name": "ok", "arguments": {}}))
                    .await
                    .unwrap();
                response(call).await
            }
        };
        assert!(matches!(ok(&lease).await, Ok(Ok(_))));
        for name in [
            "truncated_chunk",
            "bad_chunk_size",
            "short_body",
            "reset_mid_event",
        ] {
            let started = Instant::now();
            let call = lease
                .lane
                .request("tools/call", json!({"name": name, "arguments": {}}))
                .await
                .unwrap();
            let outcome = response(call).await;
            assert!(outcome.is_err(), "{name}: {outcome:?}");
            assert!(
                started.elapsed() < Duration::from_secs(5),
                "{name}: {:?}",
                started.elapsed()
            );
            // The lane is still there for the next call.
            let next = ok(&lease).await;
            assert!(matches!(next, Ok(Ok(_))), "after {name}: {next:?}");
        }
    })
    .await;
}
