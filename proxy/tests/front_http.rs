//! The Streamable HTTP front over real TCP: validation, response modes, routes, Origin, body
//! limit, disconnects, shutdown. Error bodies are checked against the 2026-07-28 schema.

mod front_support;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use bytes::Bytes;
use front_support::{call, expect_event, params, request, Event, Schema, TestHandler};
use http::{HeaderMap, Method, StatusCode};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use mcp_mrtr_proxy::front::http::{serve, HttpFrontConfig};
use mcp_mrtr_proxy::jsonrpc::codes;
use serde_json::{json, Value};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

type TestBody = UnsyncBoxBody<Bytes, Infallible>;

struct Server {
    addr: SocketAddr,
    handler: Arc<TestHandler>,
    events: mpsc::UnboundedReceiver<Event>,
    shutdown: CancellationToken,
    task: JoinHandle<std::io::Result<()>>,
}

async fn start(configure: impl FnOnce(&mut HttpFrontConfig)) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let mut config = HttpFrontConfig {
        listen: addr,
        ..HttpFrontConfig::default()
    };
    configure(&mut config);
    let (handler, events) = TestHandler::new();
    let shutdown = CancellationToken::new();
    let task = tokio::spawn(serve(listener, config, handler.clone(), shutdown.clone()));
    Server {
        addr,
        handler,
        events,
        shutdown,
        task,
    }
}

/// One HTTP/1.1 client connection; dropping it closes the socket.
struct Client {
    sender: SendRequest<TestBody>,
    connection: JoinHandle<()>,
}

impl Drop for Client {
    fn drop(&mut self) {
        self.connection.abort();
    }
}

async fn connect(addr: SocketAddr) -> Client {
    let stream = TcpStream::connect(addr).await.unwrap();
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    let connection = tokio::spawn(async move {
        let _ = connection.await;
    });
    Client { sender, connection }
}

type Headers = Vec<(String, Vec<u8>)>;

fn build(method: Method, path: &str, headers: &Headers, body: TestBody) -> http::Request<TestBody> {
    let mut builder = http::Request::builder()
        .method(method)
        .uri(path)
        .header("host", "127.0.0.1");
    for (name, value) in headers {
        builder = builder.header(name.as_str(), http::HeaderValue::from_bytes(value).unwrap());
    }
    builder.body(body).unwrap()
}

fn full(bytes: impl Into<Bytes>) -> TestBody {
    Full::new(bytes.into()).boxed_unsync()
}

impl Client {
    async fn send(&mut self, request: http::Request<TestBody>) -> http::Response<Incoming> {
        tokio::time::timeout(Duration::from_secs(10), self.sender.send_request(request))
            .await
            .expect("no response within 10 s")
            .unwrap()
    }
}

#[derive(Debug)]
struct Reply {
    status: StatusCode,
    headers: HeaderMap,
    body: Bytes,
}

impl Reply {
    async fn read(response: http::Response<Incoming>) -> Reply {
        let (parts, body) = response.into_parts();
        let body = tokio::time::timeout(Duration::from_secs(10), body.collect())
            .await
            .expect("body not complete within 10 s")
            .unwrap()
            .to_bytes();
        Reply {
            status: parts.status,
            headers: parts.headers,
            body,
        }
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(|value| value.to_str().unwrap())
    }

    fn json(&self) -> Value {
        assert_eq!(
            self.header("content-type"),
            Some("application/json"),
            "{self:?}"
        );
        serde_json::from_slice(&self.body).unwrap_or_else(|error| panic!("{error}: {self:?}"))
    }

    /// The `data` of every SSE event (comments skipped), in order.
    fn events(&self) -> Vec<Value> {
        assert_eq!(
            self.header("content-type"),
            Some("text/event-stream"),
            "{self:?}"
        );
        sse_events(std::str::from_utf8(&self.body).unwrap())
    }
}

fn sse_events(text: &str) -> Vec<Value> {
    text.split("\n\n")
        .filter(|block| !block.trim().is_empty())
        .filter_map(|block| {
            let mut data = None;
            for line in block.lines() {
                if let Some(json) = line.strip_prefix("data: ") {
                    data = Some(serde_json::from_str(json).unwrap());
                } else {
                    assert!(
                        line.starts_with(':') || line == "event: message",
                        "unexpected SSE line {line:?}"
                    );
                }
            }
            data
        })
        .collect()
}

