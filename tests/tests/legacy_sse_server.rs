//! The legacy HTTP+SSE fixture server (`tests/legacy-sse-server`, the official Python SDK)
//! speaks the 2024-11-05 transport: `GET /sse` opens an event stream whose first event,
//! `endpoint`, names the URL to POST messages to; every server message, responses included,
//! arrives as a `message` event on that stream while the POSTs only get `202 Accepted`.

use std::time::Duration;

use mcp_migrate_tests::support::{within, LegacySseServer};
use serde_json::{json, Value};

const LIMIT: Duration = Duration::from_secs(60);

fn client() -> reqwest::Client {
    reqwest::Client::builder().no_proxy().build().unwrap()
}

/// The events of an open `GET /sse` response.
struct Events {
    response: reqwest::Response,
    buffer: String,
}

impl Events {
    async fn open(url: &str) -> Events {
        let response = client().get(url).send().await.expect("GET /sse");
        assert_eq!(response.status().as_u16(), 200);
        let content_type = response.headers()["content-type"].to_str().unwrap();
        assert!(
            content_type.starts_with("text/event-stream"),
            "{content_type}"
        );
        Events {
            response,
            buffer: String::new(),
        }
    }

    /// The next event with data: its name (`message` if unnamed) and its data lines joined.
    async fn next(&mut self) -> (String, String) {
        loop {
            // sse-starlette ends lines with CRLF.
            self.buffer = self.buffer.replace("\r\n", "\n");
            while let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                let mut name = String::from("message");
                let mut data = Vec::new();
                for line in block.lines() {
                    if let Some(value) = line.strip_prefix("event:") {
                        name = value.trim().to_owned();
                    } else if let Some(value) = line.strip_prefix("data:") {
                        data.push(value.strip_prefix(' ').unwrap_or(value).to_owned());
                    }
                }
                // Blocks without data are keep-alive comments (`: ping - ...`).
                if !data.is_empty() {
                    return (name, data.join("\n"));
                }
            }
            let chunk = self.response.chunk().await.expect("read the event stream");
            let chunk = chunk.expect("the event stream ended");
            self.buffer.push_str(std::str::from_utf8(&chunk).unwrap());
        }
    }

    /// The next `message` event, as JSON.
    async fn message(&mut self) -> Value {
        let (name, data) = self.next().await;
        assert_eq!(name, "message", "{data}");
        serde_json::from_str(&data).unwrap_or_else(|e| panic!("{e}: {data}"))
    }
}

/// POSTs `message` to the session's endpoint: the answer is 202, never the response itself.
async fn post(endpoint: &str, message: Value) {
    let response = client().post(endpoint).json(&message).send().await.unwrap();
    assert_eq!(response.status().as_u16(), 202, "{message}");
}

/// Opens a session: the `endpoint` event, `initialize` (answered on the stream), `initialized`.
async fn session(url: &str) -> (Events, String) {
    let mut events = Events::open(url).await;
    let (name, path) = events.next().await;
    assert_eq!(name, "endpoint");
    assert!(path.starts_with("/messages/?session_id="), "{path}");
    let endpoint = format!("{}{path}", url.strip_suffix("/sse").unwrap());
    let capabilities = json!({"elicitation": {}, "sampling": {}, "roots": {}});
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": capabilities,
        "clientInfo": {"name": "legacy-sse-self-test", "version": "0"},
    }});
    post(&endpoint, initialize).await;
    let response = events.message().await;
    assert_eq!(response["id"], 1, "{response}");
    assert_eq!(response["result"]["protocolVersion"], "2025-06-18");
    assert!(response["result"]["capabilities"]["tools"].is_object());
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    post(&endpoint, initialized).await;
    (events, endpoint)
}

#[tokio::test]
async fn speaks_the_2024_11_05_http_sse_transport() {
    // Outside the limit: the first run builds the venv (pip install).
    let server = LegacySseServer::start().await;
    within(LIMIT, "the SSE self-test", async {
        let (mut events, endpoint) = session(server.url()).await;

        post(
            &endpoint,
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        )
        .await;
        let response = events.message().await;
        assert_eq!(response["id"], 2, "{response}");
        let mut names: Vec<&str> = response["result"]["tools"]
            .as_array()
            .expect("a tool list")
            .iter()
            .map(|tool| tool["name"].as_str().unwrap())
            .collect();
        names.sort_unstable();
        let expected = [
            "ask_name",
            "ask_twice",
            "echo",
            "list_workspace_roots",
            "log_and_echo",
            "slow_count",
            "summarize",
        ];
        assert_eq!(names, expected);

        let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": "hi there"}}});
        post(&endpoint, call).await;
        let response = events.message().await;
        let result = json!({"content": [{"type": "text", "text": "hi there"}], "isError": false});
        assert_eq!(
            response,
            json!({"jsonrpc": "2.0", "id": 3, "result": result})
        );
    })
    .await;
}

#[tokio::test]
async fn a_restart_keeps_the_port_and_drops_the_sessions() {
    let mut server = LegacySseServer::start().await;
    within(LIMIT, "the SSE restart self-test", async {
        let url = server.url().to_owned();
        let (_events, old_endpoint) = session(&url).await;
        server.restart().await;
        assert_eq!(server.url(), url);
        let ping = json!({"jsonrpc": "2.0", "id": 9, "method": "ping"});
        let response = client().post(&old_endpoint).json(&ping).send().await;
        assert_eq!(
            response.unwrap().status().as_u16(),
            404,
            "the old session is gone"
        );
        let (mut events, endpoint) = session(&url).await;
        post(&endpoint, ping).await;
        assert_eq!(events.message().await["result"], json!({}));
    })
    .await;
}
