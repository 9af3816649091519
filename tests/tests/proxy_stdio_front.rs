//! The stdio front (`mcp-mrtr-proxy --stdio`): 2026-07-28 newline-delimited JSON-RPC on the
//! proxy's own stdin/stdout, in front of the legacy stdio fixture server.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use mcp_migrate_tests::support::binaries;
use serde_json::{json, Value};

fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
    })
}

/// The proxy with `--stdio`, in front of the legacy fixture server over stdio.
struct StdioProxy {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    lines: mpsc::Receiver<Value>,
    _store: tempfile::TempDir,
}

impl StdioProxy {
    fn start() -> StdioProxy {
        let binaries = binaries();
        let store = tempfile::tempdir().unwrap();
        let mut child = Command::new(&binaries.proxy)
            .args(["--stdio", "--store"])
            .arg(store.path())
            .arg("--")
            .arg(&binaries.legacy_server)
            .args(["--transport", "stdio"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("the proxy starts");
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (lines_tx, lines) = mpsc::channel::<Value>();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let value: Value = serde_json::from_str(&line).expect("one JSON message per line");
                if lines_tx.send(value).is_err() {
                    break;
                }
            }
        });
        StdioProxy {
            child,
            stdin,
            lines,
            _store: store,
        }
    }

    fn send(&mut self, message: Value) {
        writeln!(self.stdin, "{message}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// The next line, within `limit`.
    fn next(&self, limit: Duration) -> Option<Value> {
        self.lines.recv_timeout(limit).ok()
    }

    /// Lines up to the response with `id` (that response last).
    fn until_response(&self, id: i64) -> Vec<Value> {
        let mut seen = Vec::new();
        loop {
            let message = self
                .next(Duration::from_secs(60))
                .expect("an answer within 60 s");
            let done = message["id"] == id && message.get("method").is_none();
            seen.push(message);
            if done {
                return seen;
            }
        }
    }

    fn receive(&self, id: i64) -> Value {
        self.until_response(id).pop().unwrap()
    }

    /// Closes stdin and waits for a clean exit.
    fn finish(self) {
        let StdioProxy {
            mut child, stdin, ..
        } = self;
        drop(stdin);
        let status = child.wait().expect("the proxy exits after EOF on stdin");
        assert!(status.success(), "{status:?}");
    }
}

#[test]
fn a_full_mrtr_round_over_the_stdio_front() {
    let mut proxy = StdioProxy::start();
    proxy.send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta()}}),
    );
    let discover = proxy.receive(1);
    assert_eq!(
        discover["result"]["supportedVersions"],
        json!(["2026-07-28"]),
        "{discover}"
    );

    let call = json!({"name": "ask_name", "arguments": {}, "_meta": meta()});
    proxy.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call}));
    let first = proxy.receive(2);
    assert_eq!(first["result"]["resultType"], "input_required", "{first}");
    let key = first["result"]["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .next()
        .unwrap()
        .clone();
    let mut retry = call.clone();
    retry["inputResponses"] = json!({ key: {"action": "accept", "content": {"name": "Stdio"}} });
    retry["requestState"] = first["result"]["requestState"].clone();
    proxy.send(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": retry}));
    let done = proxy.receive(3);
    assert_eq!(
        done["result"]["content"][0]["text"], "Hello, Stdio!",
        "{done}"
    );

    // Invalid input gets an error line, not silence or a crash.
    proxy.send(json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list", "params": {}}));
    let invalid = proxy.receive(4);
    assert_eq!(invalid["error"]["code"], -32602, "{invalid}");

    proxy.finish();
}

/// `subscriptions/listen` on stdio: the acknowledgement and the notifications come as lines
/// tagged with the subscription id; `notifications/cancelled` for the listen request ends it
/// (no response follows, nothing more is tagged with it).
#[test]
fn a_listen_stream_over_the_stdio_front() {
    let mut proxy = StdioProxy::start();
    // No capabilities: the profile of the lane the proxy starts with.
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    let tagged = |message: &Value| {
        message["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == json!("sub")
    };
    proxy.send(
        json!({"jsonrpc": "2.0", "id": "sub", "method": "subscriptions/listen",
        "params": {"_meta": meta, "notifications": {"toolsListChanged": true}}}),
    );
    let ack = proxy
        .next(Duration::from_secs(60))
        .expect("the acknowledgement");
    assert_eq!(
        ack["method"], "notifications/subscriptions/acknowledged",
        "{ack}"
    );
    assert!(tagged(&ack), "{ack}");
    assert_eq!(
        ack["params"]["notifications"],
        json!({"toolsListChanged": true})
    );

    let call = json!({"name": "announce_changes", "arguments": {}, "_meta": meta});
    proxy.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call}));
    let mut seen = proxy.until_response(2);
    let mut changes: Vec<Value> = seen.drain(..seen.len() - 1).collect();
    if !changes
        .iter()
        .any(|m| m["method"] == "notifications/tools/list_changed")
    {
        // The notification may trail the call's response.
        changes.extend(proxy.next(Duration::from_secs(10)));
    }
    let change = changes
        .iter()
        .find(|m| m["method"] == "notifications/tools/list_changed")
        .unwrap_or_else(|| panic!("no tools/list_changed: {changes:#?}"));
    assert!(tagged(change), "{change}");

    proxy.send(
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": "sub"}}),
    );
    std::thread::sleep(Duration::from_millis(300));
    proxy.send(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": call}));
    let mut after = proxy.until_response(3);
    while let Some(late) = proxy.next(Duration::from_millis(500)) {
        after.push(late);
    }
    assert!(
        after.iter().all(|m| !tagged(m) && m["id"] != json!("sub")),
        "a cancelled stream sent more: {after:#?}"
    );
    proxy.finish();
}