/// The headers a conforming client sends with `body`.
fn mcp_headers(body: &Value) -> Headers {
    let mut headers: Headers = vec![
        ("content-type".into(), b"application/json".to_vec()),
        (
            "accept".into(),
            b"application/json, text/event-stream".to_vec(),
        ),
    ];
    if let Some(version) =
        body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"].as_str()
    {
        headers.push(("MCP-Protocol-Version".into(), version.as_bytes().to_vec()));
    }
    if let Some(method) = body["method"].as_str() {
        headers.push(("Mcp-Method".into(), method.as_bytes().to_vec()));
    }
    let name = body["params"]["name"]
        .as_str()
        .or_else(|| body["params"]["uri"].as_str());
    if let Some(name) = name {
        let safe = name.bytes().all(|b| (0x20..0x7f).contains(&b)) && name.trim() == name;
        let value = if safe {
            name.to_owned()
        } else {
            format!(
                "=?base64?{}?=",
                base64::engine::general_purpose::STANDARD.encode(name)
            )
        };
        headers.push(("Mcp-Name".into(), value.into_bytes()));
    }
    headers
}

fn with(mut headers: Headers, name: &str, value: Option<&[u8]>) -> Headers {
    headers.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
    if let Some(value) = value {
        headers.push((name.to_owned(), value.to_vec()));
    }
    headers
}

/// A POST of `body` to `path` with the headers a conforming client sends.
fn mcp_request(path: &str, body: &Value) -> http::Request<TestBody> {
    build(
        Method::POST,
        path,
        &mcp_headers(body),
        full(body.to_string()),
    )
}

async fn post_raw(addr: SocketAddr, headers: &Headers, body: impl Into<Bytes>) -> Reply {
    let mut client = connect(addr).await;
    let response = client
        .send(build(Method::POST, "/mcp", headers, full(body)))
        .await;
    Reply::read(response).await
}

async fn post(addr: SocketAddr, body: &Value) -> Reply {
    post_raw(addr, &mcp_headers(body), body.to_string()).await
}

async fn get(addr: SocketAddr, method: Method, path: &str, headers: &Headers) -> Reply {
    let mut client = connect(addr).await;
    let response = client
        .send(build(method, path, headers, full(Bytes::new())))
        .await;
    Reply::read(response).await
}

#[tokio::test]
async fn validation_rules_over_http() {
    let server = start(|_| {}).await;
    let schema = Schema::load();
    let list = request(json!(1), "tools/list", params("tools/list", json!({})));
    let list_headers = mcp_headers(&list);
    let tool = call(json!("c-1"), "echo", json!({}));
    let tool_headers = mcp_headers(&tool);
    let read = request(
        json!(3),
        "resources/read",
        params("resources/read", json!({})),
    );
    let read_headers = mcp_headers(&read);
    let mut unsupported = list.clone();
    unsupported["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("v999.0.0");
    let mut no_meta = list.clone();
    no_meta["params"] = json!({});
    let mut no_version = list.clone();
    no_version["params"]["_meta"]
        .as_object_mut()
        .unwrap()
        .remove("io.modelcontextprotocol/protocolVersion");
    let mut no_capabilities = list.clone();
    no_capabilities["params"]["_meta"]
        .as_object_mut()
        .unwrap()
        .remove("io.modelcontextprotocol/clientCapabilities");
    let mut bad_level = list.clone();
    bad_level["params"]["_meta"]["io.modelcontextprotocol/logLevel"] = json!("loud");
    let mut nameless = tool.clone();
    nameless["params"].as_object_mut().unwrap().remove("name");
    let mut uriless = read.clone();
    uriless["params"].as_object_mut().unwrap().remove("uri");
    let legacy_initialize = json!({
        "jsonrpc": "2.0", "id": 9, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "old", "version": "1"}}
    });
    let modern_initialize = request(json!(10), "initialize", params("initialize", json!({})));
    let ping = request(json!(11), "ping", params("ping", json!({})));
    let unicode = call(json!(12), "天気 ☀", json!({}));

    let cases: Vec<(&str, &Value, Headers, u16, Option<i64>)> = vec![
        ("valid tools/list", &list, list_headers.clone(), 200, None),
        ("valid tools/call", &tool, tool_headers.clone(), 200, None),
        (
            "valid resources/read",
            &read,
            read_headers.clone(),
            200,
            None,
        ),
        (
            "unicode tool name via base64 Mcp-Name",
            &unicode,
            mcp_headers(&unicode),
            200,
            None,
        ),
        (
            "unknown method",
            &ping,
            mcp_headers(&ping),
            404,
            Some(codes::METHOD_NOT_FOUND),
        ),
        (
            "legacy initialize",
            &legacy_initialize,
            vec![("MCP-Protocol-Version".into(), b"2025-11-25".to_vec())],
            400,
            Some(codes::UNSUPPORTED_PROTOCOL_VERSION),
        ),
        (
            "modern-shaped initialize",
            &modern_initialize,
            mcp_headers(&modern_initialize),
            404,
            Some(codes::METHOD_NOT_FOUND),
        ),
        (
            "missing _meta",
            &no_meta,
            list_headers.clone(),
            400,
            Some(codes::INVALID_PARAMS),
        ),
        (
            "missing protocolVersion",
            &no_version,
            list_headers.clone(),
            400,
            Some(codes::INVALID_PARAMS),
        ),
        (
            "missing clientCapabilities",
            &no_capabilities,
            list_headers.clone(),
            400,
            Some(codes::INVALID_PARAMS),
        ),
        (
            "missing MCP-Protocol-Version",
            &list,
            with(list_headers.clone(), "MCP-Protocol-Version", None),
            400,
            Some(codes::HEADER_MISMATCH),
        ),
        (
            "MCP-Protocol-Version differs from _meta",
            &list,
            with(
                list_headers.clone(),
                "MCP-Protocol-Version",
                Some(b"2025-11-25"),
            ),
            400,
            Some(codes::HEADER_MISMATCH),
        ),
        (
            "_meta version unsupported, header 2026-07-28",
            &unsupported,
            list_headers.clone(),
            400,
            Some(codes::HEADER_MISMATCH),
        ),
        (
            "unsupported version",
            &unsupported,
            with(
                list_headers.clone(),
                "MCP-Protocol-Version",
                Some(b"v999.0.0"),
            ),
            400,
            Some(codes::UNSUPPORTED_PROTOCOL_VERSION),
        ),
        (
            "missing Mcp-Method",
            &list,
            with(list_headers.clone(), "Mcp-Method", None),
            400,
            Some(codes::HEADER_MISMATCH),
        ),
        (
            "Mcp-Method differs",
            &list,
            with(list_headers.clone(), "Mcp-Method", Some(b"prompts/list")),
            400,
            Some(codes::HEADER_MISMATCH),
        ),
        (
            "Mcp-Method value case differs",
            &list,
            with(list_headers.clone(), "Mcp-Method", Some(b"TOOLS/LIST")),
            400,
            Some(codes::HEADER_MISMATCH),
        ),
        (
            "header names in other cases",
            &list,
            vec![
                ("mcp-protocol-version".into(), b"2026-07-28".to_vec()),
                ("MCP-METHOD".into(), b"tools/list".to_vec()),
            ],
            200,
            None,
        ),
        (
            "missing Mcp-Name",
            &tool,
            with(tool_headers.clone(), "Mcp-Name", None),
            400,
            Some(codes::HEADER_MISMATCH),
        ),
        (
            "Mcp-Name differs",
            &tool,
            with(tool_headers.clone(), "Mcp-Name", Some(b"wrong_tool_name")),
            400,
            Some(codes::HEADER_MISMATCH),
        ),
        (
            "Mcp-Name padded with spaces",
            &tool,
            with(tool_headers.clone(), "Mcp-Name", Some(b"  echo  ")),
            200,
            None,
        ),
        (
            "Mcp-Name base64 without padding",
            &tool,
            with(tool_headers.clone(), "Mcp-Name", Some(b"=?base64?ZWNobw?=")),
            400,
            Some(codes::HEADER_MISMATCH),
        ),
        (
            "Mcp-Name with raw non-ASCII bytes",
            &unicode,
            with(mcp_headers(&unicode), "Mcp-Name", Some("天気 ☀".as_bytes())),
            400,
            Some(codes::HEADER_MISMATCH),
        ),
        (
            "Mcp-Name differs from uri",
            &read,
            with(read_headers.clone(), "Mcp-Name", Some(b"file:///b.txt")),
            400,
            Some(codes::HEADER_MISMATCH),
        ),
        (
            "invalid logLevel",
            &bad_level,
            list_headers.clone(),
            400,
            Some(codes::INVALID_PARAMS),
        ),
        (
            "tools/call without name",
            &nameless,
            mcp_headers(&nameless),
            400,
            Some(codes::INVALID_PARAMS),
        ),
        (
            "resources/read without uri",
            &uriless,
            mcp_headers(&uriless),
            400,
            Some(codes::INVALID_PARAMS),
        ),
    ];
    for (name, body, headers, status, code) in cases {
        let reply = post_raw(server.addr, &headers, body.to_string()).await;
        assert_eq!(reply.status.as_u16(), status, "{name}: {reply:?}");
        assert!(reply.header("mcp-session-id").is_none(), "{name}");
        let json = reply.json();
        assert_eq!(
            json["id"], body["id"],
            "{name}: the error carries the request id"
        );
        match code {
            Some(code) => {
                assert_eq!(json["error"]["code"], json!(code), "{name}: {json}");
                schema.assert_error_response(&json);
            }
            None => assert_eq!(json["result"]["resultType"], "complete", "{name}: {json}"),
        }
    }
    let reply = post(server.addr, &legacy_initialize).await;
    assert_eq!(
        reply.json()["error"]["data"],
        json!({"supported": ["2026-07-28"], "requested": "2025-11-25"})
    );
    let reply = post(server.addr, &unicode).await;
    assert_eq!(reply.json()["result"]["params"]["name"], "天気 ☀");
}

#[tokio::test]
async fn a_final_first_is_a_json_response() {
    let server = start(|_| {}).await;
    let body = request(
        json!(5),
        "tools/list",
        params(
            "tools/list",
            json!({"_meta": {"progressToken": "p", "io.modelcontextprotocol/logLevel": "info"}}),
        ),
    );
    let mut headers = mcp_headers(&body);
    headers.push(("Mcp-Session-Id".into(), b"legacy-session".to_vec()));
    headers.push(("Last-Event-ID".into(), b"42".to_vec()));
    let anonymous = post_raw(server.addr, &headers, body.to_string()).await;
    assert_eq!(anonymous.status, StatusCode::OK);
    assert!(anonymous.header("mcp-session-id").is_none());
    let json = anonymous.json();
    assert_eq!(json["id"], 5);
    assert_eq!(json["result"]["method"], "tools/list");
    assert_eq!(json["result"]["progressToken"], "p");
    assert_eq!(json["result"]["logLevel"], "info");
    assert_eq!(json["result"]["clientInfo"]["name"], "front-tests");

    headers.push(("Authorization".into(), b"Bearer alice".to_vec()));
    let alice = post_raw(server.addr, &headers, body.to_string())
        .await
        .json();
    let alice_again = post_raw(server.addr, &headers, body.to_string())
        .await
        .json();
    assert_ne!(alice["result"]["principal"], json["result"]["principal"]);
    assert_eq!(
        alice["result"]["principal"],
        alice_again["result"]["principal"]
    );
}

#[tokio::test]
async fn a_notification_first_opens_an_sse_stream_that_ends_with_the_final() {
    let server = start(|_| {}).await;
    let body = call(json!("s-1"), "progress", json!({}));
    let reply = post(server.addr, &body).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.header("cache-control"), Some("no-cache"));
    assert_eq!(reply.header("x-accel-buffering"), Some("no"));
    assert!(reply.header("mcp-session-id").is_none());
    let events = reply.events();
    assert_eq!(events.len(), 3, "{events:#?}");
    assert_eq!(events[0]["method"], "notifications/progress");
    assert_eq!(events[0]["params"]["progress"], 1);
    assert_eq!(events[1]["params"]["progress"], 2);
    assert_eq!(events[2]["id"], "s-1");
    assert_eq!(events[2]["result"]["resultType"], "complete");
    assert!(std::str::from_utf8(&reply.body)
        .unwrap()
        .starts_with("event: message\ndata: {"));
}

#[tokio::test]
async fn json_only_clients_get_the_final_alone() {
    let server = start(|_| {}).await;
    let body = call(json!(1), "progress", json!({}));
    let headers = with(mcp_headers(&body), "accept", Some(b"application/json"));
    let reply = post_raw(server.addr, &headers, body.to_string()).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.json()["result"]["resultType"], "complete");
}

#[tokio::test]
async fn handler_errors_keep_their_status() {
    let server = start(|_| {}).await;
    let schema = Schema::load();
    let reply = post(
        server.addr,
        &call(json!(2), "missing_capability", json!({})),
    )
    .await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST);
    let json = reply.json();
    assert_eq!(json["id"], 2);
    assert_eq!(
        json["error"]["code"],
        codes::MISSING_REQUIRED_CLIENT_CAPABILITY
    );
    schema.assert_error_response(&json);
}

#[tokio::test]
async fn a_handler_that_ends_without_a_final_gets_an_internal_error() {
    let server = start(|_| {}).await;
    let schema = Schema::load();
    for tool in ["drop", "panic", "panic_sync"] {
        let reply = post(server.addr, &call(json!(tool), tool, json!({}))).await;
        assert_eq!(reply.status, StatusCode::OK, "{tool}");
        let json = reply.json();
        assert_eq!(json["id"], tool);
        assert_eq!(json["error"]["code"], codes::INTERNAL_ERROR, "{tool}");
        schema.assert_error_response(&json);
    }
    let reply = post(
        server.addr,
        &call(json!(4), "drop_after_progress", json!({})),
    )
    .await;
    let events = reply.events();
    assert_eq!(events.len(), 2, "{events:#?}");
    assert_eq!(events[1]["id"], 4);
    assert_eq!(events[1]["error"]["code"], codes::INTERNAL_ERROR);
    schema.assert_error_response(&events[1]);
    // Still serving.
    let reply = post(server.addr, &call(json!(5), "echo", json!({}))).await;
    assert_eq!(reply.json()["result"]["resultType"], "complete");
}

#[tokio::test]
async fn only_post_on_the_endpoint() {
    let server = start(|_| {}).await;
    for method in [Method::GET, Method::DELETE, Method::PUT, Method::PATCH] {
        let reply = get(server.addr, method.clone(), "/mcp", &vec![]).await;
        assert_eq!(reply.status, StatusCode::METHOD_NOT_ALLOWED, "{method}");
        assert_eq!(reply.header("allow"), Some("POST"), "{method}");
        assert!(reply.header("mcp-session-id").is_none());
    }
    let reply = get(
        server.addr,
        Method::GET,
        "/mcp",
        &vec![("Accept".into(), b"text/event-stream".to_vec())],
    )
    .await;
    assert_eq!(reply.status, StatusCode::METHOD_NOT_ALLOWED);
    for path in ["/", "/mcp/", "/mcpx", "/other"] {
        let reply = get(server.addr, Method::GET, path, &vec![]).await;
        assert_eq!(reply.status, StatusCode::NOT_FOUND, "{path}");
    }
    let body = call(json!(1), "echo", json!({}));
    let mut client = connect(server.addr).await;
    let response = client.send(mcp_request("/other", &body)).await;
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    let reply = get(server.addr, Method::POST, "/healthz", &vec![]).await;
    assert_eq!(reply.status, StatusCode::METHOD_NOT_ALLOWED);
    // The query string does not matter.
    let mut client = connect(server.addr).await;
    let response = client.send(mcp_request("/mcp?x=1", &body)).await;
    assert_eq!(response.status(), StatusCode::OK);
}

#[tokio::test]
async fn healthz_follows_readiness() {
    let server = start(|_| {}).await;
    let reply = get(server.addr, Method::GET, "/healthz", &vec![]).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(&reply.body[..], b"ok\n");
    server.handler.set_ready(false);
    let reply = get(server.addr, Method::GET, "/healthz", &vec![]).await;
    assert_eq!(reply.status, StatusCode::SERVICE_UNAVAILABLE);
    server.handler.set_ready(true);
    let reply = get(server.addr, Method::GET, "/healthz", &vec![]).await;
    assert_eq!(reply.status, StatusCode::OK);
}

#[tokio::test]
async fn readyz_names_the_failed_checks() {
    let server = start(|_| {}).await;
    let reply = get(server.addr, Method::GET, "/readyz", &vec![]).await;
    assert_eq!(reply.status, StatusCode::OK);
    let body: Value = serde_json::from_slice(&reply.body).unwrap();
    assert_eq!(
        body,
        json!({"ready": true, "checks": {"backend": true}, "failed": []})
    );
    server.handler.set_ready(false);
    let reply = get(server.addr, Method::GET, "/readyz", &vec![]).await;
    assert_eq!(reply.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(
        reply.headers[http::header::CONTENT_TYPE],
        "application/json"
    );
    let body: Value = serde_json::from_slice(&reply.body).unwrap();
    assert_eq!(
        body,
        json!({"ready": false, "checks": {"backend": false}, "failed": ["backend"]})
    );
    let reply = get(server.addr, Method::POST, "/readyz", &vec![]).await;
    assert_eq!(reply.status, StatusCode::METHOD_NOT_ALLOWED);
}

#[tokio::test]
async fn metrics_count_front_requests_and_rejections() {
    let server = start(|_| {}).await;
    let scrape = || async {
        let reply = get(server.addr, Method::GET, "/metrics", &vec![]).await;
        assert_eq!(reply.status, StatusCode::OK);
        assert!(reply.headers[http::header::CONTENT_TYPE]
            .to_str()
            .unwrap()
            .starts_with("application/openmetrics-text"));
        let text = String::from_utf8(reply.body.to_vec()).unwrap();
        mcp_mrtr_proxy::metrics::parse_exposition(&text)
    };
    let value = |series: &[(String, f64)], name: &str| {
        series
            .iter()
            .find(|(series, _)| series == name)
            .map_or(0.0, |(_, value)| *value)
    };
    // Other tests of this binary share the process-wide metrics: compare before and after.
    let before = scrape().await;
    let body = call(json!(1), "echo", json!({}));
    let mut client = connect(server.addr).await;
    let response = client.send(mcp_request("/mcp", &body)).await;
    assert_eq!(response.status(), StatusCode::OK);
    let mut headers = mcp_headers(&body);
    for (name, value) in &mut headers {
        if name.eq_ignore_ascii_case("mcp-method") {
            *value = b"tools/list".to_vec();
        }
    }
    let response = client
        .send(build(
            Method::POST,
            "/mcp",
            &headers,
            full(body.to_string()),
        ))
        .await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let after = scrape().await;
    let ok = "mcp_proxy_requests_total{method=\"tools/call\",outcome=\"ok\"}";
    let mismatch = "mcp_proxy_rejections_total{reason=\"header_mismatch\"}";
    let latency = "mcp_proxy_request_duration_seconds_count{method=\"tools/call\"}";
    assert!(value(&after, ok) > value(&before, ok), "{after:?}");
    assert!(
        value(&after, mismatch) > value(&before, mismatch),
        "{after:?}"
    );
    assert!(
        value(&after, latency) > value(&before, latency),
        "{after:?}"
    );
}

#[tokio::test]
async fn origins_are_checked_before_anything_else() {
    let server = start(|config| {
        config.allowed_origins = vec!["https://app.example.com".into(), "tools.example.org".into()];
    })
    .await;
    let schema = Schema::load();
    let body = call(json!(1), "echo", json!({}));
    let port = server.addr.port();
    for origin in [
        None,
        Some("http://localhost".to_owned()),
        Some(format!("http://localhost:{port}")),
        Some(format!("http://127.0.0.1:{port}")),
        Some("http://[::1]:1234".to_owned()),
        Some("https://app.example.com".to_owned()),
        Some("https://tools.example.org:9999".to_owned()),
    ] {
        let headers = with(
            mcp_headers(&body),
            "origin",
            origin.as_deref().map(str::as_bytes),
        );
        let reply = post_raw(server.addr, &headers, body.to_string()).await;
        assert_eq!(reply.status, StatusCode::OK, "{origin:?}");
    }
    for origin in [
        "http://evil.example.com",
        "http://evil.example.com:3000",
        "null",
        "http://localhost.evil.com",
        "https://app.example.com:8443",
    ] {
        let headers = with(mcp_headers(&body), "origin", Some(origin.as_bytes()));
        let reply = post_raw(server.addr, &headers, body.to_string()).await;
        assert_eq!(reply.status, StatusCode::FORBIDDEN, "{origin}");
        let json = reply.json();
        assert!(json.get("id").is_none());
        schema.assert_error_response(&json);
    }
    // Before routing, before 405 and before health.
    let evil: Headers = vec![("origin".into(), b"http://evil.example.com".to_vec())];
    for (method, path) in [
        (Method::GET, "/mcp"),
        (Method::GET, "/healthz"),
        (Method::GET, "/nope"),
    ] {
        let reply = get(server.addr, method, path, &evil).await;
        assert_eq!(reply.status, StatusCode::FORBIDDEN, "{path}");
    }
    // Invalid body from a foreign origin: still 403, not a parse error.
    let reply = post_raw(server.addr, &evil, "{").await;
    assert_eq!(reply.status, StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn bodies_over_the_limit_get_413() {
    let server = start(|config| config.max_body_bytes = 2048).await;
    let schema = Schema::load();
    // A valid request just under the limit passes.
    let padding = "x".repeat(1500);
    let body = call(json!(1), "echo", json!({"padding": padding}));
    assert!(body.to_string().len() < 2048);
    assert_eq!(post(server.addr, &body).await.status, StatusCode::OK);

    let big = call(json!(2), "echo", json!({"padding": "x".repeat(4096)}));
    let reply = post(server.addr, &big).await;
    assert_eq!(reply.status, StatusCode::PAYLOAD_TOO_LARGE);
    schema.assert_error_response(&reply.json());

    // Chunked, no Content-Length.
    let chunks: Vec<Result<Frame<Bytes>, Infallible>> = (0..8)
        .map(|_| Ok(Frame::data(Bytes::from(vec![b' '; 1024]))))
        .collect();
    let streamed = StreamBody::new(futures_util::stream::iter(chunks)).boxed_unsync();
    let mut client = connect(server.addr).await;
    let response = client
        .send(build(Method::POST, "/mcp", &mcp_headers(&big), streamed))
        .await;
    let reply = Reply::read(response).await;
    assert_eq!(reply.status, StatusCode::PAYLOAD_TOO_LARGE);
    schema.assert_error_response(&reply.json());
}

#[tokio::test]
async fn notifications_responses_batches_and_garbage() {
    let server = start(|_| {}).await;
    let schema = Schema::load();
    let cancelled =
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}});
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    for notification in [&cancelled, &initialized] {
        // No MCP headers: notification POSTs have none defined.
        let reply = post_raw(server.addr, &vec![], notification.to_string()).await;
        assert_eq!(reply.status, StatusCode::ACCEPTED, "{notification}");
        assert!(reply.body.is_empty());
    }
    let batch = json!([
        call(json!(1), "echo", json!({})),
        call(json!(2), "echo", json!({}))
    ]);
    let cases: Vec<(&str, String, i64)> = vec![
        (
            "client response",
            json!({"jsonrpc": "2.0", "id": 1, "result": {}}).to_string(),
            codes::INVALID_REQUEST,
        ),
        ("batch", batch.to_string(), codes::INVALID_REQUEST),
        ("invalid JSON", "{\"jsonrpc\": ".into(), codes::PARSE_ERROR),
        ("empty body", String::new(), codes::PARSE_ERROR),
        ("not an object", "42".into(), codes::INVALID_REQUEST),
        (
            "no jsonrpc member",
            json!({"id": 1, "method": "tools/list"}).to_string(),
            codes::INVALID_REQUEST,
        ),
        (
            "null id",
            json!({"jsonrpc": "2.0", "id": null, "method": "tools/list"}).to_string(),
            codes::INVALID_REQUEST,
        ),
        (
            "bad cancellation",
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {}})
                .to_string(),
            codes::INVALID_PARAMS,
        ),
        ("NUL byte", "\u{0}".into(), codes::PARSE_ERROR),
    ];
    for (name, body, code) in cases {
        let reply = post_raw(
            server.addr,
            &mcp_headers(&call(json!(1), "echo", json!({}))),
            body,
        )
        .await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{name}");
        let json = reply.json();
        assert_eq!(json["error"]["code"], code, "{name}: {json}");
        assert!(json.get("id").is_none(), "{name}");
        schema.assert_error_response(&json);
    }
    let reply = post_raw(server.addr, &vec![], vec![0xff, 0xfe, b'{']).await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST);
    assert_eq!(reply.json()["error"]["code"], codes::PARSE_ERROR);
}

#[tokio::test]
async fn a_disconnect_mid_stream_closes_the_sink() {
    let mut server = start(|_| {}).await;
    let body = call(json!("h-1"), "hang", json!({}));
    let mut client = connect(server.addr).await;
    let response = client.send(mcp_request("/mcp", &body)).await;
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let mut body = response.into_body();
    let first = tokio::time::timeout(Duration::from_secs(5), body.frame())
        .await
        .unwrap()
        .unwrap()
        .unwrap()
        .into_data()
        .unwrap();
    assert!(
        sse_events(std::str::from_utf8(&first).unwrap())[0]["method"] == "notifications/progress"
    );
    drop(body);
    drop(client);
    expect_event(&mut server.events, |event| {
        *event == Event::Closed(json!("h-1"))
    })
    .await;
}

/// The front polls a request's handler in its connection's task until the final response; what
/// the handler still does after it runs on in a task of its own.
#[tokio::test]
async fn a_handler_runs_to_its_end_after_its_final_response() {
    let mut server = start(|_| {}).await;
    let reply = post(
        server.addr,
        &call(json!("w-1"), "work_after_final", json!({})),
    )
    .await;
    assert_eq!(reply.json()["result"]["resultType"], "complete");
    expect_event(&mut server.events, |event| {
        *event == Event::WorkedAfterFinal(json!("w-1"))
    })
    .await;
}

#[tokio::test]
async fn a_disconnect_before_the_first_item_closes_the_sink() {
    let mut server = start(|_| {}).await;
    let body = call(json!("q-1"), "hang_quiet", json!({}));
    let mut client = connect(server.addr).await;
    let request = mcp_request("/mcp", &body);
    let pending = tokio::spawn(async move {
        let _ = client.sender.send_request(request).await;
        drop(client);
    });
    expect_event(&mut server.events, |event| {
        *event == Event::Started(json!("q-1"))
    })
    .await;
    pending.abort();
    expect_event(&mut server.events, |event| {
        *event == Event::Closed(json!("q-1"))
    })
    .await;
}

#[tokio::test]
async fn quiet_streams_get_keep_alive_comments() {
    let mut server = start(|config| config.sse_keep_alive = Some(Duration::from_millis(50))).await;
    let body = call(json!("k"), "hang", json!({}));
    let mut client = connect(server.addr).await;
    let response = client.send(mcp_request("/mcp", &body)).await;
    let mut body = response.into_body();
    let mut seen = String::new();
    while !seen.contains("\n:\n") && !seen.starts_with(":\n") {
        let frame = tokio::time::timeout(Duration::from_secs(5), body.frame())
            .await
            .expect("no keep-alive within 5 s")
            .unwrap()
            .unwrap();
        seen.push_str(std::str::from_utf8(&frame.into_data().unwrap()).unwrap());
    }
    assert_eq!(sse_events(&seen).len(), 1);
    drop(body);
    drop(client);
    expect_event(&mut server.events, |event| {
        *event == Event::Closed(json!("k"))
    })
    .await;
}

#[tokio::test]
async fn several_requests_share_a_connection() {
    let server = start(|_| {}).await;
    let mut client = connect(server.addr).await;
    for id in 0..3 {
        let body = call(
            json!(id),
            if id == 1 { "progress" } else { "echo" },
            json!({}),
        );
        let response = client.send(mcp_request("/mcp", &body)).await;
        let reply = Reply::read(response).await;
        let last = if id == 1 {
            reply.events().pop().unwrap()
        } else {
            reply.json()
        };
        assert_eq!(last["id"], id);
    }
}

#[tokio::test]
async fn concurrent_requests_are_independent() {
    let server = start(|_| {}).await;
    let mut tasks = Vec::new();
    for id in 0..16 {
        let addr = server.addr;
        tasks.push(tokio::spawn(async move {
            let body = call(json!(id), "slow", json!({"steps": 3, "delay_ms": 10}));
            let events = post(addr, &body).await.events();
            assert_eq!(events.len(), 4);
            assert_eq!(events[3]["id"], id);
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
}

#[tokio::test]
async fn shutdown_stops_accepting_and_returns() {
    let server = start(|config| config.shutdown_grace = Duration::from_millis(200)).await;
    // An idle keep-alive connection and a stream that never ends.
    let mut idle = connect(server.addr).await;
    let body = call(json!(1), "echo", json!({}));
    let response = idle.send(mcp_request("/mcp", &body)).await;
    Reply::read(response).await;
    let mut hanging = connect(server.addr).await;
    let body = call(json!(2), "hang", json!({}));
    let response = hanging.send(mcp_request("/mcp", &body)).await;
    assert_eq!(response.status(), StatusCode::OK);

    server.shutdown.cancel();
    let result = tokio::time::timeout(Duration::from_secs(5), server.task)
        .await
        .expect("serve did not return within 5 s")
        .unwrap();
    assert!(result.is_ok());
    assert!(TcpStream::connect(server.addr).await.is_err());
}

#[test]
fn the_schema_check_can_fail() {
    let schema = Schema::load();
    let null_id = json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "x"}});
    assert!(!schema.errors("JSONRPCErrorResponse", &null_id).is_empty());
    let no_data = json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32022, "message": "x"}});
    assert!(!schema
        .errors("UnsupportedProtocolVersionError", &no_data)
        .is_empty());
}
